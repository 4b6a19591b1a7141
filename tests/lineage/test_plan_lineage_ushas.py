"""Plan lineage over the ``ushas`` catalog (configured by the shared ``spark`` fixture through
``ushas_catalog.spark.configure``): its tables as leaves and as write targets, SQL INSERT
(V1 path write), ``insertInto`` (V2 ``AppendData``), V2 CTAS / RTAS (analyzed, not executed),
``OverwriteByExpression`` and ``OverwritePartitionsDynamic``. Case format: plan_cases.py.

SQL INSERT into a ushas table is a V2 write (``AppendData``: ``loadTable`` for a write returns the
V2 write target). The overwrite forms are proven twice: executed (``writeTo().overwrite(cond)`` /
``.overwritePartitions()``, the plan captured by a listener, mode ``"capture"``) and analyzed only
(mode ``"plan"``, from ``io.ushas.spark.plan.WritePlans``: the very logical plans
``DataFrameWriterV2`` builds, run through the session's analyzer without executing)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lineage.dataframe import lineage_of_plan, lineage_of_sql

from plan_cases import PlanCase, check, fs  # noqa: E402  (tests/lineage is on sys.path)

PRODUCER = "spark"
pytestmark = pytest.mark.spark

A, B, P = "ushas.linq.a", "ushas.linq.b", "ushas.linq.p"
RF = "ushas.linq.rf"  # a row filter on k, a mask on s


def _w_insert_into(spark: Any, tmp: Path) -> None:
    spark.table(A).selectExpr("k + 1 as k", "w").write.insertInto(B)


def _w_overwrite_by_expression(spark: Any, tmp: Path) -> None:
    from pyspark.sql.functions import col

    spark.table(A).selectExpr("k as id", "upper(w) as dt").writeTo(P).overwrite(col("dt") == "X")


def _w_overwrite_partitions(spark: Any, tmp: Path) -> None:
    spark.table(A).selectExpr("k as id", "upper(w) as dt").writeTo(P).overwritePartitions()


MERGE_B = (f"merge into {B} t using {A} s on t.k = s.k when matched and s.w = 'x' then update set w = upper(s.w) "
           "when not matched then insert (k, w) values (s.k + 1, s.w)")
UPDATE_P = f"update {P} set id = id * 10 where dt = 'x' and id > 1"
DELETE_B = f"delete from {B} where k = 1 and w = 'z'"
DELETE_P = f"delete from {P} where dt = 'gone'"  # whole partitions: planned at analysis (MetadataOnlyDelete)


def _w_merge(spark: Any, tmp: Path) -> None:
    spark.sql(MERGE_B)


def _w_update(spark: Any, tmp: Path) -> None:
    spark.sql(UPDATE_P)


def _w_delete(spark: Any, tmp: Path) -> None:
    spark.sql(DELETE_B)


def _w_delete_partitions(spark: Any, tmp: Path) -> None:
    spark.sql(DELETE_P)


def _p_overwrite_by_expression(spark: Any) -> Any:
    """``spark.table(A).selectExpr(...).writeTo(B).overwrite(col("k") > 0)``, analyzed only."""
    query = spark.table(A).selectExpr("k + 1 as k", "w")
    return spark._jvm.io.ushas.spark.plan.WritePlans.overwriteByExpression(spark._jsparkSession, B, query._jdf,
                                                                          "k > 0")


def _p_overwrite_partitions(spark: Any) -> Any:
    """``spark.table(A).selectExpr(...).writeTo(P).overwritePartitions()``, analyzed only."""
    query = spark.table(A).selectExpr("k as id", "upper(w) as dt")
    return spark._jvm.io.ushas.spark.plan.WritePlans.overwritePartitionsDynamic(spark._jsparkSession, P, query._jdf)


CASES: list[PlanCase] = [
    PlanCase("ushas_read", "Leaf (ushas catalog table)", f"select k, upper(w) as uw from {A} where k > 0",
             {"k": {"ushas.linq.a.k": "I"}, "uw": {"ushas.linq.a.w": "T"}}, fs("FILTER:ushas.linq.a.k")),
    PlanCase("ushas_join_spark_catalog", "Leaf (ushas catalog table)",
             f"select a.w, h.k from {A} a join lin_u2 h on a.k = h.k",
             {"w": {"ushas.linq.a.w": "I"}, "k": {"default.lin_u2.k": "I"}}, fs("JOIN:ushas.linq.a.k", "JOIN:default.lin_u2.k")),
    PlanCase("ushas_insert_sql", "Write (V2 AppendData)", f"insert into {B} select k, concat(w, 'x') from {A}",
             {"k": {"ushas.linq.a.k": "I"}, "w": {"ushas.linq.a.w": "T"}}, target="ushas.linq.b"),
    PlanCase("ushas_append_data", "Write (V2 AppendData)", _w_insert_into,
             {"k": {"ushas.linq.a.k": "T"}, "w": {"ushas.linq.a.w": "I"}}, target="ushas.linq.b", mode="capture"),
    PlanCase("ushas_ctas", "Write (CTAS)",
             f"create table ushas.linq.c1 using parquet as select w, count(k) as n from {A} group by w",
             {"w": {"ushas.linq.a.w": "I"}, "n": {"ushas.linq.a.k": "A"}}, fs("GROUP_BY:ushas.linq.a.w"),
             target="ushas.linq.c1"),
    PlanCase("ushas_rtas", "Write (RTAS)",
             f"create or replace table ushas.linq.c2 using parquet as select k, upper(w) as uw from {A} where k > 0",
             {"k": {"ushas.linq.a.k": "I"}, "uw": {"ushas.linq.a.w": "T"}}, fs("FILTER:ushas.linq.a.k"),
             target="ushas.linq.c2"),
    PlanCase("ushas_overwrite_by_expression", "Write (V2 OverwriteByExpression)", _p_overwrite_by_expression,
             {"k": {"ushas.linq.a.k": "T"}, "w": {"ushas.linq.a.w": "I"}},
             target="ushas.linq.b", mode="plan"),  # the overwrite condition is on the target: no edge
    PlanCase("ushas_overwrite_partitions_dynamic", "Write (V2 OverwritePartitionsDynamic)", _p_overwrite_partitions,
             {"id": {"ushas.linq.a.k": "I"}, "dt": {"ushas.linq.a.w": "T"}}, target="ushas.linq.p", mode="plan"),
    PlanCase("ushas_overwrite_by_expression_executed", "Write (V2 OverwriteByExpression)", _w_overwrite_by_expression,
             {"id": {"ushas.linq.a.k": "I"}, "dt": {"ushas.linq.a.w": "T"}},
             target="ushas.linq.p", mode="capture"),
    PlanCase("ushas_insert_overwrite_static_partition", "Write (V2 OverwriteByExpression)",
             f"insert overwrite {P} partition (dt = '2024-01-01') select k from {A} where k > 0",
             {"id": {"ushas.linq.a.k": "I"}, "dt": {}}, fs("FILTER:ushas.linq.a.k"), target="ushas.linq.p"),
    PlanCase("ushas_create_view", "View definition (CREATE VIEW)",
             f"create view ushas.linq.v1 as select k, upper(w) as uw from {A} where k > 0",
             {"k": {"ushas.linq.a.k": "I"}, "uw": {"ushas.linq.a.w": "T"}}, fs("FILTER:ushas.linq.a.k"),
             target="ushas.linq.v1"),
    PlanCase("ushas_create_view_columns", "View definition (CREATE VIEW)",
             f"create or replace view ushas.linq.v2 (key, name) as select k, concat(w, '!') from {A}",
             {"key": {"ushas.linq.a.k": "I"}, "name": {"ushas.linq.a.w": "T"}}, target="ushas.linq.v2"),
    PlanCase("ushas_alter_view", "View definition (ALTER VIEW AS)",
             f"alter view ushas.linq.v0 as select w, k * 2 as k2 from {A}",
             {"w": {"ushas.linq.a.w": "I"}, "k2": {"ushas.linq.a.k": "T"}}, target="ushas.linq.v0"),
    PlanCase("ushas_read_view", "View", "select uw from ushas.linq.v0r",
             {"uw": {"ushas.linq.a.w": "T"}}, fs("FILTER:ushas.linq.a.k")),
    # row filters and column masks (docs/governance.md): the filter's columns are INDIRECT FILTER inputs of
    # every read, a masked column a TRANSFORMATION of what its mask reads
    PlanCase("ushas_read_row_filter", "Leaf (ushas catalog table)", f"select w from {RF}",
             {"w": {"ushas.linq.rf.w": "I"}}, fs("FILTER:ushas.linq.rf.k")),
    PlanCase("ushas_read_column_mask", "Leaf (ushas catalog table)", f"select k, s from {RF} where w = 'x'",
             {"k": {"ushas.linq.rf.k": "I"}, "s": {"ushas.linq.rf.s": "T"}},
             fs("FILTER:ushas.linq.rf.k", "FILTER:ushas.linq.rf.w"), scoped={"s": fs("CONDITIONAL:ushas.linq.rf.w")}),
    PlanCase("ushas_insert_from_masked", "Write (V2 AppendData)", f"insert into {B} select k, s from {RF}",
             {"k": {"ushas.linq.rf.k": "I"}, "w": {"ushas.linq.rf.s": "T"}},
             fs("FILTER:ushas.linq.rf.k"), scoped={"w": fs("CONDITIONAL:ushas.linq.rf.w")}, target="ushas.linq.b"),
    PlanCase("ushas_overwrite_partitions_executed", "Write (V2 OverwritePartitionsDynamic)", _w_overwrite_partitions,
             {"id": {"ushas.linq.a.k": "I"}, "dt": {"ushas.linq.a.w": "T"}}, target="ushas.linq.p", mode="capture"),
    # MERGE / UPDATE / DELETE on a catalog table: Spark rewrites them (ReplaceData over MergeRows / a Project /
    # a Filter of the target's rows); the lineage is the statement's, as for the analyzed statements of
    # test_plan_lineage_writes.py: SET / INSERT values DIRECT, WHEN conditions CONDITIONAL on the column they
    # decide, the ON condition JOIN, the WHERE FILTER; the copied rows, the group filter, the file column
    # and the operation code are no lineage. Analyzed (sql) and executed (capture: the listener's plan).
    PlanCase("ushas_merge", "Write (V2 ReplaceData)", MERGE_B,
             {"w": {"ushas.linq.a.w": "T"}, "k": {"ushas.linq.a.k": "T"}},
             fs("JOIN:ushas.linq.a.k", "JOIN:ushas.linq.b.k"), scoped={"w": fs("CONDITIONAL:ushas.linq.a.w")},
             target="ushas.linq.b"),
    PlanCase("ushas_merge_by_source", "Write (V2 ReplaceData)",
             f"merge into {B} t using {A} s on t.k = s.k when matched then delete "
             "when not matched by source and t.w = 'old' then update set w = 'gone'",
             {"w": {}}, fs("JOIN:ushas.linq.a.k", "JOIN:ushas.linq.b.k"),
             scoped={"w": fs("CONDITIONAL:ushas.linq.b.w")}, target="ushas.linq.b"),
    PlanCase("ushas_update", "Write (V2 ReplaceData)", UPDATE_P, {"id": {"ushas.linq.p.id": "T"}},
             fs("FILTER:ushas.linq.p.dt", "FILTER:ushas.linq.p.id"), target="ushas.linq.p"),
    PlanCase("ushas_delete", "Write (V2 ReplaceData)", DELETE_B, {},
             fs("FILTER:ushas.linq.b.k", "FILTER:ushas.linq.b.w"), target="ushas.linq.b"),
    # a DELETE of whole partitions: DeleteFromTableWithFilters from the analysis on (io.ushas.spark.MetadataOnlyDelete),
    # the same lineage as the rewrite's: the WHERE columns FILTER, nothing written column by column
    PlanCase("ushas_delete_partitions", "Write (V2 DeleteFromTableWithFilters)", DELETE_P, {},
             fs("FILTER:ushas.linq.p.dt"), target="ushas.linq.p"),
    PlanCase("ushas_delete_partitions_executed", "Write (V2 DeleteFromTableWithFilters)", _w_delete_partitions, {},
             fs("FILTER:ushas.linq.p.dt"), target="ushas.linq.p", mode="capture"),
    PlanCase("ushas_merge_executed", "Write (V2 ReplaceData)", _w_merge,
             {"w": {"ushas.linq.a.w": "T"}, "k": {"ushas.linq.a.k": "T"}},
             fs("JOIN:ushas.linq.a.k", "JOIN:ushas.linq.b.k"), scoped={"w": fs("CONDITIONAL:ushas.linq.a.w")},
             target="ushas.linq.b", mode="capture"),
    PlanCase("ushas_update_executed", "Write (V2 ReplaceData)", _w_update, {"id": {"ushas.linq.p.id": "T"}},
             fs("FILTER:ushas.linq.p.dt", "FILTER:ushas.linq.p.id"), target="ushas.linq.p", mode="capture"),
    PlanCase("ushas_delete_executed", "Write (V2 ReplaceData)", _w_delete, {},
             fs("FILTER:ushas.linq.b.k", "FILTER:ushas.linq.b.w"), target="ushas.linq.b", mode="capture"),
]


@pytest.fixture(scope="module")
def ushas(spark: Any) -> Any:
    spark.sql("create namespace if not exists ushas.linq")
    spark.sql(f"create table if not exists {A} (k int, w string) using parquet")
    spark.sql(f"create table if not exists {B} (k int, w string) using parquet")
    spark.sql(f"create table if not exists {P} (id int, dt string) using parquet partitioned by (dt)")
    spark.sql("create table if not exists spark_catalog.default.lin_u2 (k int) using parquet")
    spark.sql(f"create table if not exists {RF} (k int, w string, s string) using parquet")
    spark.sql("call ushas.system.set_row_filter('linq.rf', 'k > 0')").collect()
    spark.sql("call ushas.system.set_column_mask('linq.rf', 's', \"CASE WHEN w = 'open' THEN s ELSE '***' END\")") \
        .collect()
    spark.sql(f"create or replace view ushas.linq.v0 as select k from {A}")
    spark.sql(f"create or replace view ushas.linq.v0r as select k, upper(w) as uw from {A} where k > 0")
    return spark


def _captured_write(spark: Any, case: PlanCase, tmp: Path) -> Any:
    """Execute the case's write and resolve the captured plan whose root is the case's operator."""
    root = case.operator.split()[-1].rstrip(")")
    capture = spark._jvm.io.ushas.spark.plan.PlanCapture(16)
    manager = spark._jsparkSession.listenerManager()
    manager.register(capture)
    try:
        case.query(spark, tmp)
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
        roots = [capture.rootName(i) for i in range(capture.size())]
        assert root in roots, roots
        return lineage_of_plan(spark, capture.plan(roots.index(root)))
    finally:
        manager.unregister(capture)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_plan_lineage_ushas(ushas: Any, case: PlanCase, tmp_path: Path) -> None:
    if case.mode == "sql":
        result = lineage_of_sql(ushas, case.query)  # type: ignore[arg-type]
    elif case.mode == "plan":
        result = lineage_of_plan(ushas, case.query(ushas))  # type: ignore[operator]
        assert result.operation == case.operator.split()[-1].rstrip(")")
    else:
        result = _captured_write(ushas, case, tmp_path)
    check(case, result, str(tmp_path))
