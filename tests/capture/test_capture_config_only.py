"""Capture with configuration only: ``spark-submit`` of an app that never imports ushas_catalog, and
``spark-sql -e``, with nothing but ``--conf``s (the catalog and the listener). The shim launches
``python -m ushas_catalog.bridge`` itself; the runs must be stored before the application ends (the
listener asks Python to store what it holds before the bridge process is stopped), and the
``ushas lineage`` CLI (``--json``) over the same store shows the runs and the column edges.

Each test uses its own fresh store, so the shared session's runs never mix in; no SparkSession is
built in this process."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_processes import conf_args, run_spark, spark_bin

from .openlineage_receiver import Receiver

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def confs(store: Path, warehouse: Path) -> list[str]:
    """The catalog and the lineage listener, nothing else."""
    return conf_args(store, warehouse, **{"spark.sql.queryExecutionListeners": "io.ushas.spark.UshasLineageListener"})


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_spark(cmd, cwd, timeout=600)


def cli(store: Path, *args: str) -> Any:
    """``ushas --uri … --json lineage ARGS`` with this interpreter; its JSON answer."""
    proc = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{store}", "--json",
                           "lineage", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def upstream_columns(store: Path, column: str) -> set[str]:
    return {c["name"] for c in cli(store, "upstream", column)["columns"]}


def bridge_log_tail(tmp_path: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-2000:] for p in tmp_path.rglob("*bridge*.log"))


def test_spark_submit_config_only_captures(tmp_path: Path) -> None:
    store, warehouse, out = tmp_path / "ushas.db", tmp_path / "warehouse", tmp_path / "report"
    db = "cap_" + uuid.uuid4().hex[:8]
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.appName("config-only-app").getOrCreate()
        spark.sql("CREATE NAMESPACE ushas.{db}")
        spark.sql("CREATE TABLE ushas.{db}.src (id BIGINT, amount DOUBLE, country STRING) USING parquet")
        spark.sql("INSERT INTO ushas.{db}.src VALUES (1, 2.0, 'fr'), (2, 3.5, 'in'), (3, -1.0, 'fr')")
        spark.sql("CREATE TABLE ushas.{db}.dst (id BIGINT, doubled DOUBLE) USING parquet")
        (spark.table("ushas.{db}.src").where("amount > 0").selectExpr("id", "amount * 2 AS doubled")
         .write.insertInto("ushas.{db}.dst"))
        spark.table("ushas.{db}.dst").groupBy().agg({{"doubled": "sum"}}) \\
            .withColumnRenamed("sum(doubled)", "total").write.parquet({str(out)!r})
        print("ROWS", spark.read.parquet({str(out)!r}).collect()[0].total)
        # into Spark's session catalog, by an unqualified name: one output, its INDIRECT edges kept
        spark.sql("CREATE DATABASE spark_catalog.{db}")
        spark.sql("USE spark_catalog.{db}")
        (spark.table("ushas.{db}.src").where("country = 'fr'").selectExpr("id", "amount * 2 AS dbl")
         .write.saveAsTable("saved"))
        spark.stop()
    """))
    proc = run([spark_bin("spark-submit"), "--master", "local[1]", *confs(store, warehouse), str(app)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ROWS 11.0" in proc.stdout  # the user's data
    assert "Ushas lineage" not in proc.stderr  # nothing dropped: nothing said

    # stored before the application ended: nothing to wait for once spark-submit has returned
    status = cli(store, "status")
    assert status["dropped"] == 0 and status["pending"] == 0, (status, bridge_log_tail(tmp_path))
    assert status["captured"] >= 3, (status, proc.stderr[-3000:], bridge_log_tail(tmp_path))

    runs = cli(store, "runs", f"ushas.{db}.dst")
    writes = [r for r in runs if r["access"] == "write"]
    assert len(writes) == 1, runs  # the insertInto: one action, one run
    assert writes[0]["status"] == "COMPLETE" and writes[0]["application_name"] == "config-only-app"
    assert any(r["access"] == "read" for r in runs)  # the report read it
    detail = cli(store, "run", writes[0]["run_id"])
    assert [d["name"] for d in detail["inputs"]] == [f"ushas.{db}.src"]
    assert {(e["target"], e["source"], e["subtype"]) for e in detail["edges"]} >= {
        (f"ushas.{db}.dst.doubled", f"ushas.{db}.src.amount", "TRANSFORMATION"),
        (f"ushas.{db}.dst.id", f"ushas.{db}.src.id", "IDENTITY")}

    assert f"ushas.{db}.src.amount" in upstream_columns(store, f"ushas.{db}.dst.doubled")
    report_run = next(r for r in runs if r["access"] == "read")
    report = next(d["name"] for d in cli(store, "run", report_run["run_id"])["outputs"])
    assert report.rstrip("/").endswith(str(out))
    assert {f"ushas.{db}.dst.doubled", f"ushas.{db}.src.amount"} <= upstream_columns(store, f"{report}.total")

    saved = f"spark_catalog.{db}.saved"
    (write,) = [r for r in cli(store, "runs", saved) if r["access"] == "write"]
    assert [d["name"] for d in cli(store, "run", write["run_id"])["outputs"]] == [saved]  # no spark_catalog.saved
    assert upstream_columns(store, f"{saved}.dbl") == {f"ushas.{db}.src.amount", f"ushas.{db}.src.country"}


def test_spark_sql_e_captures(tmp_path: Path) -> None:
    store, warehouse = tmp_path / "ushas.db", tmp_path / "warehouse"
    db = "sqlcap_" + uuid.uuid4().hex[:8]
    sql = (f"CREATE NAMESPACE ushas.{db}; "
           f"CREATE TABLE ushas.{db}.a (id INT, v STRING) USING parquet; "
           f"INSERT INTO ushas.{db}.a VALUES (1, 'x'), (2, 'y'); "
           f"CREATE TABLE ushas.{db}.b (id INT, loud STRING) USING parquet; "
           f"INSERT INTO ushas.{db}.b SELECT id + 1, upper(v) AS loud FROM ushas.{db}.a WHERE id > 1; "
           f"SELECT concat('ROW ', loud) FROM ushas.{db}.b;")
    receiver = Receiver()  # the OpenLineage transport, in the launched bridge process
    try:
        proc = run([spark_bin("spark-sql"), "--master", "local[1]", *confs(store, warehouse),
                    "--conf", f"spark.ushas.lineage.openlineage.url={receiver.url}", "-e", sql], tmp_path)
    finally:
        receiver.close()
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ROW Y" in proc.stdout
    sent = {(p["event"]["job"]["name"].split(".", 1)[1], p["event"]["eventType"]) for p in receiver.posts}
    assert {(f"insert_into.ushas_{db}_b", "START"), (f"insert_into.ushas_{db}_b", "COMPLETE"),
            (f"query.ushas_{db}_b", "COMPLETE")} <= sent, sent
    assert "Ushas lineage" not in proc.stderr  # nothing dropped: nothing said (no 'could not report 0 …')

    status = cli(store, "status")
    assert status["dropped"] == 0 and status["pending"] == 0, (status, bridge_log_tail(tmp_path))
    runs = cli(store, "runs", f"ushas.{db}.b")
    writes = [r for r in runs if r["access"] == "write"]
    assert len(writes) == 1, runs
    assert f"INSERT INTO ushas.{db}.b SELECT" in (writes[0]["sql"] or "")
    edges = {(e["target"], e["source"], e["subtype"]) for e in cli(store, "run", writes[0]["run_id"])["edges"]}
    assert (f"ushas.{db}.b.loud", f"ushas.{db}.a.v", "TRANSFORMATION") in edges
    assert (f"ushas.{db}.b.id", f"ushas.{db}.a.id", "TRANSFORMATION") in edges
    assert upstream_columns(store, f"ushas.{db}.b.loud") >= {f"ushas.{db}.a.v"}
    assert f"ushas.{db}.b.loud" in {c["name"] for c in cli(store, "downstream", f"ushas.{db}.a.v")["columns"]}


def test_spark_sql_on_a_read_only_store_reads_and_reports_lost_lineage_once(tmp_path: Path) -> None:
    """A store in a directory nobody may write: spark-sql reads it; the lineage it cannot store is
    dropped at once (no retry storm) and reported in one WARN line at the end."""
    import os

    from readonly_fs import make_read_only

    from ushas_catalog.metastore import Metastore

    store_dir, warehouse = tmp_path / "ro", tmp_path / "warehouse"
    store_dir.mkdir()
    store = store_dir / "ushas.db"
    ms = Metastore.open(f"sqlite:///{store}")
    ms.create_catalog("ushas")
    ms.create_database("ushas.sales")
    ms.create_table("ushas.sales.orders", "id INT, amount DOUBLE", location=str(warehouse / "orders"))
    ms.close()
    os.makedirs(warehouse / "orders")
    before = store.read_bytes()
    undo = make_read_only(store_dir)
    try:
        sql = "SELECT concat('COUNT ', count(id)) FROM ushas.sales.orders;"  # reads a column: a run
        proc = run([spark_bin("spark-sql"), "--master", "local[1]", *confs(store, warehouse), "-e", sql], tmp_path)
    finally:
        undo()
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "COUNT 0" in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if "Ushas lineage" in line]
    assert len(lines) == 1 and "1 action(s) dropped in this application" in lines[0], lines
    assert store.read_bytes() == before
