"""Store commands: ``ushas init`` (create a store) and ``ushas repair --counter`` (rebuild its
commit version counter from the commit log).

- ``ushas --uri URI init``: creates the store at ``URI`` (empty: catalogs are created by Spark
  or the API) and says whether it created it or found it. The only CLI command besides
  ``demo`` and ``import-hive`` that creates a store.
- ``ushas --uri URI repair --counter [--dry-run]`` (routed to ``repair-counter``: ``repair TABLE``
  is the partition repair): when opening fails with ``StoreDamaged``
  (the counter record lost or damaged), sets the counter to the largest commit version the
  store records (:mod:`ushas_catalog.kv.counter`); ``--dry-run`` only reports. Never lowers it.
"""
from __future__ import annotations

import argparse

from .context import Context
from .arguments import route_subcommand_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create the store at --uri (no-op when it exists)",
                       description="Create the store named by --uri (its directory too). Every other command "
                                   "except demo and import-hive only opens an existing store.")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_init, creates_store=True)

    p = sub.add_parser(COUNTER_COMMAND, help="rebuild the store's commit version counter from the commit log "
                                             "(also spelled: ushas repair --counter)",
                       description="Rebuild the store's commit version counter from the commit log (the "
                                   "versionstamps of its change feed and metadata history) when it is missing or "
                                   "damaged (StoreDamaged); never lowers it. 'ushas repair --counter' is the same "
                                   "command.")
    p.add_argument("--dry-run", action="store_true", help="report what would be done, change nothing")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_repair_counter)


#: the command ``ushas repair --counter`` is routed to (``repair`` itself repairs tables)
COUNTER_COMMAND = "repair-counter"
#: global options of ``ushas`` that take a value (skipped when looking for the command)


def route_counter(argv: list[str]) -> list[str]:
    """``ushas [globals] repair --counter ARGS`` -> ``ushas [globals] repair-counter ARGS``, so the
    counter rebuild keeps the name ``StoreDamaged`` tells users while ``repair TABLE`` stays the
    partition repair's own command."""
    return route_subcommand_flag(argv, "repair", "--counter", COUNTER_COMMAND)


def cmd_init(ctx: Context, args: argparse.Namespace) -> int:
    from ..kv import open_database

    db = open_database(ctx.uri, create=True)
    try:
        created = bool(getattr(db, "created", False))
    finally:
        db.close()
    ctx.emit({"uri": ctx.uri, "created": created},
             f"created a new store at {ctx.uri}" if created else f"the store at {ctx.uri} already exists")
    return 0


def cmd_repair_counter(ctx: Context, args: argparse.Namespace) -> int:
    from ..kv.counter import rebuild_counter

    report = rebuild_counter(ctx.uri, dry_run=args.dry_run)

    def text(_: object) -> str:
        now = "missing or damaged" if report.counter is None else str(report.counter)
        lines = [f"commit version counter: {now}" + (f" ({report.problem})" if report.problem else ""),
                 f"largest commit version recorded: {report.max_recorded} ({report.keys_scanned} keys scanned)"]
        if report.repaired_to is not None:
            lines.append(f"counter set to {report.repaired_to}")
        elif not report.healthy:
            lines.append("would set it to " + str(max(report.counter or 0, report.max_recorded)) +
                         " (run again without --dry-run)")
        else:
            lines.append("healthy: nothing to do")
        return "\n".join(lines)

    ctx.emit(report.to_json(), text)
    return 0
