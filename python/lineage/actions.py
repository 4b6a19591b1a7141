"""One user action = one run: grouping the lineage listener's executions (moved here from the JVM shim).

Spark reports one user action as several executions (a CTAS, a V1 INSERT through ``V1Write``: an inner
write nested under a root execution). The shim's listener (``io.ushas.spark.UshasLineageListener``) only
adapts: for each execution it serializes the analyzed plan on Spark's listener thread (the plan exists only
then) and sends one ``lineage.event`` message with the execution and its root execution id. This module
decides what they are: it keeps the executions of each open action until its root execution ends, then
hands ONE action event (format ``ushas-lineage-event``, the one :class:`lineage.capture.CaptureHub` takes)
to the capture. Status: the root execution's (a nested execution that failed while the action succeeded
is not a failed run); SQL text: the root's, else the first known; start: the earliest execution's.

Message of one execution (``"execution"`` present)::

    {"ctx"/"store": {"uri", "project"}, "jvm_dropped": n,
     "action": {"application_id", "application_name", "user", "catalogs"},
     "execution": {"execution_id", "root_id", "start_ms", "end_ms", "failed", "error", "sql",
                   "func", "plan" | "plan_file", "plan_chars", "walk_ms"},
     "discard": true}   # the JVM dropped an execution of this action: the whole action is dropped (counted there)

An execution with ``"command_result": true`` only reads the result rows of a command that already ran
as its own execution (the Thrift server collects every statement's result): alone, it is no action.

Any other message (an action event, a control message) goes to the capture hub as it is.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Mapping

from ushas_catalog.errors import InvalidArgument

#: open actions kept at most (roots that never end here, e.g. another session's): the oldest is let go
MAX_OPEN = 1000
#: execution fields that belong to the action, not to the execution event the capture reads
#: (an execution keeps its start_ms / end_ms: lineage.micro_batches groups a micro-batch's nested writes by them)
_ACTION_FIELDS = ("root_id", "failed", "error", "sql", "command_result")


@dataclass
class _Open:
    executions: list[dict[str, Any]] = field(default_factory=list)
    start_ms: int | None = None
    sql: str | None = None


class ActionGroups:
    """The open actions of this process, by (application id, root execution id). Thread-safe (Py4J answers
    the listener's calls on several threads)."""

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        self.max_open = max_open
        self._lock = threading.Lock()
        self._open: OrderedDict[tuple[str, int], _Open] = OrderedDict()

    def add(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """Take one execution message; the action event message (``ctx``, ``store``, ``event``) once its
        root execution is in, else ``None``. A ``discard`` root lets its action go (plan files deleted)."""
        try:
            action = dict(message.get("action") or {})
            x: dict[str, Any] = dict(message["execution"])
            exec_id, root = int(x["execution_id"]), int(x.get("root_id", x["execution_id"]))
            end_ms = int(x["end_ms"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument(f"malformed lineage execution message: {exc!r}") from None
        key = (str(action.get("application_id", "")), root)
        with self._lock:
            group = self._open.pop(key, None) or _Open()
            if message.get("discard") or (x.get("command_result") and exec_id == root and not group.executions):
                _delete_plan_files([*group.executions, x])
                return None
            if x.get("start_ms") is not None:
                start = int(x["start_ms"])
                group.start_ms = start if group.start_ms is None else min(group.start_ms, start)
            if x.get("sql") is not None and (group.sql is None or exec_id == root):
                group.sql = str(x["sql"])
            if exec_id != root:
                group.executions.append(_execution(x))
                self._open[key] = group
                while len(self._open) > self.max_open:
                    _, oldest = self._open.popitem(last=False)
                    _delete_plan_files(oldest.executions)
                return None
        failed = bool(x.get("failed"))
        event: dict[str, Any] = {
            "format": "ushas-lineage-event", "version": 1,
            "application_id": action.get("application_id", ""), "application_name": action.get("application_name", ""),
            "user": action.get("user", ""), "execution_id": root,
            "start_ms": group.start_ms if group.start_ms is not None else end_ms, "end_ms": end_ms,
            "status": "FAIL" if failed else "COMPLETE",
            "catalogs": action.get("catalogs") or {},
            **({"client": action["client"]} if action.get("client") else {}),
            "executions": [*group.executions, _execution(x)],
            "jvm_dropped": int(message.get("jvm_dropped") or 0),
        }
        if failed and x.get("error") is not None:
            event["error"] = x["error"]
        if group.sql is not None:
            event["sql"] = group.sql
        store = message.get("store") or message.get("ctx")
        out = {"ctx": message.get("ctx") or store, "store": store, "event": event}
        if "openlineage" in message:  # the listener's OpenLineage transport options travel with the action
            out["openlineage"] = message["openlineage"]
        return out

    def open_count(self) -> int:
        with self._lock:
            return len(self._open)


def _execution(x: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in x.items() if k not in _ACTION_FIELDS}


def _delete_plan_files(executions: list[dict[str, Any]]) -> None:
    for x in executions:
        path = x.get("plan_file")
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass


#: the open actions of this process (one Python side per driver JVM)
GROUPS = ActionGroups()


def receive(hub: Any, message: Mapping[str, Any]) -> dict[str, Any]:
    """The bridge's ``lineage.event``: an execution is grouped (answered at once); a complete action, an
    action event or a control message goes to ``hub`` (:class:`lineage.capture.CaptureHub`)."""
    if "execution" not in message:
        return dict(hub.event(message))
    event = GROUPS.add(message)
    if event is None:
        return {"accepted": True, "grouped": True}
    return dict(hub.event(event))
