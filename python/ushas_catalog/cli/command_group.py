"""A command group: ``ushas GROUP [ACTION] ...``, one parser per action (``ushas locations create ...``,
``ushas shares mount ...``), each with its positionals and ``--json``; the group alone runs its default
action (``list``).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

#: a positional argument: its name and argparse's keywords (``("name", {"help": "..."})``)
Positional = tuple[str, dict[str, Any]]


def add_json_option(p: argparse.ArgumentParser) -> None:
    """``--json``; absent from the namespace unless given, so the global ``--json`` still counts."""
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


@dataclass(frozen=True)
class CommandGroup:
    parser: argparse.ArgumentParser
    actions: argparse._SubParsersAction

    def add(self, name: str, help: str, func: Callable[..., int], *args: Positional) -> argparse.ArgumentParser:
        """The action ``name`` running ``func``, with the positionals ``args`` and ``--json``."""
        sp = self.actions.add_parser(name, help=help)
        for arg, kw in args:
            sp.add_argument(arg, **kw)
        add_json_option(sp)
        sp.set_defaults(func=func)
        return sp


def command_group(sub: argparse._SubParsersAction, name: str, help: str, description: str,
                  default: Callable[..., int]) -> CommandGroup:
    """The group ``name`` (its actions land in ``args.<name>_action``); run alone, it runs ``default``."""
    p = sub.add_parser(name, help=help, description=description)
    p.set_defaults(func=default)
    add_json_option(p)
    return CommandGroup(p, p.add_subparsers(dest=f"{name}_action", metavar="ACTION"))


__all__ = ["Positional", "CommandGroup", "add_json_option", "command_group"]
