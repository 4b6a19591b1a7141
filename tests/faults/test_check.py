"""``ushas check``: a healthy store passes; each kind of damage is found by its check; the store
is opened read-only and never written; exit codes 0 / 3 / 2."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Callable, Iterator

import fdb.tuple as fdbtuple
import pytest

from ushas_catalog import records as rec
from ushas_catalog.check import CHECKS, EXIT_PROBLEMS, Check, Finding, check_store, inventory, register, run_checks
from ushas_catalog.metadata.store import MetadataKeys
from ushas_catalog.metastore import Metastore
from ushas_catalog.records.store import RecordStore

from faults.store_fill import dump, file_digest, fill


@pytest.fixture
def filled(store_uri: str) -> Iterator[Metastore]:
    ms = Metastore.open(store_uri, project="acme", user="tester")
    fill(ms)
    yield ms
    ms.close()


def _path(ms: Metastore, name: str):
    return next(o.path for o in inventory(ms).objects if o.name == name)


def _names_of(report) -> set[str]:
    return {f.check for f in report.findings}


def test_healthy_store_passes_every_check(filled: Metastore, store_uri: str) -> None:
    report = check_store(store_uri, "acme")
    assert report.ok, report.lines()
    assert [r.name for r in report.results] == [c.name for c in CHECKS]
    assert {"engine", "counter", "names", "versions", "partitions", "data-files", "search-index",
            "change-feed"} <= {c.name for c in CHECKS}
    # the inventory saw the live, dropped and unreachable-through-a-dropped-parent objects
    shown = {o.name: (o.live, o.dropped, o.reachable) for o in inventory(filled).objects}
    assert shown["main.sales.orders"] == (True, False, True)
    assert shown["main.sales.gone (dropped)"] == (False, True, False)
    assert shown["main.old.t"] == (True, False, False)


def _set(ms: Metastore, key: bytes, value: bytes) -> None:
    ms.db.run(lambda tr: tr.set(key, value))


def _clear(ms: Metastore, key: bytes) -> None:
    ms.db.run(lambda tr: tr.clear(key))


def _lose_table_reference(ms: Metastore) -> None:
    _clear(ms, _path(ms, "main.sales.orders").add("TableReference").key())


def _dangling_name(ms: Metastore) -> None:
    db = _path(ms, "main.sales")
    RecordStore.at(db.add("Table").add("TableObjectName"))
    ms.db.run(lambda tr: RecordStore.at(db.add("Table").add("TableObjectName")).save(
        tr, ("ghost",), rec.ObjectName(id=uuid.uuid4().bytes, kind=rec.ObjectKind.TABLE)))


def _unreachable_table(ms: Metastore) -> None:
    db = _path(ms, "main.sales")
    ms.db.run(lambda tr: RecordStore.at(db.add("Table").add("TableObjectName")).delete(tr, ("flat",)))


def _commit_above_head(ms: Metastore) -> None:
    t = _path(ms, "main.sales.orders")
    ms.db.run(lambda tr: RecordStore.at(t.add("TableCommit")).save(tr, (999,), rec.Commit(version=999)))


def _partition_wrong_arity(ms: Metastore) -> None:
    t = _path(ms, "main.sales.orders")
    _set(ms, t.add("TablePartition").pack(("2024-02-01", "extra")), rec.Partition(location="/x").SerializeToString())


def _partition_count_wrong(ms: Metastore) -> None:
    from ushas_catalog.metadata.store import PROPERTY, Scope, pack_element

    oid = next(o.id for o in inventory(ms).objects if o.name == "main.sales.orders")
    keys = MetadataKeys(ms.project_path)
    key = b"".join((keys.entry_prefix(oid), pack_element(None), pack_element(Scope.SYSTEM.value),
                    pack_element(PROPERTY), pack_element("partition_count")))
    assert ms.db.run(lambda tr: tr.get(key)) == b"3"
    _set(ms, key, b"4")


def _files_mismatch(ms: Metastore) -> None:
    t = _path(ms, "main.sales.orders")
    store = RecordStore.at(t.add("TablePartition"), ("dt",))
    part = ms.db.run(lambda tr: store.load(tr, ("2024-01-03",)))
    part.files = 2
    ms.db.run(lambda tr: store.save(tr, ("2024-01-03",), part))


def _index_entry_lost(ms: Metastore) -> None:
    ms.merge_index()
    keys = MetadataKeys(ms.project_path)
    first = ms.db.run(lambda tr: next(iter(tr.get_range(*keys.index.range(), limit=1))))
    _clear(ms, first.key)


def _index_entry_stale(ms: Metastore) -> None:
    keys = MetadataKeys(ms.project_path)
    _set(ms, keys.index.key() + fdbtuple.pack(("t", "ghost", 2, 0, uuid.uuid4(), None, "ghost")),
         fdbtuple.pack(("main.sales.ghost",)))


def _feed_garbage(ms: Metastore) -> None:
    feed = ms.project_path.add("ChangeFeed").add("ChangeEvent")
    last = ms.db.run(lambda tr: next(iter(tr.get_range(*feed.range(), limit=1, reverse=True))))
    _set(ms, last.key, b"\xff\xfe not a record")


def _counter_lowered(ms: Metastore) -> None:
    path = ms.db.options.path
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE meta SET value = 1 WHERE name = 'commit_version'")
    conn.close()


DAMAGE: list[tuple[str, Callable[[Metastore], None], str]] = [
    ("names", _lose_table_reference, "without its TableReference record"),
    ("names", _dangling_name, "which has no record"),
    ("names", _unreachable_table, "unreachable"),
    ("versions", _commit_above_head, "above the object's version"),
    ("partitions", _partition_wrong_arity, "partition key with 2 value(s)"),
    ("partitions", _partition_count_wrong, "partition_count property says 4"),
    ("data-files", _files_mismatch, "files=2 but 1 file(s) recorded"),
    ("search-index", _index_entry_lost, "index entry missing"),
    ("search-index", _index_entry_stale, "stale"),
    ("change-feed", _feed_garbage, "could not run"),
    ("counter", _counter_lowered, "below a recorded commit version"),
]


@pytest.mark.parametrize("check,damage,message", DAMAGE, ids=[d[1].__name__.strip("_") for d in DAMAGE])
def test_each_kind_of_damage_is_found(filled: Metastore, store_uri: str, check: str,
                                      damage: Callable[[Metastore], None], message: str) -> None:
    assert check_store(store_uri, "acme").ok
    damage(filled)
    report = check_store(store_uri, "acme")
    assert not report.ok
    assert check in _names_of(report), report.lines()
    assert any(message in f.problem for f in report.findings if f.check == check), report.lines()


def test_engine_damage_is_found(filled: Metastore, store_uri: str, tmp_path: Path) -> None:
    filled.close()
    path = tmp_path / "ushas.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    assert pages >= 4
    with open(path, "r+b") as f:  # scribble over the last page: a b-tree page of the kv table
        f.seek(page * (pages - 1) + 8)
        f.write(b"\x00\x13\x37" * 300)
    report = check_store(store_uri, "acme", ["engine"], full=True)
    assert not report.ok and report.results[0].name == "engine", report.lines()


def test_check_never_writes_and_works_on_a_read_only_store(filled: Metastore, store_uri: str,
                                                           tmp_path: Path) -> None:
    from readonly_fs import make_read_only

    filled.close()
    path = tmp_path / "ushas.db"
    before = file_digest(path)
    assert check_store(store_uri, "acme").ok
    assert file_digest(path) == before
    undo = make_read_only(tmp_path)
    try:
        assert check_store(store_uri, "acme").ok
    finally:
        undo()
    assert file_digest(path) == before


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ushas_catalog", *argv], capture_output=True, text=True,
                          timeout=120)


def test_cli_exit_codes_and_json(filled: Metastore, store_uri: str, tmp_path: Path) -> None:
    done = _cli("--uri", store_uri, "--project", "acme", "check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("ok: ")
    done = _cli("--uri", store_uri, "--project", "acme", "check", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True
    _dangling_name(filled)
    _commit_above_head(filled)
    done = _cli("--uri", store_uri, "--project", "acme", "check")
    assert done.returncode == EXIT_PROBLEMS == 3
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("names: ") and lines[1].startswith("versions: ")
    assert lines[-1].startswith("2 problem(s) found")
    data = json.loads(_cli("--json", "--uri", store_uri, "--project", "acme", "check").stdout)
    assert data["ok"] is False and data["problems"] == 2
    done = _cli("--uri", store_uri, "check", "--only", "names", "--only", "versions")
    assert done.returncode == 0  # project "default" is empty
    done = _cli("--uri", store_uri, "check", "--only", "nonsense")
    assert done.returncode == 2 and "unknown check(s) nonsense" in done.stderr
    missing = tmp_path / "nowhere" / "u.db"
    done = _cli("--uri", f"sqlite:///{missing}", "check")
    assert done.returncode == 2 and f"store not found: {missing}" in done.stderr
    assert not missing.parent.exists()
    done = _cli("check", "--list")
    assert done.returncode == 0 and "search-index" in done.stdout


def test_registry_takes_a_function_that_lists_problems(filled: Metastore) -> None:
    """The one-line addition of a check (e.g. pending work from an interrupted operation)."""
    def pending_work(ms: Metastore) -> list[str]:
        return ["purge of main.sales.big: 3 of 10 chunks done"]

    register(Check("pending-work-test", pending_work, "test"))
    try:
        report = run_checks(filled)
        assert report.findings == [Finding("pending-work-test", "purge of main.sales.big: 3 of 10 chunks done")]
        assert report.lines()[0] == "pending-work-test: purge of main.sales.big: 3 of 10 chunks done"
    finally:
        CHECKS[:] = [c for c in CHECKS if c.name != "pending-work-test"]


def test_a_check_that_fails_to_run_is_a_finding(filled: Metastore) -> None:
    def broken(ms: Metastore) -> list[str]:
        raise RuntimeError("boom")

    register(Check("broken-test", broken))
    try:
        report = run_checks(filled, ["broken-test"])
        assert [f.line() for f in report.findings] == ["broken-test: could not run: RuntimeError: boom"]
    finally:
        CHECKS[:] = [c for c in CHECKS if c.name != "broken-test"]


def test_check_leaves_the_project_dump_unchanged(filled: Metastore, store_uri: str) -> None:
    before = dump(filled, project_only=False)
    run_checks(filled)
    assert dump(filled, project_only=False) == before
