"""Losing the bridge costs at most the statement in flight (configuration-only mode: the shim launched
the bridge and starts a new one). A bridge killed between statements costs nothing; one that dies
during a statement fails that statement with an error saying so, and the next statement succeeds."""
from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BOUND_S = 240

#: the bridge, but an op on a table named die_now kills its own process with SIGKILL
_DYING = """
import json, os, signal, sys
import ushas_catalog.spark.bridge as bridge

real = bridge.handle

def handle(op, payload):
    if op == "create_table" and '"die_now"' in payload:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(op, payload)

bridge.handle = handle
sys.exit(bridge.main())
"""

_APP = """
import os, signal, time
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.sql("CREATE NAMESPACE ushas.bridge_death")

def bridges():
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == jvm and (b"ushas_catalog.bridge" in cmd or b"dying_bridge.py" in cmd):
            out.append(int(pid))
    return out

# 1. killed between statements: the next statement does not notice
(pid,) = bridges()
os.kill(pid, signal.SIGKILL)
def gone(pid):
    # the JVM's process reaper may reap it between any two looks: a vanished /proc entry is gone too
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True

while not gone(pid):
    time.sleep(0.05)
print("TABLES-AFTER-KILL", spark.sql("SHOW TABLES IN ushas.bridge_death").count(), flush=True)
# 2. dies during a statement: that statement fails, saying so; the next one succeeds
try:
    spark.sql("CREATE TABLE ushas.bridge_death.die_now (id INT) USING parquet")
    print("DIE-NOW-SUCCEEDED", flush=True)
except Exception as e:
    died = [ln for ln in str(e).splitlines() if "bridge" in ln]
    print("FAILED-IN-FLIGHT", died[0] if died else str(e)[:2000], flush=True)
spark.sql("CREATE TABLE ushas.bridge_death.ok (id INT) USING parquet")
spark.sql("INSERT INTO ushas.bridge_death.ok VALUES (1), (2)")
print("TABLES", sorted(r.tableName for r in spark.sql("SHOW TABLES IN ushas.bridge_death").collect()), flush=True)
print("ROWS", spark.sql("SELECT count(*) FROM ushas.bridge_death.ok").collect()[0][0], flush=True)
"""


def test_a_dead_bridge_costs_at_most_the_statement_in_flight(spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    script = tmp_path / "dying_bridge.py"
    script.write_text(textwrap.dedent(_DYING))
    wrapper = tmp_path / "python_dying"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")  # the shim adds -m ushas_catalog.bridge
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    app = tmp_path / "app.py"
    app.write_text(_APP)
    store = tmp_path / "ushas.db"
    cmd = [spark_bin("spark-submit"), "--master", "local[1]",
           *conf_args(store, spark_dirs["warehouse"], **{"spark.sql.catalog.ushas.python": str(wrapper)}), str(app)]
    proc = run_spark(cmd, tmp_path, timeout=BOUND_S)
    out = proc.stdout
    # spark-submit copies the Python driver's stderr (a traceback) to its stdout
    both = f"{out}\n--- stderr ---\n{proc.stderr}"
    assert proc.returncode == 0, both[both.index("Traceback"):][:6000] if "Traceback" in both else both[-6000:]
    assert "TABLES-AFTER-KILL 0" in out, out
    assert "DIE-NOW-SUCCEEDED" not in out
    line = next(ln for ln in out.splitlines() if ln.startswith("FAILED-IN-FLIGHT"))
    assert "the ushas bridge process died (signal 9) during 'create_table'; restarted" in line, line
    assert "TABLES ['ok']" in out and "ROWS 2" in out, out
