"""SIGKILL of a PySpark driver (the driver and its JVM) in the middle of an atomic CTAS and RTAS.

One driver creates table ``old`` (two rows), then runs, in two threads, a CTAS of ``new`` and an RTAS
of ``old`` whose tasks sleep per row; it is killed once both writes have their staging directories
and the RTAS's tasks are writing (their files at their final names, listed in the manifests). Afterwards: ``new`` does not exist, ``old`` is exactly as before (id,
version, schema, rows, files), ``ushas check`` reports the two staged writes (named in the data
garbage) and nothing else, and ``ushas purge`` removes what they left (staging directories) and
records them ABORTED, without touching ``old``'s files; the files the writes created are gone. (One driver start: ~20-30 s on a loaded
machine.)
"""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ushas_catalog.check import check_store
from ushas_catalog.metastore import Metastore

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_DRIVER = """
import sys, threading
from pyspark.sql import SparkSession
from ushas_catalog.spark import configure
uri, warehouse = sys.argv[1], sys.argv[2]
builder = (SparkSession.builder.master("local[2]").appName("killed-ctas")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
spark = configure(builder, name="ushas", uri=uri, warehouse=warehouse).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.k")
spark.sql("CREATE TABLE ushas.k.old (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
spark.sql("INSERT INTO ushas.k.old VALUES (1, 'a'), (2, 'b')")
print("READY", flush=True)
# the pause in the write's own tasks (after the shuffle; the CTAS not clustered by partition, which would
# shuffle again after it): a write's staging directory appears when its job starts
slow = ("SELECT id, dt, reflect('java.lang.Thread', 'sleep', CAST(500 AS BIGINT)) AS pause FROM "
        "(SELECT /*+ REPARTITION(2) */ id, CAST(id % 2 AS STRING) AS dt FROM range(400))")
threads = [threading.Thread(target=spark.sql, args=(f"CREATE TABLE ushas.k.new USING parquet PARTITIONED BY (dt) "
                                                    f"TBLPROPERTIES ('write.distribution-mode' = 'none') AS {slow}",)),
           threading.Thread(target=spark.sql, args=(f"CREATE OR REPLACE TABLE ushas.k.old USING parquet AS {slow}",))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("FINISHED", flush=True)
"""


def test_killed_ctas_and_rtas_leave_the_previous_state(tmp_path: Path) -> None:
    from ushas_catalog.data.purge import purge
    from ushas_catalog.data.staged import staged_write
    from ushas_catalog.data.write_fence import get_outcome

    uri = f"sqlite:///{tmp_path / 'ushas.db'}"
    warehouse = tmp_path / "warehouse"
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, str(script), uri, str(warehouse)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready.strip() == "READY", proc.stderr.read()[-3000:] if proc.stderr else ""
        with Metastore.open(uri, create=False) as ms:
            old = ms.get_table("ushas.k.old")
            old_parts = ms.list_partitions("ushas.k.old")
        old_files = sorted(f.path for p in old_parts for f in p.data_files or [])
        deadline = time.monotonic() + 180
        staging = []
        while time.monotonic() < deadline:  # both writes started, the RTAS's tasks are writing their files
            staging = glob.glob(f"{warehouse}/k.db/*/_ushas_staging/*/_owner")  # (at their final names: the
            if len(staging) == 2 and glob.glob(f"{warehouse}/k.db/*/_ushas_staging/*/files-*"):  # manifests)
                break
            assert proc.poll() is None, proc.stderr.read()[-3000:] if proc.stderr else ""
            time.sleep(0.1)
        assert len(staging) == 2, staging
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)

    # ushas check finds the two staged writes the kill left (and nothing else)
    found = check_store(uri).findings
    assert sorted((f.check, f.where) for f in found) == [("staged-writes", "ushas.k.new"),
                                                          ("staged-writes", "ushas.k.old")], found
    with Metastore.open(uri, create=False) as ms:
        assert not ms.table_exists("ushas.k.new")
        now = ms.get_table("ushas.k.old")
        assert (now.id, now.version, now.schema, now.properties, now.partition_columns) == (
            old.id, old.version, old.schema, old.properties, old.partition_columns)
        assert sorted(f.path for p in ms.list_partitions("ushas.k.old") for f in p.data_files or []) == old_files
        staged = [e for e in ms.garbage() if staged_write(e) is not None]
        assert sorted(e.table for e in staged) == ["ushas.k.new", "ushas.k.old"]
        summary = purge(ms)
        assert summary.garbage == 2, summary.to_json()
        assert [e for e in ms.garbage() if staged_write(e) is not None] == []
        assert {get_outcome(ms, str(staged_write(e))).state for e in staged} == {"ABORTED"}
        assert glob.glob(f"{warehouse}/k.db/*/_ushas_staging/*") == []
        assert all(os.path.exists(p.removeprefix("file:")) for p in old_files)  # the old table's data stays
        # and nothing else: the files the killed writes created at their final names are gone
        left = sorted("file:" + p for p in glob.glob(f"{warehouse}/k.db/**/part-*", recursive=True))
        assert left == old_files, left
    assert check_store(uri).ok
