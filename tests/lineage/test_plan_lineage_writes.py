"""Table-driven column lineage of writes (case format: plan_cases.py): V1 and Hive INSERT, CTAS,
MERGE / UPDATE / DELETE (analyzed), INSERT OVERWRITE DIRECTORY, and DataFrameWriter writes executed
and captured by a listener; plus the datasets a plan reads and writes. ``CASES`` feeds
docs/lineage-coverage.md (tests/lineage/gen_coverage.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from plan_cases import H, P, T, U, PlanCase, check, create_case_tables, fs, leaf_name, lineage_of_case

PRODUCER = "spark"
pytestmark = pytest.mark.spark


def _w_save_path(spark: Any, tmp: Path) -> None:
    spark.table(T).selectExpr("x + 1 as x1", "y").write.mode("overwrite").parquet(str(tmp / "out"))


def _w_save_uri(spark: Any, tmp: Path) -> None:
    """The target spelled ``file:///…/`` (empty authority, trailing slash): one dataset with the
    ``file:/…`` a later scan of it reports."""
    spark.table(T).select("x").write.mode("overwrite").parquet(f"file://{tmp}/uri/")


def _w_insert_into(spark: Any, tmp: Path) -> None:
    spark.table(H).selectExpr("k", "w", "cast(k as double) as v").select("k", "v", "w").write.insertInto(U)


def _w_save_as_table(spark: Any, tmp: Path) -> None:
    spark.table(U).groupBy("w").count().write.mode("overwrite").saveAsTable("lin.w_counts")


def _w_json_save(spark: Any, tmp: Path) -> None:
    spark.table(U).select("w").write.mode("overwrite").format("json").save(str(tmp / "j"))


CASES: list[PlanCase] = [
    PlanCase("insert_v1", "Write (V1 INSERT)", f"insert into {U} select x, cast(x as double), y from {T}",
             {"k": {"lin.t.x": "I"}, "v": {"lin.t.x": "T"}, "w": {"lin.t.y": "I"}}, target="lin.u"),
    PlanCase("insert_overwrite_static", "Write (V1 INSERT)",
             f"insert overwrite {P} partition (dt = '2024-01-01') select x from {T}",
             {"id": {"lin.t.x": "I"}, "dt": {}}, target="lin.p"),
    PlanCase("insert_dynamic_partition", "Write (V1 INSERT)", f"insert into {P} partition (dt) select x, y from {T}",
             {"id": {"lin.t.x": "I"}, "dt": {"lin.t.y": "I"}}, target="lin.p"),
    PlanCase("insert_self", "Write (V1 INSERT)", f"insert into {U} select k + 1, v, w from {U} where v > 0",
             {"k": {"lin.u.k": "T"}, "v": {"lin.u.v": "I"}, "w": {"lin.u.w": "I"}}, fs("FILTER:lin.u.v"),
             target="lin.u"),
    PlanCase("insert_hive", "Write (Hive INSERT)", f"insert into {H} select k, w from {U} where v > 0",
             {"k": {"lin.u.k": "I"}, "w": {"lin.u.w": "I"}}, fs("FILTER:lin.u.v"), target="lin.h"),
    PlanCase("ctas", "Write (CTAS)", f"create table lin.ctas1 using parquet as select y, sum(x) as s from {T} group by y",
             {"y": {"lin.t.y": "I"}, "s": {"lin.t.x": "A"}}, fs("GROUP_BY:lin.t.y"), target="lin.ctas1"),
    PlanCase("ctas_hive", "Write (CTAS)", f"create table lin.ctas2 stored as textfile as select k, w from {U}",
             {"k": {"lin.u.k": "I"}, "w": {"lin.u.w": "I"}}, target="lin.ctas2"),
    # MERGE / UPDATE / DELETE: analyzed plans (spark_catalog parquet tables analyze them but
    # refuse to execute them; the lineage is the statement's, from its analyzed plan)
    PlanCase("merge", "Write (MERGE)",
             f"merge into lin.mt using {U} on mt.k = u.k when matched and u.v > 0 then update set v = cast(u.v as int) + 1 "
             "when not matched then insert (k, v) values (u.k, 0)",
             {"v": {"lin.u.v": "T"}, "k": {"lin.u.k": "I"}}, fs("JOIN:lin.u.k", "JOIN:lin.mt.k"),
             scoped={"v": fs("CONDITIONAL:lin.u.v")}, target="lin.mt"),
    PlanCase("update", "Write (UPDATE)", "update lin.mt set v = v + 1 where k = 1", {"v": {"lin.mt.v": "T"}},
             fs("FILTER:lin.mt.k"), target="lin.mt"),
    PlanCase("delete", "Write (DELETE)", "delete from lin.mt where k = 1", {}, fs("FILTER:lin.mt.k"), target="lin.mt"),
    PlanCase("insert_directory", "Write (path)", "insert overwrite directory '/tmp/ushas-lin-dir' using parquet "
             f"select x from {T}", {"x": {"lin.t.x": "I"}}, target="/tmp/ushas-lin-dir"),
    PlanCase("df_save_path", "Write (DataFrameWriter.save(path))", _w_save_path,
             {"x1": {"lin.t.x": "T"}, "y": {"lin.t.y": "I"}}, target="{tmp}/out", mode="capture"),
    PlanCase("df_save_json", "Write (DataFrameWriter.save(path))", _w_json_save,
             {"w": {"lin.u.w": "I"}}, target="{tmp}/j", mode="capture"),
    PlanCase("df_save_uri", "Write (DataFrameWriter.save(path))", _w_save_uri,
             {"x": {"lin.t.x": "I"}}, target="{tmp}/uri", mode="capture"),
    PlanCase("df_insert_into", "Write (V1 INSERT)", _w_insert_into,
             {"k": {"lin.h.k": "I"}, "v": {"lin.h.k": "T"}, "w": {"lin.h.w": "I"}}, target="lin.u", mode="capture"),
    PlanCase("df_save_as_table", "Write (CTAS)", _w_save_as_table,
             {"w": {"lin.u.w": "I"}, "count": {}}, fs("GROUP_BY:lin.u.w"), target="lin.w_counts", mode="capture"),
]


@pytest.fixture(scope="module")
def lin(spark: Any) -> Any:
    return create_case_tables(spark)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_plan_lineage(lin: Any, case: PlanCase, tmp_path: Path) -> None:
    check(case, lineage_of_case(lin, case, tmp_path), str(tmp_path))


@pytest.mark.parametrize("sql, reads, writes", [
    (f"insert into {U} select x, cast(x as double), t.y from {T} join lin.vw using (x)",
     {"lin.t", "lin.vw"}, {"lin.u"}),
    ("delete from lin.mt where k = 1", {"lin.mt"}, {"lin.mt"}),
    (f"select * from {H}", {"lin.h"}, set()),
])
def test_relations(lin: Any, sql: str, reads: set[str], writes: set[str]) -> None:
    from lineage.dataframe import analyze_sql, plan_document
    from lineage.plan_datasets import relations

    r, w = relations(plan_document(lin, analyze_sql(lin, sql)))
    assert {leaf_name(d) for d in r} == reads
    assert {leaf_name(d) for d in w} == writes
