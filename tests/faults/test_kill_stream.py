"""kill -9 of a streaming driver mid-batch, then a restart from its checkpoint: the table holds exactly
the rows of the micro-batches the catalog committed (each once), before and after the restart.

The driver streams ``rate-micro-batch`` (value 0, 1, 2, ... ``ROWS`` per batch: batch b holds values
``b*ROWS .. b*ROWS+ROWS-1``) into a partitioned table; it is killed (its whole process group: the
Python driver and its JVM) at a random moment while batches run. ``USHAS_FAULT_SEED`` replays a run."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from faults.killing import run_and_kill, seeded

pytestmark = [pytest.mark.spark]

ROWS = 40

DRIVER = textwrap.dedent(r"""
    import sys, time
    from pyspark.sql import SparkSession
    from ushas_catalog.spark import configure

    store, warehouse, ck, until = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    spark = configure(SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                      .config("spark.sql.shuffle.partitions", "2"),
                      name="ushas", uri=f"sqlite:///{store}", warehouse=warehouse).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.s")
    spark.sql("CREATE TABLE IF NOT EXISTS ushas.s.ev (value BIGINT, ts TIMESTAMP, dt STRING) USING parquet "
              "PARTITIONED BY (dt)")
    src = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", %(rows)d)
           .option("numPartitions", 2).load()
           .selectExpr("value", "timestamp AS ts", "CAST(value %% 4 AS STRING) AS dt"))
    q = src.writeStream.option("checkpointLocation", ck).trigger(processingTime="0 seconds").toTable("ushas.s.ev")
    print("READY", flush=True)
    seen = -1
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        p = q.lastProgress
        if p is not None and p["batchId"] > seen:
            seen = p["batchId"]
            print(f"DONE {seen}", flush=True)
            if until >= 0 and seen >= until:
                break
        if q.exception() is not None:
            print("FAILED", q.exception(), flush=True)
            break
        time.sleep(0.05)
    q.stop()
    print("FINISHED", flush=True)
""") % {"rows": ROWS}


def table_rows(ms: Any) -> list[tuple[int, str]]:
    """(value, dt) of every row the catalog's file lists hold, read without Spark (pyarrow)."""
    import pyarrow.parquet as pq

    out = []
    for p in ms.list_partitions("ushas.s.ev"):
        for f in p.data_files or []:
            for v in pq.read_table(f.path.removeprefix("file:"), columns=["value"]).column("value").to_pylist():
                out.append((v, p.values["dt"]))
    return sorted(out)


def expected(last_batch: int) -> list[tuple[int, str]]:
    return [(v, str(v % 4)) for v in range((last_batch + 1) * ROWS)]


def test_kill_driver_mid_batch_then_restart_has_exact_rows(tmp_path: Path) -> None:
    from ushas_catalog.metastore import Metastore

    rng = seeded("kill_stream")
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    store, warehouse, ck = tmp_path / "u.db", tmp_path / "wh", tmp_path / "ck"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, str(script), str(store), str(warehouse), str(ck)]
    # killed a random moment after its first batch committed, while the next ones run
    killed = run_and_kill(cmd + ["-1"], rng.uniform(0.2, 4.0), env, group=True, ready="DONE 0", timeout_s=180)
    assert not killed.finished, killed.stdout + killed.stderr[-3000:]
    from ushas_catalog.check import check_store

    report = check_store(f"sqlite:///{store}")
    assert report.ok, report.lines()  # the killed driver left a consistent store
    ms = Metastore.open(f"sqlite:///{store}")
    try:
        [before] = ms.streams("ushas.s.ev")
        assert before.last_batch >= 0, killed.stdout
        # what the killed driver committed, exactly: no half batch, no batch twice
        assert table_rows(ms) == expected(before.last_batch)
        until = before.last_batch + 3
        done = subprocess.run(cmd + [str(until)], env=env, capture_output=True, text=True, timeout=240)
        assert "FINISHED" in done.stdout and "FAILED" not in done.stdout, done.stdout + done.stderr[-3000:]
        [after] = ms.streams("ushas.s.ev")
        assert after.query_id == before.query_id  # the same query, resumed from its checkpoint
        assert after.last_batch >= until
        rows = table_rows(ms)
        assert len(rows) == (after.last_batch + 1) * ROWS  # by count
        assert rows == expected(after.last_batch)  # and by content: every value once, in its partition
        history = [h for h in ms.history("ushas.s.ev") if h.operation == "APPEND"]
        batches = sorted(h.detail["batch_id"] for h in history)
        assert batches == list(range(after.last_batch + 1))  # one commit per batch
    finally:
        ms.close()
