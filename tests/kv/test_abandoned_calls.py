"""A call its caller abandoned ends and releases the store (issue: commits a user can trust): the
caller's deadline (the Spark shim's bridge timeout) stops the engine's retries on a busy store and
the bridge's wait for the calls before it, so nothing is applied after the caller gave up."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from store_lock import LockHolder

from ushas_catalog.spark.bridge import REGISTRY, handle
from ushas_catalog.errors import CallAbandoned, StoreBusy
from ushas_catalog.kv import Transaction, deadline, open_database
from ushas_catalog.metastore import Metastore


def _in_ms(seconds: float) -> int:
    return int((time.time() + seconds) * 1000)


def test_retries_on_a_busy_store_stop_at_the_callers_deadline(locked: str) -> None:
    """No clock is read here: the engine's own budget ends in StoreBusy ("stayed locked ... try again
    later"), only the caller's deadline in CallAbandoned, so the error's type says which one stopped it."""
    db = open_database(locked + "?busy_timeout_ms=200", create=False)  # its own budget: 3 x 0.2 s
    attempts = []

    def write(tr: Transaction) -> None:
        attempts.append(1)
        tr.set(b"late", b"1")

    try:
        with deadline.until(_in_ms(0.25)), pytest.raises(CallAbandoned, match="stopped waiting") as stopped:
            db.run(write)
        assert type(stopped.value) is CallAbandoned and attempts  # it tried, then the deadline ended it
        assert isinstance(CallAbandoned("x"), StoreBusy)  # retryable, not a Conflict
    finally:
        db.close()


def test_no_deadline_keeps_the_engines_own_budget() -> None:
    with deadline.until(None):
        assert deadline.remaining() is None
        deadline.check("nothing")  # no deadline: never abandoned
    with deadline.until(_in_ms(60)):
        left = deadline.remaining()
        assert left is not None and 50 < left <= 60
    assert deadline.remaining() is None


def test_an_abandoned_bridge_call_releases_the_store(filled: str) -> None:
    """A call stuck behind the store's lock past its deadline ends at once with CallAbandoned;
    the next call gets the store."""
    ctx = {"uri": filled, "project": "acme", "catalog": "main", "spark_catalog": "main", "warehouse": "/wh"}
    request = {"ctx": ctx, "namespace": ["sales"], "name": "orders"}
    opened = REGISTRY.get(filled, "acme")
    try:
        assert opened.lock.acquire()  # an earlier call still running on this store, until the event below
        ended = threading.Event()  # set when the earlier call ends: a bound for a broken bridge that waits

        def earlier_call_ends() -> None:
            ended.set()
            opened.lock.release()

        released = threading.Timer(120.0, earlier_call_ends)
        released.start()
        answer = json.loads(handle("load_table", json.dumps({**request, "deadline_ms": _in_ms(0.3)})))
        assert answer.get("error", {}).get("type") == "CallAbandoned", answer
        assert not ended.is_set()  # it answered while the earlier call still held the store
        released.cancel()
        released.join()
        earlier_call_ends()
        answer = json.loads(handle("load_table", json.dumps({**request, "deadline_ms": _in_ms(30)})))
        assert "error" not in answer and answer["table"]["partition_by"] == ["dt"]
    finally:
        REGISTRY.close()


def test_an_abandoned_write_applies_nothing(locked: str) -> None:
    """add_partitions through the bridge while another process holds the write lock: past the
    deadline it ends with CallAbandoned, and once the lock is free nothing of it is there."""
    ctx = {"uri": locked + "?busy_timeout_ms=200", "project": "acme", "catalog": "main", "spark_catalog": "main",
           "warehouse": "/wh"}
    request = {"ctx": ctx, "namespace": ["sales"], "name": "orders", "deadline_ms": _in_ms(0.25),
               "partitions": [{"values": {"dt": "2024-02-02"}, "properties": {}}]}
    try:
        answer = json.loads(handle("add_partitions", json.dumps(request)))
        assert answer["error"]["type"] == "CallAbandoned", answer
    finally:
        REGISTRY.close()


def test_after_the_lock_is_released_the_abandoned_write_is_not_there(filled: str) -> None:
    holder = LockHolder(Path(filled.removeprefix("sqlite://")))
    ctx = {"uri": filled + "?busy_timeout_ms=200", "project": "acme", "catalog": "main", "spark_catalog": "main",
           "warehouse": "/wh"}
    request = {"ctx": ctx, "namespace": ["sales"], "name": "orders", "deadline_ms": _in_ms(0.25),
               "partitions": [{"values": {"dt": "2024-02-02"}, "properties": {}}]}
    try:
        answer = json.loads(handle("add_partitions", json.dumps(request)))
        assert answer["error"]["type"] == "CallAbandoned"
    finally:
        holder.release()
        REGISTRY.close()
    # handle() returned: the abandoned call has ended (a call runs on the caller's thread), nothing of it can
    # land later; the lock holder's process is gone too (release() waits for it)
    ms = Metastore.open(filled, project="acme", create=False)
    try:
        assert [p.spec["dt"] for p in ms.list_partitions("main.sales.orders")] == ["2024-01-01"]
    finally:
        ms.close()


def test_an_abandoned_fenced_commit_names_its_write(locked: str) -> None:
    """A Spark write commit that its caller abandoned on a busy store says which write it was and how
    to learn what became of it (the outcome is recorded once the store can be had)."""
    import uuid

    write_id = str(uuid.uuid4())
    ctx = {"uri": locked + "?busy_timeout_ms=200", "project": "acme", "catalog": "main", "spark_catalog": "main",
           "warehouse": "/wh"}
    request = {"ctx": ctx, "namespace": ["sales"], "name": "orders", "deadline_ms": _in_ms(0.25),
               "write_id": write_id, "mode": "append", "written": [], "location": "/wh/sales/orders"}
    try:
        answer = json.loads(handle("commit_write", json.dumps(request)))
        assert answer["error"]["type"] == "CallAbandoned", answer
        assert f"write {write_id} into main.sales.orders was not committed" in answer["error"]["message"]
        assert f"ushas write {write_id}" in answer["error"]["message"]
    finally:
        REGISTRY.close()
