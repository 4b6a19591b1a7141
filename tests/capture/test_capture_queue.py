"""The capture queue without Spark: events -> analysis -> store, with outages, budgets and drops.
The resolver is replaced by a table of hand-made results (the real one is exercised end to end
in test_capture_spark.py); the store is the real sqlite store, behind a switch that makes it
unavailable."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lineage.capture import ActionEvent, CaptureHub, CaptureSettings, LineageCapture, analyze
from lineage.model import ColumnNode, Dataset, Derivation, EdgeSubtype, LineageResult, Step
from lineage.query import LineageQueries
from lineage.store import LineageStore, RunStatus, run_id_for
from ushas_catalog.errors import InvalidArgument, StoreUnavailable

from .pipeline import CLEANED, RAW, REPORT, T1

LOCATION = Dataset.path("file:/warehouse/cleaned", "parquet")


def write_result(target: Dataset, sources: dict[str, tuple[Dataset, str]]) -> LineageResult:
    """A resolved write: each target column an alias of one source column."""
    outputs, derivations = [], {}
    for i, (name, (ds, col)) in enumerate(sources.items()):
        out = ColumnNode.attribute(name, 100 + i)
        outputs.append(out)
        derivations[out] = Derivation("Project", f"{col}#{i} AS {name}",
                                      (Step(ColumnNode.column(ds, col), EdgeSubtype.IDENTITY),))
    return LineageResult(outputs=tuple(outputs), derivations=derivations, target=target, operation="AppendData")


RESULTS: dict[str, LineageResult] = {
    "clean": write_result(CLEANED, {"id": (RAW, "id"), "amount": (RAW, "amount")}),
    "clean_files": write_result(LOCATION, {"id": (RAW, "id"), "amount": (RAW, "amount")}),
    "report": write_result(REPORT, {"total": (CLEANED, "amount")}),
}


def plan(name: str) -> str:
    return json.dumps({"format": "ushas-plan", "version": 1, "spark": "4.3.0", "kinds": ["Fake"], "exprs": [],
                       "nodes": [{"k": 0, "c": [], "o": [], "a": {"name": name}}], "root": 0})


def fake_resolver(doc: Any) -> LineageResult:
    name = doc.root_node.args["name"]
    if name == "boom":
        raise RuntimeError("resolver exploded")
    return RESULTS[name]


def fake_relations(doc: Any) -> tuple[tuple[Dataset, ...], tuple[Dataset, ...]]:
    r = RESULTS.get(doc.root_node.args["name"], RESULTS["clean"])
    return ((RAW,), (r.target,))


def event(execution_id: int, *plans: str, status: str = "COMPLETE", app: str = "app-1", **extra: Any) -> dict:
    return {"format": "ushas-lineage-event", "version": 1, "application_id": app, "application_name": "t",
            "user": "alice", "execution_id": execution_id, "start_ms": T1 - 10, "end_ms": T1, "status": status,
            "executions": [{"execution_id": execution_id + i, "func": "command", "plan": p}
                           for i, p in enumerate(plans)], **extra}


class Switch:
    """Opens the real store, or fails like an unreachable one while ``down`` is set."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.down = threading.Event()
        self.opened = 0

    def __call__(self) -> LineageStore:
        if self.down.is_set():
            raise StoreUnavailable("store switched off by the test")
        self.opened += 1
        return Gate(LineageStore.open(self.uri, "p"), self.down)


class Gate(LineageStore):
    def __init__(self, inner: LineageStore, down: threading.Event) -> None:
        self.__dict__.update(inner.__dict__)
        self._off = down

    def record(self, captured):  # type: ignore[override]
        if self._off.is_set():
            raise StoreUnavailable("store switched off by the test")
        return super().record(captured)

    def report_source(self, *a, **k):  # type: ignore[override]
        if self._off.is_set():
            raise StoreUnavailable("store switched off by the test")
        return super().report_source(*a, **k)


@pytest.fixture
def switch(store_uri: str) -> Switch:
    return Switch(store_uri)


def make(switch: Switch, **settings: Any) -> LineageCapture:
    return LineageCapture(switch, CaptureSettings(**{"retry_initial_s": 0.01, "retry_max_s": 0.05, **settings}),
                          source="app-1", resolver=fake_resolver, relations=fake_relations)


def read(uri: str) -> LineageStore:
    return LineageStore.open(uri, "p")


def test_events_are_stored_with_their_edges(switch: Switch, store_uri: str) -> None:
    cap = make(switch)
    assert cap.submit(event(1, plan("clean"), sql="INSERT INTO cleaned SELECT * FROM raw"))
    assert cap.submit(event(5, plan("report")))
    assert cap.flush(30)
    cap.close()
    store = read(store_uri)
    q = LineageQueries(store)
    assert {q.node_name(n) for n in q.upstream("file:/data/report.total").columns()} == {
        "spark_catalog.default.cleaned.amount", "ushas.sales.raw.amount"}
    run = store.get_run(run_id_for("app-1", 1))
    assert run.sql == "INSERT INTO cleaned SELECT * FROM raw" and run.table_level is None
    assert (store.status().captured, store.status().dropped) == (2, 0)
    assert cap.stats().captured == 2 and len(cap.stats().latencies_ms) == 2


def test_one_action_reported_as_nested_executions_is_one_run(switch: Switch, store_uri: str) -> None:
    cap = make(switch)
    cap.submit(event(7, plan("clean_files"), plan("clean")))  # V1 write: files by path, then the table
    cap.submit(event(7, plan("clean_files"), plan("clean")))  # the same action reported again
    assert cap.flush(30)
    cap.close()
    store = read(store_uri)
    data = LineageQueries(store).run(run_id_for("app-1", 7))
    assert [d["name"] for d in data["outputs"]] == ["spark_catalog.default.cleaned"]
    assert {e["target"] for e in data["edges"]} == {"spark_catalog.default.cleaned.id",
                                                    "spark_catalog.default.cleaned.amount"}
    assert store.status().captured == 1


def test_outage_drops_past_the_bound_with_an_exact_count(switch: Switch, store_uri: str) -> None:
    cap = make(switch, max_pending=3, retry_timeout_s=600)
    switch.down.set()
    accepted = [cap.submit(event(10 * i, plan("clean"))) for i in range(1, 9)]
    assert accepted == [True] * 3 + [False] * 5
    assert cap.stats().pending == 3 and cap.stats().dropped == 5
    with cap._cond:  # let the worker meet the outage at least once
        assert cap._cond.wait_for(lambda: cap._store_failures >= 1, timeout=30)
    switch.down.clear()
    assert cap.flush(30)
    stats = cap.stats()
    assert (stats.captured, stats.dropped, stats.pending) == (3, 5, 0) and stats.store_failures >= 1
    cap.close()
    status = read(store_uri).status()
    assert (status.captured, status.dropped, status.pending) == (3, 5, 0)


def test_a_run_retried_past_its_deadline_is_dropped_and_counted(switch: Switch, store_uri: str) -> None:
    cap = make(switch, retry_timeout_s=0.05)
    switch.down.set()
    cap.submit(event(1, plan("clean")))
    with cap._cond:  # wait for the worker to give up on it (no timing assertion: just wait)
        cap._cond.wait_for(lambda: cap._dropped == 1, timeout=30)
    switch.down.clear()
    assert cap.flush(30)
    cap.close()
    status = read(store_uri).status()
    assert (status.captured, status.dropped) == (0, 1)


@pytest.mark.parametrize("settings, name, marker", [
    ({"max_plan_chars": 10}, "clean", "over the 10 budget"),
    ({"max_resolve_ms": 0.0}, "clean", "ms budget"),
    ({"max_edges": 1}, "clean", "column edges over the 1 budget"),
    ({}, "boom", "resolver failed (RuntimeError: resolver exploded)"),
])
def test_over_budget_is_captured_at_table_level(settings: dict, name: str, marker: str) -> None:
    ev = ActionEvent.parse(event(1, plan(name)))
    captured = analyze(ev, CaptureSettings(**settings), fake_resolver, fake_relations)
    assert marker in (captured.run.table_level or "")
    assert captured.reads == (RAW,) and captured.writes == (CLEANED,)
    assert captured.edges == ()


def test_plan_files_are_read_and_deleted(tmp_path: Path) -> None:
    f = tmp_path / "ushas-plan-1.json"
    f.write_text(plan("clean"))
    ev = ActionEvent.parse({**event(1), "executions": [{"execution_id": 1, "func": "command",
                                                       "plan_file": str(f), "plan_chars": 10}]})
    captured = analyze(ev, CaptureSettings(), fake_resolver, fake_relations)
    assert not f.exists()
    assert len(captured.edges) == 2 and captured.run.table_level is None


def test_failed_queries_are_runs_with_status_fail(switch: Switch, store_uri: str) -> None:
    cap = make(switch)
    cap.submit(event(3, plan("clean"), status="FAIL", error="[DIVIDE_BY_ZERO] Division by zero"))
    assert cap.flush(30)
    cap.close()
    run = read(store_uri).get_run(run_id_for("app-1", 3))
    assert run.status is RunStatus.FAIL and "DIVIDE_BY_ZERO" in (run.error or "")


@pytest.mark.parametrize("payload", [
    "not json", json.dumps({"format": "other"}), json.dumps({**event(1), "version": 99}),
    json.dumps({k: v for k, v in event(1).items() if k != "end_ms"}),
])
def test_malformed_events_are_typed_errors_and_counted_drops(switch: Switch, payload: str) -> None:
    with pytest.raises(InvalidArgument):
        ActionEvent.parse(payload)
    cap = make(switch)
    assert cap.submit(payload) is False
    assert cap.stats().dropped == 1
    cap.close()


def test_jvm_side_drops_are_added_once(switch: Switch, store_uri: str) -> None:
    cap = make(switch)
    cap.submit(event(1, plan("clean"), jvm_dropped=2))
    cap.submit(event(2, plan("clean"), jvm_dropped=2))
    cap.note_jvm_dropped(3)
    assert cap.flush(30)
    cap.close()
    assert read(store_uri).status().dropped == 3


def test_hub_routes_messages_to_one_capture_per_store(store_uri: str) -> None:
    opened: list[tuple[str, str]] = []

    def opener(uri: str, project: str, catalogs: Any) -> LineageStore:
        opened.append((uri, project))
        return LineageStore.open(uri, project)

    hub = CaptureHub(opener=opener)
    hub._captures.clear()
    for execution_id in (1, 2):
        ev = event(execution_id, plan("clean"))
        msg = json.dumps({"store": {"uri": store_uri, "project": "p"}, "event": ev})
        # the real resolver reads the fake plan as one unknown operator: no dataset, not a run
        assert hub.event(msg) == {"accepted": True, "dropped": 0}
    assert hub.flush(60)
    (capture,) = hub.captures().values()
    assert capture.stats().skipped == 2 and capture.source == "app-1"
    hub.close()
    assert set(opened) == {(store_uri, "p")}
    assert LineageStore.open(store_uri, "p").runs_between() == []
    with pytest.raises(InvalidArgument):
        hub.event("{}")


def test_settings_from_options() -> None:
    s = CaptureSettings.from_options({"maxPending": "5", "retryTimeout": "1.5"})
    assert (s.max_pending, s.retry_timeout_s) == (5, 1.5)
    with pytest.raises(InvalidArgument):
        CaptureSettings.from_options({"nope": 1})
    with pytest.raises(InvalidArgument):
        CaptureSettings.from_options({"maxPending": "x"})
    with pytest.raises(InvalidArgument):
        CaptureSettings(max_pending=0)


class Counting:
    """An opener whose store always fails with ``error``; counts the attempts."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.attempts = 0

    def __call__(self) -> LineageStore:
        self.attempts += 1
        raise self.error


def test_a_failing_store_is_retried_with_backoff_not_in_a_tight_loop() -> None:
    """Flushing wakes the worker every few ms; the store is still tried at most once per backoff
    interval (an upper bound that holds however slow the machine: each attempt after a failure
    waits at least ``retry_initial_s``)."""
    opener = Counting(StoreUnavailable("the store is down"))
    initial = 0.1
    cap = LineageCapture(opener, CaptureSettings(retry_initial_s=initial, retry_max_s=0.2, retry_timeout_s=600),
                         source="app-1", resolver=fake_resolver, relations=fake_relations)
    t0 = time.monotonic()
    for i in range(1, 4):
        cap.submit(event(10 * i, plan("clean")))
    assert not cap.flush(1.0)  # the store never answers
    elapsed = time.monotonic() - t0
    assert 1 <= opener.attempts <= 2 + elapsed / initial
    assert cap.stats().store_failures <= opener.attempts
    cap.close(timeout=0.1)
    assert cap.stats().dropped == 3 and cap.stats().pending == 0


def test_a_read_only_store_drops_the_run_at_once() -> None:
    from ushas_catalog.errors import StoreReadOnly

    opener = Counting(StoreReadOnly("the store /x/u.db is open read-only"))
    cap = LineageCapture(opener, CaptureSettings(retry_initial_s=0.05, retry_max_s=0.05, retry_timeout_s=600),
                         source="app-1", resolver=fake_resolver, relations=fake_relations)
    cap.submit(event(10, plan("clean")))
    with cap._cond:
        assert cap._cond.wait_for(lambda: cap._dropped >= 1, timeout=30)
    stats = cap.stats()
    assert (stats.dropped, stats.captured) == (1, 0) and opener.attempts >= 1
    # nothing is pending and the drop cannot be published to a store that refuses writes: not waited for
    assert cap.flush(30)
    cap.close(timeout=0.1)


def test_a_run_refused_after_close_is_in_the_stores_drop_count(switch: Switch, store_uri: str) -> None:
    """An action whose event arrives after the capture closed (a script ending on a read without
    spark.stop()) is logged as dropped, and ``ushas lineage status`` counts it too (issue 36)."""
    cap = make(switch)
    assert cap.submit(event(1, plan("clean")))
    assert cap.flush(30)
    cap.close()
    assert not cap.submit(event(3, plan("report")))
    status = read(store_uri).status()
    assert (status.captured, status.dropped) == (1, 1)
    assert cap.stats().dropped == 1
