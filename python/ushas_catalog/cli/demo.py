"""``ushas demo``: a small pipeline through Spark with the catalog and the lineage listener.

Stages (each printed as ``[n/N] ...`` on stderr, with the time taken so far):

1. the default store (``USHAS_URI``, else ``sqlite:///$XDG_DATA_HOME/ushas/ushas.db``:
   :mod:`ushas_catalog.store_location`), so every ``ushas`` command after it reads what it made without
   ``--uri`` (``--dir DIR`` alone: a store of its own, ``DIR/ushas.db``; ``--uri``: that one); the
   warehouse and Hive metastore (embedded Derby) under one new directory;
2. Spark ``local[2]`` with the ``ushas`` catalog and the lineage listener (``ushas_catalog.spark``)
   and Hive support;
3. ``ushas.shop.orders``: a table partitioned by day, three days of orders;
4. a schema change: ``ALTER TABLE ... ADD COLUMNS (channel)``, and a fourth day with it;
5. ``spark_catalog.default.customers``: a Hive table;
6. ``ushas.shop.enriched``: orders joined with customers (partitioned by day);
7. a parquet path ``<dir>/exports/daily``: totals per day, country and segment;
8. a view ``ushas.shop.big_orders`` and the final report ``ushas.shop.report`` read from the path;

then the catalog summary and what the extensions show of it (the lineage extension: the column lineage
tree of the report, an upstream query on the store: ``lineage.plugin.demo``), and the command that opens
the UI on it.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import InvalidArgument, StoreUnavailable, UshasError
from ..progress import Steps

CATALOG = "ushas"
DATABASE = "shop"
REPORT = f"{CATALOG}.{DATABASE}.report"
#: how long the demo waits for the lineage listener to deliver the last run
LINEAGE_WAIT_S = 120.0


@dataclass(frozen=True)
class DemoPaths:
    root: Path
    uri: str
    warehouse: Path
    hive_warehouse: Path
    derby: Path
    exports: Path

    @staticmethod
    def make(directory: Path | None, uri: str | None) -> "DemoPaths":
        """``directory`` None: a new directory under the user's data directory, and the default store."""
        if directory is None:
            from ..store_location import data_dir, default_uri

            data_dir().mkdir(parents=True, exist_ok=True)
            directory = Path(tempfile.mkdtemp(prefix="demo-", dir=data_dir()))
            uri = uri or default_uri()
        root = directory.resolve()
        root.mkdir(parents=True, exist_ok=True)
        if (root / "derby" / "metastore_db").exists() or (root / "warehouse").exists():
            raise InvalidArgument(f"{root} already holds a demo: give a new --dir")
        paths = DemoPaths(root, uri or f"sqlite:///{root / 'ushas.db'}", root / "warehouse",
                          root / "hive-warehouse", root / "derby", root / "exports" / "daily")
        for d in (paths.warehouse, paths.hive_warehouse, paths.derby):
            d.mkdir(parents=True, exist_ok=True)
        return paths


#: the pipeline, after Spark is up: (progress text, statements)
def pipeline(paths: DemoPaths) -> list[tuple[str, list[str]]]:
    shop = f"{CATALOG}.{DATABASE}"
    days = ["2024-05-01", "2024-05-02", "2024-05-03"]
    rows = ", ".join(f"({d * 100 + i}, {(i % 4) + 1}, {round(10 + i * 7.5 + d, 2)}, '{['FR', 'DE', 'IN'][i % 3]}', "
                     f"'{day}')" for d, day in enumerate(days) for i in range(6))
    return [
        ("orders: a table partitioned by day, three days of data", [
            f"CREATE NAMESPACE IF NOT EXISTS {shop}",
            f"CREATE TABLE {shop}.orders (order_id BIGINT, customer_id BIGINT, amount DOUBLE, country STRING, "
            f"dt STRING) USING parquet PARTITIONED BY (dt)",
            f"INSERT INTO {shop}.orders VALUES {rows}",
        ]),
        ("schema change: orders gets a channel column, then a fourth day", [
            f"ALTER TABLE {shop}.orders ADD COLUMNS (channel STRING)",
            f"INSERT INTO {shop}.orders (order_id, customer_id, amount, country, channel, dt) "
            f"VALUES (401, 1, 99.5, 'FR', 'web', '2024-05-04'), (402, 3, 12.0, 'IN', 'store', '2024-05-04')",
        ]),
        ("customers: a Hive table", [
            "CREATE TABLE spark_catalog.default.customers (customer_id BIGINT, name STRING, segment STRING) "
            "STORED AS PARQUET",
            "INSERT INTO spark_catalog.default.customers VALUES (1, 'Asha', 'retail'), (2, 'Bruno', 'pro'), "
            "(3, 'Chen', 'retail'), (4, 'Dana', 'pro')",
        ]),
        ("enriched: orders joined with customers", [
            f"CREATE TABLE {shop}.enriched (order_id BIGINT, amount DOUBLE, country STRING, segment STRING, "
            f"dt STRING) USING parquet PARTITIONED BY (dt)",
            f"INSERT INTO {shop}.enriched SELECT o.order_id, o.amount, upper(o.country), c.segment, o.dt "
            f"FROM {shop}.orders o JOIN spark_catalog.default.customers c ON o.customer_id = c.customer_id "
            f"WHERE o.amount > 0",
        ]),
        ("exports/daily: a parquet path of daily totals", [
            f"INSERT OVERWRITE DIRECTORY '{paths.exports.as_uri()}' USING parquet "
            f"SELECT dt, country, segment, sum(amount) AS total, count(*) AS orders FROM {shop}.enriched "
            f"GROUP BY dt, country, segment",
        ]),
        ("a view and the final report", [
            f"CREATE VIEW {shop}.big_orders AS SELECT order_id, amount, segment FROM {shop}.enriched "
            f"WHERE amount > 50",
            f"CREATE TABLE {REPORT} (segment STRING, country STRING, revenue DOUBLE, orders BIGINT) USING parquet",
            f"INSERT INTO {REPORT} SELECT segment, country, sum(total) AS revenue, sum(orders) AS orders "
            f"FROM parquet.`{paths.exports.as_uri()}` GROUP BY segment, country",
        ]),
    ]


def start_spark(paths: DemoPaths) -> Any:
    from pyspark.sql import SparkSession

    from ..spark.hive_import import quiet_log4j
    from ..spark import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").appName("ushas-demo")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.warehouse.dir", str(paths.hive_warehouse))
               # Spark's startup chatter would bury the stage lines: errors only
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={paths.derby} {quiet_log4j(paths.root)}")
               .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                       f"jdbc:derby:;databaseName={paths.derby / 'metastore_db'};create=true")
               .enableHiveSupport())
    builder = configure(builder, name=CATALOG, uri=paths.uri, warehouse=str(paths.warehouse))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def demo_sections() -> list[Any]:
    """What the extensions show after the pipeline (the lineage extension: the report's lineage tree)."""
    from ..extensions import extensions

    return [ref.load() for ref in extensions().demo_sections]


def catalog_summary(metastore: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"catalogs": []}
    for cat in metastore.list_catalogs():
        cj: dict[str, Any] = {"name": cat.name, "databases": []}
        for db in metastore.list_databases(cat.name):
            dj: dict[str, Any] = {"name": db.name, "relations": []}
            for rel in metastore.list_relations((cat.name, db.name)):
                name = (cat.name, db.name, rel.name)
                if rel.kind == "VIEW":
                    view = metastore.get_view(name)
                    dj["relations"].append({"name": rel.name, "kind": "VIEW", "columns": view.schema.names})
                    continue
                t = metastore.get_table(name)
                parts = len(list(metastore.list_partitions(name))) if t.partition_columns else None
                dj["relations"].append({"name": rel.name, "kind": "TABLE", "columns": t.schema.names,
                                        "partitioned_by": t.partition_columns, "partitions": parts,
                                        "version": t.version, "schema_id": t.schema_id, "format": t.format})
            cj["databases"].append(dj)
        out["catalogs"].append(cj)
    return out


def summary_text(summary: dict[str, Any]) -> str:
    lines = ["Catalog summary"]
    for cat in summary["catalogs"]:
        lines.append(f"  catalog {cat['name']}")
        for db in cat["databases"]:
            lines.append(f"    database {db['name']}")
            for r in db["relations"]:
                if r["kind"] == "VIEW":
                    lines.append(f"      view  {r['name']} ({', '.join(r['columns'])})")
                    continue
                part = (f", partitioned by {', '.join(r['partitioned_by'])}: {r['partitions']} partitions"
                        if r["partitioned_by"] else "")
                lines.append(f"      table {r['name']} ({', '.join(r['columns'])}) {r['format']}, "
                             f"version {r['version']}, schema {r['schema_id']}{part}")
    return "\n".join(lines)


def run_demo(ctx: Any, directory: Path | None = None, uri: str | None = None,
             out: Callable[[str], None] = print) -> int:
    """The ``ushas demo`` command: returns its exit code."""
    from ..metastore import Metastore

    if ctx.project != "default":
        raise InvalidArgument("the demo runs in project 'default' (leave out --project)")
    paths = DemoPaths.make(directory, uri)
    stages = pipeline(paths)
    sections = demo_sections()
    steps = Steps(total=len(stages) + 3, quiet=ctx.json)
    steps.step(f"store {paths.uri} (demo directory {paths.root})")
    try:
        with Metastore.open(paths.uri, project=ctx.project) as ms:  # a bad --uri fails here, before Spark
            if ms.database_exists(f"{CATALOG}.{DATABASE}"):
                raise InvalidArgument(f"the store {paths.uri} holds the demo's database {CATALOG}.{DATABASE} "
                                      f"already: explore it (ushas tables {CATALOG}.{DATABASE}), drop it (ushas "
                                      f"--uri {paths.uri} drop --cascade --purge {CATALOG}.{DATABASE}) or run the "
                                      f"demo in a store of its own (ushas demo --dir NEW_DIR)")
    except UshasError:
        if directory is None:  # the directory this run made: nothing of a refused demo stays behind
            shutil.rmtree(paths.root, ignore_errors=True)
        raise
    steps.step("starting Spark (local[2]) with the ushas catalog and the lineage listener")
    spark = start_spark(paths)
    try:
        for text, statements in stages:
            steps.step(text)
            for sql in statements:
                spark.sql(sql)
        rows = spark.sql(f"SELECT * FROM {REPORT} ORDER BY revenue DESC").collect()
        steps.step("waiting for the lineage listener to store the last runs")
        for section in sections:
            if not section.wait(paths.uri, ctx.project, REPORT, LINEAGE_WAIT_S):
                raise StoreUnavailable(f"the lineage of {REPORT} did not reach the store within "
                                       f"{LINEAGE_WAIT_S:.0f}s")
    finally:
        spark.stop()
    metastore = Metastore.open(paths.uri, project=ctx.project)
    try:
        summary = catalog_summary(metastore)
    finally:
        metastore.close()
    reports = [section.report(paths.uri, ctx.project, REPORT, "revenue") for section in sections]
    ui = f"ushas --uri {paths.uri} ui"
    if ctx.json:
        ctx.emit({"uri": paths.uri, "directory": str(paths.root), "report_rows": [r.asDict() for r in rows],
                  "catalog": summary, **{r.key: r.data for r in reports}, "ui": ui})
        return 0
    out("")
    out(summary_text(summary))
    out("")
    out(f"Report {REPORT}: {len(rows)} rows")
    for r in rows:
        out(f"  {r['segment']:<8} {r['country']:<4} revenue {r['revenue']:>9.2f}  orders {r['orders']}")
    for report in reports:
        out("")
        out(report.text)
    out("")
    out(f"Open the UI:   {ui}   then http://127.0.0.1:8765/")
    for report in reports:
        for hint in report.hints:
            out(hint)
    return 0
