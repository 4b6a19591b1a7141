"""Grouping the listener's executions into one action per root execution (lineage.actions: the decision the
JVM shim used to make): the run's status, SQL text and start come from the right execution, a dropped action
lets its plan files go, and the open actions are bounded."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lineage.actions import ActionGroups, receive
from ushas_catalog.errors import InvalidArgument

STORE = {"uri": "sqlite:///x.db", "project": "p"}
ACTION = {"application_id": "app-1", "application_name": "a", "user": "u", "catalogs": {"ushas": "ushas"}}


def msg(exec_id: int, root: int, *, start: int = 10, end: int = 20, failed: bool = False, error: str | None = None,
        sql: str | None = None, **extra: Any) -> dict[str, Any]:
    x: dict[str, Any] = {"execution_id": exec_id, "root_id": root, "start_ms": start, "end_ms": end, "failed": failed,
                         "func": f"f{exec_id}", "plan": "{}", "plan_chars": 2, "walk_ms": 0.1, **extra}
    if error is not None:
        x["error"] = error
    if sql is not None:
        x["sql"] = sql
    return {"ctx": STORE, "store": STORE, "action": ACTION, "execution": x, "jvm_dropped": 0}


def test_nested_executions_are_one_action_shipped_when_the_root_ends() -> None:
    groups = ActionGroups()
    assert groups.add(msg(2, 1, start=5, sql="INSERT ...")) is None
    out = groups.add(msg(1, 1, start=7, end=30))
    assert out is not None and out["store"] == STORE and groups.open_count() == 0
    ev = out["event"]
    assert (ev["execution_id"], ev["start_ms"], ev["end_ms"], ev["status"]) == (1, 5, 30, "COMPLETE")
    assert [x["execution_id"] for x in ev["executions"]] == [2, 1] and ev["sql"] == "INSERT ..."
    assert "root_id" not in ev["executions"][0] and ev["executions"][0]["func"] == "f2"
    assert ev["application_id"] == "app-1" and ev["catalogs"] == {"ushas": "ushas"}


def test_the_status_and_error_are_the_roots() -> None:
    groups = ActionGroups()
    groups.add(msg(2, 1, failed=True, error="inner failed"))
    ev = groups.add(msg(1, 1, sql="CTAS"))["event"]  # type: ignore[index]
    assert ev["status"] == "COMPLETE" and "error" not in ev and ev["sql"] == "CTAS"
    groups.add(msg(4, 3))
    ev = groups.add(msg(3, 3, failed=True, error="boom"))["event"]  # type: ignore[index]
    assert ev["status"] == "FAIL" and ev["error"] == "boom"


def test_a_discarded_action_deletes_its_plan_files(tmp_path: Path) -> None:
    files = [tmp_path / "a.json", tmp_path / "b.json"]
    for f in files:
        f.write_text("{}")
    groups = ActionGroups()
    groups.add(msg(2, 1, plan_file=str(files[0])))
    assert groups.add({**msg(1, 1, plan_file=str(files[1])), "discard": True}) is None
    assert not any(f.exists() for f in files) and groups.open_count() == 0


def test_open_actions_are_bounded(tmp_path: Path) -> None:
    groups = ActionGroups(max_open=2)
    oldest = tmp_path / "old.json"
    oldest.write_text("{}")
    groups.add(msg(11, 10, plan_file=str(oldest)))
    groups.add(msg(21, 20))
    groups.add(msg(31, 30))
    assert groups.open_count() == 2 and not oldest.exists()


def test_other_messages_go_to_the_hub_as_they_are() -> None:
    seen: list[dict[str, Any]] = []

    class Hub:
        def event(self, m: dict[str, Any]) -> dict[str, Any]:
            seen.append(m)
            return {"accepted": True, "dropped": 0}

    control = {"store": STORE, "flush": 1.0}
    assert receive(Hub(), control) == {"accepted": True, "dropped": 0} and seen == [control]
    assert receive(Hub(), msg(7, 7))["accepted"] and seen[-1]["event"]["execution_id"] == 7


def test_a_malformed_execution_is_a_typed_error() -> None:
    with pytest.raises(InvalidArgument, match="malformed lineage execution"):
        ActionGroups().add({"store": STORE, "execution": {"root_id": 1}})
