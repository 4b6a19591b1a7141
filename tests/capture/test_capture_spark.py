"""End to end with the shared SparkSession: the listener captures a three-stage pipeline
(raw in the ushas catalog -> cleaned, a Hive table -> report, a parquet path) and the queries
answer from what it stored; failed queries, a store outage and a rename."""
from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest
from pyspark.errors import SparkRuntimeException

from lineage.capture import LineageCapture, flush_spark
from lineage.query import LineageQueries
from lineage.store import Access, LineageStore, RunStatus
from lineage.tables import open_lineage_store

pytestmark = pytest.mark.spark


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    """Poll ``check`` until it returns something truthy (the listener hands over asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def env(spark, spark_dirs: dict[str, Path]) -> dict[str, Any]:
    from ushas_catalog.spark.bridge import REGISTRY

    uri = f"sqlite:///{spark_dirs['store']}"
    tag = uuid.uuid4().hex[:8]
    out = spark_dirs["root"] / f"report_{tag}"
    return {"uri": uri, "tag": tag, "db": f"lin_{tag}", "hive": f"cleaned_{tag}", "report": out,
            "hub": REGISTRY.lineage(), "root": spark_dirs["root"]}


def store_of(env: dict[str, Any]) -> LineageStore:
    return open_lineage_store(env["uri"], "default", {"ushas": "ushas"})


def written(store: LineageStore, name: str) -> list:
    q = LineageQueries(store)
    key = q.resolve_dataset(name)
    return [] if key is None else store.accesses(key, access=Access.WRITE)


def path_name(store: LineageStore, path: Path) -> str:
    """The dataset name Spark gave a path we wrote (file:/... or file:///...)."""
    for run in store.runs_between():
        for acc, ref in store.run_datasets(run.run_id):
            if ref.dataset.uri and ref.dataset.uri.rstrip("/").endswith(str(path)):
                return ref.name
    return ""


@pytest.fixture(scope="module")
def pipeline(spark, env: dict[str, Any]) -> dict[str, Any]:
    db, hive, report = env["db"], env["hive"], env["report"]
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.raw (id BIGINT, amount DOUBLE, country STRING) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.raw VALUES (1, 10.0, 'fr'), (2, -1.0, 'fr'), (3, 5.5, 'in')")
    spark.sql(f"CREATE TABLE default.{hive} (id BIGINT, amount DOUBLE, country STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO default.{hive} SELECT id, amount * 100 AS amount, country "
              f"FROM ushas.{db}.raw WHERE amount > 0")
    (spark.table(f"default.{hive}").groupBy("country").agg({"amount": "sum"})
     .withColumnRenamed("sum(amount)", "total").write.mode("overwrite").parquet(str(report)))
    store = store_of(env)
    env["hub"].flush(30)
    name = wait_for(lambda: path_name(store, report), "the report write to be captured")
    wait_for(lambda: written(store, f"spark_catalog.default.{hive}"), "the cleaning run")
    return {"store": store, "report_name": name, "q": LineageQueries(store)}


def cols(q: LineageQueries, answer) -> set[str]:
    return {q.node_name(n) for n in answer.columns()}


def test_upstream_of_the_report(pipeline: dict[str, Any], env: dict[str, Any]) -> None:
    q, report, db, hive = pipeline["q"], pipeline["report_name"], env["db"], env["hive"]
    up = cols(q, q.upstream(f"{report}.total"))
    assert {f"spark_catalog.default.{hive}.amount", f"ushas.{db}.raw.amount"} <= up
    assert f"spark_catalog.default.{hive}.country" in up  # GROUP BY country
    one = cols(q, q.upstream(f"{report}.total", depth=1))
    assert f"ushas.{db}.raw.amount" not in one and f"spark_catalog.default.{hive}.amount" in one


def test_downstream_and_impact_of_raw_amount(pipeline: dict[str, Any], env: dict[str, Any]) -> None:
    q, report, db, hive = pipeline["q"], pipeline["report_name"], env["db"], env["hive"]
    down = cols(q, q.downstream(f"ushas.{db}.raw.amount"))
    assert {f"spark_catalog.default.{hive}.amount", f"{report}.total"} <= down
    impact = q.answer_json(q.impact(f"ushas.{db}.raw.amount"), explain=True)
    edge = next(e for e in impact["edges"] if e["target"] == f"spark_catalog.default.{hive}.amount"
                and e["source"] == f"ushas.{db}.raw.amount")
    assert edge["subtype"] == "TRANSFORMATION" and len(edge["runs"]) == 1
    path = impact["paths"][f"{report}.total"]
    assert [h["target"] for h in path] == [f"spark_catalog.default.{hive}.amount", f"{report}.total"]
    assert "amount" in path[0]["expression"]


def test_runs_and_run(pipeline: dict[str, Any], env: dict[str, Any]) -> None:
    q, db, hive = pipeline["q"], env["db"], env["hive"]
    rows = q.runs(f"spark_catalog.default.{hive}")
    accesses = [acc for acc, _ in rows]
    assert accesses.count(Access.WRITE) == 1 and accesses.count(Access.READ) >= 1  # one INSERT: one run
    write = next(r for acc, r in rows if acc is Access.WRITE)
    assert write.status is RunStatus.COMPLETE and "INSERT INTO default." in (write.sql or "")
    assert write.application_name == "ushas-tests" and write.user
    detail = q.run(write.run_id)
    assert [d["name"] for d in detail["inputs"]] == [f"ushas.{db}.raw"]
    assert [d["name"] for d in detail["outputs"]] == [f"spark_catalog.default.{hive}"]
    assert any(e["subtype"] == "FILTER" for e in detail["edges"])
    # the V1 INSERT into the ushas table is one run, not two
    raw_writes = written(pipeline["store"], f"ushas.{db}.raw")
    assert len(raw_writes) == 1


def test_failed_query_is_recorded_as_failed(spark, pipeline: dict[str, Any], env: dict[str, Any]) -> None:
    target = env["root"] / f"failed_{env['tag']}"
    with pytest.raises(SparkRuntimeException) as failed:
        spark.sql(f"SELECT id, assert_true(id < 0) AS ok FROM default.{env['hive']}").write.parquet(str(target))
    assert failed.value.getCondition() == "USER_RAISED_EXCEPTION" and "is not true" in str(failed.value)
    store = pipeline["store"]

    def failed_run():
        return [r for r in store.runs_between() if r.status is RunStatus.FAIL and str(target) in
                " ".join(ref.name for _, ref in store.run_datasets(r.run_id))]

    env["hub"].flush(30)
    (run,) = wait_for(failed_run, "the failed run")
    assert run.error and "is not true" in run.error


def test_store_outage_loses_no_user_data_and_counts_drops_exactly(spark, pipeline: dict[str, Any],
                                                                  env: dict[str, Any], spark_dirs) -> None:
    hub = env["hub"]
    capture: LineageCapture = hub.capture(env["uri"], "default")
    # everything earlier tests ran is stored first (Spark's listener bus, the JVM queue, this queue):
    # nothing but the five writes below can land in the outage window
    settled = flush_spark(spark, 120)
    assert settled.flushed, settled
    before = capture.stats()
    assert before.pending == 0
    store_before = pipeline["store"].status()
    settings = capture.settings
    capture.reconfigure(replace(settings, max_pending=2, retry_timeout_s=600))
    lock = sqlite3.connect(str(spark_dirs["store"]), timeout=30, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")  # the store refuses every write: an outage for the capture
    paths = [env["root"] / f"outage_{env['tag']}_{i}" for i in range(5)]
    try:
        for i, p in enumerate(paths):
            spark.table(f"default.{env['hive']}").selectExpr("id", f"amount + {i} AS amount").write.parquet(str(p))
        # every action reaches the capture: two held (bound 2), three dropped
        wait_for(lambda: capture.stats().dropped - before.dropped == 3 and capture.stats().pending == 2,
                 "the capture to see the five actions")
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        capture.reconfigure(settings)
    done = flush_spark(spark, 120)
    assert capture.flush(120), done
    after = capture.stats()
    assert after.dropped - before.dropped == 3
    assert done.jvm_dropped == settled.jvm_dropped  # the JVM queue never overflowed: Python counted all
    assert after.captured - before.captured == 2
    status = pipeline["store"].status()
    assert status.dropped - store_before.dropped == 3
    assert status.captured - store_before.captured == 2
    for p in paths:  # the user's data is all there (read after the counts: reads are runs too)
        assert spark.read.parquet(str(p)).count() == 2


def test_merge_is_captured_with_the_statements_column_lineage(spark, pipeline: dict[str, Any],
                                                              env: dict[str, Any]) -> None:
    """Spark hands the listener a MERGE on a catalog table as its rewrite (ReplaceData over MergeRows): the
    stored run has the statement's edges (SET / INSERT values), not a copy of the target onto itself."""
    q, db = pipeline["q"], env["db"]
    t, s = f"ushas.{db}.merged", f"ushas.{db}.merge_src"
    for name in (t, s):
        spark.sql(f"CREATE TABLE {name} (id BIGINT, amount DOUBLE, country STRING) USING parquet")
    spark.sql(f"INSERT INTO {t} VALUES (1, 0.0, 'fr')")
    spark.sql(f"INSERT INTO {s} VALUES (1, 2.0, 'fr'), (4, 3.0, 'in')")
    spark.sql(f"MERGE INTO {t} t USING {s} s ON t.id = s.id WHEN MATCHED AND s.country = 'fr' "
              f"THEN UPDATE SET amount = s.amount * 2 WHEN NOT MATCHED THEN INSERT *")
    env["hub"].flush(30)
    up = wait_for(lambda: (lambda c: c if f"{s}.amount" in c else None)(cols(q, q.upstream(f"{t}.amount"))),
                  "the MERGE's run")
    assert f"{t}.amount" not in up  # the rows the MERGE kept are no lineage of the column onto itself
    assert f"{s}.id" in cols(q, q.upstream(f"{t}.id"))  # INSERT *
    assert spark.sql(f"SELECT sum(amount) AS a FROM {t}").first().a == 7.0


def test_rename_keeps_lineage(spark, pipeline: dict[str, Any], env: dict[str, Any]) -> None:
    q, db, hive = pipeline["q"], env["db"], env["hive"]
    spark.sql(f"ALTER TABLE ushas.{db}.raw RENAME TO {db}.raw_v2")
    up = cols(q, q.upstream(f"spark_catalog.default.{hive}.amount"))
    assert f"ushas.{db}.raw_v2.amount" in up
    down = cols(q, q.downstream(f"ushas.{db}.raw_v2.amount"))
    assert f"spark_catalog.default.{hive}.amount" in down


def _insert_overwrite_dynamic(spark: Any, df: Any, table: str) -> None:
    key = "spark.sql.sources.partitionOverwriteMode"
    previous = spark.conf.get(key)
    spark.conf.set(key, "dynamic")
    try:
        df.write.insertInto(table, overwrite=True)
    finally:
        spark.conf.set(key, previous)


def test_one_user_action_is_one_run(spark, pipeline: dict[str, Any], env: dict[str, Any]) -> None:
    """Spark reports some writes as several executions (a V1Write INSERT: the AppendData and the
    inner file write; a CTAS: create + inner data writing); each user action is stored once, as
    one run writing the table the user named (not also its files by path)."""
    store, db, tag = pipeline["store"], env["db"], env["tag"]
    src = spark.range(3).selectExpr("id", "CAST(id AS DOUBLE) AS amount")
    spark.sql(f"CREATE TABLE ushas.{db}.sink (id BIGINT, amount DOUBLE) USING parquet")
    spark.sql(f"CREATE TABLE ushas.{db}.sink_p (id BIGINT, amount DOUBLE, dt STRING) USING parquet "
              f"PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE default.hsink_{tag} (id BIGINT, amount DOUBLE) STORED AS PARQUET")
    forms: list[tuple[str, str, Callable[[], Any]]] = [
        ("SQL INSERT INTO", f"ushas.{db}.sink",
         lambda: spark.sql(f"INSERT INTO ushas.{db}.sink SELECT id, id * 2.0 FROM range(2)")),
        ("SQL INSERT OVERWRITE partition", f"ushas.{db}.sink_p",
         lambda: spark.sql(f"INSERT OVERWRITE ushas.{db}.sink_p PARTITION (dt = 'a') SELECT id, 1.0 FROM range(2)")),
        ("CTAS", f"ushas.{db}.ctas",
         lambda: spark.sql(f"CREATE TABLE ushas.{db}.ctas USING parquet AS SELECT id, id + 0.5 AS amount FROM range(2)")),
        ("insertInto", f"ushas.{db}.sink", lambda: src.write.insertInto(f"ushas.{db}.sink")),
        ("saveAsTable append", f"ushas.{db}.sink",
         lambda: src.write.mode("append").saveAsTable(f"ushas.{db}.sink")),
        ("saveAsTable create", f"ushas.{db}.saved", lambda: src.write.saveAsTable(f"ushas.{db}.saved")),
        ("writeTo create", f"ushas.{db}.written", lambda: src.writeTo(f"ushas.{db}.written").create()),
        ("Hive INSERT", f"spark_catalog.default.hsink_{tag}",
         lambda: spark.sql(f"INSERT INTO default.hsink_{tag} SELECT id, amount FROM ushas.{db}.sink")),
        ("writeTo append", f"ushas.{db}.sink", lambda: src.writeTo(f"ushas.{db}.sink").append()),
        ("writeTo overwritePartitions", f"ushas.{db}.sink_p",
         lambda: src.selectExpr("id", "amount", "'b' AS dt").writeTo(f"ushas.{db}.sink_p").overwritePartitions()),
        ("insertInto overwrite (dynamic)", f"ushas.{db}.sink_p",
         lambda: _insert_overwrite_dynamic(spark, src.selectExpr("id", "amount", "'c' AS dt"), f"ushas.{db}.sink_p")),
    ]
    for label, target, action in forms:
        assert flush_spark(spark, 120).flushed
        before = {r.run_id for r in store.runs_between()}
        action()
        assert flush_spark(spark, 120).flushed
        new = [r for r in store.runs_between() if r.run_id not in before]
        assert len(new) == 1, (label, [(r.operation, r.sql) for r in new])
        outputs = [ref.name for acc, ref in store.run_datasets(new[0].run_id) if acc is Access.WRITE]
        assert outputs == [target], (label, outputs)
