"""A real JVM job: a Java Spark application (``jvm_job/LineageJob.java``, compiled here with ``javac``
against pyspark's own jars) submitted with ``spark-submit`` and nothing but ``--conf``s for the catalog
and the listener. What the listener captured for each of its writes — CTAS, ``saveAsTable`` of an
unqualified name, ``insertInto``, ``writeTo`` of a ``checkpoint()``-ed and ``saveAsTable`` of a
``localCheckpoint()``-ed DataFrame, ``insertInto`` from a ``foreachBatch`` over a file stream — read
back through the CLI (``ushas --json lineage run``), through ``ushas.system.column_lineage`` (queried by
the job itself) and through the exported OpenLineage events, equals ``df.lineage()`` of the same
query in PySpark (the shared session, with tables of the same names and columns)."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_processes import conf_args, run_spark, spark_bin

from lineage.tables import open_lineage_store

from .test_capture_config_only import bridge_log_tail, cli, upstream_columns
from .test_capture_equals_dataframe import Edge, cli_edges, expected_edges, openlineage_edges, stored_run

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # javac + one spark-submit: about a minute

SOURCE = Path(__file__).with_name("jvm_job") / "LineageJob.java"


def build_job(out: Path) -> Path:
    """``LineageJob.java`` compiled against the jars of the installed pyspark, as a jar."""
    from ushas_catalog.spark.jar import spark_jars_dir

    for tool in ("javac", "jar"):
        assert shutil.which(tool), f"{tool} (a JDK 17) is needed to build the Java job"
    classes = out / "classes"
    classes.mkdir()
    proc = subprocess.run(["javac", "-nowarn", "--release", "17", "-cp", str(spark_jars_dir() / "*"),
                           "-d", str(classes), str(SOURCE)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    jar = out / "lineage-job.jar"
    proc = subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return jar


def system_table(stdout: str) -> dict[str, set[Edge]]:
    """The job's ``ushas.system.column_lineage`` rows, by target table."""
    out: dict[str, set[Edge]] = {}
    for line in stdout.splitlines():
        if line.startswith("EDGE\t"):
            _, table, column, source_table, source_column, subtype = line.split("\t")
            out.setdefault(table, set()).add((None if column == "null" else column,
                                              f"{source_table}.{source_column}", subtype))
    return out


def test_java_job_captures_what_df_lineage_says(spark: Any, tmp_path: Path, capsys: Any) -> None:
    from pyspark.sql import functions as F

    db = "jvm_" + uuid.uuid4().hex[:8]
    stream_dir = tmp_path / "in"
    stream_dir.mkdir()
    for i, values in enumerate([[1, 2, -3], [4, -5]]):  # one file per micro-batch
        (stream_dir / f"f{i}.json").write_text("".join(json.dumps({"value": v, "name": f"n{v}"}) + "\n"
                                                       for v in values))
    store, warehouse = tmp_path / "ushas.db", tmp_path / "warehouse"
    jar = build_job(tmp_path)
    proc = run_spark([spark_bin("spark-submit"), "--master", "local[1]", "--class", "LineageJob",
                      *conf_args(store, warehouse,
                                 **{"spark.sql.queryExecutionListeners": "io.ushas.spark.UshasLineageListener"}),
                      str(jar), db, str(tmp_path / "checkpoints"), str(stream_dir), str(tmp_path / "stream-ck")],
                     tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:] + bridge_log_tail(tmp_path)
    assert "ROWS 3" in proc.stdout  # the user's data: both batches written
    assert '"flushed":true' in proc.stdout, proc.stdout[-2000:]
    assert "Ushas lineage" not in proc.stderr  # nothing dropped: nothing said
    status = cli(store, "status")
    assert status["dropped"] == 0 and status["pending"] == 0, (status, bridge_log_tail(tmp_path))

    # the same queries in PySpark, over tables of the same names and columns (another store)
    u = f"ushas.{db}"
    spark.sql(f"CREATE NAMESPACE {u}")
    spark.sql(f"CREATE TABLE {u}.orders (order_id BIGINT, amount DOUBLE, status STRING) USING parquet")
    spark.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="ushas-jvm-job-"))
    query = spark.sql(f"SELECT order_id, amount * 2 AS dbl FROM {u}.orders WHERE status = 'paid'").lineage()
    source = spark.table(f"{u}.orders").where("amount > 0").select("order_id", F.upper("status").alias("st"))
    stream = (spark.readStream.schema("value BIGINT, name STRING").json(str(stream_dir))
              .where("value > 0").selectExpr("value * 10 AS id", "upper(name) AS label"))
    cases = {  # target: (df.lineage() of what was written, its columns)
        f"{u}.ctas": (query, ["order_id", "dbl"]),
        f"spark_catalog.{db}.saved": (query, ["order_id", "dbl"]),
        f"{u}.inserted": (query, ["order_id", "dbl"]),
        f"{u}.ck": (source.checkpoint().select("st", "order_id").lineage(), ["st", "order_id"]),
        f"spark_catalog.{db}.lck": (spark.table(f"{u}.orders").groupBy("status").count().localCheckpoint(False)
                                    .lineage(), ["status", "count"]),
        f"{u}.fb": (stream.lineage(), ["id", "label"]),
    }
    in_job = system_table(proc.stdout)
    lineage_store = open_lineage_store(f"sqlite:///{store}", "default", {"ushas": "ushas"})
    for target, (result, columns) in cases.items():
        want = expected_edges(result)
        assert want, f"{target}: df.lineage() reaches no dataset"
        got, writes, run_id = stored_run(lineage_store, target)
        assert writes == [target], f"{target}: one output dataset, named as the catalog names it"
        assert got == want, f"{target}: stored {sorted(got - want, key=str)}, missing {sorted(want - got, key=str)}"
        assert cli_edges(capsys, f"sqlite:///{store}", run_id, target) == want, target
        assert in_job.get(target) == want, target
        assert openlineage_edges(lineage_store, run_id, columns) == want, target
    # the reproduction: the saveAsTable keeps its FILTER edge, in upstream too
    assert upstream_columns(store, f"spark_catalog.{db}.saved.dbl") == {f"{u}.orders.amount", f"{u}.orders.status"}
    assert f"file:{stream_dir}.value" in upstream_columns(store, f"{u}.fb.id")  # the directory, not a batch's file
