"""``ushas repair TABLE [--add|--drop|--sync] [--dry-run]``: register the partition directories that exist
under a table's location, like Spark's ``MSCK REPAIR TABLE`` (see :mod:`ushas_catalog.data.repair`).

The CLI lists local and ``file:`` locations itself (os.scandir); a table on another filesystem (s3a,
hdfs, ...) is repaired from Spark with ``MSCK REPAIR TABLE``, where Hadoop's FileSystem lists it.
"""
from __future__ import annotations

import argparse
import os

from ..errors import InvalidArgument
from ..model.names import TableName
from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("repair", help="register the partition directories under a table's location "
                                      "(like MSCK REPAIR TABLE)",
                       description="List the partition directories (<column>=<value>/...) under the location of "
                                   "TABLE and register those not registered yet (--add, the default), unregister "
                                   "the partitions whose location no longer exists (--drop), or both (--sync). "
                                   "Registration is batched: each transaction stays within FoundationDB's limits. "
                                   "Local and file: locations only; elsewhere run MSCK REPAIR TABLE in Spark.")
    p.add_argument("table", help="catalog.database.table")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--add", dest="mode", action="store_const", const="add",
                      help="register the directories not registered yet (default)")
    mode.add_argument("--drop", dest="mode", action="store_const", const="drop",
                      help="unregister the partitions whose location no longer exists")
    mode.add_argument("--sync", dest="mode", action="store_const", const="sync", help="both")
    p.add_argument("--dry-run", action="store_true", help="change nothing; print what would be added / dropped")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_repair, mode="add")


def _exists(location: str) -> bool | None:
    from ..data.repair import local_path

    path = local_path(location)
    return None if path is None else os.path.exists(path)


def cmd_repair(ctx: Context, args: argparse.Namespace) -> int:
    from ..progress import progress_for
    from ..data.repair import RepairMode, list_directories, local_path, partition_scheme, repair_table

    name = TableName.parse(args.table)
    ms = ctx.metastore
    info = ms.get_table(name)
    scheme = partition_scheme(ms, name)
    if not info.location:
        raise InvalidArgument(f"{name} has no recorded location: run MSCK REPAIR TABLE {name} in Spark")
    root = local_path(info.location)
    if root is None:
        raise InvalidArgument(f"{name} is at {info.location}: ushas repair lists local and file: locations only; "
                              f"run MSCK REPAIR TABLE {name} in Spark (with spark.sql.extensions="
                              f"io.ushas.spark.UshasExtensions)")
    if info.external:  # registering what is under an external location is placing data there (governed callers)
        ms.check_placement(info.location, name)
    mode = RepairMode(args.mode)
    with progress_for(ctx.json, f"listing {name}", item="directories") as bar:
        listing = list_directories(root, scheme.names, tick=lambda _what, n: bar.advance(n))
    paths = listing.paths + listing.ignored  # directories of another column: reported as invalid
    if args.dry_run:
        report = repair_table(ms, name, paths, root=info.location, mode=mode, exists=_exists, dry_run=True)
    else:
        with progress_for(ctx.json, f"repairing {name}", total=0) as bar:
            report = repair_table(ms, name, paths, root=info.location, mode=mode, exists=_exists,
                                  on_plan=bar.set_total, tick=lambda what, n: bar.advance(n, item=what))
    ctx.emit(report.to_json(), lambda _: report.summary())
    return 0
