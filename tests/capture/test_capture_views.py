"""End to end with the shared SparkSession and the lineage listener (issue 16): view definitions
are lineage, an overwrite of a static partition has no self-edge and no phantom read, and a path
that lies in a table's location is that table (in any spelling, also when the path was captured
before the table existed)."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from lineage.capture import flush_spark
from lineage.query import LineageQueries
from lineage.store import Access
from lineage.tables import open_lineage_store

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def env(spark, spark_dirs: dict[str, Path]) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    db = f"lv_{tag}"
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.orders (id BIGINT, amount DOUBLE, status STRING, dt STRING) "
              "USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.orders VALUES (1, 10.0, 'ok', '2024-01-01'), (2, 3.0, 'ko', '2024-01-02')")
    spark.sql(f"CREATE TABLE ushas.{db}.staging (id BIGINT, amount DOUBLE, status STRING) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.staging VALUES (7, 70.0, 'ok')")
    store = open_lineage_store(f"sqlite:///{spark_dirs['store']}", "default", {"ushas": "ushas"})
    return {"db": db, "root": spark_dirs["root"], "tag": tag, "store": store, "q": LineageQueries(store)}


def settle(spark) -> None:
    assert flush_spark(spark, 120).flushed


def names(q: LineageQueries, answer) -> set[str]:
    return {q.node_name(n) for n in answer.columns()}


def location(spark, table: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return next(r.data_type for r in rows if r.col_name == "Location")


def test_views_have_lineage_and_walks_pass_through_them(spark, env: dict[str, Any]) -> None:
    db, q = env["db"], env["q"]
    spark.sql(f"CREATE VIEW ushas.{db}.big_orders AS SELECT id, amount * 2 AS doubled, status "
              f"FROM ushas.{db}.orders WHERE amount > 5")
    spark.sql(f"CREATE TABLE ushas.{db}.report (id BIGINT, doubled DOUBLE) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.report SELECT id, doubled FROM ushas.{db}.big_orders")
    settle(spark)
    view_up = q.answer_json(q.upstream(f"ushas.{db}.big_orders.doubled"), explain=True)
    assert {c["name"] for c in view_up["columns"]} == {f"ushas.{db}.orders.amount"}
    edge = next(e for e in view_up["paths"][f"ushas.{db}.orders.amount"])
    assert edge["subtype"] == "TRANSFORMATION" and "amount" in edge["expression"]
    assert {e["subtype"] for e in view_up["edges"]} >= {"TRANSFORMATION", "FILTER"}  # WHERE amount > 5
    # a table written from the view: upstream reaches the view AND the table under it
    up = names(q, q.upstream(f"ushas.{db}.report.doubled"))
    assert {f"ushas.{db}.big_orders.doubled", f"ushas.{db}.orders.amount"} <= up
    down = names(q, q.downstream(f"ushas.{db}.orders.amount"))
    assert {f"ushas.{db}.big_orders.doubled", f"ushas.{db}.report.doubled"} <= down
    impact = q.answer_json(q.impact(f"ushas.{db}.orders.status"))
    assert f"ushas.{db}.big_orders.status" in {c["name"] for c in impact["columns"]}
    # the run reading the view lists the view and the table under it; the view run writes the view
    (write,) = [r for acc, r in q.runs(f"ushas.{db}.report") if acc is Access.WRITE]
    detail = q.run(write.run_id)
    assert {d["name"] for d in detail["inputs"]} == {f"ushas.{db}.big_orders", f"ushas.{db}.orders"}
    view_runs = q.runs(f"ushas.{db}.big_orders", access=Access.WRITE)
    assert len(view_runs) == 1


def test_alter_and_replace_view_are_new_versions(spark, env: dict[str, Any]) -> None:
    db, q = env["db"], env["q"]
    spark.sql(f"CREATE VIEW ushas.{db}.v AS SELECT id FROM ushas.{db}.orders")
    spark.sql(f"ALTER VIEW ushas.{db}.v AS SELECT id, upper(status) AS s FROM ushas.{db}.orders")
    spark.sql(f"CREATE OR REPLACE VIEW ushas.{db}.v AS SELECT id, lower(status) AS s, dt FROM ushas.{db}.orders")
    settle(spark)
    runs = q.runs(f"ushas.{db}.v", access=Access.WRITE)
    assert len(runs) == 3
    assert names(q, q.upstream(f"ushas.{db}.v.s")) == {f"ushas.{db}.orders.status"}
    assert names(q, q.upstream(f"ushas.{db}.v.dt")) == {f"ushas.{db}.orders.dt"}
    # the definition in force: the latest one in the window asked
    now = q.answer_json(q.upstream(f"ushas.{db}.v.s"), explain=True)
    assert now["edges"][0]["runs"] == [str(runs[2][1].run_id)]
    assert "lower" in now["paths"][f"ushas.{db}.orders.status"][0]["expression"]
    then = q.answer_json(q.upstream(f"ushas.{db}.v.s", until=runs[1][1].end_ms), explain=True)
    assert then["edges"][0]["runs"] == [str(runs[1][1].run_id)]
    assert "upper" in then["paths"][f"ushas.{db}.orders.status"][0]["expression"]
    assert names(q, q.upstream(f"ushas.{db}.v.dt", until=runs[1][1].end_ms)) == set()
    down = q.answer_json(q.downstream(f"ushas.{db}.orders.status"))
    assert [e["runs"] for e in down["edges"] if e["target"] == f"ushas.{db}.v.s"] == [[str(runs[2][1].run_id)]]
    # a temporary view is not a dataset: what reads it sees through it, as before
    spark.sql(f"CREATE TEMP VIEW tv_{env['tag']} AS SELECT id, amount FROM ushas.{db}.orders")
    spark.sql(f"CREATE TABLE ushas.{db}.from_temp (id BIGINT, amount DOUBLE) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.from_temp SELECT id, amount FROM tv_{env['tag']}")
    settle(spark)
    assert names(q, q.upstream(f"ushas.{db}.from_temp.amount")) == {f"ushas.{db}.orders.amount"}


def test_static_partition_overwrite_has_no_self_edge_nor_phantom_read(spark, env: dict[str, Any]) -> None:
    db, q = env["db"], env["q"]
    spark.sql(f"INSERT OVERWRITE ushas.{db}.orders PARTITION (dt = '2024-01-01') "
              f"SELECT id, amount, status FROM ushas.{db}.staging")
    settle(spark)
    writes = [r for acc, r in q.runs(f"ushas.{db}.orders") if acc is Access.WRITE]
    detail = q.run(writes[-1].run_id)
    assert "OVERWRITE" in (writes[-1].sql or "")
    assert [d["name"] for d in detail["inputs"]] == [f"ushas.{db}.staging"]
    assert [d["name"] for d in detail["outputs"]] == [f"ushas.{db}.orders"]
    assert not [e for e in detail["edges"] if e["source"].startswith(f"ushas.{db}.orders.")]
    up = names(q, q.upstream(f"ushas.{db}.orders.amount"))
    assert f"ushas.{db}.orders.dt" not in up and f"ushas.{db}.staging.amount" in up
    # the overwrite's target is not listed as read by that run
    reads = {r.run_id for acc, r in q.runs(f"ushas.{db}.orders") if acc is Access.READ}
    assert writes[-1].run_id not in reads


def test_a_table_location_read_by_path_is_the_table(spark, env: dict[str, Any]) -> None:
    db, q, store = env["db"], env["q"], env["store"]
    loc = location(spark, f"ushas.{db}.staging")
    spark.sql(f"CREATE TABLE ushas.{db}.copy (id BIGINT, amount DOUBLE) USING parquet")
    spark.read.parquet(loc).selectExpr("id", "amount * 2 AS amount").write.insertInto(f"ushas.{db}.copy")
    settle(spark)
    up = names(q, q.upstream(f"ushas.{db}.copy.amount"))
    assert up == {f"ushas.{db}.staging.amount"}
    table_id = q.resolve_dataset(f"ushas.{db}.staging")
    plain = loc[len("file:"):] if loc.startswith("file:") else loc
    for spelling in (plain, f"file:{plain}", f"file://{plain}", f"{plain}/", f"file:{plain}/"):
        assert q.resolve_dataset(spelling) == table_id, spelling
    # df.lineage() names the table too, keeping the path
    import lineage.dataframe  # noqa: F401 - installs df.lineage()

    result = spark.read.parquet(f"file://{plain}/").selectExpr("amount + 1 AS a").lineage()
    (leaf,) = result.direct_sources("a")
    assert leaf.dataset.name == f"ushas.{db}.staging" and leaf.name == "amount"
    assert leaf.dataset.uri == f"file:{plain}"
    # the path is kept on the stored dataset (an OpenLineage symlink)
    (write,) = [r for acc, r in q.runs(f"ushas.{db}.copy") if acc is Access.WRITE]
    refs = [ref for acc, ref in store.run_datasets(write.run_id) if acc is Access.READ]
    assert [r.key for r in refs] == [table_id]
    assert refs[0].dataset.name == f"ushas.{db}.staging" and refs[0].dataset.uri.endswith("staging")


def test_a_path_written_before_its_table_existed_is_linked(spark, env: dict[str, Any]) -> None:
    db, q = env["db"], env["q"]
    path = env["root"] / f"pre_{env['tag']}"
    spark.table(f"ushas.{db}.staging").selectExpr("id", "status AS who").write.parquet(str(path))
    settle(spark)
    as_path = q.resolve_dataset(str(path))
    assert isinstance(as_path, str)  # no table there yet: a path dataset
    spark.sql(f"CREATE TABLE ushas.{db}.pre (id BIGINT, who STRING) USING parquet LOCATION '{path}'")
    table_id = q.resolve_dataset(f"ushas.{db}.pre")
    assert q.resolve_dataset(f"file://{path}/") == table_id
    up = q.answer_json(q.upstream(f"ushas.{db}.pre.who"))
    assert up["start"] == [f"ushas.{db}.pre.who"]
    assert {c["name"] for c in up["columns"]} == {f"ushas.{db}.staging.status"}
    down = names(q, q.downstream(f"ushas.{db}.staging.status"))
    assert f"ushas.{db}.pre.who" in down
    assert [acc for acc, _ in q.runs(f"ushas.{db}.pre")] == [Access.WRITE]
