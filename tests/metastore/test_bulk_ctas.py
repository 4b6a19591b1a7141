"""A CTAS / RTAS bigger than one transaction staged hidden (:mod:`ushas_catalog.bulk_ctas`), its process killed
(SIGKILL) between two staging chunks or between its last chunk and its publish: nothing of the new table
is visible on any surface (the API, the CLI, REST, search), an RTAS's old table is whole, ``ushas check``
reports the pending CTAS (and nothing else), ``ushas repair --pending`` rolls it back (the hidden table's keys
gone, the write ABORTED) and ``ushas purge`` deletes the files it placed."""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.bulk import pending_work
from ushas_catalog.bulk_work import work_store
from ushas_catalog.cli import main as cli_main
from ushas_catalog.metastore import Metastore

#: partitions the killed CTAS stages (16 a chunk in the child)
PARTS = 60
#: the column every table here has (search finds tables by their columns)
COLUMN = "zebracolumn"
#: give up waiting for the child after this long (a bound, not a timing assertion)
WAIT_S = 300


def _child(uri: str, tmp_path: Path, name: str, write_id: str, pause_after: int | None) -> subprocess.Popen[bytes]:
    """A process that does what the Spark commit of a big CTAS does up to its publish: the staged write's
    entry and its placed files (as ``stage_table`` / ``stage_files`` record them), then the hidden staging;
    it then waits to be killed (``pause_after``: it waits after that many staging chunks instead)."""
    code = textwrap.dedent(f"""
        import os, time
        from ushas_catalog import bulk, bulk_ctas
        from ushas_catalog.catalog.values import now_micros
        from ushas_catalog.data.garbage import Garbage, record_garbage
        from ushas_catalog.data.staged import add_staged_files, staged_id, staged_operation
        from ushas_catalog.metastore import Metastore
        from ushas_catalog.model.data_files import DataFile
        from ushas_catalog.model.names import TableName
        from ushas_catalog.model.partitions import Partition

        bulk.WRITE_CHUNK = 16
        ms = Metastore.open({uri!r}, project="default", user="child")
        name, write_id, root = TableName.parse({name!r}), {write_id!r}, {str(tmp_path / "new")!r}
        staging = f"{{root}}/_ushas_staging/{{write_id}}"
        os.makedirs(staging)
        ms.db.run(lambda tr: record_garbage(tr, ms.project_path, staged_id(write_id), str(name),
                                           staged_operation("CREATE TABLE AS SELECT", write_id),
                                           Garbage(files=[DataFile("file:" + staging, 0, 0)]), now_micros()))
        files = []
        for i in range({PARTS}):
            os.makedirs(f"{{root}}/dt={{i}}")
            open(f"{{root}}/dt={{i}}/part-{{write_id}}.parquet", "wb").write(b"x")
            files.append(DataFile(f"file:{{root}}/dt={{i}}/part-{{write_id}}.parquet", 1, 1))
        add_staged_files(ms, write_id, files)
        items = [Partition(values={{"dt": str(i)}}, data_files=[f], rows=1) for i, f in enumerate(files)]
        pause_after, values, seen = {pause_after!r}, bulk._values, []
        def counted(*a):
            if pause_after is not None and len(seen) == pause_after:
                time.sleep(600)
            seen.append(1)
            return values(*a)
        bulk._values = counted
        bulk_ctas.stage(ms, name, "{COLUMN} BIGINT, dt STRING", ["dt"], "file:" + root, items, write_id)
        time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(child: subprocess.Popen[bytes], ms: Metastore, done: int) -> Any:
    deadline = time.monotonic() + WAIT_S
    while True:
        found = [w for w in pending_work(ms) if w.kind == "CTAS" and w.done >= done]
        if found:
            return found[0]
        if child.poll() is not None:
            pytest.fail(f"the child ended (exit {child.returncode}):\n{child.communicate()[1].decode()}")
        assert time.monotonic() < deadline, "the child never got that far"
        time.sleep(0.05)


def _surfaces(ms: Metastore, client: Any, table: str) -> tuple[Any, ...]:
    """(table_exists, list_tables has it, search finds it, the CLI's ``tables`` has it, REST's table_exists,
    REST search finds it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["--uri", ms.db.uri, "--json", "tables", "c.d"]) == 0
    call = client.post("/api/v1/metastore/call", json={"method": "table_exists", "args": [f"c.d.{table}"]},
                       headers=client.headers)
    hits = client.get(f"/api/v1/search?q={COLUMN}", headers=client.headers)
    assert call.status_code == 200 and hits.status_code == 200, (call.data[:300], hits.data[:300])
    return (ms.table_exists(("c", "d", table)), table in [t.name for t in ms.list_tables(("c", "d"))],
            any(h.relation == f"c.d.{table}" for h in ms.search(COLUMN).hits),
            f'"{table}"' in out.getvalue(), call.json["result"], f"c.d.{table}" in json.dumps(hits.json))


@pytest.fixture
def rest(store_uri: str) -> Any:
    from remote_service import make_token
    from ushas_catalog.service.api import register_api
    from ushas_catalog.ui.app import create_app

    ms = Metastore.open(store_uri, project="default")
    ms.grant("OWN", "project", "user:admin")
    ms.close()
    app = create_app(store_uri, "default")
    register_api(app, app.config["USHAS"])
    client = app.test_client()
    client.headers = {"Authorization": f"Bearer {make_token(store_uri, 'write', 'admin')[1]}"}
    yield client
    app.config["USHAS"].close()


@pytest.mark.parametrize("killed", ["between chunks", "before its publish"])
@pytest.mark.parametrize("statement", ["CTAS", "RTAS"])
def test_a_killed_big_ctas_is_invisible_reported_and_rolled_back(store_uri: str, tmp_path: Path, rest: Any,
                                                                 capsys: pytest.CaptureFixture[str], killed: str,
                                                                 statement: str) -> None:
    from ushas_catalog.check import run_checks
    from ushas_catalog.data.purge import purge
    from ushas_catalog.data.write_fence import get_outcome

    ms = Metastore.open(store_uri, project="default")
    ms.create_catalog("c")
    ms.create_database(("c", "d"))
    table = "t"
    old = None
    if statement == "RTAS":
        ms.create_table(("c", "d", table), f"{COLUMN} BIGINT, dt STRING", partition_by=["dt"],
                        location=f"file:{tmp_path}/old")
        ms.add_partitions(("c", "d", table), [{"dt": "a"}, {"dt": "b"}])
        old = ms.get_table(("c", "d", table))
    before = _surfaces(ms, rest, table)
    assert before == ((True,) * 6 if old else (False,) * 6)
    write_id = str(uuid.uuid4())
    child = _child(store_uri, tmp_path, f"c.d.{table}", write_id, 2 if killed == "between chunks" else None)
    try:
        work = _wait_for(child, ms, 32 if killed == "between chunks" else PARTS)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    hidden = ms.db.run(lambda tr: [r.record.object_key for r in work_store(ms.project_path).scan(tr)])
    assert len(hidden) == 1 and ms.db.run(lambda tr: len(list(tr.get_range(hidden[0], hidden[0] + b"\xff")))) > 0
    # nothing of the new table anywhere; an RTAS's old table whole
    assert _surfaces(ms, rest, table) == before
    if old is not None:
        assert ms.get_table(("c", "d", table)) == old and len(list(ms.list_partitions(("c", "d", table)))) == 2
    # ushas check: the pending CTAS, and nothing else
    findings = [(r.name, f.to_json()) for r in run_checks(ms).results for f in r.findings]
    assert [(n, f["where"]) for n, f in findings] == [("pending-work", f"c.d.{table}")], findings
    assert findings[0][1]["problem"].startswith("CTAS staging") and work.operation_id
    capsys.readouterr()
    assert cli_main(["--uri", store_uri, "--json", "repair", "--pending"]) == 0
    capsys.readouterr()
    # rolled back: no pending work, no key of the hidden table, the write ABORTED, check clean
    assert pending_work(ms) == []
    assert ms.db.run(lambda tr: list(tr.get_range(hidden[0], hidden[0] + b"\xff"))) == []
    assert get_outcome(ms, write_id).state == "ABORTED"
    assert [(f.check, f.where) for r in run_checks(ms).results for f in r.findings] == [("staged-writes",
                                                                                          f"c.d.{table}")]
    assert _surfaces(ms, rest, table) == before
    # purge deletes what the killed write placed (an RTAS's old table keeps its data: it was never dropped)
    placed = [p for p in (tmp_path / "new").rglob("part-*")]
    assert len(placed) == PARTS
    purge(ms)
    assert [p for p in (tmp_path / "new").rglob("part-*")] == []
    assert [f.to_json() for r in run_checks(ms).results for f in r.findings] == []
    if old is not None:
        assert ms.get_table(("c", "d", table)) == old
    ms.close()


def test_the_next_big_ctas_of_the_name_rolls_a_dead_one_back(store_uri: str, tmp_path: Path) -> None:
    from ushas_catalog import bulk_ctas
    from ushas_catalog.model.names import TableName
    from ushas_catalog.model.partitions import Partition

    ms = Metastore.open(store_uri, project="default")
    ms.create_catalog("c")
    ms.create_database(("c", "d"))
    child = _child(store_uri, tmp_path, "c.d.t", str(uuid.uuid4()), None)
    try:
        dead = _wait_for(child, ms, PARTS)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    hidden = ms.db.run(lambda tr: [r.record.object_key for r in work_store(ms.project_path).scan(tr)])[0]
    staged = bulk_ctas.stage(ms, TableName.parse("c.d.t"), f"{COLUMN} BIGINT, dt STRING", ["dt"],
                             f"file:{tmp_path}/again", [Partition(values={"dt": "x"})], None)
    assert [w.operation_id for w in pending_work(ms)] == [str(staged.work.op)] != [dead.operation_id]
    assert ms.db.run(lambda tr: list(tr.get_range(hidden, hidden + b"\xff"))) == []
    bulk_ctas.roll_back(ms, staged)
    assert pending_work(ms) == [] and not ms.table_exists(("c", "d", "t"))
    ms.close()


SCHEMA_JSON = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]})


def test_a_big_ctas_needs_the_privileges_a_small_one_needs(store_uri: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile shim sends the commit of a big CTAS for a user who may not create the table (CREATE was
    revoked after the stage): refused before anything is staged; with CREATE back it commits, hidden first."""
    from ushas_catalog import bulk
    from ushas_catalog.errors import PermissionDenied
    from ushas_catalog.spark.staged import OPS

    from ushas_catalog import bulk_ctas

    from ushas_catalog.kv.base import Limits
    from ushas_catalog.kv.sqlite import SqliteDatabase

    monkeypatch.setattr(bulk, "WRITE_CHUNK", 16)
    stage, hidden = bulk_ctas.stage, []
    monkeypatch.setattr(bulk_ctas, "stage", lambda *a, **k: hidden.append(stage(*a, **k)) or hidden[-1])
    admin = Metastore.open(store_uri, project="p")
    admin.create_catalog("c")
    admin.create_database(("c", "d"), location=f"file:{tmp_path}/wh")
    admin.grant("USE", "c", "user:bob")
    admin.grant("CREATE", ("c", "d"), "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    request = {"ctx": {"uri": store_uri, "project": "p", "catalog": "c", "warehouse": str(tmp_path), "user": "bob",
                       "authorization": True},
               "namespace": ["d"], "name": "t", "kind": "create", "schema": SCHEMA_JSON, "properties": {},
               "partitioning": [{"transform": "identity", "columns": ["dt"], "text": "dt"}]}
    staged = OPS["stage_table"](bob, request)
    location = staged["table"]["location"]
    written = [{"path": f"dt={i}", "existing": [], "files": [{"path": f"{location}/dt={i}/part-0.parquet",
                                                               "size": 1, "mtime": 1}]} for i in range(120)]
    commit = {**request, "write_id": staged["write_id"], "deadline_ms": time.time_ns() // 1_000_000 + 60_000,
              "location": location, "write": {"written": written, "rows": 120}}
    monkeypatch.setattr(SqliteDatabase, "limits", Limits(transaction_bytes=20_000))  # the one transaction fails
    admin.revoke("CREATE", ("c", "d"), "user:bob")
    with pytest.raises(PermissionDenied):
        OPS["commit_staged"](bob, commit)
    assert pending_work(admin) == [] and not admin.table_exists(("c", "d", "t")) and hidden == []
    assert admin.db.run(lambda tr: [r.record.kind for r in work_store(admin.project_path).scan(tr)]) == []
    admin.grant("CREATE", ("c", "d"), "user:bob")
    answer = OPS["commit_staged"](bob, commit)
    assert answer["version"] == 2 and len(list(admin.list_partitions(("c", "d", "t")))) == 120
    assert len(hidden) == 1 and str(hidden[0].table_id) == admin.get_table(("c", "d", "t")).id
    assert [(h.operation, h.detail.get("bulk")) for h in admin.history(("c", "d", "t"))] == [
        ("APPEND", True), ("CREATE TABLE", None)]
    assert pending_work(admin) == []
