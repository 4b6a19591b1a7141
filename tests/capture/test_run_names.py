"""Captured runs are named like OpenLineage jobs, ``<app>.<command>.<target>``, with their statement
kind; queries that only read (collect, count, show) are ``query`` runs of their inputs (table-driven, shared session)."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from lineage.capture import flush_spark
from lineage.model import Dataset
from lineage.run_names import best_command, command_of, run_name
from lineage.store import Access, Run
from lineage.tables import open_lineage_store
from ushas_catalog.cli import main


@pytest.mark.parametrize("app, command, writes, reads, job, kind", [
    ("nightly", "insert_into", [Dataset.table("ushas", "sales", "orders")], [], "nightly.insert_into.ushas_sales_orders",
     "INSERT INTO"),
    ("Nightly Load!", "insert_overwrite", [Dataset.path("file:/tmp/x/users", "parquet")], [],
     "Nightly_Load.insert_overwrite.tmp_x_users", "INSERT OVERWRITE"),
    ("nightly", None, [], [Dataset.table("ushas", "sales", "orders"), Dataset.path("s3a://b/k")],
     "nightly.query.ushas_sales_orders", "QUERY"),
    ("", None, [], [], "spark.query", "QUERY"),
])
def test_run_name(app: str, command: str | None, writes: list[Dataset], reads: list[Dataset], job: str,
                  kind: str) -> None:
    name = run_name(app, command, writes, reads)
    assert (name.job, name.kind) == (job, kind)


@pytest.mark.parametrize("below, command", [
    (["Project", "MergeRows", "Join"], "merge_into"),  # MERGE INTO, as Spark rewrites it for a catalog table
    (["Project", "Filter", "DataSourceV2Relation"], "delete_from"),
    (["Project", "DataSourceV2Relation"], "update"),
])
def test_a_row_level_rewrite_is_named_by_its_statement(below: list[str], command: str) -> None:
    from types import SimpleNamespace

    nodes = [SimpleNamespace(kind=k, children=(i + 1,) if i + 1 < len(below) else ()) for i, k in enumerate(below)]
    root = SimpleNamespace(kind="ReplaceData", children=(0,))
    assert command_of(root, SimpleNamespace(nodes=nodes)) == command
    assert run_name("app", command, [Dataset.table("ushas", "s", "t")], []).job == f"app.{command}.ushas_s_t"


def test_a_ctas_is_named_by_its_create_not_its_inner_write() -> None:
    assert best_command(["create_table_as_select", "insert_into"]) == "create_table_as_select"
    assert best_command(["insert_into", "insert_overwrite"]) == "insert_overwrite"
    assert best_command([None, None]) is None


def _runs_of(spark: Any, store: Any, action: Callable[[], Any]) -> list[Run]:
    assert flush_spark(spark, 120).flushed
    before = {r.run_id for r in store.runs_between()}
    action()
    assert flush_spark(spark, 120).flushed
    return [r for r in store.runs_between() if r.run_id not in before]


def test_captured_runs_have_job_names(spark: Any, spark_dirs: dict[str, Path],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{spark_dirs['store']}"
    store = open_lineage_store(uri, "default", {"ushas": "ushas"})
    db = "rn_" + uuid.uuid4().hex[:8]
    app = spark.sparkContext.appName  # "ushas-tests"
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    try:
        spark.sql(f"CREATE TABLE ushas.{db}.sink (id BIGINT, amount DOUBLE) USING parquet")
        src = spark.range(3).selectExpr("id", "CAST(id AS DOUBLE) AS amount")
        t = f"ushas_{db}"
        forms: list[tuple[Callable[[], Any], str, str, str | None]] = [
            (lambda: spark.sql(f"INSERT INTO ushas.{db}.sink SELECT id, id * 2.0 FROM range(2)"),
             f"{app}.insert_into.{t}_sink", "INSERT INTO", f"INSERT INTO ushas.{db}.sink"),
            (lambda: spark.sql(f"INSERT OVERWRITE ushas.{db}.sink SELECT id, 1.0 FROM range(2)"),
             f"{app}.insert_overwrite.{t}_sink", "INSERT OVERWRITE", "INSERT OVERWRITE"),
            (lambda: spark.sql(f"CREATE TABLE ushas.{db}.ctas USING parquet AS SELECT id FROM range(2)"),
             f"{app}.create_table_as_select.{t}_ctas", "CREATE TABLE AS SELECT", f"CREATE TABLE ushas.{db}.ctas"),
            (lambda: src.write.insertInto(f"ushas.{db}.sink"), f"{app}.insert_into.{t}_sink", "INSERT INTO", None),
            (lambda: src.writeTo(f"ushas.{db}.written").create(),
             f"{app}.create_table_as_select.{t}_written", "CREATE TABLE AS SELECT", None),
            (lambda: spark.table(f"ushas.{db}.sink").where("id > 0").collect(), f"{app}.query.{t}_sink", "QUERY",
             None),
            (lambda: spark.table(f"ushas.{db}.sink").count(), f"{app}.query.{t}_sink", "QUERY", None),
            (lambda: spark.sql(f"SELECT * FROM ushas.{db}.sink").show(), f"{app}.query.{t}_sink", "QUERY",
             f"SELECT * FROM ushas.{db}.sink"),
        ]
        for action, job, kind, sql in forms:
            runs = _runs_of(spark, store, action)
            assert [(r.job, r.kind) for r in runs] == [(job, kind)], [(r.job, r.kind, r.operation) for r in runs]
            if sql is not None:
                assert (runs[0].sql or "").startswith(sql), runs[0].sql
            accesses = {(acc, ref.name) for acc, ref in store.run_datasets(runs[0].run_id)}
            if kind == "QUERY":
                assert accesses == {(Access.READ, f"ushas.{db}.sink")}
        capsys.readouterr()
        assert main(["--uri", uri, "--json", "lineage", "runs", f"ushas.{db}.sink"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert {(r["access"], r["job"], r["kind"]) for r in rows} >= {
            ("write", f"{app}.insert_overwrite.{t}_sink", "INSERT OVERWRITE"),
            ("read", f"{app}.query.{t}_sink", "QUERY")}
    finally:
        spark.sql(f"DROP NAMESPACE IF EXISTS ushas.{db} CASCADE")
