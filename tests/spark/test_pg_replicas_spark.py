"""Two Spark applications in remote mode, each through its own ``ushas serve`` replica of one PostgreSQL store
(docs/engines.md, "Several ``ushas serve`` replicas"): the tests' shared session (application A, catalogs on
replica a, token ``etl``) and a second application launched with ``spark-submit`` (application B, its own JVM
and Python, configuration only, catalog on replica b, token ``ops``), plus the CLI through replica b.

- What one application writes the other reads at its next statement (each catalog's cache checks versions in
  the store, whichever replica answers), both ways; the CLI's drop and undrop through b are seen through a.
- Fenced INSERTs through both replicas at the same time into one table all land exactly once, one table
  version each (a conflict between the replicas is retried by the store, not the user).
- Replica a killed -9 while a write's commit is on its way: the statement fails naming its write id, nothing
  of it is registered, application B keeps working through replica b meanwhile, and once a is back (same port)
  A's next statement succeeds without restarting Spark. Killed after the commit reached the store, before its
  answer left: the statement says its outcome is unknown, and the commit is in the store, whole.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from remote_service import KillingProxy, ServeProcess, make_token, remote_catalog
from spark_processes import spark_bin
from ushas_catalog.check import check_store
from ushas_catalog.cli import main as ushas
from ushas_catalog.metastore import Metastore

pytestmark = [pytest.mark.spark, pytest.mark.postgresql, pytest.mark.slow]

#: seconds application B may take in all (a JVM start on a busy machine included), and to reach a step
APP_TIMEOUT = 420
STEP_TIMEOUT = 240

#: application B's driver: runs its statements in order, one JSON line each; ``WAIT f`` waits for file ``f``
#: (written by the test), ``SIGNAL f`` writes one (read by the test)
DRIVER = textwrap.dedent("""
    import json, os, sys, time
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    root = sys.argv[2]
    for sql in json.load(open(sys.argv[1])):
        word, _, arg = sql.partition(" ")
        if word == "WAIT":
            deadline = time.monotonic() + %d
            while not os.path.exists(os.path.join(root, arg)) and time.monotonic() < deadline:
                time.sleep(0.05)
            continue
        if word == "SIGNAL":
            open(os.path.join(root, arg), "w").close()
            continue
        try:
            out = {"sql": sql, "rows": [list(r) for r in spark.sql(sql).collect()]}
        except Exception as e:
            out = {"sql": sql, "error": str(e)[:800]}
        print("RESULT " + json.dumps(out, default=str), flush=True)
    spark.stop()
""" % STEP_TIMEOUT)


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:6]}"


def _count(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) AS n FROM {table}").collect()[0].n)


def _launch_b(url: str, token: str, warehouse: Path, statements: list[str], root: Path) -> subprocess.Popen[str]:
    """Application B: ``spark-submit`` of :data:`DRIVER` with catalog ``svc`` on the replica at ``url``."""
    from ushas_catalog.spark.jar import jar_path

    token_file = root / "ops.token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    (root / "b.json").write_text(json.dumps(statements))
    (root / "driver.py").write_text(DRIVER)
    conf = {"spark.jars": str(jar_path()), "spark.sql.catalog.svc": "io.ushas.spark.UshasCatalog",
            "spark.sql.catalog.svc.uri": url, "spark.sql.catalog.svc.token-file": str(token_file),
            "spark.sql.catalog.svc.catalog": "main", "spark.sql.catalog.svc.warehouse": str(warehouse),
            "spark.sql.catalog.svc.bridge.timeout": "120", "spark.sql.extensions": "io.ushas.spark.UshasExtensions",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2"}
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("USHAS_TOKEN", None)
    cmd = [spark_bin("spark-submit"), "--master", "local[1]",
           "--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",   # a short-lived JVM: less CPU
           *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")],
           str(root / "driver.py"), str(root / "b.json"), str(root)]
    with open(root / "b.out", "w") as out, open(root / "b.err", "w") as err:   # files: B never blocks on a pipe
        return subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=err, text=True)


def _wait_for(root: Path, flag: str, app: subprocess.Popen[str]) -> None:
    """Until application B writes ``flag`` (it failing or the time running out fails the test)."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while not (root / flag).exists():
        if app.poll() is not None:
            raise AssertionError(f"application B ended ({app.returncode}) before {flag}: "
                                 f"{(root / 'b.err').read_text()[-3000:]}")
        assert time.monotonic() < deadline, f"application B did not reach {flag} in {STEP_TIMEOUT} s"
        time.sleep(0.05)


def _signal(root: Path, flag: str) -> None:
    (root / flag).touch()


def _results(app: subprocess.Popen[str], root: Path) -> list[dict[str, Any]]:
    try:
        app.wait(timeout=APP_TIMEOUT)
    except subprocess.TimeoutExpired:
        app.kill()
        app.wait(timeout=30)
    assert app.returncode == 0, (root / "b.err").read_text()[-4000:]
    return [json.loads(line[len("RESULT "):]) for line in (root / "b.out").read_text().splitlines()
            if line.startswith("RESULT ")]


def test_two_spark_applications_through_two_replicas_on_one_postgresql(spark: Any, postgres: Any, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    uri = postgres.fresh_uri()
    with Metastore.open(uri) as ms:
        ms.grant("OWN", "project", "user:etl")
        ms.grant("OWN", "project", "user:ops")
    etl, ops = make_token(uri, "write", "etl")[1], make_token(uri, "write", "ops")[1]
    a = ServeProcess(uri, "default", tmp_path / "a.log").start()
    b = ServeProcess(uri, "default", tmp_path / "b.log").start()
    killing = KillingProxy(a, "/commit_write")                       # a dies before the commit reaches it
    late = KillingProxy(a, "/commit_write", after_forwarding=True)   # a dies after committing, before answering
    warehouse = tmp_path / "warehouse"
    app_b: subprocess.Popen[str] | None = None
    try:
        ca = remote_catalog(spark, _name("ra"), a.url, etl, str(warehouse))
        spark.sql(f"CREATE NAMESPACE {ca}.db")
        spark.sql(f"CREATE TABLE {ca}.db.t (id INT, region STRING) USING parquet PARTITIONED BY (region)")
        spark.sql(f"CREATE TABLE {ca}.db.tmp (id INT) USING parquet")
        app_b = _launch_b(b.url, ops, warehouse, [
            "SELECT count(*) FROM svc.db.t",                     # 0: B's catalog caches the table
            "SIGNAL b_read", "WAIT a_wrote",
            "SELECT count(*) FROM svc.db.t",                     # 1: A's write, through replica b
            "INSERT INTO svc.db.t VALUES (2, 'US')",
            "SIGNAL b_wrote", "WAIT go",
            "INSERT INTO svc.db.t VALUES (20, 'EU')",            # at the same time as A's 10 and 11
            "INSERT INTO svc.db.t VALUES (21, 'EU')",
            "SIGNAL b_inserted", "WAIT a_down",
            "INSERT INTO svc.db.t VALUES (30, 'US')",            # replica a is dead: B works through b
            "SELECT count(*) FROM svc.db.t",
            "SIGNAL b_during", "WAIT a_back",
            "SELECT count(*) FROM svc.db.t WHERE id = 99",       # the write committed before a died
            "SELECT count(*) FROM svc.db.t",
        ], tmp_path)

        # each application caches what it read; the other's commits are seen at its next statement
        assert _count(spark, f"{ca}.db.t") == 0
        _wait_for(tmp_path, "b_read", app_b)
        spark.sql(f"INSERT INTO {ca}.db.t VALUES (1, 'EU')")
        _signal(tmp_path, "a_wrote")
        _wait_for(tmp_path, "b_wrote", app_b)
        assert _count(spark, f"{ca}.db.t") == 2
        assert {r.partition for r in spark.sql(f"SHOW PARTITIONS {ca}.db.t").collect()} == {"region=EU", "region=US"}
        # the CLI through replica b: Spark through replica a sees its drop and its undrop
        assert ushas(["--uri", b.url, "--token", ops, "drop", "main.db.tmp"]) == 0
        assert "tmp" not in {r.tableName for r in spark.sql(f"SHOW TABLES IN {ca}.db").collect()}
        assert ushas(["--uri", b.url, "--token", ops, "undrop", "main.db.tmp"]) == 0
        assert "tmp" in {r.tableName for r in spark.sql(f"SHOW TABLES IN {ca}.db").collect()}
        capsys.readouterr()

        # fenced INSERTs through both replicas at the same time: all land, once each, one version each
        with Metastore.open(uri, create=False) as ms:
            before = ms.get_table("main.db.t").version
        _signal(tmp_path, "go")
        for i in (10, 11):
            spark.sql(f"INSERT INTO {ca}.db.t VALUES ({i}, 'EU')")
        _wait_for(tmp_path, "b_inserted", app_b)
        ids = sorted(r.id for r in spark.sql(f"SELECT id FROM {ca}.db.t").collect())
        assert ids == [1, 2, 10, 11, 20, 21]
        with Metastore.open(uri, create=False) as ms:
            info = ms.get_table("main.db.t")
            assert info.version == before + 4
            assert [h.version for h in ms.history("main.db.t")] == list(range(info.version, 0, -1))
            assert {h.user for h in ms.history("main.db.t")[:4]} == {"etl", "ops"}

        # replica a killed -9 with a write's commit on its way: the statement fails naming the write id,
        # nothing of it is registered; B keeps writing and reading through replica b meanwhile
        ck = remote_catalog(spark, _name("rk"), killing.url, etl, str(warehouse))
        with pytest.raises(Exception, match=r"write id [0-9a-zA-Z_-]+\) may or may not have been registered: .*"
                                            r"OutcomeUnknown: ushas service at http://127.0.0.1:[0-9]+ unreachable"):
            spark.sql(f"INSERT INTO {ck}.db.t VALUES (7, 'APAC')")
        assert killing.killed == 1
        _signal(tmp_path, "a_down")
        _wait_for(tmp_path, "b_during", app_b)
        a.start()   # the same port: A's catalogs work again without restarting Spark
        assert _count(spark, f"{ca}.db.t WHERE id = 7") == 0
        assert "region=APAC" not in {r.partition for r in spark.sql(f"SHOW PARTITIONS {ca}.db.t").collect()}
        spark.sql(f"INSERT INTO {ca}.db.t VALUES (8, 'EU')")
        assert _count(spark, f"{ca}.db.t") == 8

        # killed after the commit reached the store, before its answer left: the outcome is unknown to the
        # statement, and the commit is in the store, whole, seen by A through a and by B through b
        cl = remote_catalog(spark, _name("rl"), late.url, etl, str(warehouse))
        with pytest.raises(Exception, match=r"may or may not have been registered: .*OutcomeUnknown: "
                                            r"ushas service at http://127.0.0.1:[0-9]+ unreachable"):
            spark.sql(f"INSERT INTO {cl}.db.t VALUES (99, 'APAC')")
        assert late.killed == 1
        a.start()
        assert _count(spark, f"{ca}.db.t WHERE id = 99") == 1
        assert "region=APAC" in {r.partition for r in spark.sql(f"SHOW PARTITIONS {ca}.db.t").collect()}
        _signal(tmp_path, "a_back")
        results = _results(app_b, tmp_path)
        app_b = None
        assert all("error" not in r for r in results), [r for r in results if "error" in r]
        assert [r["rows"][0][0] for r in results if r["sql"].startswith("SELECT")] == [0, 1, 7, 1, 9]
        report = check_store(uri, "default")
        assert report.ok, report.lines()
    finally:
        if app_b is not None:
            app_b.kill()
            app_b.wait(timeout=30)
        killing.close()
        late.close()
        a.stop()
        b.stop()
        postgres.drop_schema(uri)
