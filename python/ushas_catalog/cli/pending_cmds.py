"""``ushas repair --pending [--dry-run] [--include-running]``: finish the operations bigger than
one transaction that a crash left unfinished (:mod:`ushas_catalog.bulk`): a staged partition
operation that had not been published is rolled back, published work (drop clean-up, un-indexing,
purge) is completed. Routed to ``repair-pending`` (``repair TABLE`` repairs a table's partitions).
"""
from __future__ import annotations

import argparse
from typing import Any

from .context import Context
from .arguments import route_subcommand_flag

#: the command ``ushas repair --pending`` is routed to
PENDING_COMMAND = "repair-pending"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(PENDING_COMMAND, help="finish operations a crash left unfinished "
                                             "(also spelled: ushas repair --pending)",
                       description="Finish the project's pending work: operations bigger than one transaction "
                                   "(adding or dropping many partitions, dropping or purging a big catalog, "
                                   "database or table) whose process died. Staged work that was never published "
                                   "is rolled back; published work is completed. Work whose process is still "
                                   "running is left alone unless --include-running.")
    p.add_argument("--dry-run", action="store_true", help="list the pending work, change nothing")
    p.add_argument("--include-running", action="store_true",
                   help="also take over work whose process looks alive (its own chunks then fail)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_repair_pending)


def route_pending(argv: list[str]) -> list[str]:
    """``ushas [globals] repair --pending ARGS`` -> ``ushas [globals] repair-pending ARGS``."""
    return route_subcommand_flag(argv, "repair", "--pending", PENDING_COMMAND)


def cmd_repair_pending(ctx: Context, args: argparse.Namespace) -> int:
    from ..bulk import finish_pending, pending_work
    from ..data.purge import delete_local

    ms = ctx.metastore
    before = pending_work(ms)
    paths: list[str] = []
    finished = [] if args.dry_run else finish_pending(ms, include_running=args.include_running, data_paths=paths)
    deleted = delete_local(paths)
    done = {w.operation_id for w in finished}
    left = [] if args.dry_run else pending_work(ms)
    out: dict[str, Any] = {"pending": [w.to_json() for w in before], "finished": sorted(done),
                           "left": [w.to_json() for w in left], "data_paths": paths,
                           "not_deleted": list(getattr(deleted, "unreachable", []))}

    def text(_: object) -> str:
        if not before:
            return "no pending work"
        lines = []
        for w in before:
            status = ("finished" if w.operation_id in done else
                      "running (left alone)" if w.running else "pending")
            lines.append(f"{w.operation_id}  {w.kind}  {w.object}  {w.state}  {w.progress}  {status}")
        if args.dry_run:
            lines.append("dry run: nothing changed (run again without --dry-run)")
        return "\n".join(lines)

    ctx.emit(out, text)
    return 0
