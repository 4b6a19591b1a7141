"""Writes bigger than one transaction (``bulk.replace_partitions``: a Spark write's commit), at small sizes:
the threshold and the chunk size are lowered so that a few hundred partitions take many chunks, and the
engine's transaction size limit is lowered so that one transaction cannot hold the whole write."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from ushas_catalog import bulk
from ushas_catalog.check import run_checks
from ushas_catalog.data.garbage import Garbage
from ushas_catalog.data.write_fence import get_outcome
from ushas_catalog.errors import WriteConflict
from ushas_catalog.kv.base import Limits
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.names import TableName
from ushas_catalog.model.partitions import Partition

T = "main.sales.t"


@pytest.fixture
def small(sales: Metastore, monkeypatch: pytest.MonkeyPatch) -> Metastore:
    monkeypatch.setattr(bulk, "WRITE_BULK_AT", 50)
    monkeypatch.setattr(bulk, "WRITE_CHUNK", 17)
    monkeypatch.setattr(bulk, "CHUNK_ITEMS", 17)
    sales.create_table(T, "id long, dt string, h int", partition_by=["dt", "h"], location="/wh/t")
    return sales


def _spec(i: int) -> dict[str, Any]:
    return {"dt": f"{i:05d}", "h": i % 3}


def _files(i: int, tag: str) -> list[DataFile]:
    return [DataFile(f"file:/wh/t/dt={i:05d}/h={i % 3}/{tag}-{i}.parquet", 10 + i, 1)]


def _puts(lo: int, hi: int, tag: str) -> list[Partition]:
    return [Partition(values=_spec(i), data_files=_files(i, tag), files=1, rows=5) for i in range(lo, hi)]


def _files_of(ms: Metastore) -> dict[str, list[str]]:
    return {p.values["dt"]: [f.path for f in p.data_files or []] for p in ms.list_partitions(T)}


def _raw_records(ms: Metastore) -> list[Any]:
    from ushas_catalog import records as rec

    prefix = ms.db.run(lambda tr: ms.resolver.table(tr, TableName.parse(T)).path.add("TablePartition").key())
    return [rec.Partition.FromString(kv.value) for kv in ms.db.run(lambda tr: list(tr.get_range(prefix, prefix + b"\xff")))]


def test_append_and_overwrite_in_chunks_each_commit_one_version_once(small: Metastore) -> None:
    small.replace_partitions(T, [], _puts(0, 10, "seed"), operation="APPEND")  # one transaction: 10 <= 50
    assert small.get_table(T).version == 2 and small.history(T)[0].detail.get("bulk") is None
    write = str(uuid.uuid4())
    r = small.replace_partitions(T, [], _puts(5, 305, "a"), operation="APPEND", expected_version=2, write_id=write)
    assert (r.version, r.added, r.replaced, r.dropped) == (3, 295, 5, 0)
    files = _files_of(small)
    assert len(files) == 305 and files["00007"] == [f.path for f in _files(7, "a")]
    again = small.replace_partitions(T, [], _puts(5, 305, "a"), operation="APPEND", write_id=write)
    assert (again.version, again.added) == (3, 295) and small.get_table(T).version == 3  # applied once
    assert get_outcome(small, write).state == "COMMITTED"

    # INSERT OVERWRITE, dynamic: the written partitions replaced; static: a partial spec drops the rest of h=1
    old = Garbage(files=[f for i in range(100, 200) for f in _files(i, "a")])
    r = small.replace_partitions(T, [_spec(i) for i in range(100, 200)], _puts(100, 200, "b"), garbage=old,
                                 operation="OVERWRITE PARTITIONS", unchanged_since=3, expected_version=3)
    assert (r.version, r.added, r.replaced, r.dropped) == (4, 0, 100, 0)
    h1 = [i for i in range(0, 305) if i % 3 == 1]
    r = small.replace_partitions(T, [{"h": 1}], _puts(301, 302, "c") + _puts(400, 460, "c"),
                                 operation="OVERWRITE PARTITIONS", expected_version=4)
    assert (r.version, r.added, r.replaced, r.dropped) == (5, 60, 1, len(h1) - 1)
    files = _files_of(small)
    assert len(files) == 305 - len(h1) + 1 + 60 and files["00150"] == [f.path for f in _files(150, "b")]
    assert [h.operation for h in small.history(T)][:4] == ["OVERWRITE PARTITIONS", "OVERWRITE PARTITIONS",
                                                           "APPEND", "APPEND"]
    assert bulk.pending_work(small) == []
    assert not any(r.HasField("replaced") or r.dropped_version for r in _raw_records(small))  # cleaned up
    assert {f.path for g in small.garbage(T) for f in g.files} == {f.path for f in old.files}
    assert small.metadata.get(T).system.properties["partition_count"] == str(len(files))
    report = run_checks(small)
    assert report.ok, report.lines()


def test_an_overwrite_meets_a_change_since_it_started(small: Metastore) -> None:
    small.replace_partitions(T, [], _puts(0, 100, "a"), operation="APPEND")
    small.replace_partitions(T, [], _puts(42, 43, "x"), operation="APPEND")  # version 3 changes 00042
    with pytest.raises(WriteConflict, match=r"partition \(dt=00042, h=0\) of main.sales.t was changed"):
        small.replace_partitions(T, [_spec(i) for i in range(0, 100)], _puts(0, 100, "b"),
                                 operation="OVERWRITE PARTITIONS", unchanged_since=2)
    assert small.get_table(T).version == 3 and bulk.pending_work(small) == []
    assert _files_of(small)["00041"] == [f.path for f in _files(41, "a")]


def test_a_write_that_does_not_fit_one_transaction_goes_in_chunks(small: Metastore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "WRITE_BULK_AT", 100_000)  # below it: one transaction is tried first
    small.replace_partitions(T, [], _puts(0, 50, "a"), operation="APPEND")
    small.db.limits = Limits(transaction_bytes=60_000)  # the engine's limit, lowered: 400 partitions do not fit
    try:
        r = small.replace_partitions(T, [_spec(i) for i in range(0, 50)], _puts(0, 400, "b"),
                                     operation="OVERWRITE PARTITIONS", write_id=str(uuid.uuid4()))
    finally:
        small.db.limits = Limits()
    assert (r.version, r.added, r.replaced) == (3, 350, 50)
    assert len(_files_of(small)) == 400 and small.history(T)[0].detail.get("bulk") is True


def test_a_failure_between_chunks_leaves_the_table_as_before_and_the_write_retryable(
        small: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    small.replace_partitions(T, [], _puts(0, 100, "a"), operation="APPEND")
    before = _files_of(small)
    real = bulk.stage_writes

    def fail_after_some(ms: Metastore, work: Any, t: Any, items: Any, append: bool = False) -> Any:
        real(ms, work, t, items[:60], append)  # 4 chunks staged, then the process "fails"
        raise OSError("injected failure between chunks")

    monkeypatch.setattr(bulk, "stage_writes", fail_after_some)
    write = str(uuid.uuid4())
    with pytest.raises(OSError, match="injected failure between chunks"):
        small.replace_partitions(T, [{"h": 1}], _puts(0, 200, "b"), operation="OVERWRITE PARTITIONS", write_id=write)
    assert _files_of(small) == before and small.get_table(T).version == 2 and bulk.pending_work(small) == []
    assert not any(r.HasField("replaced") or r.added_version > 2 or r.dropped_version for r in _raw_records(small))
    assert get_outcome(small, write).state == "UNKNOWN"  # not ended: the caller may retry it
    monkeypatch.setattr(bulk, "stage_writes", real)
    r = small.replace_partitions(T, [{"h": 1}], _puts(0, 200, "b"), operation="OVERWRITE PARTITIONS", write_id=write)
    assert r.version == 3 and len(_files_of(small)) == 200
    assert run_checks(small).ok


def test_a_crash_mid_commit_is_invisible_and_repair_rolls_it_back(small: Metastore) -> None:
    """The committing process "died" after some staging chunks: every reader sees the table as before;
    ``ushas check`` names the pending write; rolling it back (``ushas repair --pending``) leaves the
    table as before, ends the write (ABORTED: a late retry is refused) and hands its files to purge."""
    small.replace_partitions(T, [], _puts(0, 100, "a"), operation="APPEND")
    small.set_partition_tags(T, _spec(4), {"owner": "x"})
    before, version = _files_of(small), small.get_table(T).version
    write = str(uuid.uuid4())
    work, t = bulk._begin(small, TableName.parse(T), "WRITE", None, 200, {"operation": "OVERWRITE PARTITIONS",
                                                                          "write_id": write})
    bulk._mark_drops(small, work, t, [{"h": 1}], True)
    bulk.stage_writes(small, work, t, _puts(0, 60, "b"))
    # readers: listings, scans, one partition, keys
    assert _files_of(small) == before
    assert {k[0] for k, _ in small.scan_partitions(T)[1]} == set(before)
    assert small.get_partition(T, _spec(4)).data_files == _files(4, "a")
    assert small.get_partition(T, _spec(4)).tags == {"owner": "x"}
    assert {k[0] for k in small.list_partition_keys(T)[1]} == set(before)
    assert small.get_table(T).version == version
    assert run_checks(small).ok  # a write in progress is no problem
    small.db.run(lambda tr: _set_owner(tr, small, work.op, "elsewhere:1:dead"))
    assert [f.check for f in run_checks(small).findings] == ["pending-work"]  # the crash is reported
    assert [w.kind for w in bulk.finish_pending(small)] == ["WRITE"]
    assert _files_of(small) == before and small.get_partition(T, _spec(4)).tags == {"owner": "x"}
    assert not any(r.HasField("replaced") or r.added_version > version or r.dropped_version
                   for r in _raw_records(small))
    assert get_outcome(small, write).state == "ABORTED"
    released = {f.path for g in small.garbage(T) for f in g.files}
    assert released == {f.path for i in range(0, 60) for f in _files(i, "b")}  # the write's, never the table's
    report = run_checks(small)
    assert report.ok, report.lines()


def _set_owner(tr: Any, ms: Metastore, op: uuid.UUID, owner: str) -> None:
    store = bulk.work_store(ms.project_path)
    r = store.load(tr, (op,))
    r.owner, r.heartbeat_micros = owner, 0
    store.save(tr, (op,), r)


def test_a_big_write_goes_through_the_same_privilege_check(small: Metastore, store_uri: str) -> None:
    """A user who may read the table but not modify it cannot get a write in by making it big enough to be
    chunked: refused before anything is staged, nothing pending, the table unchanged."""
    from ushas_catalog.errors import PermissionDenied

    small.replace_partitions(T, [], _puts(0, 10, "a"), operation="APPEND")
    small.grant("SELECT", T, "user:bob")
    bob = Metastore.open(store_uri, project="acme", user="bob", authorization=True)
    try:
        assert len(list(bob.list_partitions(T))) == 10
        for drops in ([], [{"h": 1}]):
            with pytest.raises(PermissionDenied, match="User bob does not have MODIFY"):
                bob.replace_partitions(T, drops, _puts(0, 300, "evil"), operation="APPEND")
    finally:
        bob.close()
    assert small.get_table(T).version == 2 and bulk.pending_work(small) == []
    assert len(_raw_records(small)) == 10 and _files_of(small)["00001"] == [f.path for f in _files(1, "a")]


def test_a_write_killed_mid_commit_leaves_the_table_as_before(small: Metastore, store_uri: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL of the process committing a chunked overwrite between two staging chunks: readers see the
    table as before (while it runs and after), ``ushas check`` reports the pending write, ``ushas repair
    --pending`` rolls it back and ends it, then ``ushas check`` is green and a late retry is refused."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    from ushas_catalog.cli import main as cli_main
    from ushas_catalog.errors import WriteAborted

    small.replace_partitions(T, [], _puts(0, 100, "a"), operation="APPEND")
    before, version = _files_of(small), small.get_table(T).version
    write = str(uuid.uuid4())
    code = textwrap.dedent(f"""
        import time
        from ushas_catalog import bulk
        from ushas_catalog.metastore import Metastore
        from ushas_catalog.model.data_files import DataFile
        from ushas_catalog.model.partitions import Partition
        bulk.WRITE_BULK_AT, bulk.WRITE_CHUNK = 50, 20
        values = bulk._values
        def slow(*a):  # each staging chunk takes a while: the parent kills the process between two
            time.sleep(0.3)
            return values(*a)
        bulk._values = slow
        ms = Metastore.open({store_uri!r}, project="acme", user="child")
        puts = [Partition(values={{"dt": f"{{i:05d}}", "h": i % 3}}, data_files=[DataFile(
                    f"file:/wh/t/dt={{i:05d}}/h={{i % 3}}/b-{{i}}.parquet", 1, 1)]) for i in range(0, 300)]
        ms.replace_partitions({T!r}, [{{"h": 1}}], puts, operation="OVERWRITE PARTITIONS", write_id={write!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # a bound, not a timing assertion
        while not [w for w in bulk.pending_work(small) if w.kind == "WRITE" and w.done >= 100]:
            assert child.poll() is None, child.communicate()[1].decode()
            assert time.monotonic() < deadline, "the child never reached its staging chunks"
            time.sleep(0.05)
        assert _files_of(small) == before  # while the commit runs
        [left] = bulk.pending_work(small)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert _files_of(small) == before and small.get_table(T).version == version
    capsys.readouterr()
    assert cli_main(["--uri", store_uri, "--project", "acme", "check"]) != 0
    assert "WRITE" in capsys.readouterr().out
    assert cli_main(["--uri", store_uri, "--project", "acme", "--json", "repair", "--pending"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["finished"] == [left.operation_id] and report["left"] == []
    assert cli_main(["--uri", store_uri, "--project", "acme", "check"]) == 0
    assert _files_of(small) == before and get_outcome(small, write).state == "ABORTED"
    with pytest.raises(WriteAborted, match=f"write {write} was aborted"):
        small.replace_partitions(T, [{"h": 1}], _puts(0, 300, "b"), operation="OVERWRITE PARTITIONS", write_id=write)


def test_one_partition_column_and_a_whole_table_overwrite(small: Metastore) -> None:
    """One partition column: an append in chunks, then an overwrite of the whole table (Spark's truncate
    mode: drop spec ``{}``) that writes some of the partitions again, drops the others, adds new ones."""
    one = "main.sales.one"
    small.create_table(one, "id long, d string", partition_by=["d"], location="/wh/one")
    puts = [Partition(values={"d": f"{i:04d}"}, data_files=[DataFile(f"file:/wh/one/d={i:04d}/a.parquet", 1, 1)])
            for i in range(200)]
    assert small.replace_partitions(one, [], puts, operation="APPEND").added == 200
    again = [Partition(values={"d": f"{i:04d}"}, data_files=[DataFile(f"file:/wh/one/d={i:04d}/b.parquet", 1, 1)])
             for i in range(150, 260)]
    r = small.replace_partitions(one, [{}], again, operation="OVERWRITE")
    assert (r.version, r.added, r.replaced, r.dropped) == (3, 60, 50, 150)
    listed = {p.values["d"]: [f.path for f in p.data_files or []] for p in small.list_partitions(one)}
    assert sorted(listed) == [f"{i:04d}" for i in range(150, 260)]
    assert listed["0150"] == ["file:/wh/one/d=0150/b.parquet"] and bulk.pending_work(small) == []
    report = run_checks(small)
    assert report.ok, report.lines()


def test_the_shims_commit_of_many_partitions_goes_in_chunks_once(small: Metastore, store_uri: str,
                                                                 tmp_path: Any) -> None:
    """The ``commit_write`` request the JVM sends (through the bridge's entry point) for an INSERT and a
    dynamic INSERT OVERWRITE of 120 partitions: each one chunked table version; the same request again
    (a retry after an unknown result) answers the first commit and applies nothing."""
    import json

    from ushas_catalog.spark.bridge import handle

    small.create_database("main.db")
    small.create_table("main.db.t", "id INT, dt STRING", partition_by=["dt"])
    warehouse = f"file:{tmp_path}/warehouse"
    location = f"{warehouse}/db.db/t"
    ctx = {"project": "acme", "catalog": "main", "spark_catalog": "ushas", "branch": "main", "uri": store_uri,
           "warehouse": warehouse, "user": "tester"}

    def commit(mode: str, tag: str, base: int, write_id: str) -> dict[str, Any]:
        written = [{"path": f"dt=p{i:04d}", "files": [{"path": f"{location}/dt=p{i:04d}/{tag}.parquet", "size": 1,
                                                      "mtime": 1}], "existing": []} for i in range(120)]
        answer = json.loads(handle("commit_write", json.dumps({
            "ctx": ctx, "namespace": ["db"], "name": "t", "location": location, "mode": mode, "filters": [],
            "written": written, "rows": 120, "write_id": write_id, "base_version": base})))
        assert "error" not in answer, answer
        return dict(answer)

    first = str(uuid.uuid4())
    assert commit("append", "a", 1, first)["version"] == 2
    assert commit("dynamic", "b", 2, str(uuid.uuid4()))["version"] == 3
    again = commit("append", "a", 1, first)
    assert again.get("already_committed") is True and again["version"] == 2
    history = small.history("main.db.t")
    assert [(h.operation, h.detail.get("bulk"), h.detail.get("replaced")) for h in history[:2]] == [
        ("OVERWRITE PARTITIONS", True, 120), ("APPEND", True, 0)]
    assert {f.path.rsplit("/", 1)[1] for p in small.list_partitions("main.db.t") for f in p.data_files or []} \
        == {"b.parquet"}
    assert bulk.pending_work(small) == [] and small.get_table("main.db.t").version == 3


def test_a_partition_given_twice_is_refused_before_anything_is_staged(small: Metastore) -> None:
    from ushas_catalog.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match=r"partition \(dt=00003, h=0\) is given twice"):
        small.replace_partitions(T, [], _puts(0, 100, "a") + _puts(3, 4, "b"), operation="APPEND")
    assert small.get_table(T).version == 1 and bulk.pending_work(small) == [] and _raw_records(small) == []


def test_a_big_write_through_the_service_commits_in_chunks(small: Metastore, store_uri: str) -> None:
    """Remote mode: the service runs the caller's write the same way (chunked, one version, fenced once)."""
    from .conftest import served_metastore

    write = str(uuid.uuid4())
    with served_metastore(store_uri) as remote:
        r = remote.replace_partitions(T, [], _puts(0, 120, "a"), operation="APPEND", write_id=write)
        again = remote.replace_partitions(T, [], _puts(0, 120, "a"), operation="APPEND", write_id=write)
    assert (r.version, r.added) == (again.version, again.added) == (2, 120)
    assert small.history(T)[0].detail.get("bulk") is True and len(_files_of(small)) == 120
    assert bulk.pending_work(small) == []


def _extra_keys(ms: Metastore) -> int:
    """Keys of the table's partition records beyond one per partition: appended chunks left behind."""
    prefix = ms.db.run(lambda tr: ms.resolver.table(tr, TableName.parse(T)).path.add("TablePartition").key())
    return len(ms.db.run(lambda tr: list(tr.get_range(prefix, prefix + b"\xff")))) - len(list(ms.list_partitions(T)))


def test_chunked_writes_over_partitions_grown_by_appends(small: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition appends grew is stored over several keys (one chunk per append). A chunked overwrite of it
    shows a reader of the older version every file while it is staged, leaves no chunk behind, and time travel
    back still sees the appended files; a chunked append adds its files to the whole list (nothing lost); one
    that fails mid-way, or meets a partition whose files are not recorded, leaves everything as it was."""
    from ushas_catalog.errors import FilesNotRecorded

    def paths(i: int, *tags: str) -> list[str]:
        return [f.path for tag in tags for f in _files(i, tag)]

    def append(lo: int, hi: int, tag: str) -> Any:
        return small.replace_partitions(T, [], _puts(lo, hi, tag), operation="APPEND", append=True)

    small.replace_partitions(T, [], _puts(0, 100, "a"), operation="APPEND")  # v2, in chunks
    append(0, 20, "x"), append(0, 20, "y")  # v3, v4: one transaction each, a chunk per partition each
    grown = _files_of(small)
    assert grown["00003"] == paths(3, "a", "x", "y") and _extra_keys(small) > 0
    real, seen = bulk.stage_writes, []

    def look(ms: Metastore, work: Any, t: Any, items: Any, append: bool = False) -> Any:
        out = real(ms, work, t, items, append)
        seen.append(_files_of(ms))  # a reader of the table's version while the write is staged
        return out

    monkeypatch.setattr(bulk, "stage_writes", look)
    r = small.replace_partitions(T, [], _puts(0, 100, "b"), operation="OVERWRITE PARTITIONS")
    assert (r.version, r.replaced, seen) == (5, 100, [grown])
    assert _files_of(small)["00003"] == paths(3, "b") and _extra_keys(small) == 0  # no chunk left to merge in
    then = {key[0]: [f.path for f in p.data_files] for key, p in small.files_as_of(T, 4).partitions}
    assert then == grown

    append(0, 20, "z")  # v6: chunks again
    before, seen[:] = _files_of(small), []
    r = small.replace_partitions(T, [], _puts(0, 110, "c"), operation="APPEND", append=True)  # v7, in chunks
    assert (r.version, r.added, r.replaced, seen) == (7, 10, 100, [before])
    files = _files_of(small)
    assert files["00003"] == paths(3, "b", "z", "c") and files["00050"] == paths(50, "b", "c")
    assert files["00105"] == paths(105, "c") and _extra_keys(small) == 0
    p = small.get_partition(T, _spec(3))
    assert (p.files, p.rows) == (3, 15)
    assert {key[0]: [f.path for f in p.data_files] for key, p in small.files_as_of(T, 6).partitions} == before

    append(0, 20, "w")  # v8
    before = _files_of(small)

    def fail(ms: Metastore, work: Any, t: Any, items: Any, append: bool = False) -> Any:
        real(ms, work, t, items[:40], append)
        raise OSError("injected failure between chunks")

    monkeypatch.setattr(bulk, "stage_writes", fail)
    with pytest.raises(OSError, match="injected failure"):
        small.replace_partitions(T, [], _puts(0, 100, "d"), operation="APPEND", append=True)
    assert _files_of(small) == before and small.get_table(T).version == 8 and bulk.pending_work(small) == []
    monkeypatch.setattr(bulk, "stage_writes", real)
    small.add_partitions(T, [Partition(values=_spec(500))])  # v9: files not recorded
    with pytest.raises(FilesNotRecorded, match="00500"):
        small.replace_partitions(T, [], _puts(0, 60, "e") + _puts(500, 501, "e"), operation="APPEND", append=True)
    assert _files_of(small) == {**before, "00500": []} and small.get_table(T).version == 9
    assert bulk.pending_work(small) == []
    append(0, 1, "f")
    assert _files_of(small)["00000"] == before["00000"] + paths(0, "f")
    report = run_checks(small)
    assert report.ok, report.lines()


def test_a_big_writes_garbage_is_recorded_after_its_publish_in_chunks(small: Metastore,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Garbage over ``GARBAGE_IN_PUBLISH`` files stays out of the publishing transaction (100,000 replaced
    files would pass the 10 MB limit alone) and is recorded right after it, in entries of that many."""
    monkeypatch.setattr(bulk, "GARBAGE_IN_PUBLISH", 40)
    small.replace_partitions(T, [], _puts(0, 100, "a"), operation="APPEND")
    old = Garbage(files=[f for i in range(100) for f in _files(i, "a")])
    r = small.replace_partitions(T, [_spec(i) for i in range(100)], _puts(0, 100, "b"), garbage=old,
                                 operation="OVERWRITE PARTITIONS")
    assert (r.added, r.replaced) == (0, 100)
    entries = small.garbage(T)
    assert len(entries) == -(-len(old.files) // 40) and {g.operation for g in entries} == {"OVERWRITE PARTITIONS"}
    assert sorted(f.path for g in entries for f in g.files) == sorted(f.path for f in old.files)
    assert _files_of(small)["00007"] == [f.path for f in _files(7, "b")]
