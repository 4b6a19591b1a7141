"""A Spark Connect server started with the catalog, the lineage listener and the lineage plugin by
configuration only (tests/spark_servers.py, as conf/connect-server.conf); two client processes at once,
each with its own session, user and application name, neither importing ushas_catalog: namespaces,
partitioned tables, every write form, reads with pruning, Spark's errors; then every captured run of each
client's table names that client's session, user, client type and application, and the write of a
checkpointed DataFrame reaches its source table."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_servers import SparkServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CLIENT = Path(__file__).with_name("client_catalog.py")
CLIENT_TIMEOUT = 420.0


def _result(proc: subprocess.Popen[str], server: SparkServer) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=CLIENT_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, err[-4000:] + server.tail(3000)
    return dict(json.loads(lines[-1][len("RESULT "):]))


def _runs(server: SparkServer, table: str, at_least: int) -> list[dict[str, Any]]:
    """The table's captured runs (``ushas lineage runs``), once at least ``at_least`` are stored (the
    listener stores them asynchronously; bounded wait)."""
    deadline = time.monotonic() + 90
    while True:
        proc = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{server.cwd / 'ushas.db'}",
                               "--json", "lineage", "runs", table], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        runs = list(json.loads(proc.stdout))
        if len(runs) >= at_least or time.monotonic() > deadline:
            return runs
        time.sleep(1)


def _cli(server: SparkServer, *args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{server.cwd / 'ushas.db'}",
                           "--json", "lineage", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_two_clients_at_once(connect: SparkServer, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    clients = {user: (f"{user}_{suffix}", f"notebook_{user}") for user in ("alice", "bob")}
    procs = {user: subprocess.Popen([sys.executable, str(CLIENT), f"sc://127.0.0.1:{connect.port}/;user_id={user}",
                                     db, app], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for user, (db, app) in clients.items()}
    results = {user: _result(proc, connect) for user, proc in procs.items()}
    assert results["alice"]["session_id"] != results["bob"]["session_id"]
    for user, r in results.items():
        assert r["ushas_catalog_imported"] is False  # a plain Connect client
        assert r["rows"] == [[1, "a"], [3, "b"], [4, "c"], [5, "a"], [7, "d"], [8, "e"]]
        assert r["partitions"] == ["dt=a", "dt=b", "dt=c", "dt=d", "dt=e"]
        assert r["ctas"] == [[1, "a"], [5, "a"]] and r["sat"] == [[9, "f"]] and r["wc"] == [[10, "g"]]
        assert r["tables"] == ["ck", "ctas", "sat", "t", "wc"]
        assert r["pruned"] == [1, 5]
        assert "Analyzed Logical Plan ==\nDeleteFromTableWithFilters" in r["delete_plan"], r["delete_plan"]
        assert r["deleted"] == [[1, "a"]] and r["delete_commit"] == ["DELETE", True]
        assert "UshasFileIndex" in r["explain"] and "PartitionFilters: [isnotnull(dt" in r["explain"]
        assert r["errors"] == {"missing_table": "TABLE_OR_VIEW_NOT_FOUND", "missing_namespace": "SCHEMA_NOT_FOUND",
                               "table_exists": "TABLE_OR_VIEW_ALREADY_EXISTS",
                               "namespace_exists": "SCHEMA_ALREADY_EXISTS",
                               "bad_column": "UNRESOLVED_COLUMN.WITH_SUGGESTION"}
    for user, (db, app) in clients.items():
        # 2 INSERT + dynamic overwrite + append + insertInto + overwritePartitions + overwrite: 7 writes of t
        runs = _runs(connect, f"ushas.{db}.t", at_least=7)
        writes = [r for r in runs if r["access"] == "write"]
        assert len(writes) == 7, runs
        for r in runs:
            assert r["user"] == user
            assert r["session_id"] == results[user]["session_id"]
            assert r["client_kind"] == "connect"
            assert r["client_type"].startswith("_SPARK_CONNECT_PYTHON spark/")
            assert r["application_name"] == app and r["job"].startswith(f"{app}.")
        # the checkpointed write: captured on the server, through the saved rows to the source table
        (ck,) = [r for r in _runs(connect, f"ushas.{db}.ck", at_least=1) if r["access"] == "write"]
        edges = {(e["target"], e["source"], e["subtype"]) for e in _cli(connect, "run", ck["run_id"])["edges"]}
        assert edges == {(f"ushas.{db}.ck.udt", f"ushas.{db}.t.dt", "TRANSFORMATION"),
                         (f"ushas.{db}.ck.id", f"ushas.{db}.t.id", "IDENTITY"),
                         (f"ushas.{db}.ck", f"ushas.{db}.t.id", "FILTER")}, edges
    text = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{connect.cwd / 'ushas.db'}",
                           "lineage", "runs", f"ushas.{clients['bob'][0]}.t"], capture_output=True, text=True,
                          timeout=60).stdout
    assert "SESSION_ID" in text and results["bob"]["session_id"] in text and "bob" in text
