"""Change hooks over Python targets: definitions, kinds and table filters, commit order, lag,
dead letters, retries, an expired cursor, competing workers and a worker dying mid-delivery."""
from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

from ushas_catalog.errors import (HookAlreadyExists, HookCursorExpired, InvalidArgument, NoSuchHook)
from ushas_catalog.hooks import HookStore, HookUnavailable, HookWorker, Subscription
from ushas_catalog.hooks.events import name_matches
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn, SetProperty

from .conftest import T, Receiver

TARGET = "test_hook_target:receive"


def _drain(worker: HookWorker, names: list[str] | None = None, passes: int = 200) -> None:
    """Passes until one does nothing (failures wait out their tiny backoff)."""
    for _ in range(passes):
        result = worker.run_once(names)
        if not result.progressed and result.next_due_s is None:
            return
        if result.next_due_s:
            threading.Event().wait(min(result.next_due_s, 0.05))
    raise AssertionError("the worker did not settle")


def _writes(ms: Metastore) -> None:
    ms.add_partitions(T, [{"day": "d1"}, {"day": "d2"}])
    ms.create_table("main.sales.returns", "id INT, day STRING", partition_by=["day"])
    ms.add_partitions("main.sales.returns", [{"day": "d1"}])
    ms.replace_partitions(T, [{"day": "d2"}], [Partition({"day": "d2"}, location="/y/2"), Partition({"day": "d3"})])
    ms.alter_table(T, [AddColumn(("note",), parse_type("STRING"))])
    ms.alter_table(T, [SetProperty("owner.team", "x")])
    ms.drop_partitions(T, [{"day": "d1"}])
    ms.rename_table("main.sales.returns", "main.sales.refunds")
    ms.drop_table("main.sales.refunds")


def test_add_list_remove_and_bad_input(ms: Metastore) -> None:
    hooks = HookStore(ms)
    hook = hooks.add("h1", url="http://127.0.0.1:9/x", on="partitions,drop", table="sales.*")
    assert (hook.on, hook.table_pattern, hook.max_attempts) == (("partitions", "drop"), "sales.*", 10)
    assert [h.name for h in hooks.list()] == ["h1"]
    with pytest.raises(HookAlreadyExists):
        hooks.add("h1", python=TARGET)
    for bad in [dict(name="bad name", python=TARGET), dict(name="x", python=TARGET, url="http://h/"),
                dict(name="x"), dict(name="x", url="ftp://h/"), dict(name="x", python="no-colon"),
                dict(name="x", python=TARGET, on="partitions,bogus"), dict(name="x", python=TARGET, table="a.b.c.d"),
                dict(name="x", python=TARGET, max_attempts=0), dict(name="x", python=TARGET, backoff_s=-1),
                dict(name="x", python=TARGET, start="fc1-zz")]:
        with pytest.raises(InvalidArgument):
            hooks.add(**bad)  # type: ignore[arg-type]
    assert hooks.remove("h1").name == "h1"
    with pytest.raises(NoSuchHook):
        hooks.remove("h1")
    assert hooks.list() == []


def test_python_hook_gets_every_event_once_in_commit_order(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    start = ms.change_feed.latest_cursor()
    hooks.add("all", python=TARGET, on="all")
    _writes(ms)
    expected = [c.cursor for c in ms.changes(since=start)]
    _drain(HookWorker(ms))
    assert [e["cursor"] for e in receiver.calls] == expected
    assert [e["type"] for e in receiver.calls] == [
        "partitions_added", "created", "partitions_added", "partitions_replaced", "schema_changed", "altered",
        "partitions_dropped", "renamed", "dropped"]
    replaced = receiver.calls[3]
    assert replaced["partitions"] == {"added": [{"spec": {"day": "d3"}, "location": "/wh/sales/orders/day=d3"}],
                                      "replaced": [{"spec": {"day": "d2"}, "location": "/y/2"}], "dropped": []}
    assert replaced["object"]["name"] == T and replaced["object"]["version"] == 3
    assert replaced["delivery_id"] == f"{hooks.get('all').id}:{replaced['cursor']}"
    assert receiver.calls[7]["renamed"] == {"from": "main.sales.returns", "to": "main.sales.refunds"}
    records = hooks.all_deliveries("all")
    assert [(d.cursor, d.status) for d in records] == [(c, "DELIVERED") for c in expected]
    status = hooks.status("all")[0]
    assert (status.state, status.behind, status.delivered, status.cursor) == ("up to date", 0, 9, expected[-1])


def test_kinds_and_table_pattern_filter(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("orders-parts", python=TARGET, on="partitions", table="main.sales.orders")
    hooks.add("schema-drop", python=TARGET, on="schema,drop", table="sales.re*")
    _writes(ms)
    _drain(HookWorker(ms))
    got = [(e["hook"], e["type"], e["object"]["name"]) for e in receiver.calls]
    assert [g for g in got if g[0] == "orders-parts"] == [
        ("orders-parts", "partitions_added", T), ("orders-parts", "partitions_replaced", T),
        ("orders-parts", "partitions_dropped", T)]
    # sales.re* matches returns and (renamed) refunds: their creation and drop; partitions are not subscribed
    assert [g for g in got if g[0] == "schema-drop"] == [
        ("schema-drop", "created", "main.sales.returns"), ("schema-drop", "dropped", "main.sales.refunds")]
    assert name_matches("sales.o*", "main.sales.orders") and not name_matches("other.*", "main.sales.orders")
    assert name_matches("MAIN.*.ORDERS", "main.sales.orders") and not name_matches("a.b.c", "b.c")
    assert Subscription(("drop",), "").kinds == ("drop",)
    for h in ("orders-parts", "schema-drop"):
        assert hooks.status(h)[0].behind == 0


def test_status_shows_lag_in_events_and_age(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("lag", python=TARGET, on="partitions", table="orders")
    assert hooks.status("lag")[0].behind == 0
    for i in range(5):
        ms.add_partitions(T, [{"day": f"p{i}"}])
    ms.alter_table(T, [SetProperty("k", "v")])  # not a partition event: not lag
    status = hooks.status("lag")[0]
    assert (status.behind, status.behind_more, status.state) == (5, False, "behind")
    assert status.age_s is not None and 0 <= status.age_s < 3600 and status.lag.startswith("5 (")
    worker = HookWorker(ms)
    receiver.fail = lambda e: HookUnavailable("down") if e["partitions"]["added"][0]["spec"]["day"] == "p3" else None
    worker.run_once()
    status = hooks.status("lag")[0]
    assert (status.behind, status.delivered, status.unavailable, status.state) == (2, 3, 1, "receiver unavailable")
    assert "down" in status.last_error and status.next_attempt_at is not None


def test_refused_events_go_to_dead_letters_and_can_be_retried_or_skipped(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("dl", python=TARGET, on="partitions", max_attempts=3, backoff_s=0.001, max_backoff_s=0.002)
    poison = {"bad1", "bad2"}
    receiver.fail = lambda e: ValueError("cannot take it") if e["partitions"]["added"][0]["spec"]["day"] in poison \
        else None
    for day in ("ok1", "bad1", "ok2", "bad2", "ok3"):
        ms.add_partitions(T, [{"day": day}])
    worker = HookWorker(ms, jitter=False)
    _drain(worker)
    days = [e["partitions"]["added"][0]["spec"]["day"] for e in receiver.calls]
    assert days == ["ok1", "bad1", "bad1", "bad1", "ok2", "bad2", "bad2", "bad2", "ok3"]
    dead = hooks.dead_letters("dl")
    assert [(d.attempts, "cannot take it" in d.last_error) for d in dead] == [(3, True), (3, True)]
    status = hooks.status("dl")[0]
    assert (status.delivered, status.dead_letters, status.dead_total, status.behind) == (3, 2, 2, 0)
    assert [d.status for d in hooks.all_deliveries("dl")] == [
        "DELIVERED", "DEAD_LETTERED", "DELIVERED", "DEAD_LETTERED", "DELIVERED"]

    poison.discard("bad1")  # the receiver is fixed for one of them
    assert hooks.retry("dl", [dead[0].cursor]) == 1
    _drain(worker)
    assert receiver.calls[-1]["cursor"] == dead[0].cursor
    assert [d.cursor for d in hooks.dead_letters("dl")] == [dead[1].cursor]
    assert hooks.all_deliveries("dl")[1].status == "REDELIVERED"
    assert hooks.skip("dl", all_=True) == 1
    assert hooks.dead_letters("dl") == [] and hooks.status("dl")[0].skipped == 1
    assert hooks.all_deliveries("dl")[3].status == "SKIPPED"
    with pytest.raises(InvalidArgument):
        hooks.retry("dl")


def test_an_unavailable_receiver_is_retried_with_bounded_backoff_never_dead_lettered(
        ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hook = hooks.add("down", python=TARGET, on="partitions", max_attempts=2, backoff_s=0.001, max_backoff_s=0.004)
    assert [hook.backoff(n) for n in (1, 2, 3, 4, 30)] == [0.001, 0.002, 0.004, 0.004, 0.004]
    down = [True]
    receiver.fail = lambda e: ConnectionError("refused") if down[0] else None
    ms.add_partitions(T, [{"day": "a"}])
    ms.add_partitions(T, [{"day": "b"}])
    worker = HookWorker(ms, jitter=False)
    for _ in range(10):
        worker.run_once()
        threading.Event().wait(0.005)
    status = hooks.status("down")[0]
    assert status.dead_letters == 0 and status.unavailable >= 5 and status.behind == 2
    down[0] = False
    _drain(worker)
    assert [d.status for d in hooks.all_deliveries("down")] == ["DELIVERED", "DELIVERED"]
    assert hooks.status("down")[0].state == "up to date"


def test_missing_python_target_waits_instead_of_dead_lettering(ms: Metastore) -> None:
    hooks = HookStore(ms)
    hooks.add("nomod", python="no_such_module_xyz:f", on="partitions", max_attempts=1, backoff_s=0.001)
    ms.add_partitions(T, [{"day": "a"}])
    HookWorker(ms).run_once()
    status = hooks.status("nomod")[0]
    assert status.dead_letters == 0 and "cannot load" in status.last_error and status.behind == 1


def test_an_expired_cursor_is_flagged_not_skipped(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("slow", python=TARGET, on="partitions")
    ms.add_partitions(T, [{"day": "a"}])
    ms.add_partitions(T, [{"day": "b"}])
    ms.change_feed.trim(before=dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1))
    ms.add_partitions(T, [{"day": "c"}])
    assert hooks.status("slow")[0].state == "CURSOR EXPIRED"
    worker = HookWorker(ms)
    with pytest.raises(HookCursorExpired, match="reset slow"):
        worker.run_once(["slow"])
    assert worker.run_once().expired == ["slow"]  # every pass refuses it
    assert receiver.calls == []
    status = hooks.status("slow")[0]
    assert status.expired is not None and "retention" in status.last_error
    hooks.reset("slow", "beginning")  # acknowledged: deliver what the feed still has
    _drain(worker)
    assert [e["partitions"]["added"][0]["spec"]["day"] for e in receiver.calls] == ["c"]
    assert hooks.status("slow")[0].state == "up to date"


def test_a_worker_down_for_a_while_catches_up_with_nothing_lost(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    start = ms.change_feed.latest_cursor()
    hooks.add("late", python=TARGET, on="partitions,schema")
    for i in range(450):  # more than two feed batches while no worker runs
        ms.add_partitions(T, [{"day": f"x{i:03d}"}])
    expected = [c.cursor for c in ms.changes(since=start)]
    assert hooks.status("late")[0].behind == 450
    _drain(HookWorker(ms, batch=200))
    assert [e["cursor"] for e in receiver.calls] == expected


def test_competing_workers_never_advance_twice(store_uri: str, ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    start = ms.change_feed.latest_cursor()
    hooks.add("shared", python=TARGET, on="partitions")
    for i in range(60):
        ms.add_partitions(T, [{"day": f"c{i:02d}"}])
    expected = [c.cursor for c in ms.changes(since=start)]
    errors: list[BaseException] = []

    def work() -> None:
        other = Metastore.open(store_uri, project="acme")
        try:  # a lease of 0 s: every pass of each worker takes the hook over from the other
            _drain(HookWorker(other, lease_s=0.0, batch=7), passes=1000)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            other.close()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads)
    assert [e["cursor"] for e in receiver.deduplicated()] == expected
    records = hooks.all_deliveries("shared")
    assert [d.cursor for d in records] == expected  # one record per event: the cursor never moved twice
    assert hooks.status("shared")[0].delivered == len(expected)


def test_a_worker_dying_after_delivering_redelivers_with_the_same_id(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("crash", python=TARGET, on="partitions")
    ms.add_partitions(T, [{"day": "a"}])
    ms.add_partitions(T, [{"day": "b"}])

    class Died(BaseException):
        pass

    def dying(hook: Any, event: dict[str, Any]) -> Any:
        receiver(event)
        raise Died  # after the receiver has it, before the delivery is recorded

    with pytest.raises(Died):
        HookWorker(ms, deliver=dying, lease_s=0.0).run_once()
    _drain(HookWorker(ms))
    assert [e["partitions"]["added"][0]["spec"]["day"] for e in receiver.calls] == ["a", "a", "b"]
    assert receiver.calls[0]["delivery_id"] == receiver.calls[1]["delivery_id"]
    assert len(receiver.deduplicated()) == 2 and len(hooks.all_deliveries("crash")) == 2


def test_paused_hook_keeps_its_cursor(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("p", python=TARGET, on="partitions")
    hooks.set_paused("p", True)
    ms.add_partitions(T, [{"day": "a"}])
    HookWorker(ms).run_once()
    assert receiver.calls == [] and hooks.status("p")[0].state == "paused"
    hooks.set_paused("p", False)
    _drain(HookWorker(ms))
    assert len(receiver.calls) == 1


def test_a_big_dead_letter_keeps_its_identity_and_is_read_again_on_retry(
        ms: Metastore, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    from ushas_catalog.hooks import worker as worker_module

    monkeypatch.setattr(worker_module, "DEAD_PAYLOAD_BYTES", 200)
    hooks = HookStore(ms)
    hooks.add("big", python=TARGET, on="partitions", max_attempts=1, backoff_s=0.001)
    broken = [True]
    receiver.fail = lambda e: RuntimeError("no") if broken[0] else None
    ms.add_partitions(T, [{"day": f"b{i}"} for i in range(20)])
    _drain(HookWorker(ms))
    (dead,) = hooks.dead_letters("big")
    assert dead.to_json(with_payload=True)["event"]["truncated"] is True
    broken[0] = False
    hooks.retry("big", all_=True)
    _drain(HookWorker(ms))
    assert len(receiver.calls[-1]["partitions"]["added"]) == 20 and hooks.dead_letters("big") == []


def test_delivery_records_go_with_the_feed_events_they_record(ms: Metastore, receiver: Receiver) -> None:
    hooks = HookStore(ms)
    hooks.add("prune", python=TARGET, on="partitions")
    ms.add_partitions(T, [{"day": "a"}])
    ms.add_partitions(T, [{"day": "b"}])
    _drain(HookWorker(ms))
    assert len(hooks.all_deliveries("prune")) == 2
    ms.change_feed.trim(older_than=dt.timedelta(0))  # everything delivered is trimmed: no loss
    ms.add_partitions(T, [{"day": "c"}])
    _drain(HookWorker(ms))
    assert [d.type for d in hooks.all_deliveries("prune")] == ["partitions_added"]
    assert hooks.status("prune")[0].state == "up to date" and len(receiver.calls) == 3
