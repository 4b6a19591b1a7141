"""What only the embedded engine has: URIs, file format, locking, pooling, batching, fork."""
from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.errors import Conflict, InvalidArgument, StoreUnavailable
from ushas_catalog.kv import Transaction, open_database
from ushas_catalog.kv.ryw import FIRST_BATCH, MAX_BATCH
from ushas_catalog.kv.sqlite import WAL_AUTOCHECKPOINT, SqliteDatabase, SqliteOptions, SqliteTransaction


@pytest.mark.parametrize("uri,path,synchronous,timeout", [
    ("sqlite:///a/b.db", "/a/b.db", "FULL", 5000),
    ("sqlite:////a/b.db", "/a/b.db", "FULL", 5000),
    ("sqlite:///a/with%20space.db", "/a/with space.db", "FULL", 5000),
    ("sqlite:///a/b.db?synchronous=normal", "/a/b.db", "NORMAL", 5000),
    ("sqlite:///a/b.db?synchronous=FULL&busy_timeout_ms=250", "/a/b.db", "FULL", 250),
])
def test_uri_options(uri: str, path: str, synchronous: str, timeout: int) -> None:
    assert SqliteOptions.parse(uri) == SqliteOptions(Path(path), synchronous, timeout)


@pytest.mark.parametrize("uri,message", [
    ("sqlite://relative.db", "absolute"),
    ("sqlite://host/x.db", "absolute"),
    ("sqlite:///a/dir/", "directory"),
    ("sqlite:///a/b.db?synchronous=off", "synchronous"),
    ("sqlite:///a/b.db?busy_timeout_ms=soon", "busy_timeout_ms"),
    ("sqlite:///a/b.db?wal_autocheckpoint=0", "wal_autocheckpoint"),
    ("sqlite:///a/b.db?wal_autocheckpoint=-5", "wal_autocheckpoint"),
    ("sqlite:///a/b.db?wal_autocheckpoint=lots", "wal_autocheckpoint"),
    ("sqlite:///a/b.db?wal_autocheckpoint=", "wal_autocheckpoint"),
    ("sqlite:///a/b.db?journal=delete", "unknown option"),
    ("sqlite/a/b.db", "invalid store URI"),
    ("mysql:///a", "unknown store URI scheme"),
])
def test_bad_uris(uri: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        open_database(uri)


def test_file_layout(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dirs" / "u.db"
    db = open_database(f"sqlite://{path}")
    db.run(lambda tr: tr.set(b"k", b"v"))
    db.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'kv'").fetchone()
    assert "WITHOUT ROWID" in sql and "k BLOB PRIMARY KEY" in sql
    assert conn.execute("SELECT typeof(k), typeof(v) FROM kv").fetchall() == [("blob", "blob")]
    conn.close()


@pytest.mark.parametrize("query,pragma,value", [
    ("", "synchronous", 2), ("?synchronous=normal", "synchronous", 1),
    ("", "wal_autocheckpoint", WAL_AUTOCHECKPOINT), ("?wal_autocheckpoint=123", "wal_autocheckpoint", 123),
])
def test_options_reach_connections(tmp_path: Path, query: str, pragma: str, value: int) -> None:
    db = open_database(f"sqlite://{tmp_path / 'u.db'}{query}")
    tr = db.create_transaction()
    assert isinstance(tr, SqliteTransaction)
    assert tr._conn.execute(f"PRAGMA {pragma}").fetchone()[0] == value   # type: ignore[union-attr]
    tr.cancel()
    db.close()


def test_wal_autocheckpoint_option() -> None:
    default = SqliteOptions.parse("sqlite:///a/b.db")
    assert default.wal_autocheckpoint == WAL_AUTOCHECKPOINT
    assert SqliteOptions.parse("sqlite:///a/b.db?synchronous=normal&wal_autocheckpoint=250") == \
        SqliteOptions(Path("/a/b.db"), "NORMAL", 5000, 250)


def test_not_a_database_is_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a sqlite file" * 100)
    with pytest.raises(StoreUnavailable, match="garbage.db"):
        open_database(f"sqlite://{path}")


def test_closed_database_refuses_transactions(store_uri: str) -> None:
    db = open_database(store_uri)
    db.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        db.run(lambda tr: tr.get(b"k"))


def test_read_only_transactions_do_not_take_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "u.db"
    db = open_database(f"sqlite://{path}?busy_timeout_ms=50")
    db.run(lambda tr: tr.set(b"k", b"v"))
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")                  # another process holds the write lock
    try:
        assert db.run(lambda tr: (tr.get(b"k"), [kv.key for kv in tr.get_range(b"", b"\xff")])) == (b"v", [b"k"])
        db.max_retries = 1
        with pytest.raises(Conflict):                  # a writer cannot commit meanwhile ...
            db.run(lambda tr: tr.set(b"k", b"w"))
    finally:
        other.execute("ROLLBACK")
        other.close()
    db.run(lambda tr: tr.set(b"k", b"w"))             # ... and can once the lock is released
    assert db.run(lambda tr: tr.get(b"k")) == b"w"


def test_connections_are_reused(store_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = open_database(store_uri)
    assert isinstance(db, SqliteDatabase)
    opened: list[Any] = []
    real_connect = SqliteDatabase._connect
    monkeypatch.setattr(SqliteDatabase, "_connect", lambda self: opened.append(1) or real_connect(self))
    for i in range(50):
        db.run(lambda tr: tr.set(b"k%d" % i, tr.get(b"k") or b"0"))
    assert opened == []                               # the connection of open() served them all

    def nested(tr: Transaction) -> bytes | None:
        tr.set(b"outer", b"1")
        return db.run(lambda inner: inner.get(b"k0"))  # a second transaction at the same time

    assert db.run(nested) == b"0"
    assert len(opened) == 1
    for _ in range(10):
        db.run(nested)
    assert len(opened) == 1                           # both connections went back to the pool


def test_range_reads_are_fetched_in_bounded_batches(store_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = open_database(store_uri)
    n = 3 * MAX_BATCH
    db.run(lambda tr: [tr.set(b"%06d" % i, b"v") for i in range(n)])
    fetched: list[int] = []
    real_fetch = SqliteTransaction._fetch

    def counting_fetch(self: SqliteTransaction, lo: bytes, hi: bytes, count: int, reverse: bool) -> Any:
        rows = real_fetch(self, lo, hi, count, reverse)
        fetched.append(len(rows))
        return rows

    monkeypatch.setattr(SqliteTransaction, "_fetch", counting_fetch)
    assert db.run(lambda tr: sum(1 for _ in tr.get_range(b"", b"\xff"))) == n
    assert max(fetched) <= MAX_BATCH and len(fetched) > 3 and sum(fetched) == n
    fetched.clear()
    first = db.run(lambda tr: [kv.key for _, kv in zip(range(10), tr.get_range(b"", b"\xff", reverse=True))])
    assert first == [b"%06d" % i for i in range(n - 1, n - 11, -1)]
    assert fetched == [FIRST_BATCH]                   # consuming 10 rows fetched one small batch


def test_iterating_after_commit_is_refused(store_uri: str) -> None:
    db = open_database(store_uri)
    db.run(lambda tr: [tr.set(b"%04d" % i, b"v") for i in range(FIRST_BATCH * 3)])
    rows = db.run(lambda tr: tr.get_range(b"", b"\xff"))
    with pytest.raises(InvalidArgument, match="already committed"):
        list(rows)


def test_commit_versions_survive_reopen(store_uri: str) -> None:
    def stamp(db: Any) -> bytes:
        holder: list[Transaction] = []
        db.run(lambda tr: holder.append(tr) or tr.set(b"k", b"v"))
        return holder[-1].get_versionstamp()

    db = open_database(store_uri)
    before = [stamp(db) for _ in range(3)]
    db.close()
    after = stamp(open_database(store_uri))
    assert before == sorted(before) and len(set(before)) == 3 and after > before[-1]


def _child_writes(db: SqliteDatabase, key: bytes) -> None:
    db.run(lambda tr: tr.set(key, b"from-child"))


def test_a_forked_child_opens_its_own_connections(store_uri: str) -> None:
    db = open_database(store_uri)
    assert isinstance(db, SqliteDatabase)
    db.run(lambda tr: tr.set(b"parent", b"1"))        # the pool now holds a connection
    idle_before = list(db._idle)
    proc = multiprocessing.get_context("fork").Process(target=_child_writes, args=(db, b"child"))
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert db._idle == idle_before                     # the parent's pool is untouched
    assert db.run(lambda tr: (tr.get(b"parent"), tr.get(b"child"))) == (b"1", b"from-child")


def _open_and_write(uri: str, key: bytes) -> None:
    open_database(uri).run(lambda tr: tr.set(key, b"1"))


def test_processes_and_threads_creating_one_new_store_together_all_open_it(tmp_path: Path) -> None:
    """The Thrift server's catalog and lineage listener open a new store at the same moment, as do two
    jobs started together: switching the new file to WAL is refused at once to all but one, and a
    connection that saw the journal mode before the switch saw the other's schema: neither is an error."""
    import threading

    ctx = multiprocessing.get_context("fork")
    for trial in range(8):
        uri = f"sqlite:///{tmp_path}/store{trial}.db"
        errors: list[BaseException] = []

        def thread(key: bytes, uri: str = uri) -> None:
            try:
                _open_and_write(uri, key)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

        procs = [ctx.Process(target=_open_and_write, args=(uri, b"p%d" % i)) for i in range(2)]
        threads = [threading.Thread(target=thread, args=(b"t%d" % i,)) for i in range(3)]
        for p in procs:
            p.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        for p in procs:
            p.join(timeout=60)
        assert errors == [] and [p.exitcode for p in procs] == [0, 0]
        keys = open_database(uri).run(lambda tr: sorted(kv.key for kv in tr.get_range(b"", b"\xff")))
        assert keys == [b"p0", b"p1", b"t0", b"t1", b"t2"]
