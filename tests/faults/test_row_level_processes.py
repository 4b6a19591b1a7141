"""MERGE INTO across Spark applications (docs/row-level.md), each a real driver process on one sqlite store:

- a driver SIGKILLed (with its JVM: the process group) in the middle of a MERGE, once while the MERGE's
  tasks run and once at a random time after it started: the table is then exactly as before the MERGE
  or exactly as after it (rows read from the files the catalog records), ``ushas check`` passes, and
  every recorded file exists;
- two drivers changing the same table at once: two MERGEs rewriting the same file (one commits, the
  other fails with ``WriteConflict`` naming the partition, or the two serialize), then a MERGE and
  INSERTs into the same and into another partition (the INSERTs succeed; the MERGE succeeds, or fails
  with ``WriteConflict`` if an INSERT committed after its scan: serializable isolation): the table holds
  exactly the changes of the statements that succeeded, nothing lost, no key duplicated.

The MERGEs read their source through a Python UDF that sleeps, so that they last seconds and overlap.
Bounded: every driver has a timeout; about a minute per driver on a loaded 2-core machine.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.check import check_store
from ushas_catalog.metastore import Metastore

from faults.killing import Killed, run_and_kill, seeded

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TABLE = "ushas.rl.t"
#: the rows before: ids 1-10 in partition a (one file), 11-20 in b (one file)
ROWS = [(i, f"v{i}", "a" if i <= 10 else "b") for i in range(1, 21)]

_PRELUDE = """
import json, os, sys, time
from pyspark.sql import SparkSession
from ushas_catalog.spark import configure
uri, warehouse, work = sys.argv[1], sys.argv[2], sys.argv[3]
builder = (SparkSession.builder.master("local[1]").appName("row-level-" + os.path.basename(work))
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "1"))
spark = configure(builder, name="ushas", uri=uri, warehouse=warehouse).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
marker = os.path.join(work, "udf-ran")

def slow(v):
    open(marker, "a").close()
    time.sleep(float(os.environ.get("SLOW_S", "2")))
    return v

spark.udf.register("slow", slow)

def make():
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.rl")
    spark.sql("CREATE TABLE {table} (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    rows = {rows!r}
    for part in ("a", "b"):
        spark.createDataFrame([r for r in rows if r[2] == part], "id INT, v STRING, dt STRING") \\
            .coalesce(1).writeTo("{table}").append()

def merge(ids, value):
    src = ", ".join(f"({{i}}, '{{value}}')" for i in ids)
    spark.sql(f"MERGE INTO {table} t USING (SELECT id, slow(v) AS v FROM VALUES {{src}} AS s(id, v)) s "
              f"ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
              f"WHEN NOT MATCHED THEN INSERT (id, v, dt) VALUES (s.id, s.v, 'c')")

def wait_for(path, timeout=300):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise SystemExit("timed out waiting for " + path)
        time.sleep(0.1)
""".format(table=TABLE, rows=ROWS)

#: killed mid-MERGE: updates ids 2 and 12 (both partitions) and inserts 30 (a new partition c)
_KILLED = _PRELUDE + """
make()
print("READY", flush=True)
merge([2, 12, 30], "m")
print("DONE 1", flush=True)
print("FINISHED", flush=True)
"""

#: one of two concurrent applications (argv[4]: 1 or 2)
_CONCURRENT = _PRELUDE + """
role = sys.argv[4]
peer = os.path.join(os.path.dirname(work), "app" + ("2" if role == "1" else "1"))
mine = lambda name: open(os.path.join(work, name), "w").close()
theirs = lambda name: wait_for(os.path.join(peer, name))
out = {{}}
if role == "1":
    make()
mine("ready"); theirs("ready")
if role == "2":
    spark.sql("REFRESH TABLE {table}")
# phase 1: both rewrite the file of partition a (ids 1, 2 / 3, 4)
try:
    merge([1, 2] if role == "1" else [3, 4], "m" + role)
    out["phase1"] = "ok"
except Exception as e:
    out["phase1"] = "error: " + str(e).splitlines()[0]
mine("phase1"); theirs("phase1")
# phase 2: app 1 rewrites partition b's file, app 2 appends into a and b meanwhile: the appends succeed;
# the MERGE (serializable isolation: it read a and b) fails if an append committed after its scan
if role == "1":
    try:
        merge([11], "m1b")
        out["phase2"] = "ok"
    except Exception as e:
        out["phase2"] = "error: " + str(e).splitlines()[0]
else:
    spark.sql("INSERT INTO {table} SELECT id, slow(v), dt FROM VALUES (21, 'i2', 'a'), (23, 'i2', 'b') AS s(id, v, dt)")
    out["phase2"] = "ok"
mine("phase2"); theirs("phase2")
if role == "1":
    spark.sql("REFRESH TABLE {table}")
    out["rows"] = sorted([list(r) for r in spark.sql("SELECT id, v, dt FROM {table}").collect()])
print("RESULT " + json.dumps(out), flush=True)
""".format(table=TABLE)


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, **extra)


def _rows_recorded(uri: str) -> tuple[int, set[tuple[Any, ...]]]:
    """(table version, its rows) read from the files the catalog records; every recorded file exists."""
    import pyarrow.parquet as pq

    with Metastore.open(uri, create=False) as ms:
        info = ms.get_table("ushas.rl.t")
        rows: set[tuple[Any, ...]] = set()
        for p in ms.list_partitions("ushas.rl.t"):
            for f in p.data_files or []:
                path = f.path[len("file:"):] if f.path.startswith("file:") else f.path
                assert os.path.exists(path), (p.values, f.path)
                for r in pq.read_table(path).to_pylist():
                    rows.add((r["id"], r["v"], p.values["dt"]))
        return info.version, rows


def test_a_driver_killed_mid_merge_leaves_the_table_before_or_after_it(tmp_path: Path) -> None:
    rng = seeded("row-level kill")
    before = set(ROWS)
    after = {(i, "m" if i in (2, 12) else v, dt) for i, v, dt in ROWS} | {(30, "m", "c")}
    seen = []
    for run, when in enumerate(["tasks", "random"]):
        work = tmp_path / f"run{run}"
        work.mkdir()
        store = work / "ushas.db"
        uri = f"sqlite:///{store}"
        script = work / "driver.py"
        script.write_text(textwrap.dedent(_KILLED))
        cmd = [sys.executable, str(script), uri, str(work / "warehouse"), str(work)]
        if when == "tasks":  # once the MERGE's tasks run (its UDF was called), a little later
            delay = rng.uniform(0.0, 1.5)
            k = _kill_when(cmd, _env(SLOW_S="1"), work / "udf-ran", delay, timeout_s=300)
        else:  # anywhere in the MERGE: planning, its two jobs, the commit
            delay = rng.uniform(0.0, 12.0)
            k = run_and_kill(cmd, delay, _env(SLOW_S="1"), group=True, ready="READY", timeout_s=300)
        assert "READY" in k.stdout, k.stderr[-3000:]
        report = check_store(uri)
        assert report.ok, (run, report.lines())
        version, rows = _rows_recorded(uri)
        assert rows in (before, after), (run, when, delay, k.done, rows)
        with Metastore.open(uri, create=False) as ms:
            last = ms.history("ushas.rl.t", limit=1)[0]
        # old: nothing of the MERGE registered; new: exactly one MERGE commit on top
        assert (rows == before and last.operation == "APPEND") or (rows == after and last.operation == "MERGE"), \
            (last.operation, version)
        if k.done:
            assert rows == after
        seen.append("after" if rows == after else "before")
    print(f"killed mid-MERGE: {seen}", file=sys.stderr)


def _kill_when(cmd: list[str], env: dict[str, str], marker: Path, extra_s: float, timeout_s: float) -> Killed:
    """Start ``cmd`` (its own process group), SIGKILL the group ``extra_s`` after ``marker`` appeared."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(extra_s)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out, err = proc.communicate(timeout=timeout_s)
    done = max([int(ln.split()[1]) for ln in out.splitlines() if ln.startswith("DONE ")] or [0])
    return Killed(0, extra_s, done, "FINISHED" in out, out, err)


def test_two_applications_changing_one_table_conflict_cleanly_and_lose_nothing(tmp_path: Path) -> None:
    store = tmp_path / "ushas.db"
    uri = f"sqlite:///{store}"
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(_CONCURRENT))
    procs = []
    for role in ("1", "2"):
        work = tmp_path / f"app{role}"
        work.mkdir()
        procs.append(subprocess.Popen([sys.executable, str(script), uri, str(tmp_path / "warehouse"), str(work), role],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=_env(SLOW_S="3"), start_new_session=True))
    results = []
    deadline = time.monotonic() + 600
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                os.killpg(q.pid, 9)
            raise
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        assert lines, err[-3000:]
        results.append(json.loads(lines[0][len("RESULT "):]))
    one, two = results
    ok = [r["phase1"] == "ok" for r in results]
    assert any(ok), results
    for r in results:  # a loser is refused with the catalog's conflict, naming the partition
        if r["phase1"] != "ok":
            assert "USHAS_WriteConflict" in r["phase1"] and "partition dt=a" in r["phase1"], r["phase1"]
    expected = {}
    for i, v, dt in ROWS:
        if (i in (1, 2) and ok[0]) or (i in (3, 4) and ok[1]):
            v = "m1" if i in (1, 2) else "m2"
        expected[i] = (i, "m1b" if i == 11 and one["phase2"] == "ok" else v, dt)
    expected[21], expected[23] = (21, "i2", "a"), (23, "i2", "b")
    assert two["phase2"] == "ok", two
    if one["phase2"] != "ok":  # an append committed after the MERGE's scan: refused, naming the partition
        assert "USHAS_WriteConflict" in one["phase2"] and "file(s) added by another write" in one["phase2"], one
    assert sorted(tuple(r) for r in one["rows"]) == sorted(expected.values())
    assert check_store(uri).ok
    print(f"phase 1 (same file): {[r['phase1'][:60] for r in results]}", file=sys.stderr)
