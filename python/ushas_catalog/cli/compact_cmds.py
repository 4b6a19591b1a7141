"""``ushas compact TABLE [--where PREDICATE] [--target-file-size BYTES]``: rewrite a table's small files in
one commit, as ``CALL <catalog>.system.compact`` does (ushas_catalog.procedures.compact). Reading and
writing data files is Spark's work: the command runs the procedure in a local Spark session (PySpark)
whose catalog is the CLI's store, project and user; against the catalog service (``http(s)://``), run
the CALL from a Spark session configured for it."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compact", help="rewrite a table's small files as fewer files, in one commit",
                       description="Rewrite the small files of TABLE's partitions (all, or those --where selects: a "
                                   "predicate on the partition columns, in Spark SQL) as files of about "
                                   "--target-file-size bytes, in one commit that readers see whole or not at all. "
                                   "The replaced files go to the garbage `ushas purge` removes. Runs a local Spark "
                                   "session (PySpark); needs MODIFY on the table.")
    p.add_argument("table", metavar="TABLE", help="catalog.database.table")
    p.add_argument("--where", help="a predicate on the partition columns, e.g. \"dt < '2026-11-01'\"")
    p.add_argument("--target-file-size", type=int, default=None, metavar="BYTES",
                   help="bytes of a compacted file; smaller files are compacted (default 128 MiB)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    p.set_defaults(func=cmd_compact)


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cmd_compact(ctx: Context, args: argparse.Namespace) -> int:
    from ..errors import InvalidArgument
    from ..model.names import split_name

    parts = split_name(args.table)
    if len(parts) != 3 or not all(parts):
        raise InvalidArgument(f"TABLE {args.table!r}: expected catalog.database.table")
    if ctx.remote:
        raise InvalidArgument("ushas compact runs Spark next to a store; against the catalog service run "
                              "CALL <catalog>.system.compact(...) from a Spark session configured for it")
    if args.target_file_size is not None and args.target_file_size <= 0:
        raise InvalidArgument(f"--target-file-size must be a positive number of bytes, not {args.target_file_size}")
    ctx.metastore.get_table(parts)  # a missing table (or no privilege) is a one-line error before Spark starts
    spark = _session(ctx, parts[0])
    try:
        call = [f"table => {_literal(parts[1] + '.' + parts[2])}"]
        if args.where is not None:
            call.append(f"where => {_literal(args.where)}")
        if args.target_file_size is not None:
            call.append(f"target_file_size => {int(args.target_file_size)}")
        [row] = spark.sql(f"CALL `ushas_cli`.system.compact({', '.join(call)})").collect()
    finally:
        spark.stop()
    out: dict[str, Any] = {"table": args.table, "partitions": row.partitions, "files_removed": row.files_removed,
                           "files_added": row.files_added, "version": row.version}
    ctx.emit(out, lambda o: (f"{o['table']}: nothing to compact" if o["version"] is None else
                             f"{o['table']}: {o['files_removed']} file(s) in {o['partitions']} partition(s) "
                             f"rewritten as {o['files_added']} (version {o['version']})"))
    return 0


def _session(ctx: Context, catalog: str) -> Any:
    from pyspark.sql import SparkSession

    from ..spark import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(os.environ.get("USHAS_COMPACT_MASTER", "local[2]"))
               .appName("ushas-compact").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    builder = configure(builder, name="ushas_cli", uri=ctx.uri, project=ctx.project, catalog=catalog, lineage=False,
                        create=False)
    if ctx.user is not None:
        builder = builder.config("spark.sql.catalog.ushas_cli.user", ctx.user)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
