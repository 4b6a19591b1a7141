"""A store for the UI tests: a catalog with a partitioned table (45 partitions), a view, tags,
and a two-stage lineage (raw -> cleaned -> report) captured by hand, no Spark needed."""
from __future__ import annotations

from lineage.model import ColumnNode, Dataset, Edge, EdgeSubtype
from lineage.store import CapturedRun, Run, RunStatus, run_id_for
from ushas_catalog.model.partitions import Partition

RAW = Dataset.table("shop", "sales", "raw")
CLEANED = Dataset.table("spark_catalog", "default", "cleaned")
REPORT = Dataset.path("file:/data/report", "parquet")
T1 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
T2 = T1 + 3_600_000


def col(ds: Dataset, name: str) -> ColumnNode:
    return ColumnNode.column(ds, name)


def edge(target: ColumnNode | None, source: ColumnNode, sub: EdgeSubtype, expr: str) -> Edge:
    return Edge(target, source, sub.kind, sub, expr)


def run(execution_id: int, end_ms: int, sql: str) -> Run:
    return Run(run_id=run_id_for("app-ui", execution_id), application_id="app-ui", application_name="pipeline",
               execution_id=execution_id, user="alice", start_ms=end_ms - 500, end_ms=end_ms,
               status=RunStatus.COMPLETE, operation="command", sql=sql)


def build(uri: str) -> None:
    from lineage.tables import open_lineage_store
    from ushas_catalog.metastore import Metastore

    ms = Metastore.open(uri)
    try:
        ms.create_catalog("shop", comment="the shop")
        ms.create_database("shop.sales", comment="sales data")
        ms.create_table("shop.sales.raw", "id INT, amount DOUBLE, country STRING, dt STRING", partition_by=["dt"],
                        location="file:/data/raw", properties={"team": "payments"})
        ms.add_partitions("shop.sales.raw", [Partition({"dt": f"2024-01-{i:02d}"}) if i <= 31 else
                                             Partition({"dt": f"2024-02-{i - 31:02d}"}) for i in range(1, 46)])
        ms.create_view("shop.sales.fr", "SELECT id, amount FROM shop.sales.raw WHERE country = 'FR'",
                       "id INT, amount DOUBLE")
        ms.metadata.tag("shop.sales.raw", ["pii"])
    finally:
        ms.close()
    store = open_lineage_store(uri)
    try:
        store.record(CapturedRun(
            run(1, T1, "INSERT INTO cleaned SELECT id, amount * 100, country FROM shop.sales.raw WHERE amount > 0"),
            reads=(RAW,), writes=(CLEANED,),
            edges=(edge(col(CLEANED, "id"), col(RAW, "id"), EdgeSubtype.IDENTITY, "id"),
                   edge(col(CLEANED, "amount"), col(RAW, "amount"), EdgeSubtype.TRANSFORMATION, "(amount * 100)"),
                   edge(col(CLEANED, "country"), col(RAW, "country"), EdgeSubtype.IDENTITY, "country"),
                   edge(None, col(RAW, "amount"), EdgeSubtype.FILTER, "(amount > 0)"))))
        store.record(CapturedRun(
            run(2, T2, "SELECT country, sum(amount) AS total FROM cleaned GROUP BY country"),
            reads=(CLEANED,), writes=(REPORT,),
            edges=(edge(col(REPORT, "country"), col(CLEANED, "country"), EdgeSubtype.IDENTITY, "country"),
                   edge(col(REPORT, "total"), col(CLEANED, "amount"), EdgeSubtype.AGGREGATION, "sum(amount)"),
                   edge(None, col(CLEANED, "country"), EdgeSubtype.GROUP_BY, "country"))))
    finally:
        store.close()
