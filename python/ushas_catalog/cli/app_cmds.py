"""``ushas demo`` and ``ushas import-hive``: how a new user meets the project.

- ``ushas import-hive [--metastore-db PATH | --thrift URI] [--warehouse DIR] [--catalog NAME]``:
  copy a Hive metastore's databases, tables, partitions and views into a catalog
  (:mod:`ushas_catalog.spark.hive_import`), with a progress bar on a terminal and a summary.
- ``ushas demo``: a small pipeline run through Spark with the catalog and the lineage listener,
  then the catalog summary and the lineage of its final report (:mod:`ushas_catalog.cli.demo`).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    register_demo(sub)
    register_import_hive(sub)  # ushas ui: an alias of ushas serve (cli.serve_cmds)


# ---- import-hive ------------------------------------------------------------------------------
def register_import_hive(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-hive", help="import databases, tables, partitions and views from a Hive metastore",
                       description="Import a Hive metastore (pyspark's embedded Derby metastore_db, or a "
                                   "metastore service) into a catalog. Safe to run again: what is there is "
                                   "kept, missing partitions are added; tables that cannot be imported are "
                                   "listed. Imported tables are external (their files stay Hive's).")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--metastore-db", metavar="PATH", type=Path,
                        help="the Derby metastore directory (default ./metastore_db, as pyspark creates it)")
    source.add_argument("--thrift", metavar="URI", help="a Hive metastore service, thrift://host:9083")
    p.add_argument("--warehouse", metavar="DIR", type=Path,
                   help="Hive's warehouse directory (spark.sql.warehouse.dir; default: beside metastore_db)")
    p.add_argument("--catalog", default="hive", help="the catalog to import into (default 'hive')")
    p.add_argument("--database", action="append", dest="databases", metavar="NAME",
                   help="import only this Hive database (repeatable)")
    p.set_defaults(func=run_import_hive, creates_store=True)


def run_import_hive(ctx: Context, args: argparse.Namespace) -> int:
    from ..spark.hive_import import HiveConnection, SparkHiveSource, default_derby_dir, import_hive, open_hive_session
    from ..model.names import new_catalog_name
    from ..progress import progress_for

    new_catalog_name((args.catalog,))  # it may be created: checked before Spark starts
    conn = HiveConnection(metastore_db=args.metastore_db if args.thrift is None else None, thrift=args.thrift,
                          warehouse=args.warehouse)
    if conn.metastore_db is None and conn.thrift is None:
        conn = HiveConnection(metastore_db=default_derby_dir(), warehouse=args.warehouse)
    conn.validate()
    conn.check_reachable()  # an unreachable service: one line, and no store created for nothing
    metastore = ctx.metastore  # open (and check) the store before starting Spark
    bar = progress_for(ctx.json, "importing Hive tables")
    bar.set_item("starting Spark")
    spark = open_hive_session(conn)
    try:
        with bar:
            bar.set_item("")
            report = import_hive(metastore, SparkHiveSource(spark), args.catalog, databases=args.databases,
                                 on_plan=bar.set_total, tick=lambda name: bar.advance(item=name))
    finally:
        spark.stop()
    ctx.emit(report.to_json(), lambda _: report.summary())
    return 0


# ---- demo ------------------------------------------------------------------------------------------
def register_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run a small Spark pipeline into the default store and show catalog and "
                                    "lineage",
                       description="Run a small pipeline through Spark with the catalog and the lineage listener "
                                   "into the store of --uri / USHAS_URI (default: sqlite:///$XDG_DATA_HOME/ushas/"
                                   "ushas.db, created if needed; with --dir alone: DIR/ushas.db), then print the "
                                   "catalog summary and the lineage of its final report.")
    p.add_argument("--dir", type=Path, help="where the demo's warehouse and Hive metastore go (and its store, "
                                            "without --uri) (default: a new directory under "
                                            "$XDG_DATA_HOME/ushas)")
    p.set_defaults(func=run_demo, creates_store=True)


def run_demo(ctx: Context, args: argparse.Namespace) -> int:
    from .demo import run_demo as demo

    # --dir alone: a store of its own in DIR; else the store of --uri / USHAS_URI / the default store
    given = args.uri_given or args.dir is None
    return demo(ctx, directory=args.dir, uri=ctx.uri if given else None)
