"""What ``ushas`` says to a person who asks or mistypes: the top-level help with the commands in groups,
and "did you mean" for a mistyped command or option (argparse of Python 3.11 has neither)."""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import Any, NoReturn, Sequence

#: the top-level help's groups, in order: (title, commands); a command not listed goes under "more"
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("start", ("demo", "init", "spark-conf", "jar", "serve")),
    ("browse the catalog", ("catalogs", "databases", "tables", "describe", "partitions", "history", "search",
                            "meta", "functions", "objects", "keyspace", "stats")),
    ("lineage and changes", ("lineage", "changes", "hooks", "write", "writes")),
    ("change the catalog", ("drop", "undrop", "purge", "dropped", "branch", "partition-tags", "import-hive",
                            "repair")),
    ("access", ("grant", "revoke", "grants", "roles", "whoami", "row-filter", "column-mask", "shares", "tokens")),
    ("health", ("check", "repair-pending", "repair-counter")),
)

_INVALID_CHOICE = re.compile(r"argument (?P<arg>[^:]+): invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")
_UNRECOGNIZED = "unrecognized arguments: "


def suggest(word: str, known: Sequence[str]) -> str:
    """`` (did you mean X?)`` / `` (did you mean X or Y?)`` for the closest of ``known``, else ""."""
    close = difflib.get_close_matches(word, list(known), n=2, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {' or '.join(close)}?)"


class Parser(argparse.ArgumentParser):
    """Errors in one line (exit 2), with the closest command or option when a word was mistyped."""

    def error(self, message: str) -> NoReturn:
        m = _INVALID_CHOICE.match(message)
        known = [o for a in self._actions for o in a.option_strings]
        argv = list(getattr(self, "_argv", []))
        stray = [w for w in argv[:argv.index(m.group("given"))] if w.startswith("-") and w.split("=")[0] not in known] \
            if m and m.group("given") in argv else []
        if stray:  # a mistyped option took the command's place: say so, not "unknown command"
            word = stray[0].split("=")[0]
            message = f"unrecognized option {word}{suggest(word, known)}"
        elif m:
            choices = re.findall(r"'([^']*)'", m.group("choices"))
            hint = suggest(m.group("given"), choices)
            message = (f"argument {m.group('arg')}: unknown {'command' if self._subcommand_level() else 'choice'} "
                       f"{m.group('given')!r}{hint}; '{self.prog} --help' lists them")
        elif message.startswith(_UNRECOGNIZED):
            words = message[len(_UNRECOGNIZED):].split()
            options = sorted(set(self._options_in_force()))
            hints = [f"{w}{suggest(w, options)}" if w.startswith("-") else w for w in words]
            message = f"{_UNRECOGNIZED}{' '.join(hints)}"
        self.exit(2, f"ushas: error: {message}\n")

    def _subcommand_level(self) -> bool:
        return any(isinstance(a, argparse._SubParsersAction) for a in self._actions)

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _options_in_force(self) -> list[str]:
        """The option strings of this parser and of the subcommands the arguments named."""
        out: list[str] = []
        parser: argparse.ArgumentParser | None = self
        words = list(getattr(self, "_argv", []))
        while parser is not None:
            out += [o for a in parser._actions for o in a.option_strings]
            sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
            parser = None
            if sub is not None:
                for i, w in enumerate(words):
                    if w in sub.choices:
                        parser, words = sub.choices[w], words[i + 1:]
                        break
        return out

    def format_help(self) -> str:
        sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or self.prog != "ushas":
            return super().format_help()
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        pseudo = {a.dest: a for a in sub._get_subactions()}
        listed: set[str] = set()
        for title, names in GROUPS + (("more", tuple(n for n in pseudo if n not in
                                                     {x for _, g in GROUPS for x in g})),):
            present = [pseudo[n] for n in names if n in pseudo]
            if not present:
                continue
            formatter.start_section(f"commands: {title}")
            formatter.add_arguments(present)
            formatter.end_section()
            listed.update(a.dest for a in present)
        formatter.start_section("options")
        formatter.add_arguments([a for a in self._actions if a.option_strings])
        formatter.end_section()
        formatter.add_text("'ushas COMMAND --help' tells more; docs/quickstart.md walks through the first ten "
                           "minutes.")
        return formatter.format_help()


__all__ = ["GROUPS", "Parser", "suggest"]
