"""Readers never wait for writers (embedded engine): while another process holds the store's
write lock (``BEGIN IMMEDIATE`` on the same file), opening the store and reading through the
Metastore API, the CLI and the raw engine answer; a writer ends with ``StoreBusy`` (retryable,
not ``Conflict``) after its bounded retries and succeeds once the lock is released.

No timing assertions: a reader that waited for the lock would fail (the busy timeout ends in an
error), it is not timed."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from store_lock import LockHolder

from ushas_catalog.cli import main
from ushas_catalog.errors import Conflict, LimitExceeded, StoreBusy
from ushas_catalog.kv import Limits, open_database
from ushas_catalog.metastore import Metastore

def test_api_opens_and_reads_while_another_process_writes(locked: str) -> None:
    # a short busy timeout: a reader that waited for the lock would fail within it
    ms = Metastore.open(locked + "?busy_timeout_ms=200", project="acme", create=False)
    try:
        assert [c.name for c in ms.list_catalogs()] == ["main"]
        assert ms.get_table("main.sales.orders").name == "orders"
        assert len(list(ms.list_partitions("main.sales.orders"))) == 1
        assert [c.operation for c in ms.history("main.sales.orders")]
    finally:
        ms.close()


def test_cli_reads_while_another_process_writes(locked: str, capsys: pytest.CaptureFixture[str]) -> None:
    uri = locked + "?busy_timeout_ms=200"
    assert main(["--uri", uri, "--project", "acme", "tables", "main.sales"]) == 0
    out, err = capsys.readouterr()
    assert "orders" in out and err == ""
    assert main(["--uri", uri, "--project", "acme", "describe", "main.sales.orders", "--json"]) == 0
    assert '"orders"' in capsys.readouterr().out


def test_writer_gets_store_busy_not_conflict_after_bounded_retries(locked: str) -> None:
    db = open_database(locked + "?busy_timeout_ms=100", create=False)
    try:
        with pytest.raises(StoreBusy, match="locked by another process") as info:  # a blind write
            db.run(lambda tr: tr.set(b"blind", b"1"))
        assert not isinstance(info.value, Conflict) and info.value.retryable

        def read_modify_write(tr):  # type: ignore[no-untyped-def]
            n = int(tr.get(b"counter") or b"0")
            tr.set(b"counter", str(n + 1).encode())

        with pytest.raises(StoreBusy):
            db.run(read_modify_write)
    finally:
        db.close()


def test_the_writer_succeeds_once_the_lock_is_released(filled: str) -> None:
    holder = LockHolder(Path(filled.removeprefix("sqlite://")))
    db = open_database(filled + "?busy_timeout_ms=100", create=False)
    try:
        with pytest.raises(StoreBusy):
            db.run(lambda tr: tr.set(b"k", b"1"))
        holder.release()
        db.run(lambda tr: tr.set(b"k", b"1"))
        assert db.run(lambda tr: tr.get(b"k")) == b"1"
    finally:
        holder.release()
        db.close()


def test_a_read_only_transaction_is_bound_by_the_time_limit(locked: str) -> None:
    """FoundationDB's 5 s limit holds for reads too (lowered here, and slept past)."""
    db = open_database(locked, create=False)
    db.limits = Limits(transaction_seconds=0.2)
    try:
        tr = db.create_transaction()
        assert tr.get(b"missing") is None
        time.sleep(0.3)
        with pytest.raises(LimitExceeded, match="transaction_seconds"):
            list(tr.get_range(b"", b"\xff"))
        tr.cancel()
        assert db.run(lambda tr: tr.get(b"missing")) is None  # a fresh transaction is in time
    finally:
        db.close()
