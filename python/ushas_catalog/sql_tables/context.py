"""What a row source reads with: the metastore joined to the page's one transaction, the table a
metadata table belongs to, and the lineage store and queries of the same project (the ones the
CLI's ``ushas lineage`` commands use)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ..model.names import TableName


@dataclass
class ReadContext:
    """One page's reading context (``ms`` runs every call in the page's transaction)."""

    ms: Any
    catalog: str
    #: the table of a metadata table (None for a system table)
    table: TableName | None = None
    #: the columns the read asked for (None: all): a source may skip work for the others
    columns: frozenset[str] | None = None
    _names: dict[Any, str] = field(default_factory=dict)
    _stores: dict[str, Any] = field(default_factory=dict)

    def store(self, name: str) -> Any:
        """What the extension's read store ``name`` opens over this page's (joined) metastore, once per page
        (:data:`ushas_catalog.extensions.Extensions.read_stores`; ``lineage``: the lineage queries)."""
        found = self._stores.get(name)
        if found is None:
            from ..errors import InvalidArgument
            from ..extensions import extensions

            opener = extensions().read_stores.get(name)
            if opener is None:
                raise InvalidArgument(f"no installed extension provides {name} (its tables cannot be read)")
            found = self._stores[name] = opener.load()(self.ms)
        return found

    @property
    def queries(self) -> Any:
        """The project's lineage queries (``lineage.query.LineageQueries``) over the same (joined) database."""
        return self.store("lineage")

    @property
    def lineage(self) -> Any:
        """The project's lineage store (``lineage.store.LineageStore``) over the same (joined) database."""
        return self.queries.store

    def dataset_name(self, key: Any) -> str:
        """A dataset key's display name (a metastore table's current name), as the CLI shows it."""
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = self.lineage.describe(key)["name"]
        return name

    def dataset_key(self, name: str) -> Any:
        """The dataset key a name denotes (None: never captured), as ``ushas lineage`` resolves it."""
        return self.queries.resolve_dataset(name)


def table_id_text(key: Any) -> str | None:
    return str(key) if isinstance(key, uuid.UUID) else None
