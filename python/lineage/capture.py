"""Automatic lineage capture: events from ``io.ushas.spark.UshasLineageListener`` -> the store.

The events are in :mod:`lineage.capture_events`, the analysis of one action's plans into a run
in :mod:`lineage.capture_analysis`; here: the bounded queue and its worker, stats, the hub of the
bridge process.

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
import functools
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from ushas_catalog.errors import (InvalidArgument, LimitExceeded, NotAStore, StoreDamaged, StoreNotFound,
                                  StoreReadOnly)

from .capture_analysis import Relations, Resolver, analyze, default_relations, default_resolver
from . import checkpoints, micro_batches
from .capture_events import ActionEvent, CaptureSettings, ExecutionEvent
from .drop_warnings import DropWarnings
from .openlineage_facts import RunFacts
from .store import CapturedRun, LineageStore, now_ms

log = logging.getLogger("ushas.lineage.capture")

#: store errors that retrying cannot fix: the run is dropped at once (counted), not retried
PERMANENT_STORE_ERRORS: tuple[type[Exception], ...] = (StoreReadOnly, StoreNotFound, NotAStore, StoreDamaged)

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
            if self._closed:  # no worker publishes counters any more: the store's count must agree
                self._report_after_close()
        return accepted

    def _report_after_close(self) -> None:
        """A run refused after :meth:`close` (its event came after the process began to exit): add it to
        the store's drop count now, so ``ushas lineage status`` says what the log said (best effort)."""
        with self._cond:
            self._gate_until = 0.0
        if self._report(force=True):
            self._reset_store()

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
        """One action: its run, or one run per batch write of a foreachBatch micro-batch."""
        try:
            parts = micro_batches.split(event)
            if len(parts) > 1:  # the micro-batch first: its plan links the batch's rows to the stream
                parts[-1] = micro_batches.link(parts[-1], self._resolver)
                if any(micro_batches.is_table_sink_write(p) for p in parts[:-1]):
                    parts = parts[:-1]  # format("ushas"): its batch write is the micro-batch's run
            for one in parts:
                # a checkpoint: remember its plan for the rows it saved, before any later write
                self._process_one(checkpoints.link(one, self._resolver))
        finally:
            event.discard_plans()

    def _process_one(self, event: ActionEvent) -> None:
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
                source: str = "", create: bool = True, *, remote: Mapping[str, Any] | None = None,
                spark_catalog: str | None = None) -> LineageCapture:
        """The capture of one store; an ``http(s)://`` uri (remote mode) stores through the catalog service
        with the lineage catalog's token (``remote``: its context's token options). ``create=False`` (the
        catalog's ``.create=false``): a missing store is never made."""
        from ushas_catalog.remote.http import is_remote

        key = (uri, project)
        with self._lock:
            found = self._captures.get(key)
            if found is None:
                mapping = dict(catalogs or {})
                store_opener = self._opener
                if not create and store_opener is open_store:  # the catalog's .create=false: never make a store
                    store_opener = functools.partial(open_store, create=False)
                opener: Callable[[], Any] = lambda: store_opener(uri, project, mapping)  # noqa: E731
                if is_remote(uri):
                    from ushas_catalog.remote.http import resolve_token

                    from .remote_store import RemoteLineageStore

                    token = resolve_token(dict(remote or {}), spark_catalog or "")
                    opener = lambda: RemoteLineageStore(uri, token, project, mapping)  # noqa: E731
                found = LineageCapture(opener, self.settings, source=source)
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
            create = bool(store.get("create", True))
            flush = None if d.get("flush") is None else max(0.0, float(d["flush"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidArgument(f"malformed lineage message: {exc!r}") from None
        ev = d.get("event")
        catalogs = ev.get("catalogs") if isinstance(ev, Mapping) else None
        source = str(ev.get("application_id", "")) if isinstance(ev, Mapping) else str(d.get("source", ""))
        capture = self.capture(uri, project, catalogs, source, create, remote=store.get("remote"),
                               spark_catalog=store.get("spark_catalog"))
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


def open_store(uri: str, project: str, catalogs: Mapping[str, str], create: bool = True) -> LineageStore:
    """The lineage store of ``project``, with table ids from its metastore (``create=False``: a missing store
    is ``StoreNotFound``)."""
    from .tables import open_lineage_store

    return open_lineage_store(uri, project, catalogs, create=create)


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
