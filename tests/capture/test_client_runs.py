"""Runs on a shared server name their client (the listener's ``action.client``: Spark Connect or Thrift
session, user, client type): the fields travel from the listener's message to the stored run and back, and
an execution that only collects an already executed command's result is no run of its own."""
from __future__ import annotations

import json
import uuid
from typing import Any

from lineage.actions import ActionGroups
from lineage.capture import ActionEvent
from lineage.store import Run, RunStatus

STORE = {"uri": "sqlite:///x.db", "project": "p"}
CLIENT = {"kind": "connect", "session": "5f0c7d4e-0000-4000-8000-000000000001",
          "type": "_SPARK_CONNECT_PYTHON spark/4.3.0 os/linux python/3.11.7"}


def msg(exec_id: int, root: int, action: dict[str, Any], **extra: Any) -> dict[str, Any]:
    x = {"execution_id": exec_id, "root_id": root, "start_ms": 1, "end_ms": 2, "failed": False, "func": "collect",
         "plan": "{}", "plan_chars": 2, "walk_ms": 0.1, **extra}
    return {"ctx": STORE, "store": STORE, "action": action, "execution": x, "jvm_dropped": 0}


def test_the_client_travels_from_the_listener_to_the_run() -> None:
    action = {"application_id": "app-1", "application_name": "notebook_alice", "user": "alice", "catalogs": {},
              "client": CLIENT}
    out = ActionGroups().add(msg(1, 1, action))
    assert out is not None
    event = ActionEvent.parse(json.dumps(out["event"]))
    assert (event.user, event.application_name, dict(event.client)) == ("alice", "notebook_alice", CLIENT)
    plain = ActionGroups().add(msg(1, 1, {**action, "client": None}))
    assert plain is not None and "client" not in plain["event"]
    assert dict(ActionEvent.parse(plain["event"]).client) == {}


def test_run_keeps_its_client_through_the_store_format() -> None:
    run = Run(run_id=uuid.uuid4(), application_id="app", application_name="nb", execution_id=3, user="bob",
              start_ms=1, end_ms=2, status=RunStatus.COMPLETE, session_id=CLIENT["session"], client_kind="thrift",
              client_type="jdbc")
    again = Run.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again == run
    old = {k: v for k, v in run.to_dict().items() if k not in ("session_id", "client_kind", "client_type")}
    assert Run.from_dict(old).session_id is None  # runs stored before clients were recorded


def test_collecting_a_commands_result_is_not_a_run() -> None:
    groups = ActionGroups()
    action = {"application_id": "app-1", "application_name": "thrift", "user": "carol", "catalogs": {}}
    assert groups.add(msg(7, 7, action, command_result=True)) is None
    assert groups.open_count() == 0
    # the same flag on the root of an action with nested executions does not hide them
    assert groups.add(msg(9, 8, action)) is None
    out = groups.add(msg(8, 8, action, command_result=True))
    assert out is not None and [x["execution_id"] for x in out["event"]["executions"]] == [9, 8]
    assert all("command_result" not in x for x in out["event"]["executions"])
