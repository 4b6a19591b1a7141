"""The events ``io.ushas.spark.UshasLineageListener`` hands to Python (op ``lineage.event``): one
action's executions with their analyzed plans (inline or in a private temp file), and the capture's
settings."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ushas_catalog.errors import InvalidArgument

from .store import RunStatus, run_id_for

EVENT_FORMAT = "ushas-lineage-event"
EVENT_VERSION = 1


@dataclass(frozen=True)
class CaptureSettings:
    #: runs queued or in flight; past it a new run is dropped (counted, logged)
    max_pending: int = 10_000
    #: how long one run is retried while the store fails before it is dropped
    retry_timeout_s: float = 300.0
    retry_initial_s: float = 0.05
    retry_max_s: float = 5.0
    #: plans larger than this (characters of plan JSON) are captured at table level
    max_plan_chars: int = 5_000_000
    #: resolution slower than this (ms) is discarded: table level
    max_resolve_ms: float = 5_000.0
    #: more column edges than this in one run: table level (keeps one run one small transaction)
    max_edges: int = 20_000
    #: publish counters to the store at most this often (and whenever the queue drains)
    report_interval_s: float = 2.0
    #: query-end -> stored latencies kept for :meth:`LineageCapture.stats`
    latency_window: int = 10_000

    def __post_init__(self) -> None:
        if self.max_pending < 1:
            raise InvalidArgument("lineage capture: max_pending must be at least 1")
        for name in ("retry_timeout_s", "retry_initial_s", "retry_max_s", "max_resolve_ms",
                     "report_interval_s"):
            if getattr(self, name) < 0:
                raise InvalidArgument(f"lineage capture: {name} cannot be negative")
        if self.max_plan_chars < 1 or self.max_edges < 0:
            raise InvalidArgument("lineage capture: max_plan_chars must be positive, max_edges not negative")

    @staticmethod
    def from_options(options: Mapping[str, Any]) -> CaptureSettings:
        """From ``spark.ushas.lineage.*`` style options (``maxPending``, ``retryTimeout`` (s),
        ``maxPlanChars``, ``maxResolveMs``, ``maxEdges``)."""
        names = {"maxPending": ("max_pending", int), "retryTimeout": ("retry_timeout_s", float),
                 "maxPlanChars": ("max_plan_chars", int), "maxResolveMs": ("max_resolve_ms", float),
                 "maxEdges": ("max_edges", int), "reportInterval": ("report_interval_s", float)}
        kwargs: dict[str, Any] = {}
        for key, value in options.items():
            if key not in names:
                raise InvalidArgument(f"unknown lineage capture option {key!r} (known: {', '.join(names)})")
            attr, kind = names[key]
            try:
                kwargs[attr] = kind(value)
            except (TypeError, ValueError):
                raise InvalidArgument(f"lineage capture option {key}={value!r} is not a {kind.__name__}") from None
        return CaptureSettings(**kwargs)


# ---- events --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExecutionEvent:
    """One Spark execution of a user action: its plan (inline JSON or a temp file), or why not."""

    execution_id: int
    func: str
    plan: str | None = None
    plan_file: str | None = None
    plan_chars: int = 0
    walk_ms: float = 0.0
    error: str | None = None
    #: rows / bytes / files the execution's write reported (sent when OpenLineage is on)
    write_metrics: Mapping[str, Any] | None = None
    #: a streaming micro-batch's ids: ``{"query_id", "run_id", "batch_id"}`` (None: not streaming)
    stream: Mapping[str, Any] | None = None
    #: when the execution started and ended (ms; None: not reported)
    start_ms: int | None = None
    end_ms: int | None = None

    def read_plan(self) -> str | None:
        """The plan JSON; a temp file is read once and deleted."""
        if self.plan is not None:
            return self.plan
        if self.plan_file is None:
            return None
        try:
            with open(self.plan_file, encoding="utf-8") as f:
                return f.read()
        finally:
            discard_file(self.plan_file)


@dataclass(frozen=True)
class ActionEvent:
    """One user action as the listener reports it."""

    application_id: str
    application_name: str
    user: str
    execution_id: int  # the root execution
    start_ms: int
    end_ms: int
    status: RunStatus
    executions: tuple[ExecutionEvent, ...]
    error: str | None = None
    sql: str | None = None
    #: Spark catalog name -> metastore catalog name, for the ushas catalogs of the session
    catalogs: Mapping[str, str] = field(default_factory=dict)
    #: the JVM side's cumulative count of actions it had to drop
    jvm_dropped: int = 0
    #: the Connect / Thrift server client the action ran for: ``{"kind", "session", "type"}`` (or empty)
    client: Mapping[str, str] = field(default_factory=dict)

    @property
    def run_id(self) -> Any:
        return run_id_for(self.application_id, self.execution_id)

    @staticmethod
    def parse(payload: str | bytes | Mapping[str, Any]) -> ActionEvent:
        """Parse and check one event; a malformed one raises :class:`InvalidArgument`."""
        try:
            d = json.loads(payload) if isinstance(payload, (str, bytes)) else payload
        except ValueError as exc:
            raise InvalidArgument(f"lineage event is not JSON: {exc}") from None
        if not isinstance(d, Mapping) or d.get("format") != EVENT_FORMAT:
            raise InvalidArgument(f"not a {EVENT_FORMAT} document")
        if d.get("version") != EVENT_VERSION:
            raise InvalidArgument(f"lineage event version {d.get('version')!r} not supported "
                                  f"(expected {EVENT_VERSION}): rebuild the shim jar")
        try:
            executions = tuple(
                ExecutionEvent(execution_id=int(x["execution_id"]), func=str(x.get("func", "")),
                               plan=x.get("plan"), plan_file=x.get("plan_file"),
                               plan_chars=int(x.get("plan_chars", 0)), walk_ms=float(x.get("walk_ms", 0.0)),
                               error=x.get("error"), write_metrics=x.get("write_metrics"),
                               stream=stream_ids(x.get("stream")),
                               start_ms=_optional_int(x.get("start_ms")), end_ms=_optional_int(x.get("end_ms")))
                for x in d.get("executions", ()))
            event = ActionEvent(
                application_id=str(d["application_id"]), application_name=str(d.get("application_name", "")),
                user=str(d.get("user", "")), execution_id=int(d["execution_id"]),
                start_ms=int(d["start_ms"]), end_ms=int(d["end_ms"]), status=RunStatus(d["status"]),
                executions=executions, error=d.get("error"), sql=d.get("sql"),
                catalogs=dict(d.get("catalogs") or {}), jvm_dropped=int(d.get("jvm_dropped", 0)),
                client={str(k): str(v) for k, v in (d.get("client") or {}).items()})
        except (KeyError, TypeError, ValueError) as exc:
            for x in d.get("executions", ()) if isinstance(d.get("executions"), list) else ():
                if isinstance(x, Mapping) and isinstance(x.get("plan_file"), str):
                    discard_file(x["plan_file"])
            raise InvalidArgument(f"malformed lineage event: {exc!r}") from None
        if event.end_ms < event.start_ms:
            event = replace(event, start_ms=event.end_ms)
        return event

    def discard_plans(self) -> None:
        for x in self.executions:
            if x.plan_file is not None:
                discard_file(x.plan_file)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def stream_ids(value: Any) -> Mapping[str, Any] | None:
    """A micro-batch's ids as the listener sent them (checked: a malformed event is refused)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("query_id"), str) \
            or isinstance(value.get("batch_id"), bool) or not isinstance(value.get("batch_id"), int):
        raise ValueError(f"stream ids {value!r}")
    return {"query_id": value["query_id"], "run_id": str(value.get("run_id", "")), "batch_id": value["batch_id"]}


def discard_file(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
