"""A hand-made three-stage pipeline (raw -> cleaned -> report) as captured runs, for the store
and query tests that need no Spark: raw is a metastore table (keyed by id), cleaned a Hive
table, report a parquet path."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from lineage.model import ColumnNode, Dataset, Edge, EdgeSubtype
from lineage.store import CapturedRun, Run, RunStatus, TableState, run_id_for
from ushas_catalog.kv.base import Transaction

RAW = Dataset.table("ushas", "sales", "raw")
CLEANED = Dataset.table("spark_catalog", "default", "cleaned")
REPORT = Dataset.path("file:/data/report", "parquet")

T1 = 1_700_000_000_000  # 2023-11-14
T2 = T1 + 3_600_000
T3 = T1 + 2 * 86_400_000


@dataclass
class FakeTables:
    """Metastore stand-in: names -> ids, renames and drops."""

    names: dict[str, uuid.UUID] = field(default_factory=dict)
    dropped: dict[uuid.UUID, str] = field(default_factory=dict)

    def add(self, dataset: Dataset) -> uuid.UUID:
        tid = uuid.uuid4()
        self.names[dataset.name] = tid
        return tid

    def rename(self, old: str, new: str) -> None:
        self.names[new] = self.names.pop(old)

    def drop(self, name: str) -> None:
        self.dropped[self.names.pop(name)] = name

    def table_id(self, tr: Transaction, dataset: Dataset) -> uuid.UUID | None:
        return self.names.get(dataset.name)

    def table_state(self, tr: Transaction, table_id: uuid.UUID, last_name: str | None = None) -> TableState | None:
        for name, tid in self.names.items():
            if tid == table_id:
                return TableState(name)
        if table_id in self.dropped:
            return TableState(self.dropped[table_id], dropped=True)
        return None


def col(ds: Dataset, name: str) -> ColumnNode:
    return ColumnNode.column(ds, name)


def edge(target: ColumnNode | None, source: ColumnNode, sub: EdgeSubtype, expr: str = "") -> Edge:
    return Edge(target, source, sub.kind, sub, expr or f"{source.name}")


def run(execution_id: int, end_ms: int, *, status: RunStatus = RunStatus.COMPLETE, sql: str | None = None,
        app: str = "app-1") -> Run:
    return Run(run_id=run_id_for(app, execution_id), application_id=app, application_name="pipeline",
               execution_id=execution_id, user="alice", start_ms=end_ms - 500, end_ms=end_ms, status=status,
               operation="command", sql=sql)


def clean_run(end_ms: int = T1) -> CapturedRun:
    return CapturedRun(
        run(1, end_ms, sql="INSERT INTO cleaned SELECT id, amount * 100, country FROM raw WHERE amount > 0"),
        reads=(RAW,), writes=(CLEANED,),
        edges=(edge(col(CLEANED, "id"), col(RAW, "id"), EdgeSubtype.IDENTITY),
               edge(col(CLEANED, "amount"), col(RAW, "amount"), EdgeSubtype.TRANSFORMATION, "(amount * 100)"),
               edge(col(CLEANED, "country"), col(RAW, "country"), EdgeSubtype.IDENTITY),
               edge(None, col(RAW, "amount"), EdgeSubtype.FILTER, "(amount > 0)")))


def report_run(end_ms: int = T2) -> CapturedRun:
    return CapturedRun(
        run(2, end_ms, sql="SELECT country, sum(amount) AS total FROM cleaned GROUP BY country"),
        reads=(CLEANED,), writes=(REPORT,),
        edges=(edge(col(REPORT, "country"), col(CLEANED, "country"), EdgeSubtype.IDENTITY),
               edge(col(REPORT, "total"), col(CLEANED, "amount"), EdgeSubtype.AGGREGATION, "sum(amount)"),
               edge(None, col(CLEANED, "country"), EdgeSubtype.GROUP_BY, "country")))
