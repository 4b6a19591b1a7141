"""Fenced writes (issue 25, "Fenced writes, applied exactly once"): a write committed at most once,
never after it was aborted or after its caller's deadline; an injected ``commit_unknown_result``
retried without applying the write twice; ``ushas write`` / ``ushas writes`` tell what became of it."""
from __future__ import annotations

import json
import os
import time

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument, WriteAborted, WriteExpired
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.data.write_fence import abort_write, get_outcome, list_outcomes, trim_outcomes

T = "main.sales.orders"


@pytest.fixture
def orders(sales: Metastore) -> Metastore:
    sales.create_table(T, "id BIGINT, dt STRING", partition_by=["dt"])
    return sales


def _state(ms: Metastore) -> tuple[int, list[str], int, int]:
    """(table version, partition values, history entries, change-feed events for the table)."""
    info = ms.get_table(T)
    parts = sorted(p.values["dt"] for p in ms.list_partitions(T))
    events = [c for c in ms.changes() if c.name == T]
    return info.version, parts, len(ms.history(T)), len(events)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_commit_unknown_result_is_applied_once(orders: Metastore) -> None:
    before = _state(orders)
    orders.db.inject_commit_unknown_result(2)  # the commit lands, its answer is lost, twice
    result = orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="w-1",
                                       deadline_ms=_now_ms() + 60_000)
    assert orders.db._unknown_results == 0  # both injections were consumed: the transaction ran 3 times
    version, parts, history, events = _state(orders)
    assert (version, parts, history, events) == (before[0] + 1, ["a"], before[2] + 1, before[3] + 1)
    assert result.version == version and result.added == 1
    outcome = get_outcome(orders, "w-1")
    assert (outcome.state, outcome.table, outcome.version) == ("COMMITTED", T, version)
    # the same write sent again (a client retry): the recorded answer, nothing applied
    again = orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="w-1")
    assert (again.version, again.added) == (version, 1)
    assert _state(orders) == (version, parts, history, events)


def test_unfenced_write_under_unknown_result_applies_twice(orders: Metastore) -> None:
    """What the fence prevents: without a write id the retried transaction is a second write."""
    version = orders.get_table(T).version
    orders.db.inject_commit_unknown_result(1)
    orders.replace_partitions(T, [], [Partition({"dt": "a"})])
    assert orders.get_table(T).version == version + 2


def test_aborted_write_is_refused_later(orders: Metastore) -> None:
    before = _state(orders)
    out = abort_write(orders, "w-2", "Spark aborted the job", T)
    assert (out.state, out.reason) == ("ABORTED", "Spark aborted the job")
    with pytest.raises(WriteAborted, match="w-2") as e:
        orders.replace_partitions(T, [], [Partition({"dt": "late"})], write_id="w-2",
                                  deadline_ms=_now_ms() + 60_000)
    assert e.value.write_id == "w-2"
    with pytest.raises(WriteAborted):
        orders.write_table_files(T, [], "WRITE", write_id="w-2")
    assert _state(orders) == before
    assert get_outcome(orders, "w-2").state == "ABORTED"


def test_abort_after_commit_answers_committed(orders: Metastore) -> None:
    result = orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="w-3")
    out = abort_write(orders, "w-3", "bridge timeout", T)
    assert (out.state, out.version) == ("COMMITTED", result.version)
    assert get_outcome(orders, "w-3").state == "COMMITTED"
    assert [p.values["dt"] for p in orders.list_partitions(T)] == ["a"]


def test_deadline_passed_refused_before_any_change(orders: Metastore) -> None:
    before = _state(orders)
    with pytest.raises(WriteExpired, match="w-4"):
        orders.replace_partitions(T, [], [Partition({"dt": "x"})], write_id="w-4", deadline_ms=_now_ms() - 1)
    assert _state(orders) == before
    out = get_outcome(orders, "w-4")
    assert out.state == "ABORTED" and "deadline" in out.reason
    # and once ABORTED, a later attempt without a deadline is refused too
    with pytest.raises(WriteAborted):
        orders.replace_partitions(T, [], [Partition({"dt": "x"})], write_id="w-4")


def test_deadline_checked_on_every_retry(orders: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction retried (here: a conflict) re-checks the deadline: the retry after it passed
    applies nothing and records ABORTED."""
    from ushas_catalog.kv.base import RetryableError

    before = _state(orders)
    deadline = _now_ms() + 60_000
    real_commit = type(orders.db.create_transaction()).commit
    calls = {"n": 0}

    def commit_conflict_then_late(self):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            self.cancel()
            monkeypatch.setattr("ushas_catalog.data.write_fence.time.time_ns", lambda: (deadline + 1) * 1_000_000)
            raise RetryableError("injected conflict")
        return real_commit(self)

    monkeypatch.setattr(type(orders.db.create_transaction()), "commit", commit_conflict_then_late)
    with pytest.raises(WriteExpired):
        orders.replace_partitions(T, [], [Partition({"dt": "x"})], write_id="w-5", deadline_ms=deadline)
    monkeypatch.undo()
    assert _state(orders) == before
    assert get_outcome(orders, "w-5").state == "ABORTED"


def test_unpartitioned_write_fenced(sales: Metastore) -> None:
    sales.create_table("main.sales.flat", "id BIGINT")
    sales.db.inject_commit_unknown_result(1)
    v = sales.write_table_files("main.sales.flat", [], "WRITE", write_id="w-6")
    assert sales.get_table("main.sales.flat").version == v
    assert sales.write_table_files("main.sales.flat", [], "WRITE", write_id="w-6") == v
    assert sales.get_table("main.sales.flat").version == v


def test_bad_write_ids_refused(orders: Metastore) -> None:
    for bad in ("", " x", "a\x1b[31m", "x" * 201):
        with pytest.raises(InvalidArgument, match="write id"):
            orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id=bad)
    with pytest.raises(InvalidArgument, match="deadline"):
        orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="ok", deadline_ms="soon")  # type: ignore[arg-type]
    assert list(orders.list_partitions(T)) == []


def test_cli_write_and_writes(orders: Metastore, store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="w-c")
    abort_write(orders, "w-a", "Spark aborted the job", T)
    base = ["--uri", store_uri, "--project", "acme"]
    assert main([*base, "write", "w-c", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["state"], out["table"]) == ("COMMITTED", T)
    assert main([*base, "write", "w-a"]) == 0
    text = capsys.readouterr().out
    assert "ABORTED" in text and "Spark aborted the job" in text
    assert main([*base, "write", "nope"]) == 0
    assert "UNKNOWN" in capsys.readouterr().out
    assert main([*base, "writes", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {w["write_id"]: w["state"] for w in listed} == {"w-c": "COMMITTED", "w-a": "ABORTED"}
    assert main([*base, "write", "bad\x1b"]) == 2
    capsys.readouterr()
    assert main([*base, "writes", "--trim-older-than", "7d", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"trimmed": 0}
    assert main([*base, "writes", "--trim-older-than", "0s"]) == 0
    # the COMMITTED outcome is younger than the staging grace: kept (issue 38, review defect 6)
    assert "removed 1 write outcome(s)" in capsys.readouterr().out
    assert [o.write_id for o in list_outcomes(orders)] == ["w-c"]
    assert main([*base, "writes", "--trim-older-than", "soon"]) == 2


def test_trim_outcomes(orders: Metastore) -> None:
    abort_write(orders, "old", "x", T)
    cut = time.time_ns() // 1000 + 1
    assert trim_outcomes(orders, cut) == 1
    assert list_outcomes(orders) == []


def test_trim_keeps_committed_outcomes_a_staging_directory_may_still_ask_for(
        orders: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A committed direct write's staging directory may outlive its commit; whoever ends it asks the outcome:
    trimmed, the write would be taken for ABORTED and its committed files deleted (issue 38, defect 6)."""
    from ushas_catalog.data import write_fence
    from ushas_catalog.data.locations import local_path

    orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="w-young")
    orders.replace_partitions(T, [], [Partition({"dt": "b"})], write_id="w-staged")
    orders.replace_partitions(T, [], [Partition({"dt": "c"})], write_id="w-done")
    abort_write(orders, "w-gone", "x", T)
    location = local_path(orders.get_table(T).location or "")
    assert location is not None
    staged = os.path.join(location, "_ushas_staging", "w-staged")
    os.makedirs(staged)
    cut = time.time_ns() // 1000 + 1
    assert trim_outcomes(orders, cut) == 1  # within the grace: every COMMITTED outcome stays
    assert {o.write_id for o in list_outcomes(orders)} == {"w-young", "w-staged", "w-done"}
    monkeypatch.setattr(write_fence, "STAGING_GRACE_MICROS", 0)  # as if recorded more than 24 h ago
    assert trim_outcomes(orders, cut) == 2  # w-staged's staging directory is still there: kept
    assert [o.write_id for o in list_outcomes(orders)] == ["w-staged"]
    os.rmdir(staged)
    assert trim_outcomes(orders, cut) == 1
    assert list_outcomes(orders) == []


# ---- the bridge ops the Spark shim calls (commit_write / abort_write / write_outcome) ----------------
def _request(ms: Metastore, store_uri: str, write_id: str, deadline_ms: int, dt: str = "a") -> dict:
    from ushas_catalog.spark.tables import SparkCtx, location_of

    r = {"ctx": {"uri": store_uri, "project": "acme", "catalog": "main", "warehouse": "/wh"},
         "namespace": ["sales"], "name": "orders"}
    location = location_of(SparkCtx.of(r), ms.get_table(T))
    return {**r, "location": location, "mode": "append", "rows": 1, "filters": [],
            "write_id": write_id, "deadline_ms": deadline_ms,
            "written": [{"path": f"dt={dt}", "existing": [],
                         "files": [{"path": f"{location}/dt={dt}/part-{write_id}.parquet", "size": 1, "mtime": 1}]}]}


def _garbage_of(ms: Metastore, write_id: str) -> list[str]:
    from ushas_catalog.data.garbage import scan_garbage

    entries = ms.db.run(lambda tr: list(scan_garbage(tr, ms.project_path)))
    return [f.path for e in entries if e.operation == f"ABORTED WRITE {write_id}" for f in e.files]


def test_bridge_abort_then_late_commit_refused(orders: Metastore, store_uri: str) -> None:
    from ushas_catalog.spark.ops import OPS

    before = _state(orders)
    r = _request(orders, store_uri, "job-1", _now_ms() + 60_000)
    out = OPS["abort_write"](orders, {**r, "reason": "Spark aborted the write"})
    assert out["state"] == "ABORTED" and out["table"] == T
    with pytest.raises(WriteAborted, match="job-1"):
        OPS["commit_write"](orders, r)
    assert _state(orders) == before
    # the job's placed files will never be registered: they go at purge
    assert _garbage_of(orders, "job-1") == [r["written"][0]["files"][0]["path"]]
    assert OPS["write_outcome"](orders, {"write_id": "job-1"})["state"] == "ABORTED"


def test_bridge_commit_once_under_unknown_result(orders: Metastore, store_uri: str) -> None:
    from ushas_catalog.spark.ops import OPS

    before = _state(orders)
    r = _request(orders, store_uri, "job-2", _now_ms() + 60_000)
    orders.db.inject_commit_unknown_result(1)
    first = OPS["commit_write"](orders, r)
    assert _state(orders) == (before[0] + 1, ["a"], before[2] + 1, before[3] + 1)
    again = OPS["commit_write"](orders, r)  # the JVM's answer was lost; the same write arrives again
    assert again["version"] == first["version"] and again["registered"] == first["registered"] == 1
    assert _state(orders) == (before[0] + 1, ["a"], before[2] + 1, before[3] + 1)
    out = OPS["abort_write"](orders, {**r, "reason": "bridge timeout"})
    assert (out["state"], out["version"]) == ("COMMITTED", first["version"])
    assert _garbage_of(orders, "job-2") == []


def test_bridge_commit_after_deadline_refused(orders: Metastore, store_uri: str) -> None:
    from ushas_catalog.spark.ops import OPS

    before = _state(orders)
    r = _request(orders, store_uri, "job-3", _now_ms() - 1)
    with pytest.raises(WriteExpired, match="job-3"):
        OPS["commit_write"](orders, r)
    assert _state(orders) == before
    assert OPS["write_outcome"](orders, {"write_id": "job-3"})["state"] == "ABORTED"
    assert len(_garbage_of(orders, "job-3")) == 1


# ---- a write id is bound to its table and its writer (data.write_fence.check_owner) ------------------
def test_a_write_id_reused_on_another_table_is_refused(orders: Metastore, store_uri: str) -> None:
    """On the old code the second table's commit answered the first table's recorded result and applied nothing,
    and an abort naming the second table answered COMMITTED (the first table's version)."""
    from ushas_catalog.errors import WriteIdTaken
    from ushas_catalog.spark.ops import OPS

    other = "main.sales.returns"
    orders.create_table(other, "id BIGINT, dt STRING", partition_by=["dt"])
    done = orders.replace_partitions(T, [], [Partition({"dt": "a"})], write_id="w-t")
    before = orders.get_table(other).version
    with pytest.raises(WriteIdTaken, match="write id w-t is already the id of a write into another table") as e:
        orders.replace_partitions(other, [], [Partition({"dt": "b"})], write_id="w-t")
    assert T not in str(e.value)
    with pytest.raises(WriteIdTaken, match="w-t"):
        orders.write_table_files(other, [], "WRITE", write_id="w-t")
    r = _request(orders, store_uri, "w-t", _now_ms() + 60_000)
    with pytest.raises(WriteIdTaken, match="w-t"):
        OPS["abort_write"](orders, {**r, "name": "returns", "reason": "not mine"})
    assert orders.get_table(other).version == before and list(orders.list_partitions(other)) == []
    # the same table (spelled another way): the recorded answer, nothing applied again
    again = orders.replace_partitions("main.sales.`orders`", [], [Partition({"dt": "a"})], write_id="w-t")
    assert (again.version, again.added) == (done.version, 1)
    assert get_outcome(orders, "w-t").table == T


def test_an_outcome_recorded_before_users_were_stored_is_its_tables() -> None:
    """Old records have no user: they are checked for their table only (any user's retry gets the answer)."""
    from ushas_catalog.data.write_fence import COMMITTED, WriteOutcome, Writer, check_owner
    from ushas_catalog.errors import WriteIdTaken

    old = WriteOutcome("w", COMMITTED, T, 1, answer={}, version=3)
    check_owner(old, T, Writer("bob", True))
    with pytest.raises(WriteIdTaken):
        check_owner(old, "main.sales.returns", Writer("bob", True))
    check_owner(WriteOutcome("w", COMMITTED, T, 1, user="alice"), T, Writer("bob", False))  # ungoverned: one user
    with pytest.raises(WriteIdTaken, match="another user's"):
        check_owner(WriteOutcome("w", COMMITTED, T, 1, user="alice"), T, Writer("bob", True))
