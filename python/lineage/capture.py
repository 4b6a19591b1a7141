"""Automatic lineage capture: events from ``io.ushas.spark.UshasLineageListener`` -> the store.

Size (over 600 lines): the capture pipeline (events, analysis, the bounded queue and its worker,
stats, the hub of the bridge process); candidates to move out next: :class:`Analysis` and the
event parsing.

The JVM listener groups Spark's executions by root execution id (one user action that Spark
reports as several events, e.g. a CTAS = ``create`` + ``inner data writing``), serializes each
analyzed plan with PlanWriter (inline when small, else a private temp file: large Py4J
arguments stall ~44 ms) and hands the group to Python through the bridge (op
``lineage.event``) from its own worker thread. Here:

- :meth:`LineageCapture.submit` only appends to a bounded queue and returns: the bridge call,
  and so the JVM worker, never waits on the store. When ``max_pending`` runs are queued or in
  flight, the new one is dropped and counted.
- one worker thread per capture builds the run (plan -> resolver -> edges, within a time and
  size budget: over budget, the run is stored at table level with a marker, never skipped),
  and stores it in one transaction, retrying with backoff while the store is down or slow; a
  run still not stored ``retry_timeout_s`` after its first attempt is dropped and counted. The
  backoff belongs to the store, not to a run: after a failure nothing (no run, no counter
  report) tries the store again before the backoff has passed, whatever wakes the worker, so a
  failing store sees at most one attempt per backoff interval (``retry_initial_s`` doubling up
  to ``retry_max_s``), never a tight loop. A store that cannot take a write at all (read-only,
  missing, not a store, damaged) drops the run at once.
- every drop is logged with the running count, and the counts (captured / dropped / pending,
  including the JVM side's own drops) are published to the store for ``ushas lineage status``.
- the run id is derived from (application id, root execution id): the same action reported
  twice (a JVM retry after a lost answer) is stored once.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from ushas_catalog.errors import (InvalidArgument, LimitExceeded, NotAStore, StoreDamaged, StoreNotFound,
                                  StoreReadOnly)

from .drop_warnings import DropWarnings
from .model import ColumnNode, Dataset, DatasetKind, Edge, LineageResult
from .openlineage_facts import LIFECYCLE, RunFacts
from .openlineage_facts import collect as collect_facts
from .run_names import best_command, command_of, run_name
from .store import CapturedRun, LineageStore, Run, RunStatus, now_ms, run_id_for
from .views import view_edges

log = logging.getLogger("ushas.lineage.capture")

#: store errors that retrying cannot fix: the run is dropped at once (counted), not retried
PERMANENT_STORE_ERRORS: tuple[type[Exception], ...] = (StoreReadOnly, StoreNotFound, NotAStore, StoreDamaged)

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
                               stream=_stream_ids(x.get("stream")))
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


def _stream_ids(value: Any) -> Mapping[str, Any] | None:
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


# ---- from plans to a run -------------------------------------------------------------------
Resolver = Callable[[Any], LineageResult]
Relations = Callable[[Any], tuple[tuple[Dataset, ...], tuple[Dataset, ...]]]


def default_resolver(doc: Any) -> LineageResult:
    """The shared plan resolver (``lineage.resolve``)."""
    from . import resolve

    return resolve.resolve(doc)  # NEEDED-BY-CAPTURE: lineage.resolve.resolve(PlanDocument) -> LineageResult


@dataclass
class _RelationPass:
    """The part of the resolver's pass state that its relation / write-target readers use."""

    doc: Any
    datasets: dict[int, Dataset] = field(default_factory=dict)


def default_relations(doc: Any) -> tuple[tuple[Dataset, ...], tuple[Dataset, ...]]:
    """(read, written) datasets of a plan without resolving its columns (table-level capture):
    one pass over the nodes, reading relation identities and write targets only."""
    from . import resolve

    # NEEDED-BY-CAPTURE: a public lineage.resolve.relations(PlanDocument) -> (reads, writes);
    # until then the resolver's relation_dataset and write_target are used as they are.
    p = _RelationPass(doc)
    reads: dict[Dataset, None] = {}
    writes: dict[Dataset, None] = {}
    for node in doc.nodes:
        if node.kind in resolve.RELATIONS:
            ds = resolve.relation_dataset(p, node)  # type: ignore[arg-type]
            if ds is not None:
                p.datasets[node.index] = ds
                reads.setdefault(ds)
        elif node.kind in resolve.WRITE_KINDS:
            target = resolve.write_target(p, node)  # type: ignore[arg-type]
            if target is not None:
                writes.setdefault(target)
        elif node.children and node.children[0] in p.datasets and node.kind == "SubqueryAlias":
            p.datasets[node.index] = p.datasets[node.children[0]]
    for target in writes:
        reads.pop(target, None)
    return tuple(d for d in reads if d.kind is not DatasetKind.INLINE), tuple(writes)


@dataclass
class Analysis:
    """What the plans of one action say."""

    reads: dict[Dataset, None] = field(default_factory=dict)
    writes: dict[Dataset, None] = field(default_factory=dict)
    edges: dict[Edge, None] = field(default_factory=dict)
    markers: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    commands: list[str | None] = field(default_factory=list)


def _facts_of(doc: Any, command: str | None, facts: RunFacts) -> tuple[tuple[str, str], ...]:
    from . import resolve

    p = _RelationPass(doc)

    def relation(node: Any) -> Dataset | None:
        ds = resolve.relation_dataset(p, node)  # type: ignore[arg-type]
        if ds is not None:
            p.datasets[node.index] = ds
        return ds

    return collect_facts(doc, command, facts, relation)


def analyze(event: ActionEvent, settings: CaptureSettings, resolver: Resolver = default_resolver,
            relations: Relations = default_relations, facts: RunFacts | None = None) -> CapturedRun:
    """The run of one action: every execution's plan resolved (or taken at table level when it
    is over budget or cannot be resolved), merged into one set of reads, writes and edges,
    named after what it did (lineage.run_names). ``facts``: also collect what OpenLineage's
    dataset facets need (schemas, locations, lifecycle changes, write statistics) into it."""
    from .plan import parse

    acc = Analysis()
    for x in event.executions:
        if facts is not None:
            facts.add_statistics(x.write_metrics)
        acc.operations.append(x.func)
        try:
            text = x.read_plan()
        except OSError as exc:
            acc.markers.append(f"execution {x.execution_id}: plan file unreadable ({exc})")
            continue
        if text is None:
            acc.markers.append(f"execution {x.execution_id}: no plan ({x.error or 'not serialized'})")
            continue
        try:
            doc = parse(text)
        except Exception as exc:  # noqa: BLE001 - any malformed plan is a marker, not a lost run
            acc.markers.append(f"execution {x.execution_id}: unreadable plan ({exc})")
            continue
        command = command_of(doc.root_node)
        acc.commands.append(command)
        written: tuple[tuple[str, str], ...] = ()
        if facts is not None:
            try:
                written = _facts_of(doc, command, facts)
            except Exception as exc:  # noqa: BLE001 - facets are extras: never lose the run for them
                log.debug("lineage: OpenLineage facts of execution %s failed: %s", x.execution_id, exc)
        if len(text) > settings.max_plan_chars:
            acc.markers.append(f"execution {x.execution_id}: plan of {len(text)} chars over the "
                               f"{settings.max_plan_chars} budget")
            _table_level(acc, doc, relations)
            continue
        started = time.perf_counter()
        try:
            result = resolver(doc)
        except Exception as exc:  # noqa: BLE001
            log.warning("lineage: resolving execution %s of %s failed, captured at table level: %s",
                        x.execution_id, event.application_id, exc)
            acc.markers.append(f"execution {x.execution_id}: resolver failed ({type(exc).__name__}: {exc})")
            _table_level(acc, doc, relations)
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if elapsed > settings.max_resolve_ms:
            acc.markers.append(f"execution {x.execution_id}: resolution took {elapsed:.0f} ms, over the "
                               f"{settings.max_resolve_ms:.0f} ms budget")
            _add_datasets(acc, result)
            continue
        _add_datasets(acc, result)
        if result.target is None and command is None:
            # a query that only reads (collect, count, show): every relation it scans is read, even
            # one no output column derives from (count(*))
            for d in relations(doc)[0]:
                acc.reads.setdefault(d)
        if facts is not None and written and result.target is not None:
            facts.schemas[result.target] = written
        for e in _target_edges(result):
            acc.edges.setdefault(e)
    writes = _dedup_writes(acc.writes, len(event.executions) > 1)
    reads = [d for d in acc.reads if d.kind is not DatasetKind.INLINE]
    edges = [e for e in acc.edges if e.target is None or e.target.dataset in writes]
    if len(edges) > settings.max_edges:
        acc.markers.append(f"{len(edges)} column edges over the {settings.max_edges} budget")
        edges = []
    command = best_command(acc.commands)
    stream = next((x.stream for x in event.executions if x.stream), None)
    name = run_name(event.application_name, command, writes or (facts.ddl_outputs if facts else ()), reads)
    if facts is not None and name.command in LIFECYCLE:
        for d in writes:
            facts.lifecycle.setdefault(d, (LIFECYCLE[name.command], None))
    run = Run(run_id=event.run_id, application_id=event.application_id,
              application_name=event.application_name, execution_id=event.execution_id, user=event.user,
              start_ms=event.start_ms, end_ms=event.end_ms, status=event.status,
              operation=",".join(dict.fromkeys(o for o in acc.operations if o)), sql=event.sql,
              error=event.error, table_level="; ".join(acc.markers) or None, job=name.job, kind=name.kind,
              session_id=event.client.get("session"), client_kind=event.client.get("kind"),
              client_type=event.client.get("type"),
              stream_query_id=stream.get("query_id") if stream else None,
              batch_id=stream.get("batch_id") if stream else None)
    return CapturedRun(run, reads=tuple(reads), writes=tuple(writes), edges=tuple(edges))


def _table_level(acc: Analysis, doc: Any, relations: Relations) -> None:
    reads, writes = relations(doc)
    for d in reads:
        acc.reads.setdefault(d)
    for d in writes:
        acc.writes.setdefault(d)


def _add_datasets(acc: Analysis, result: LineageResult) -> None:
    """Writes: the result's target. Reads: every dataset column some step or dependency reads
    (relation leaves). The write target itself is a read only when its data flows somewhere (a
    source of an edge or of a dependency: INSERT OVERWRITE t ... FROM t reads t); a V2 write names
    its target as a relation too (AppendData's DataSourceV2Relation), which is not a read."""
    target = result.target
    if target is not None:
        acc.writes.setdefault(target)
        if any(e.source.dataset == target for e in result.edges):
            acc.reads.setdefault(target)
    for deriv in result.derivations.values():
        for step in deriv.inputs:
            if step.source.is_dataset_column and step.source.dataset is not None \
                    and step.source.dataset != target:
                acc.reads.setdefault(step.source.dataset)
    for dep in result.indirect:
        for src in dep.sources:
            if src.is_dataset_column and src.dataset is not None:
                acc.reads.setdefault(src.dataset)
    for u in result.unresolved:
        for c in u.columns:
            if c.dataset is not None and c.dataset != result.target:
                acc.reads.setdefault(c.dataset)


def _target_edges(result: LineageResult) -> list[Edge]:
    """Leaf-level edges of a write, their targets as columns of the written dataset."""
    if result.target is None:
        return []
    out = []
    for e in (*result.edges, *view_edges(result)):  # through persistent views, and to their columns
        target = e.target
        if target is not None and target.dataset is None:
            target = ColumnNode.column(result.target, target.name)
        out.append(Edge(target, e.source, e.kind, e.subtype, e.expression))
    return out


def _dedup_writes(writes: Mapping[Dataset, None], nested: bool) -> list[Dataset]:
    """One action writing a catalog table also reports, as a nested execution, the write of the
    table's files by path (V1 writes): keep the table, drop the path."""
    out = [d for d in writes if d.kind is not DatasetKind.INLINE]
    if nested and any(d.kind is DatasetKind.TABLE for d in out):
        out = [d for d in out if d.kind is not DatasetKind.PATH]
    return out


# ---- the capture ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CaptureStats:
    captured: int
    dropped: int
    pending: int
    #: failed store attempts (each retried)
    store_failures: int
    #: milliseconds from query end to stored, most recent last
    latencies_ms: tuple[float, ...] = ()
    #: actions that touched no dataset (DDL, SET, SHOW ...): not runs
    skipped: int = 0
    #: OpenLineage events sent / dropped (queue full, receiver down) by the HTTP transport
    openlineage_sent: int = 0
    openlineage_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"captured": self.captured, "dropped": self.dropped, "pending": self.pending,
                "store_failures": self.store_failures, "skipped": self.skipped,
                "openlineage_sent": self.openlineage_sent, "openlineage_dropped": self.openlineage_dropped}


_STOP = object()


class LineageCapture:
    """A bounded queue and one worker thread storing runs into one lineage store."""

    def __init__(self, opener: Callable[[], LineageStore], settings: CaptureSettings | None = None, *,
                 source: str = "", resolver: Resolver = default_resolver,
                 relations: Relations = default_relations) -> None:
        self.settings = settings or CaptureSettings()
        self.source = source or f"pid-{os.getpid()}"
        self._opener = opener
        self._resolver = resolver
        self._relations = relations
        self._store: LineageStore | None = None
        self._cond = threading.Condition()
        self._queue: deque[Any] = deque()
        self._pending = 0  # queued + in flight
        self._captured = 0
        self._dropped = 0
        self._dropped_reported = 0
        self._jvm_dropped = 0
        self._store_failures = 0
        self._skipped = 0
        self._latencies: deque[float] = deque(maxlen=self.settings.latency_window)
        self._last_report = 0.0
        self._reported: tuple[int, int, int] = (0, 0, 0)
        self._closed = False
        self._abandon = False  # set by close() once its time is up: stop retrying
        self._gate_until = 0.0  # monotonic time before which the store is not tried again
        self._gate_delay = 0.0  # the current backoff (0: the store answered last time)
        self._store_refuses = False  # its last answer was a permanent refusal (read-only, damaged ...)
        self._drop_warnings = DropWarnings("run(s)")
        self._openlineage: Any = None  # an OpenLineageSender when the HTTP transport is on
        self._namespace = "ushas/default"
        self._ol_options: dict[str, Any] | None = None
        self._worker = threading.Thread(target=self._run, name=f"ushas-lineage-capture-{self.source}",
                                        daemon=True)
        self._worker.start()
        _ref = weakref.ref(self)
        atexit.register(lambda: (c := _ref()) is not None and c.close(timeout=10.0))

    # ---- intake (bridge threads) --------------------------------------------------------------
    def submit(self, event: ActionEvent | str | bytes | Mapping[str, Any]) -> bool:
        """Queue one action; never blocks on the store. False when it was dropped (queue full,
        capture closed, malformed event): always counted and logged."""
        if not isinstance(event, ActionEvent):
            try:
                event = ActionEvent.parse(event)
            except InvalidArgument as exc:
                self._drop(1, f"malformed event: {exc.message}")
                return False
        with self._cond:
            if event.jvm_dropped > self._jvm_dropped:
                delta = event.jvm_dropped - self._jvm_dropped
                self._jvm_dropped = event.jvm_dropped
                self._dropped += delta
                log.warning("lineage: the JVM listener dropped %d run(s) (queue full); %d dropped in all",
                            delta, self._dropped)
            if self._closed or self._pending >= self.settings.max_pending:
                reason = "capture closed" if self._closed else f"{self._pending} runs pending"
                accepted = False
            else:
                self._pending += 1
                self._queue.append(event)
                self._cond.notify_all()
                accepted = True
        if not accepted:
            event.discard_plans()
            self._drop(1, f"run {event.run_id} ({reason})")
        return accepted

    def note_jvm_dropped(self, total: int) -> None:
        """The JVM side's cumulative drop count, reported without an event (at shutdown)."""
        with self._cond:
            if total > self._jvm_dropped:
                delta = total - self._jvm_dropped
                self._jvm_dropped = total
                self._dropped += delta
                log.warning("lineage: the JVM listener dropped %d run(s); %d dropped in all", delta, self._dropped)
                self._cond.notify_all()

    def _drop(self, count: int, why: str) -> None:
        with self._cond:
            self._dropped += count
            total = self._dropped
            loud, earlier = self._drop_warnings.note(count)
            self._cond.notify_all()
        self._drop_warnings.log(log, count, why, total, loud, earlier)

    # ---- the store's backoff (shared by every run and the counter reports) ------------------------
    def _wait_for_store(self, deadline: float | None = None) -> bool:
        """Wait until the store may be tried again: a real wait (notifications do not shorten
        it). False when the capture is abandoning, or the store's backoff ends after ``deadline``."""
        with self._cond:
            while True:
                if self._abandon:
                    return False
                now = time.monotonic()
                if deadline is not None and self._gate_until > deadline:
                    return False
                if now >= self._gate_until:
                    return True
                self._cond.wait(self._gate_until - now)

    def _store_failed(self, *, count: bool = True, refused: bool = False) -> None:
        with self._cond:
            self._store_refuses = refused
            if count:
                self._store_failures += 1
            self._gate_delay = min(max(self._gate_delay * 2, self.settings.retry_initial_s),
                                   self.settings.retry_max_s)
            self._gate_until = time.monotonic() + self._gate_delay
            self._cond.notify_all()
        self._reset_store()

    def _store_answered(self) -> None:
        if self._gate_delay or self._store_refuses:
            with self._cond:
                self._store_refuses = False
                self._gate_delay = 0.0
                self._gate_until = 0.0

    # ---- control --------------------------------------------------------------------------------
    def reconfigure(self, settings: CaptureSettings) -> None:
        """Change the bound, retry and budget settings of a running capture."""
        with self._cond:
            self.settings = settings
            self._cond.notify_all()

    def set_openlineage(self, options: Mapping[str, Any] | None, namespace: str) -> None:
        """Also send every run as OpenLineage events over HTTP (``options``: the listener's
        ``openlineage`` object), or stop (None). The same options again change nothing."""
        from .openlineage_http import OpenLineageSender, OpenLineageSettings

        options = dict(options) if options else None
        with self._cond:
            if options == self._ol_options:
                return
            self._ol_options = options
        settings = OpenLineageSettings.from_options(options) if options else None
        with self._cond:
            current = self._openlineage
            if (current.settings if current is not None else None) == settings:
                return
            self._namespace = namespace
            self._openlineage = OpenLineageSender(settings, self.settings.max_pending) if settings else None
        if current is not None:
            current.close()
        if settings is not None:
            log.info("lineage: sending OpenLineage events to %s", settings.target)

    def stats(self) -> CaptureStats:
        ol = self._openlineage.stats() if self._openlineage is not None else None
        with self._cond:
            return CaptureStats(self._captured, self._dropped, self._pending, self._store_failures,
                                tuple(self._latencies), self._skipped, ol.sent if ol else 0, ol.dropped if ol else 0)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued run is stored or dropped and the counters are published."""
        deadline = time.monotonic() + timeout
        with self._cond:
            # drops cannot be published to a store that refuses every write: not waited for
            while self._pending or (self._dropped != self._dropped_reported and not self._store_refuses):
                left = deadline - time.monotonic()
                if left <= 0 or not self._worker.is_alive():
                    return False
                self._cond.notify_all()
                self._cond.wait(min(left, 0.05))
        sender = self._openlineage
        return sender is None or sender.flush(max(0.0, deadline - time.monotonic()))

    def close(self, timeout: float = 10.0) -> None:
        """Store what is queued (up to ``timeout``), then stop. What is left is counted as dropped."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
        self.flush(timeout)
        with self._cond:
            self._abandon = True
            leftover = list(self._queue)
            self._queue.clear()
            self._queue.append(_STOP)
            self._cond.notify_all()
        for event in leftover:
            event.discard_plans()
        if leftover:
            with self._cond:
                self._pending -= len(leftover)
            self._drop(len(leftover), "capture closed before they were stored")
        self._worker.join(timeout=max(1.0, timeout))
        with self._cond:
            unlogged, total = self._drop_warnings.take_unlogged(), self._dropped
        if unlogged:
            log.warning("lineage: %d run(s) dropped in all (%d of them logged at DEBUG only)", total, unlogged)
        if self._openlineage is not None:
            self._openlineage.close(timeout)
        if self._store is not None:
            try:
                self._store.close()
            except Exception:  # noqa: BLE001
                pass
            self._store = None

    # ---- the worker -------------------------------------------------------------------------------
    def _state(self) -> tuple[int, int, int]:
        return (self._captured, self._dropped, self._pending)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and self._state() == self._reported:
                    self._cond.wait(0.5)
                item = self._queue.popleft() if self._queue else None
            if item is _STOP:
                self._report(force=True)
                return
            if item is None:  # idle with counters to publish
                if not self._report(force=True):
                    with self._cond:
                        self._cond.wait(max(self.settings.retry_initial_s, 0.5))
                continue
            try:
                self._process(item)
            except Exception:  # noqa: BLE001 - the worker never dies
                log.exception("lineage: unexpected error capturing run %s", item.run_id)
                self._drop(1, f"run {item.run_id} (unexpected error)")
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()
            self._report(force=not self._queue)

    def _process(self, event: ActionEvent) -> None:
        sender = self._openlineage
        facts = RunFacts() if sender is not None else None
        try:
            captured = analyze(event, self.settings, self._resolver, self._relations, facts)
        finally:
            event.discard_plans()
        if sender is not None and facts is not None:
            self._send_openlineage(sender, captured, facts)
        if not captured.reads and not captured.writes and captured.run.table_level is None:
            with self._cond:  # DDL, SET, SHOW ...: touched no dataset, not a lineage run
                self._skipped += 1
            return
        if self._store_with_retry(captured, event):
            with self._cond:
                self._captured += 1
                self._latencies.append(max(0.0, time.time() * 1000 - event.end_ms))

    def _send_openlineage(self, sender: Any, captured: CapturedRun, facts: RunFacts) -> None:
        """Queue the run's START and COMPLETE / FAIL events (a DDL statement's too: its dataset
        as the output, with its lifecycle change); never raises."""
        from .openlineage_events import captured_edges, run_events, to_json

        outputs = list(captured.writes) or list(dict.fromkeys(facts.ddl_outputs))
        if not captured.reads and not outputs:
            return
        try:
            events = [to_json(e) for e in run_events(captured.run, captured.reads, outputs, captured_edges(captured),
                                                     namespace=self._namespace, facts=facts)]
        except Exception as exc:  # noqa: BLE001 - a bug here loses the events, never the run
            sender.drop(2, f"building the events of run {captured.run.run_id} failed ({type(exc).__name__}: {exc})")
            return
        sender.submit(events)

    def _store_with_retry(self, captured: CapturedRun, event: ActionEvent) -> bool:
        deadline = time.monotonic() + self.settings.retry_timeout_s
        attempt = 0
        last: Exception | None = None
        while True:
            if not self._wait_for_store(deadline):
                why = "capture closed" if self._abandon else f"the store is failing ({type(last).__name__}: {last})"
                self._drop(1, f"run {captured.run.run_id} not stored after {attempt} attempt(s): {why}")
                return False
            attempt += 1
            try:
                self._open().record(captured)
                self._store_answered()
                if attempt > 1:
                    log.warning("lineage: store answered again; run %s stored after %d attempts",
                                captured.run.run_id, attempt)
                return True
            except LimitExceeded as exc:
                if captured.edges:
                    marker = f"store limit {exc.limit} exceeded with {len(captured.edges)} edges"
                    captured = replace(captured, edges=(), run=replace(
                        captured.run, table_level="; ".join(filter(None, [captured.run.table_level, marker]))))
                    continue
                self._drop(1, f"run {captured.run.run_id} does not fit the store: {exc.message}")
                return False
            except PERMANENT_STORE_ERRORS as exc:  # retrying cannot help; the backoff still applies
                self._store_failed(refused=True)
                self._drop(1, f"run {captured.run.run_id}: the store cannot take it ({type(exc).__name__}: {exc})")
                return False
            except InvalidArgument as exc:
                self._drop(1, f"run {captured.run.run_id} refused by the store: {exc.message}")
                return False
            except Exception as exc:  # noqa: BLE001 - store down / slow / conflict: retry after the backoff
                last = exc
                self._store_failed()
                if attempt == 1:
                    log.warning("lineage: storing run %s failed (%s: %s); retrying with backoff for up to %.0f s",
                                captured.run.run_id, type(exc).__name__, exc, self.settings.retry_timeout_s)

    def _open(self) -> LineageStore:
        if self._store is None:
            self._store = self._opener()
        return self._store

    def _reset_store(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            try:
                store.close()
            except Exception:  # noqa: BLE001
                pass

    def _report(self, force: bool = False) -> bool:
        """Publish the counters (and add new drops to the store's count). False if the store failed."""
        now = time.monotonic()
        if not force and now - self._last_report < self.settings.report_interval_s:
            return True
        with self._cond:
            if now < self._gate_until:  # the store failed moments ago: not before its backoff
                return False
            state = self._state()
            delta = self._dropped - self._dropped_reported
        try:
            self._open().report_source(self.source, captured=state[0], dropped=state[1], pending=state[2],
                                       add_dropped=delta)
        except Exception as exc:  # noqa: BLE001 - the store is down: counters stay in memory
            log.debug("lineage: publishing counters failed: %s", exc)
            self._store_failed(count=False, refused=isinstance(exc, PERMANENT_STORE_ERRORS))
            self._last_report = now
            return False
        self._store_answered()
        with self._cond:
            self._dropped_reported += delta
            self._reported = state
            self._last_report = now
            self._cond.notify_all()
        return True


# ---- the hub the bridge holds -----------------------------------------------------------------
class CaptureHub:
    """Every capture of one Python process, by (store URI, project). The bridge keeps ONE hub in
    its registry and forwards op ``lineage.event`` to :meth:`event`."""

    def __init__(self, *, settings: CaptureSettings | None = None,
                 opener: Callable[[str, str, Mapping[str, str]], LineageStore] | None = None) -> None:
        self.settings = settings or CaptureSettings()
        self._opener = opener or open_store
        self._lock = threading.Lock()
        self._captures: dict[tuple[str, str], LineageCapture] = {}

    def capture(self, uri: str, project: str, catalogs: Mapping[str, str] | None = None,
                source: str = "") -> LineageCapture:
        key = (uri, project)
        with self._lock:
            found = self._captures.get(key)
            if found is None:
                mapping = dict(catalogs or {})
                found = LineageCapture(lambda: self._opener(uri, project, mapping), self.settings,
                                       source=source)
                self._captures[key] = found
            return found

    def captures(self) -> dict[tuple[str, str], LineageCapture]:
        with self._lock:
            return dict(self._captures)

    def event(self, request: str | Mapping[str, Any]) -> dict[str, Any]:
        """Handle one listener message: ``{"store": {"uri", "project"}, "event": {...}}``, or a
        control message without an event: ``"jvm_dropped": N`` (the JVM side's cumulative drop
        count) and / or ``"flush": seconds`` (store what is queued, publish the counters, answer
        ``flushed``). An event is answered immediately; a flush when done or out of time."""
        try:
            d = json.loads(request) if isinstance(request, (str, bytes)) else request
            store = d["store"]
            uri, project = str(store["uri"]), str(store.get("project") or "default")
            flush = None if d.get("flush") is None else max(0.0, float(d["flush"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidArgument(f"malformed lineage message: {exc!r}") from None
        ev = d.get("event")
        catalogs = ev.get("catalogs") if isinstance(ev, Mapping) else None
        source = str(ev.get("application_id", "")) if isinstance(ev, Mapping) else str(d.get("source", ""))
        capture = self.capture(uri, project, catalogs, source)
        if "openlineage" in d or ev is not None:
            try:
                capture.set_openlineage(d.get("openlineage"), f"ushas/{project}")
            except InvalidArgument as exc:
                log.warning("lineage: OpenLineage transport not started: %s", exc.message)
        if ev is None:
            if "jvm_dropped" in d:
                capture.note_jvm_dropped(int(d.get("jvm_dropped") or 0))
            answer: dict[str, Any] = {"accepted": False}
            if flush is not None:
                answer["flushed"] = capture.flush(flush)
            return {**answer, **capture.stats().to_dict()}
        accepted = capture.submit(ev)
        return {"accepted": accepted, "dropped": capture.stats().dropped}

    def flush(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        return all(c.flush(max(0.0, deadline - time.monotonic())) for c in self.captures().values())

    def close(self, timeout: float = 10.0) -> None:
        for c in self.captures().values():
            c.close(timeout)


def open_store(uri: str, project: str, catalogs: Mapping[str, str]) -> LineageStore:
    """The lineage store of ``project``, with table ids from its metastore."""
    from .tables import open_lineage_store

    return open_lineage_store(uri, project, catalogs)


@dataclass(frozen=True)
class SparkFlush:
    """What :func:`flush_spark` found: did every listener finish, and its counters."""

    flushed: bool
    #: one entry per listener of the driver JVM: handed_over / dropped (JVM side), python (capture stats)
    listeners: tuple[dict[str, Any], ...]

    @property
    def jvm_dropped(self) -> int:
        return sum(int(x.get("dropped", 0)) for x in self.listeners)


def flush_spark(spark: Any, timeout: float = 60.0) -> SparkFlush:
    """Wait until every action ``spark`` has run so far is stored (or counted as dropped): Spark's
    listener bus drained, each ``UshasLineageListener``'s queue handed to Python, Python's capture
    queue stored and its counters published. Works in both bridge modes (the Python side that
    stores may be this process or the bridge process the shim launched). ``flushed`` is False when
    ``timeout`` ran out first (e.g. the store is down)."""
    listener = spark._jvm.io.ushas.spark.UshasLineageListener
    answer = json.loads(str(listener.flushAll(int(max(0.0, timeout) * 1000))))
    listeners = tuple(answer)
    return SparkFlush(all(x.get("flushed") for x in listeners), listeners)


__all__ = ["ActionEvent", "CaptureHub", "CaptureSettings", "CaptureStats", "ExecutionEvent", "LineageCapture",
           "SparkFlush", "analyze", "flush_spark", "now_ms", "open_store"]
