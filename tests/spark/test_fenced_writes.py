"""Fenced Spark writes (issue 25, "Fenced writes, applied exactly once"): every write carries its id
(the job id) and the moment the JVM stops waiting; a write Spark reports failed never lands later.

The fault of the issue: another process holds the store's write lock past the catalog's
``bridge.timeout``. The write fails in Spark; once the lock is released the catalog shows nothing
of it (no partition, no history entry, no change-feed event) and ``ushas write ID`` says ABORTED.
The timeout is a per-catalog option, so the test adds a second catalog instance (its own store,
``bridge.timeout`` 3 s) to the shared session; the backend is this driver's Python either way."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

pytestmark = pytest.mark.spark

#: how long the helper holds the store's write lock (well past the 3 s bridge timeout)
LOCK_S = 10
#: bound on waiting for the abandoned commit to end once the lock is released
SETTLE_S = 60

_HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


@pytest.fixture
def fenced(spark: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A second catalog (its own store, bridge.timeout 3 s) in the shared session: (name, uri)."""
    name = "fenced_" + uuid.uuid4().hex[:8]
    uri = f"sqlite:///{tmp_path / 'fenced.db'}"
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "io.ushas.spark.UshasCatalog")
    spark.conf.set(f"{prefix}.uri", uri)
    spark.conf.set(f"{prefix}.warehouse", str(tmp_path / "warehouse"))
    spark.conf.set(f"{prefix}.bridge.timeout", "3")
    yield name, uri
    spark.sql("USE spark_catalog.default")
    for key in ("", ".uri", ".warehouse", ".bridge.timeout"):
        spark.conf.unset(prefix + key)


def _cli(uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, *args], capture_output=True,
                          text=True, timeout=120)


def test_write_failed_past_bridge_timeout_never_lands(spark: Any, fenced: tuple[str, str], tmp_path: Path) -> None:
    from ushas_catalog.data.garbage import scan_garbage
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.spark.bridge import REGISTRY

    cat, uri = fenced
    table = f"{cat}.d.t"
    spark.sql(f"CREATE NAMESPACE {cat}.d")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v DOUBLE, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {table} SELECT id, 1.0, 'before' FROM range(3)")
    with Metastore.open(uri) as ms:
        name = (cat, "d", "t")
        before = (ms.get_table(name).version, len(ms.history(name)), len(list(ms.changes())))
    # this process is the catalog's backend: every call on the store runs holding this lock
    calls = REGISTRY.get(uri, "default").lock

    store = uri[len("sqlite:///"):]
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, store, str(LOCK_S)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(Exception) as failed:
            spark.sql(f"INSERT INTO {table} SELECT id, 0.0, 'during' FROM range(10)")
    finally:
        holder.wait(timeout=LOCK_S + 60)
    message = str(failed.value)
    found = re.search(r"write(?: id)? ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", message)
    assert found, message[:2000]
    write_id = found.group(1)
    assert "ushas write" in message or "ABORTED" in message, message[:2000]

    # the lock is free: the abandoned commit call ends (refused: its deadline passed) and records ABORTED
    stop = time.monotonic() + SETTLE_S
    while True:
        out = _cli(uri, "write", write_id, "--json")
        assert out.returncode == 0, out.stderr
        state = json.loads(out.stdout)
        if state["state"] != "UNKNOWN" or time.monotonic() > stop:
            break
        time.sleep(1)
    assert state["state"] == "ABORTED", state
    assert state["table"] == table
    # and nothing lands later either: the abandoned call has ended once the store's call lock is free
    assert calls.acquire(timeout=SETTLE_S), f"a call on {uri} still runs {SETTLE_S} s after the lock was freed"
    calls.release()

    with Metastore.open(uri) as ms:
        assert [p.values["dt"] for p in ms.list_partitions(name)] == ["before"]
        assert (ms.get_table(name).version, len(ms.history(name)), len(list(ms.changes()))) == before
    assert spark.sql(f"SELECT count(*) FROM {table} WHERE dt = 'during'").first()[0] == 0
    # the failed write's files (kept by the JVM, which could not learn the outcome) go at purge
    with Metastore.open(uri) as ms:
        entries = ms.db.run(lambda tr: list(scan_garbage(tr, ms.project_path)))
    files = [f.path for e in entries if e.operation == f"ABORTED WRITE {write_id}" for f in e.files]
    assert files and all("dt=during" in f for f in files), entries
    purged = _cli(uri, "purge", f"{cat}.d.t")
    assert purged.returncode == 0, purged.stderr
    assert not [f for f in files if Path(f.removeprefix("file:")).exists()]
    # the catalog works on: the next write lands, once
    spark.sql(f"INSERT INTO {table} SELECT id, 2.0, 'after' FROM range(2)")
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect()) == ["dt=after", "dt=before"]
    spark.sql(f"DROP TABLE {table} PURGE")
    spark.sql(f"DROP NAMESPACE {cat}.d")


def test_spark_writes_record_their_outcome(spark: Any, db: str, ms: Any) -> None:
    """A committed write is recorded COMMITTED with the version it made; a write whose tasks failed
    is recorded ABORTED by Spark's abort (a late commit of it would be refused). A clustered write
    (the default for a partitioned table) whose query fails in its shuffle, before the write starts,
    leaves nothing: no outcome, no staging directory."""
    from ushas_catalog.data.write_fence import list_outcomes

    failing = "SELECT if(id = 1, raise_error('boom'), id), 'b' FROM range(2)"
    for mode, failed in (("none", ["ABORTED", "COMMITTED"]), ("hash", ["COMMITTED"])):
        table = f"ushas.{db}.w_{mode}"
        spark.sql(f"CREATE TABLE {table} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)"
                  + ("" if mode == "hash" else f" TBLPROPERTIES ('write.distribution-mode' = '{mode}')"))
        spark.sql(f"INSERT INTO {table} SELECT id, 'a' FROM range(2)")
        mine = [o for o in list_outcomes(ms, 0) if o.table == table]
        assert [(o.state, o.version) for o in mine] == [("COMMITTED", ms.get_table(("ushas", db, f"w_{mode}")).version)]

        with pytest.raises(Exception, match="boom"):
            spark.sql(f"INSERT INTO {table} {failing}")
        mine = [o for o in list_outcomes(ms, 0) if o.table == table]
        assert sorted(o.state for o in mine) == failed, mode
        if mode == "none":
            aborted = next(o for o in mine if o.state == "ABORTED")
            assert "Spark aborted" in aborted.reason
        assert [r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect()] == ["dt=a"]
        root = Path(str(ms.get_table(("ushas", db, f"w_{mode}")).location).removeprefix("file:"))
        assert not list(root.glob("_ushas_staging/*")), mode
