"""``ushas check [--only NAME ...] [--full] [--list] [--json]``: is the store whole?

Runs the registered checks (:mod:`ushas_catalog.check`) on the project, with the store opened
read-only (never created: ``store not found: PATH``, exit 2). Prints one line per problem and a
summary line; exit 0 when every check passed, :data:`~ushas_catalog.check.EXIT_PROBLEMS` (3)
when a problem was found. ``--json``: the report as one JSON object (``ok``, ``problems``,
``checks``: name, ok, seconds, findings).
"""
from __future__ import annotations

import argparse

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check the store's integrity (read-only): engine, indexes, partitions, "
                                     "change feed",
                       description="Check the project's metadata (read-only): the engine's own integrity, every "
                                   "name against its object record, versions, partitions (listable, counted), "
                                   "data-file lists, the search index, the change feed. One line per problem; "
                                   "exit 0 when healthy, 3 when problems were found, 2 for bad input or a missing "
                                   "store.")
    p.add_argument("--only", action="append", metavar="CHECK", help="run only this check (repeatable; see --list)")
    p.add_argument("--full", action="store_true",
                   help="the engine's complete check (SQLite integrity_check instead of quick_check)")
    p.add_argument("--list", action="store_true", help="list the checks and exit")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_check)


def cmd_check(ctx: Context, args: argparse.Namespace) -> int:
    from ..check import CHECKS, EXIT_PROBLEMS, check_store

    if args.list:
        ctx.table(({"check": c.name, "what": c.doc} for c in CHECKS), ["check", "what"])
        return 0
    report = check_store(ctx.uri, ctx.project, args.only, full=args.full)
    ctx.emit(report.to_json(), lambda _: "\n".join(report.lines()))
    return 0 if report.ok else EXIT_PROBLEMS
