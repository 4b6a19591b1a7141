"""SIGKILL of Spark drivers and of the bridge at random points (seed printed: ``USHAS_FAULT_SEED``
replays it).

- A PySpark driver (the driver and its JVM, one process group) running a short statement sequence
  (CREATE TABLE, INSERT into two partitions, ADD PARTITION, DROP TABLE, ...) is killed 20 times, each
  run a new driver, at a random time (< 1 s) after a random one of its first six statements returned.
  (About 25 s per run on a loaded 2-core machine, mostly the driver's start; two drivers at a time, each
  lane of kills on its own store, so that one driver starts while the other runs.)
- In one configuration-only driver (spark-submit: the shim launched ``python -m ushas_catalog.bridge``)
  running 20 rounds of that sequence, the bridge is killed from outside once per round at a random
  time (mostly between two calls: costs nothing) and kills itself at random calls (1 % before the op
  runs, 1 % after it committed and before it answered); a statement in flight fails with an error
  saying the bridge died, the next statements go on.

After each: ``ushas check`` passes, every table is as the last statement that returned or the one in
flight left it (never in between), and every data file a partition records exists.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ushas_catalog.check import check_store
from ushas_catalog.metastore import Metastore

from faults.killing import LANES, in_lanes, run_and_kill, runs, seeded

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: statements per table: create, insert (partitions a, b), add partition c, drop (even tables)
ITERATIONS = 6

_STATEMENTS = """
def statements(prefix):
    out = []
    for i in range({iterations}):
        t = f"ushas.k.{{prefix}}_{{i}}"
        out.append(f"CREATE TABLE {{t}} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
        out.append(f"INSERT INTO {{t}} VALUES (1, 'a'), (2, 'b')")
        out.append(f"ALTER TABLE {{t}} ADD PARTITION (dt = 'c')")
        if i % 2 == 0:
            out.append(f"DROP TABLE {{t}}")
    return out
""".format(iterations=ITERATIONS)

exec(_STATEMENTS)  # defines statements(prefix): the same list the drivers run


def model(prefix: str, done: int) -> dict[str, list[str]]:
    """Live tables of ``prefix`` -> their partitions after the first ``done`` statements."""
    out: dict[str, list[str]] = {}
    for sql in statements(prefix)[:done]:  # type: ignore[name-defined]  # noqa: F821
        name = sql.split()[2].split(".")[-1]
        if sql.startswith("CREATE"):
            out[name] = []
        elif sql.startswith("INSERT"):
            out[name] = ["a", "b"]
        elif sql.startswith("ALTER"):
            out[name] = ["a", "b", "c"]
        else:
            del out[name]
    return out


def observed(ms: Metastore, prefix: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    try:
        names = [t.name for t in ms.list_tables("ushas.k")]
    except Exception:  # noqa: BLE001 - killed before the namespace existed
        return out
    for name in names:
        if name.startswith(prefix + "_"):
            parts = list(ms.list_partitions(f"ushas.k.{name}"))
            out[name] = [p.values["dt"] for p in parts]
            for p in parts:  # a recorded file list names files that exist
                for f in p.data_files or []:
                    path = f.path[len("file:"):] if f.path.startswith("file:") else f.path
                    assert os.path.exists(path), (name, p.values, f.path)
    return out


_DRIVER = """
import sys
from pyspark.sql import SparkSession
from ushas_catalog.spark import configure
{statements}
uri, warehouse, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
builder = (SparkSession.builder.master("local[1]").appName("killed-driver")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "1"))
spark = configure(builder, name="ushas", uri=uri, warehouse=warehouse).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.k")
print("READY", flush=True)
for n, sql in enumerate(statements(prefix), start=1):
    spark.sql(sql)
    print(f"DONE {{n}}", flush=True)
print("FINISHED", flush=True)
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)


def test_killed_spark_drivers_leave_whole_tables(tmp_path: Path) -> None:
    rng = seeded("spark driver")
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER.format(statements=textwrap.dedent(_STATEMENTS)))
    # kill a random time (< 1 s) after the after-th statement returned; drawn up front: the seed replays the run
    plan = [(rng.randrange(0, 6), rng.uniform(0.0, 1.0)) for _ in range(runs())]
    for lane in range(LANES):
        (tmp_path / f"lane{lane}").mkdir()

    def kill_one(run: int) -> int:
        lane = tmp_path / f"lane{run % LANES}"  # each lane its own store: its kills and checks alone on it
        uri = f"sqlite:///{lane / 'ushas.db'}"
        prefix = f"r{run}"
        after, delay = plan[run]
        k = run_and_kill([sys.executable, str(script), uri, str(lane / "warehouse"), prefix], delay, _env(),
                         group=True, ready=f"DONE {after}" if after else "READY", timeout_s=180)
        assert "READY" in k.stdout, k.stderr[-3000:]
        report = check_store(uri)
        assert report.ok, (run, delay, report.lines())
        with Metastore.open(uri, create=False) as ms:
            actual = observed(ms, prefix)
        allowed = (model(prefix, k.done), model(prefix, k.done + 1))
        assert actual in allowed, (run, delay, k.done, actual, allowed)
        return k.done

    started = time.monotonic()
    points = in_lanes(runs(), kill_one)
    print(f"{runs()} killed drivers in {time.monotonic() - started:.0f} s, {LANES} at a time; statements done: "
          f"{points}", file=sys.stderr)
    assert len(set(points)) > 1, points


_BRIDGE_APP = """
import sys
from pyspark.sql import SparkSession
{statements}
spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.k")
print("READY", flush=True)
rounds = int(sys.argv[1])
for r in range(rounds):
    prefix = f"b{{r}}"
    print(f"ROUND {{r}}", flush=True)
    done = 0
    for sql in statements(prefix):
        try:
            spark.sql(sql)
        except Exception as e:
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            print(f"FAILED {{prefix}} {{done}} {{type(e).__name__}}: " + (lines[0] if lines else "")[:500], flush=True)
            print("DETAIL " + repr(str(e)[:3000]), flush=True)
            break
        done += 1
    print(f"ENDED {{prefix}} {{done}}", flush=True)
print("FINISHED", flush=True)
"""


def _bridges(parent: int) -> list[int]:
    """The bridge processes the shim started: children of the JVM, itself a child of spark-submit's
    process (or deeper)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (b"ushas_catalog.bridge" in cmd or b"dying_bridge.py" in cmd) and state != "Z" and _descends(int(pid), parent):
            out.append(int(pid))
    return out


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False


#: the bridge, but each call kills its own process with SIGKILL with probability DIE_P before the op
#: runs, and with DIE_P after it ran (committed, the answer lost): deaths in flight at random calls
_DYING = """
import os, random, signal, sys
import ushas_catalog.bridge as bridge

rng = random.Random(int(os.environ["USHAS_TEST_DIE_SEED"]) * 1_000_003 + os.getpid())
p = float(os.environ["USHAS_TEST_DIE_P"])
real = bridge.handle

def handle(op, payload):
    if op != "lineage_event" and rng.random() < p:
        os.kill(os.getpid(), signal.SIGKILL)
    answer = real(op, payload)
    if op != "lineage_event" and rng.random() < p:
        os.kill(os.getpid(), signal.SIGKILL)
    return answer

bridge.handle = handle
sys.exit(bridge.main())
"""


def test_killed_bridge_fails_only_the_statement_in_flight(tmp_path: Path) -> None:
    import stat

    from spark_processes import conf_args, spark_bin

    rng = seeded("bridge")
    store = tmp_path / "ushas.db"
    app = tmp_path / "app.py"
    app.write_text(_BRIDGE_APP.format(statements=textwrap.dedent(_STATEMENTS)))
    script = tmp_path / "dying_bridge.py"
    script.write_text(_DYING)
    wrapper = tmp_path / "python_dying"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")  # the shim adds -m ushas_catalog.bridge
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    rounds = runs()
    cmd = [spark_bin("spark-submit"), "--master", "local[1]",
           *conf_args(store, tmp_path / "warehouse", **{"spark.sql.catalog.ushas.python": str(wrapper)}), str(app),
           str(rounds)]
    env = dict(_env(), USHAS_TEST_DIE_SEED=str(rng.randrange(1 << 30)), USHAS_TEST_DIE_P="0.01")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    lines: list[str] = []
    kills = 0
    deadline = time.monotonic() + 600
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if time.monotonic() > deadline:
                break
            if line.startswith("ROUND "):  # kill the bridge somewhere in this round's statements
                time.sleep(rng.uniform(0.0, 0.8))  # a round takes ~1 s on a quiet machine, longer loaded
                # a bridge between lives (killed, not yet restarted: a Python start, seconds on a loaded
                # machine): wait for the next one, as long as the application runs (no fixed window)
                while proc.poll() is None and time.monotonic() < deadline:
                    pids = _bridges(proc.pid)
                    for pid in pids:
                        os.kill(pid, signal.SIGKILL)
                        kills += 1
                    if pids:
                        break
                    time.sleep(0.02)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = proc.stderr.read() if proc.stderr else ""
    out = "".join(lines)
    assert proc.returncode == 0 and "FINISHED" in out, (out[-3000:], err[-3000:])
    assert kills >= rounds - 2, (kills, out[-2000:])  # a round can end before its kill lands
    failures = [ln for ln in lines if ln.startswith("FAILED ")]
    details = [ln for ln in lines if ln.startswith("DETAIL ")]
    for ln in failures:  # the statement in flight says what happened, in one line
        assert ("the ushas bridge process died (signal 9) during" in ln  # in a call
                or re.search(r"the Python bridge \('.*'\) exited with code 137", ln)), (ln, details)  # starting
        assert " SparkRuntimeException: " in ln, ln  # PySpark's own exception, not a Py4JJavaError
    assert failures, out[-3000:]
    report = check_store(f"sqlite:///{store}")
    assert report.ok, report.lines()
    with Metastore.open(f"sqlite:///{store}", create=False) as ms:
        for ln in (ln for ln in lines if ln.startswith("ENDED ")):
            _, prefix, done = ln.split()
            actual = observed(ms, prefix)
            allowed = (model(prefix, int(done)), model(prefix, int(done) + 1))
            assert actual in allowed, (prefix, done, actual, allowed)


#: a driver whose INSERT creates many partitions (one task: its files appear one by one at their final names)
_MANY = """
import sys
from pyspark.sql import SparkSession
from ushas_catalog.spark import configure
uri, warehouse = sys.argv[1], sys.argv[2]
builder = (SparkSession.builder.master("local[1]").appName("killed-mid-write")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "1"))
spark = configure(builder, name="ushas", uri=uri, warehouse=warehouse).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.k")
spark.sql("CREATE TABLE ushas.k.many (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
print("WRITING", flush=True)
spark.sql("INSERT INTO ushas.k.many SELECT id, CAST(id AS STRING) FROM range(4000)")
print("FINISHED", flush=True)
"""


def test_driver_killed_mid_direct_write_leaves_nothing(tmp_path: Path) -> None:
    """kill -9 of a driver while its tasks create files at their final names (issue 38): nothing of the
    write is visible (no partition registered; a listing skips its files while its staging directory
    is there) and ``ushas purge`` removes every file it created (its manifests list them)."""
    from ushas_catalog.data.direct_writes import manifest_files, running_writes
    from ushas_catalog.data.purge import purge
    from ushas_catalog.data.write_fence import get_outcome
    from ushas_catalog.spark.writes import list_local_files

    store = tmp_path / "ushas.db"
    uri = f"sqlite:///{store}"
    warehouse = tmp_path / "warehouse"
    script = tmp_path / "driver.py"
    script.write_text(_MANY)
    root = warehouse / "k.db" / "many"
    staging = root / "_ushas_staging"
    proc = subprocess.Popen([sys.executable, str(script), uri, str(warehouse)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), start_new_session=True)
    listed: list[str] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:  # kill once the task created 50 files
            listed = [m for d in (staging.iterdir() if staging.exists() else []) for m in manifest_files(str(d))]
            if len(listed) >= 50:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    assert len(listed) >= 50 and "FINISHED" not in out, (len(listed), out[-2000:], err[-3000:])
    files = sorted(str(p) for p in root.rglob("part-*"))
    assert files, "the killed write had created no file"
    (write_id,) = running_writes(str(root))
    assert all(write_id in f for f in files)

    assert check_store(uri).ok
    with Metastore.open(uri, create=False) as ms:
        assert list(ms.list_partitions("ushas.k.many")) == []  # nothing registered
        assert get_outcome(ms, write_id).state != "COMMITTED"
        # a partition read by listing (its files not recorded) does not show the dead write's file
        first = Path(files[0]).parent
        ms.add_partitions("ushas.k.many", [{"dt": first.name.split("=", 1)[1]}])
        assert list_local_files(f"file:{first}", str(root)) == []
        summary = purge(ms)
        assert summary.staging == 1, summary.to_json()
        assert get_outcome(ms, write_id).state == "ABORTED"
    left = sorted(str(p) for p in root.rglob("*") if p.is_file())
    assert left == [] and not staging.exists(), left[:20]
