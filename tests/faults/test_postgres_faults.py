"""PostgreSQL faults under load: the server crashed and restarted (``pg_ctl restart -m immediate``) in
the middle of commits, and the server down for a while. Writers keep going through one opened
engine each: nothing is half-written (every transaction's keys, counter and versionstamped log
entry are all there or none), versions never go back, every writer recovers without reopening,
and a call that fails says so in one line (``StoreUnavailable``).

The outage lasts ``USHAS_PG_DOWN_S`` seconds (default 4, above the URI's ``unreachable_s=1.5``
so calls do fail; the issue's 30 s was run with ``USHAS_PG_DOWN_S=30``)."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

import fdb.tuple
import pytest

from ushas_catalog.errors import StoreUnavailable
from ushas_catalog.kv import Transaction, open_database

from pg_server import PgServer

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]

WRITERS = 4
DOWN_S = float(os.environ.get("USHAS_PG_DOWN_S", "4"))


def done_key(w: int, i: int) -> bytes:
    return fdb.tuple.pack(("done", w, i))


def op(tr: Transaction, w: int, i: int) -> None:
    """Idempotent (a commit_unknown_result retry finds it done): a marker, a counter and a log entry."""
    if tr.get(done_key(w, i)) is None:
        tr.set(done_key(w, i), b"")
        tr.add(b"count", 1)
        tr.set_versionstamped_key(fdb.tuple.pack_with_versionstamp(("log", fdb.tuple.Versionstamp(), w, i)), b"")


@dataclass
class Writer:
    uri: str
    w: int
    stop: threading.Event
    ok: list[int] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    #: index of the first call that succeeded after the last failure (recovered without reopening)
    recovered_at: int | None = None
    unexpected: list[BaseException] = field(default_factory=list)

    def __call__(self) -> None:
        db = open_database(self.uri)
        i = 0
        try:
            while not self.stop.is_set():
                try:
                    db.run(lambda tr: op(tr, self.w, i))
                    self.ok.append(i)
                    if self.failed and self.recovered_at is None:
                        self.recovered_at = i
                except StoreUnavailable as exc:
                    self.failed.append(exc.message)
                    self.recovered_at = None
                    time.sleep(0.1)
                except BaseException as exc:  # noqa: BLE001 - reported by the test
                    self.unexpected.append(exc)
                    return
                i += 1
        finally:
            db.close()


@pytest.fixture
def uri(postgres: PgServer) -> Iterator[str]:
    u = postgres.fresh_uri(unreachable_s="1.5")
    open_database(u).close()
    yield u
    postgres.drop_schema(u)


def run_writers(uri: str, fault: "callable") -> list[Writer]:  # type: ignore[valid-type]
    stop = threading.Event()
    writers = [Writer(uri, w, stop) for w in range(WRITERS)]
    threads = [threading.Thread(target=wr) for wr in writers]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        fault()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(len(wr.ok) > 0 and wr.recovered_at is not None
                                                      or (not wr.failed and len(wr.ok) > 5) for wr in writers):
            time.sleep(0.1)
        time.sleep(0.5)   # a few more commits after the recovery
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    for wr in writers:
        assert not wr.unexpected, f"writer {wr.w}: {wr.unexpected!r}"
    return writers


def check_store(uri: str, writers: list[Writer], version_before: int) -> None:
    with open_database(uri, create=False) as db:
        def read(tr: Transaction):  # type: ignore[no-untyped-def]
            done = {fdb.tuple.unpack(kv.key)[1:] for kv in tr.get_range_startswith(fdb.tuple.pack(("done",)))}
            log = [fdb.tuple.unpack(kv.key) for kv in tr.get_range_startswith(fdb.tuple.pack(("log",)))]
            return done, log, tr.get(b"count")

        done, log, count = db.run(read)
        after = db.commit_version()  # type: ignore[attr-defined]
    # nothing half-written: marker, counter and log entry of every transaction together
    assert int.from_bytes(count, "little") == len(done) == len(log)
    assert {(w, i) for _, _, w, i in log} == done
    # every call that answered ok is there; each writer's log is in its call order
    for wr in writers:
        assert {(wr.w, i) for i in wr.ok} <= done
        mine = [i for _, _, w, i in log if w == wr.w]
        assert mine == sorted(mine)
    # versions never go back: one strictly increasing versionstamp per commit, above the version before the fault
    stamps = [v.tr_version for _, v, _, _ in log]
    assert stamps == sorted(set(stamps))
    assert after is not None and after >= int.from_bytes(stamps[-1][:8], "big") > version_before


def test_immediate_restart_in_the_middle_of_commits(postgres: PgServer, uri: str) -> None:
    before: list[int] = []

    def crash() -> None:
        with open_database(uri) as db:
            before.append(db.commit_version())  # type: ignore[attr-defined]
        for _ in range(2):
            postgres.restart("immediate")
            time.sleep(0.5)

    writers = run_writers(uri, crash)
    assert sum(len(w.ok) for w in writers) > WRITERS
    for wr in writers:
        assert all("\n" not in m and "PostgreSQL at 127.0.0.1" in m for m in wr.failed), wr.failed
    check_store(uri, writers, before[0])


def test_server_down_under_load_fails_in_one_line_and_everyone_recovers(postgres: PgServer, uri: str) -> None:
    before: list[int] = []

    def outage() -> None:
        with open_database(uri) as db:
            before.append(db.commit_version())  # type: ignore[attr-defined]
        postgres.stop("immediate")
        time.sleep(DOWN_S)
        postgres.start()

    writers = run_writers(uri, outage)
    for wr in writers:
        assert wr.failed, f"writer {wr.w} never saw the outage"
        assert wr.recovered_at is not None, f"writer {wr.w} did not recover"
        for message in wr.failed:
            assert "\n" not in message
            assert "PostgreSQL at 127.0.0.1" in message and "unreachable" in message and "try again" in message
    check_store(uri, writers, before[0])
