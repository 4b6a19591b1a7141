"""The Thrift JDBC/ODBC server (``HiveThriftServer2`` from pyspark's jars) with the catalog and the lineage
listener by configuration only (tests/spark_servers.py, as conf/thrift-server.conf): ``beeline`` (pyspark's
``bin/beeline``) creates, writes and reads an ushas table and gets Spark's error for a missing one; the
captured runs carry the JDBC user and session."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from spark_processes import spark_bin
from spark_servers import SparkServer, thrift_server

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def thrift(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkServer]:
    if shutil.which("java") is None and not Path(spark_bin("beeline")).exists():
        pytest.skip("no java / beeline")
    server = thrift_server(Path(tmp_path_factory.mktemp("thrift-server"))).start()
    try:
        yield server
    finally:
        server.stop()


def beeline(server: SparkServer, user: str, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([spark_bin("beeline"), "-u", f"jdbc:hive2://127.0.0.1:{server.port}/default", "-n", user,
                           "--silent=true", "--outputformat=csv2", "-e", sql],
                          cwd=server.cwd, capture_output=True, text=True, timeout=300)


def _first_errors(proc: subprocess.CompletedProcess[str]) -> str:
    """beeline's ``Error:`` lines (the message; the stack trace follows each) for a failure message."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    return "\n".join(lines)[:4000] or proc.stderr[-4000:]


def _runs(server: SparkServer, table: str, at_least: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 90
    while True:
        proc = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{server.cwd / 'ushas.db'}",
                               "--json", "lineage", "runs", table], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        runs = list(json.loads(proc.stdout))
        if len(runs) >= at_least or time.monotonic() > deadline:
            return runs
        time.sleep(1)


def test_beeline_creates_writes_reads_and_runs_name_the_jdbc_session(thrift: SparkServer) -> None:
    db = "jdbc_" + uuid.uuid4().hex[:6]
    t = f"ushas.{db}.t"
    proc = beeline(thrift, "carol", f"""
        CREATE NAMESPACE ushas.{db};
        CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt);
        INSERT INTO {t} VALUES (1, 'a'), (2, 'b');
        INSERT OVERWRITE {t} PARTITION (dt = 'b') VALUES (3);
        CREATE TABLE ushas.{db}.c USING parquet AS SELECT id * 10 AS id10 FROM {t} WHERE dt = 'a';
        SELECT concat('ROW ', id, ' ', dt) FROM {t} ORDER BY id;
        SELECT concat('CTAS ', id10) FROM ushas.{db}.c;
        SHOW PARTITIONS {t};
    """)
    assert proc.returncode == 0, _first_errors(proc) + thrift.tail(3000)
    out = proc.stdout
    assert "ROW 1 a" in out and "ROW 3 b" in out and "ROW 2 b" not in out
    assert "CTAS 10" in out and "dt=a" in out and "dt=b" in out
    bad = beeline(thrift, "carol", f"SELECT * FROM ushas.{db}.nope")
    assert bad.returncode != 0 and "TABLE_OR_VIEW_NOT_FOUND" in bad.stdout + bad.stderr
    runs = _runs(thrift, t, at_least=4)  # 2 writes, the CTAS's read, the SELECT
    assert sorted(r["kind"] for r in runs) == ["CREATE TABLE AS SELECT", "INSERT INTO", "INSERT OVERWRITE", "QUERY"]
    sessions = {r["session_id"] for r in runs}
    assert len(sessions) == 1 and None not in sessions  # one beeline connection = one JDBC session
    for r in runs:
        assert r["user"] == "carol" and r["client_kind"] == "thrift" and r["client_type"].startswith("jdbc")


def _store_keys(server: SparkServer) -> dict[bytes, bytes]:
    from ushas_catalog.metastore import Metastore

    ms = Metastore.open(f"sqlite:///{server.cwd / 'ushas.db'}")
    try:  # the catalog's and the grants' keys (the listener records each statement's run, refused or not)
        begin, end = ms.layout.project(ms.project).range()
        pairs = ms.db.run(lambda tr: list(tr.get_range(begin, end)))
        return {bytes(kv.key): bytes(kv.value) for kv in pairs
                if {"Catalog", "Access"} & set(ms.layout.keyspace.parse(bytes(kv.key)).directory_names)}
    finally:
        ms.close()


def test_a_jdbc_session_cannot_set_catalog_options(thrift: SparkServer) -> None:
    """A Thrift server leaves ``spark.ushas.session.catalogs`` unset: a JDBC session that re-points the deployed
    catalog's identity, or defines a catalog of its own over the store, with ``SET`` is refused when the catalog
    is first used in that session, and nothing in the store changes (docs/governance.md, "Catalog options are the
    deployer's")."""
    beeline(thrift, "carol", "SHOW NAMESPACES IN ushas")  # the store exists
    before = _store_keys(thrift)
    assert before  # the catalog ushas and its default namespace
    attempts = {
        "re-point the deployed catalog": ("SET spark.sql.catalog.ushas.user=admin; "
                                          "SET spark.sql.catalog.ushas.authorization=false; SHOW NAMESPACES IN ushas",
                                          "spark.sql.catalog.ushas.authorization"),
        "a catalog of its own": (f"SET spark.sql.catalog.evil=io.ushas.spark.UshasCatalog; "
                                 f"SET spark.sql.catalog.evil.uri=sqlite:///{thrift.cwd / 'ushas.db'}; "
                                 f"SET spark.sql.catalog.evil.user=admin; SHOW NAMESPACES IN evil",
                                 "spark.sql.catalog.evil"),
    }
    for case, (sql, named) in attempts.items():
        proc = beeline(thrift, "mallory", sql)
        text = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "USHAS_SessionCatalogOptions" in text and named in text, \
            (case, _first_errors(proc))
    assert _store_keys(thrift) == before
