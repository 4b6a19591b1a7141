"""What every CLI command gets: the store URI, the project, the output mode, and lazily
an opened :class:`~ushas_catalog.metastore.Metastore`."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .terminal import escape, escape_lines


@dataclass
class Context:
    uri: str
    project: str
    json: bool = False
    #: the command may create the store (``init``, ``demo``, ``import-hive``); every other
    #: command reads an existing store only and a missing one is ``store not found: PATH``
    create: bool = False
    #: ``--user``: the CLI calls as this user, with authorization on (docs/governance.md)
    user: str | None = None
    #: ``--branch``: the branch of the catalogs every command reads and writes (docs/branches.md)
    branch: str = "main"
    #: ``--token``: the catalog service's token, with an ``http(s)://`` uri (default ``USHAS_TOKEN``)
    token: str | None = None
    _metastore: Any = field(default=None, repr=False)

    @property
    def metastore(self) -> Any:
        if self._metastore is None:
            from ..metastore import Metastore

            branch = None if self.branch == "main" else self.branch
            if self.remote:  # the catalog service: the token's user calls, always checked
                self._metastore = Metastore.open(self.uri, project=self.project, user=self.user,
                                                 token=self.token, branch=branch)
                return self._metastore
            self._metastore = Metastore.open(self.uri, project=self.project, create=self.create, user=self.user,
                                             authorization=self.user is not None, branch=branch)
            if self._metastore.created:
                print(f"ushas: created a new store at {self.uri}", file=sys.stderr)
        return self._metastore

    @property
    def remote(self) -> bool:
        """Whether ``uri`` names the catalog service (``http(s)://``) rather than a store."""
        from ..remote.http import is_remote

        return is_remote(self.uri)

    def close(self) -> None:
        if self._metastore is not None:
            self._metastore.close()
            self._metastore = None

    def emit(self, data: Any, text: Callable[[Any], str] | str | None = None) -> None:
        """Print ``data`` as JSON with ``--json``, else as ``text`` (a string or a function of data)."""
        if self.json:
            json.dump(data, sys.stdout, indent=2, default=str, ensure_ascii=False)
            sys.stdout.write("\n")
        else:  # stored values may hold terminal escape sequences: shown escaped (cli.terminal)
            shown = str(data) if text is None else text(data) if callable(text) else text
            print(escape_lines(shown))

    def table(self, rows: Iterable[dict[str, Any]], columns: list[str]) -> None:
        """Print rows as an aligned text table, or as a JSON list with ``--json``."""
        rows = list(rows)
        if self.json:
            self.emit(rows)
            return
        cells = [[escape(str(r.get(c, ""))) if r.get(c) is not None else "" for c in columns] for r in rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
        print("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths)).rstrip())
        for row in cells:
            print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
