"""What only the PostgreSQL engine has: its URI (no password in it; PGPASSWORD and .pgpass), opening
(missing, foreign and damaged stores, ``mode=ro``), the counter's repair, and its server-side faults:
a connection killed (``pg_terminate_backend``) mid-transaction and during ``COMMIT``. The shared
contract runs on it through ``conftest.store``."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import fdb.tuple
import pytest

from ushas_catalog.errors import InvalidArgument, NotAStore, StoreDamaged, StoreNotFound, StoreReadOnly, StoreUnavailable
from ushas_catalog.kv import Transaction, open_database
from ushas_catalog.kv.base import CommitUnknownResult
from ushas_catalog.kv.counter import rebuild_counter
from ushas_catalog.kv.postgres import PostgresDatabase, PostgresOptions

from pg_server import PASSWORD, PASSWORD_USER, PgServer

pytestmark = pytest.mark.postgresql


@pytest.fixture
def pg_uri(postgres: PgServer) -> Iterator[str]:
    uri = postgres.fresh_uri()
    yield uri
    postgres.drop_schema(uri)


# --- the URI --------------------------------------------------------------------------------------
@pytest.mark.parametrize("uri, message", [
    ("postgresql://u:hunter2@h:5432/db", "must not carry a password"),
    ("postgresql://u@h:5432/", "name the database"),
    ("postgresql://u@h:5432/db?schema=Bad-Name", "invalid schema='Bad-Name'"),
    ("postgresql://u@h:5432/db?schema=1x", "invalid schema='1x'"),
    ("postgresql://u@h:5432/db?pool_size=-1", "invalid pool_size"),
    ("postgresql://u@h:5432/db?unreachable_s=soon", "invalid unreachable_s"),
    ("postgresql://u@h:5432/db?mode=rx", "invalid mode='rx'"),
    ("postgresql://u@h:5432/db?busy_timeout_ms=0", "invalid busy_timeout_ms"),
    ("postgresql://u@h:5432/db?synchronous_commit=maybe", "invalid synchronous_commit"),
    ("postgresql://u@h:5432/db?options=-csearch_path%3Dx", "options= is set by this engine"),
])
def test_bad_uris_are_refused_naming_the_problem(uri: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message) as info:
        open_database(uri)
    assert "hunter2" not in str(info.value)


def test_libpq_parameters_pass_through_and_own_options_do_not() -> None:
    o = PostgresOptions.parse("postgresql://u@db.example:6543/cat?sslmode=require&schema=s1&pool_size=2"
                              "&unreachable_s=3&application_name=x")
    assert (o.schema, o.pool_size, o.unreachable_s, o.read_only) == ("s1", 2, 3.0, False)
    assert "sslmode=require" in o.conninfo and "application_name=x" in o.conninfo
    assert "schema" not in o.conninfo and "pool_size" not in o.conninfo
    assert o.where == "db.example:6543/cat schema s1"


def test_password_from_pgpassword_and_pgpass_never_in_errors(postgres: PgServer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    uri = postgres.uri(schema="pw_store", user=PASSWORD_USER)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    with pytest.raises(StoreUnavailable, match="password") as info:
        open_database(uri)
    assert "\n" not in info.value.message
    monkeypatch.setenv("PGPASSWORD", "wrong-one")
    with pytest.raises(StoreUnavailable, match="password authentication failed") as info:
        open_database(uri)
    assert "wrong-one" not in str(info.value)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with open_database(uri) as db:
        db.run(lambda tr: tr.set(b"k", b"v"))
    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres.port}:*:{PASSWORD_USER}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    with open_database(uri, create=False) as db:
        assert db.run(lambda tr: tr.get(b"k")) == b"v"
    postgres.drop_schema(uri)


# --- opening ----------------------------------------------------------------------------------------
def test_create_false_never_creates_and_a_foreign_schema_is_left_alone(postgres: PgServer, pg_uri: str) -> None:
    with pytest.raises(StoreNotFound, match="store not found"):
        open_database(pg_uri, create=False)
    schema = pg_uri.split("schema=")[1]
    assert postgres.sql("SELECT count(*) FROM pg_namespace WHERE nspname = %s", schema) == [(0,)]
    postgres.sql(f"CREATE SCHEMA {schema}")
    postgres.sql(f"CREATE TABLE {schema}.kv (id int, name text)")
    for create in (True, False):
        with pytest.raises(NotAStore, match="not an ushas store"):
            open_database(pg_uri, create=create)
    assert postgres.sql(f"SELECT count(*) FROM {schema}.kv") == [(0,)]


def test_opening_twice_concurrently_creates_once(pg_uri: str) -> None:
    opened: list[bool] = []

    def open_one() -> None:
        db = PostgresDatabase.open(pg_uri)
        opened.append(db.created)
        db.close()

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(opened) == [False, False, False, True]


def test_read_only_mode_reads_and_refuses_writes(pg_uri: str) -> None:
    with open_database(pg_uri) as db:
        db.run(lambda tr: tr.set(b"a", b"1"))
    with open_database(pg_uri + "&mode=ro", create=False) as ro:
        assert ro.run(lambda tr: tr.get(b"a")) == b"1"
        with pytest.raises(StoreReadOnly, match="read-only"):
            ro.run(lambda tr: tr.set(b"a", b"2"))
    with open_database(pg_uri) as db:
        assert db.run(lambda tr: tr.get(b"a")) == b"1"


def log_key(i: int) -> bytes:
    return fdb.tuple.pack_with_versionstamp(("log", fdb.tuple.Versionstamp(), i))


def test_a_lost_counter_is_refused_then_rebuilt_above_every_recorded_version(postgres: PgServer, pg_uri: str) -> None:
    with open_database(pg_uri) as db:
        for i in range(3):
            db.run(lambda tr, i=i: tr.set_versionstamped_key(log_key(i), b""))
        last = db.commit_version()  # type: ignore[attr-defined]
    assert last == 3
    schema = pg_uri.split("schema=")[1]
    postgres.sql(f"DELETE FROM {schema}.meta WHERE name = 'commit_version'")
    with pytest.raises(StoreDamaged, match="repair --counter"):
        open_database(pg_uri)
    report = rebuild_counter(pg_uri)
    assert (report.max_recorded, report.repaired_to) == (3, 3)
    with open_database(pg_uri) as db:
        db.run(lambda tr: tr.set_versionstamped_key(log_key(9), b""))
        stamps = db.run(lambda tr: [fdb.tuple.unpack(kv.key)[1].tr_version for kv in tr.get_range(b"", b"\xff")])
    assert stamps == sorted(stamps) and int.from_bytes(stamps[-1][:8], "big") == 4


def test_ushas_repair_counter_and_check_on_postgresql(pg_uri: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    init = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", pg_uri, "init"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert init.returncode == 0, init.stderr
    for args in (["repair", "--counter"], ["check"]):
        done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", pg_uri, *args],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
    assert "ok:" in done.stdout


# --- killed connections -----------------------------------------------------------------------------
def test_connection_killed_mid_transaction_is_retried_and_applied_once(postgres: PgServer, pg_uri: str) -> None:
    attempts = []
    with open_database(pg_uri) as db:
        db.run(lambda tr: tr.set(b"n", b"0"))

        def bump(tr: Transaction) -> None:
            n = int(tr.get(b"n") or b"0")
            attempts.append(n)
            if len(attempts) == 1:   # the first attempt's backend is killed before its commit
                pid = tr._conn.info.backend_pid  # type: ignore[attr-defined]
                postgres.sql("SELECT pg_terminate_backend(%s)", pid)
            tr.set(b"n", str(n + 1).encode())

        db.run(bump)
        assert db.run(lambda tr: tr.get(b"n")) == b"1"
    assert attempts == [0, 0]


def test_connection_killed_during_commit_is_commit_unknown_result_retried(postgres: PgServer, pg_uri: str) -> None:
    """A deferred trigger makes the server work inside COMMIT; the backend is killed there. The
    client cannot know whether it committed: CommitUnknownResult, retried; the idempotent
    transaction ends applied once."""
    schema = pg_uri.split("schema=")[1]
    with open_database(pg_uri) as db:
        postgres.sql(f"CREATE FUNCTION {schema}.slow() RETURNS trigger LANGUAGE plpgsql AS "
                     f"$$ BEGIN IF NEW.k = '\\x736c6f77'::bytea THEN PERFORM pg_sleep(3); END IF; RETURN NULL; END $$")
        postgres.sql(f"CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON {schema}.kv DEFERRABLE INITIALLY DEFERRED "
                     f"FOR EACH ROW EXECUTE FUNCTION {schema}.slow()")
        errors: list[BaseException] = []
        original = db.create_transaction

        def killer() -> None:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                rows = postgres.sql("SELECT pid FROM pg_stat_activity WHERE query = 'COMMIT' AND state = 'active'")
                if rows:
                    postgres.sql("SELECT pg_terminate_backend(%s)", rows[0][0])
                    return
                time.sleep(0.02)
            errors.append(AssertionError("no COMMIT to kill"))

        seen: list[BaseException] = []

        class Watching:
            def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
                return getattr(self.tr, name)

            def __init__(self) -> None:
                self.tr = original()

            def commit(self) -> None:
                try:
                    self.tr.commit()
                except CommitUnknownResult as exc:
                    seen.append(exc)
                    raise

        db.create_transaction = Watching  # type: ignore[method-assign]

        def once(tr: Transaction) -> None:
            if tr.get(b"slow") is None:    # idempotent: a retry after an applied commit does nothing
                tr.set(b"slow", b"1")
                tr.add(b"count", 1)

        thread = threading.Thread(target=killer)
        thread.start()
        db.run(once)
        thread.join(20)
        db.create_transaction = original  # type: ignore[method-assign]
        assert not errors
        assert len(seen) == 1 and "commit_unknown_result" in str(seen[0]) and "\n" not in str(seen[0])
        assert db.run(lambda tr: (tr.get(b"slow"), tr.get(b"count"))) == (b"1", (1).to_bytes(8, "little"))


def test_a_commit_lock_held_too_long_is_store_busy_not_a_limit(postgres: PgServer, pg_uri: str) -> None:
    """Another session holds the store's commit lock (a huge commit, a stuck writer): a write waits
    busy_timeout_ms per attempt, retries, and ends as StoreBusy naming the lock; reads never wait."""
    from ushas_catalog.errors import StoreBusy

    uri = pg_uri + "&busy_timeout_ms=200"
    schema = pg_uri.split("schema=")[1]
    with open_database(uri) as db, postgres.connect() as holder:
        db.run(lambda tr: tr.set(b"a", b"1"))
        holder.execute("BEGIN")
        holder.execute(f"SELECT value FROM {schema}.meta WHERE name = 'commit_version' FOR UPDATE")
        with pytest.raises(StoreBusy, match="commit lock .its counter row. stayed taken") as info:
            db.run(lambda tr: tr.set(b"a", b"2"))
        assert "\n" not in info.value.message
        assert db.run(lambda tr: tr.get(b"a")) == b"1"
        holder.execute("ROLLBACK")
        db.run(lambda tr: tr.set(b"a", b"3"))
        assert db.run(lambda tr: tr.get(b"a")) == b"3"


@pytest.mark.parametrize("written, attempts", [
    (b"z", 1),      # a key it did not read: re-read under the commit lock, unchanged, committed at once
    (b"r", 2),      # the range's begin (inclusive): read, absent before: a conflict
    (b"a", 2),      # a key it read: a conflict, retried
    (b"r5", 2),     # a new key inside a range it read: a conflict, retried
    (b"s", 1),      # the first key past that range: not read
], ids=["unrelated", "range-begin", "read-key", "in-range", "past-range"])
def test_an_overtaken_transaction_conflicts_only_on_what_it_read(pg_uri: str, written: bytes, attempts: int) -> None:
    """Another writer commits ``written`` while the transaction runs: its snapshot is overtaken (the counter
    moved), so its commit asks its reads again under the commit lock; it conflicts only when one of them
    gets other rows now (FoundationDB's granularity: the keys and ranges read, not the whole store)."""
    with open_database(pg_uri) as db, open_database(pg_uri) as other:
        db.run(lambda tr: (tr.set(b"a", b"0"), tr.set(b"r1", b"x"), tr.set(b"r9", b"y")))
        seen: list[int] = []

        def work(tr: Transaction) -> None:
            a = tr.get(b"a")
            rows = list(tr.get_range(b"r", b"s"))
            seen.append(len(rows))
            if len(seen) == 1:
                other.run(lambda t: t.set(written, b"new"))
            tr.set(b"out", b"%d" % len(rows) + (a or b""))

        before = db.commit_version()
        db.run(work)
        assert len(seen) == attempts, seen
        assert db.commit_version() == (before or 0) + 2   # the other commit, then this one: in commit order
        in_range = written.startswith(b"r")
        assert db.run(lambda tr: tr.get(b"out")) == (b"%d" % (2 + in_range)) + (b"new" if written == b"a" else b"0")


def test_a_transaction_that_read_too_much_to_re_check_conflicts_on_any_commit(pg_uri: str,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``REVALIDATE_ROWS`` rows read, an overtaken commit is not re-checked (re-reading would cost too
    much): any commit after its snapshot is a conflict for it, as before the re-check existed."""
    from ushas_catalog.kv import postgres

    monkeypatch.setattr(postgres, "REVALIDATE_ROWS", 2)
    with open_database(pg_uri) as db, open_database(pg_uri) as other:
        db.run(lambda tr: [tr.set(b"r%d" % i, b"x") for i in range(3)])
        seen: list[int] = []

        def work(tr: Transaction) -> None:
            seen.append(len(list(tr.get_range(b"r", b"s"))))
            if len(seen) == 1:
                other.run(lambda t: t.set(b"z", b"unrelated"))
            tr.set(b"out", b"1")

        db.run(work)
        assert seen == [3, 3]


def test_a_transaction_retried_after_a_conflict_cannot_be_overtaken_again(postgres: PgServer, pg_uri: str) -> None:
    """Another writer changes what the transaction read while each attempt runs: the first attempt conflicts;
    the retry holds the commit lock from its first read, so the other writer waits for it and it commits at
    its second attempt, whatever the other writers do (a loop of conflicts before)."""
    schema = pg_uri.split("schema=")[1]
    with open_database(pg_uri) as db, open_database(pg_uri) as other:
        db.run(lambda tr: tr.set(b"a", b"0"))
        attempts: list[int] = []
        writers: list[threading.Thread] = []

        def waiting_on_the_lock() -> bool:
            return bool(postgres.sql("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                     "AND query LIKE %s", f"%{schema}.meta%"))

        def bump(tr: Transaction) -> None:
            n = int(tr.get(b"a") or b"0")
            attempts.append(n)
            if len(attempts) <= 2:   # another writer sets a (or tries to) during this attempt
                value = b"%d" % (10 * len(attempts))
                writer = threading.Thread(target=lambda: other.run(lambda t: t.set(b"a", value)))
                writer.start()
                writers.append(writer)
                deadline = time.monotonic() + 30
                while writer.is_alive() and not waiting_on_the_lock() and time.monotonic() < deadline:
                    time.sleep(0.02)
            tr.set(b"a", str(n + 1).encode())

        db.run(bump)
        for writer in writers:
            writer.join(30)
        assert attempts == [0, 10]   # overtaken once; the retry was not, though another writer tried
        assert not any(w.is_alive() for w in writers)
        assert db.run(lambda tr: tr.get(b"a")) == b"20"   # the waiting writer committed after it


# --- the tests' own server --------------------------------------------------------------------------
def test_a_test_run_killed_with_9_leaves_no_server_behind(tmp_path: Path) -> None:
    """The tests' server (pg_local.start_server) is watched: when the process that started it dies
    without cleaning up, the server stops and its directory goes."""
    import socket

    script = ("import sys, time\nfrom ushas_catalog.pg_local import start_server\ns = start_server()\n"
              "print(s.port, s.root, flush=True)\ntime.sleep(300)\n")
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    try:
        line = run.stdout.readline() if run.stdout else ""
        assert line, "the server did not start"
        port, root = int(line.split()[0]), Path(line.split()[1])
        socket.create_connection(("127.0.0.1", port), timeout=10).close()   # it serves
    finally:
        run.kill()
        run.wait(60)
    deadline = time.monotonic() + 120
    while root.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not root.exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
