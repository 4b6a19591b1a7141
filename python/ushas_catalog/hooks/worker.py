"""The delivery worker: ``ushas hooks run [NAME] [--once]``, and a background thread of ``ushas serve``.

One pass over a hook:

1. **Lease** (one transaction): the hook's state names the worker running it until a time; a
   worker skips a hook another worker holds, and takes one whose lease ran out. The lease keeps
   two workers from delivering the same events at once; it is not what keeps the cursor right.
2. **Read** the change feed after the hook's cursor (a batch per transaction). An event the hook
   does not subscribe to is passed over. A cursor the feed was trimmed past stops the hook and
   records the loss (``HookState.expired_at``): ``status`` shows ``CURSOR EXPIRED`` and the worker
   refuses the hook until ``ushas hooks reset`` acknowledges it; nothing is skipped silently.
3. **Deliver** a matching event (no transaction open: an HTTP call or a Python function), then
   **record** it: one transaction that checks the hook's cursor is still the one this worker read
   and the lease still its own, writes the delivery record and moves the cursor past the event.
   Two workers can never both move the cursor from one place (the transaction conflicts and the
   re-run sees the moved cursor); a worker that dies between delivering and recording leaves the
   cursor where it was, so the event is delivered again with the same ``delivery_id``
   (at least once; a receiver that deduplicates on it sees each event exactly once).
4. A **failure** is recorded with the time of the next attempt (exponential backoff, bounded by
   ``max_backoff_s``) and ends the hook's pass: events after it wait, so each hook sees events in
   commit order (per table and overall). A counted failure (the receiver refused) that reaches
   ``max_attempts`` sends the event to the dead-letter list in the transaction that moves the
   cursor past it; an unavailable receiver (down, 503, timeout) is retried without end.
5. Dead letters marked by ``ushas hooks retry`` are tried again first; delivered, they leave the
   list (a REDELIVERED record); failing ``max_attempts`` more times, they stay dead.
"""
from __future__ import annotations

import json
import logging
import os
import random
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..changes.feed import Change, decode_cursor, encode_cursor
from ..errors import CursorExpired, HookCursorExpired, NoSuchHook, UshasError
from ..kv.base import Transaction
from ..records.hook_pb2 import HookDeadLetter, HookDelivery, HookState
from .events import payload
from .store import ZERO, Hook, HookStore, now_micros
from .transport import Outcome, call, post

LOG = logging.getLogger("ushas.hooks")
#: seconds a worker holds a hook after its last transaction
LEASE_S = 60.0
#: feed events read per transaction
BATCH = 200
#: seconds of deliveries in one pass over one hook before the worker renews and looks at the others
PASS_BUDGET_S = 20.0
#: bytes of an event a dead letter keeps (a bigger one keeps its identity and is read again on retry)
DEAD_PAYLOAD_BYTES = 1_000_000


class _Lost(Exception):
    """The hook's cursor or lease moved under this worker: another worker has it (or it was removed)."""


@dataclass
class PassResult:
    """What one pass did, over every hook it looked at."""

    delivered: int = 0
    dead_lettered: int = 0
    redelivered: int = 0
    failed: int = 0
    passed_over: int = 0
    busy: list[str] = field(default_factory=list)       # held by another worker
    expired: list[str] = field(default_factory=list)    # cursor trimmed past: refused
    next_due_s: float | None = None                     # seconds until a hook's next attempt is due

    @property
    def progressed(self) -> bool:
        return bool(self.delivered or self.dead_lettered or self.redelivered or self.passed_over)

    def due(self, seconds: float) -> None:
        self.next_due_s = seconds if self.next_due_s is None else min(self.next_due_s, seconds)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class HookWorker:
    """Delivers the events of a project's hooks (all of them, or ``names``)."""

    def __init__(self, ms: Any, *, name: str | None = None, lease_s: float = LEASE_S, batch: int = BATCH,
                 pass_budget_s: float = PASS_BUDGET_S, jitter: bool = True,
                 deliver: Callable[[Hook, dict[str, Any]], Outcome] | None = None) -> None:
        self.ms = ms
        self.hooks = HookStore(ms)
        self.name = name or worker_name()
        self.lease_s = lease_s
        self.batch = batch
        self.pass_budget_s = pass_budget_s
        self.jitter = jitter
        self.deliver = deliver or _deliver

    # ---- driving ---------------------------------------------------------------------------------
    def run_once(self, names: list[str] | None = None, *, release: bool = True) -> PassResult:
        """One pass over the hooks (every hook when ``names`` is None): deliver what is due, stop
        a hook at its first failure; then give the leases up (``release``). A named hook whose
        cursor expired raises HookCursorExpired."""
        result = PassResult()
        try:
            for name in (names if names is not None else self.hooks.names()):
                try:
                    self._run_hook(name, result)
                except NoSuchHook:
                    if names is not None:
                        raise
        finally:
            if release:
                self.release(names)
        if names is not None and result.expired:
            raise self._expired_error(result.expired[0])
        return result

    @staticmethod
    def _expired_error(name: str) -> HookCursorExpired:
        return HookCursorExpired(f"hook {name!r}: the change feed was trimmed past its cursor, events were lost "
                                 f"before delivery; see ushas hooks status, then acknowledge with ushas hooks "
                                 f"reset {name} --to now|beginning|CURSOR", hook=name)

    def run(self, names: list[str] | None = None, *, stop: threading.Event | None = None, poll_s: float = 1.0,
            until: Callable[[PassResult], bool] | None = None) -> None:
        """Passes until ``stop`` is set (or ``until(result)`` is true): again at once after a pass
        that delivered, else after ``poll_s`` or when a retry is due, whichever is first. Releases
        this worker's leases at the end. A hook whose cursor expired is refused (logged once); a
        named one raises HookCursorExpired."""
        stop = stop or threading.Event()
        warned: set[str] = set()
        try:
            while not stop.is_set():
                result = PassResult()
                for name in (names if names is not None else self.hooks.names()):
                    try:
                        self._run_hook(name, result)
                    except NoSuchHook:
                        continue
                if names is not None and result.expired:
                    raise self._expired_error(result.expired[0])
                for name in result.expired:
                    if name not in warned:
                        LOG.error("hook %s: the change feed was trimmed past its cursor; it is stopped until "
                                  "ushas hooks reset %s", name, name)
                        warned.add(name)
                if until is not None and until(result):
                    return
                if result.progressed:
                    continue
                wait = poll_s if result.next_due_s is None else min(poll_s, max(0.005, result.next_due_s))
                stop.wait(wait)
        finally:
            self.release(names)

    def release(self, names: list[str] | None = None) -> None:
        """Give up this worker's leases (another worker may take the hooks at once)."""
        def fn(tr: Transaction) -> None:
            for name in (names if names is not None else [h.name for h in self._list(tr)]):
                state = self.hooks.states.load(tr, (name,))
                if state is not None and state.lease_owner == self.name:
                    state.lease_owner, state.lease_until_micros = "", 0
                    self.hooks.states.save(tr, (name,), state)

        try:
            self.ms.run(fn)
        except UshasError as exc:  # the store went away: the leases run out by themselves
            LOG.warning("could not release hook leases: %s", exc)

    def _list(self, tr: Transaction) -> list[Hook]:
        d = self.hooks.definitions
        return [Hook.of(str(s.key[0]), s.record) for s in d.scan(tr, *d.range())]

    # ---- one hook ----------------------------------------------------------------------------------
    def _run_hook(self, name: str, result: PassResult) -> None:
        trimmed = self.ms.change_feed.trimmed_cursor()
        leased = self.ms.run(lambda tr: self._lease(tr, name, trimmed))
        if leased is None:
            result.busy.append(name)
            return
        hook, state = leased
        if hook.paused:
            return
        if state.expired_at:
            result.expired.append(name)
            return
        started = time.monotonic()
        self._retry_dead(hook, result)
        now = now_micros()
        if state.next_attempt_micros > now:
            result.due((state.next_attempt_micros - now) / 1e6)
            return
        cursor = bytes(state.cursor) or ZERO
        try:
            while time.monotonic() - started < self.pass_budget_s:
                try:
                    events = self.ms.change_feed.read(encode_cursor(cursor), limit=self.batch)
                except CursorExpired as exc:
                    self._expire(name, cursor, str(exc), exc.detail.get("trimmed"))
                    result.expired.append(name)
                    return
                if not events:
                    return
                passed: bytes | None = None
                for change in events:
                    stamp = decode_cursor(change.cursor)
                    if not hook.subscription.matches(change):
                        passed = stamp
                        continue
                    ok = self._deliver_one(hook, state, cursor, stamp, change, result)
                    if not ok:
                        if passed is not None:  # the events before the failing one are passed over
                            self._advance(name, cursor, passed)
                            result.passed_over += 1
                        return
                    cursor, passed = stamp, None
                if passed is not None:
                    self._advance(name, cursor, passed)
                    cursor = passed
                    result.passed_over += 1
                if len(events) < self.batch:
                    return
        except _Lost:
            result.busy.append(name)

    def _event_at(self, stamp: bytes) -> Change | None:
        """The feed event of versionstamp ``stamp`` (None: trimmed)."""
        before = (int.from_bytes(stamp, "big") - 1).to_bytes(12, "big")
        try:
            found = self.ms.change_feed.read(encode_cursor(before), limit=1)
        except CursorExpired:
            return None
        return found[0] if found and found[0].cursor == encode_cursor(stamp) else None

    def _lease(self, tr: Transaction, name: str, trimmed: str | None) -> tuple[Hook, HookState] | None:
        hook, state = self.hooks.load(tr, name)
        now = now_micros()
        if state.lease_owner and state.lease_owner != self.name and state.lease_until_micros > now:
            return None
        prune = trimmed is not None and bytes(state.pruned) < decode_cursor(trimmed)
        if state.lease_owner == self.name and state.lease_until_micros - now > self.lease_s * 1e6 / 2 and not prune:
            return hook, state  # held, and for long enough: an idle pass writes nothing
        state.lease_owner, state.lease_until_micros = self.name, now + int(self.lease_s * 1e6)
        if trimmed is not None and prune:
            # delivery records go with the feed events they record
            begin, _ = self.hooks.deliveries_store.prefix_range((name,))
            tr.clear_range(begin, self.hooks.deliveries_store.key((name, decode_cursor(trimmed))) + b"\xff")
            state.pruned = decode_cursor(trimmed)
        self.hooks.states.save(tr, (name,), state)
        return hook, state

    def _owned(self, tr: Transaction, name: str, cursor: bytes) -> HookState:
        """The hook's state, if its cursor is still ``cursor`` and its lease this worker's; else _Lost."""
        state = self.hooks.states.load(tr, (name,))
        if state is None or (bytes(state.cursor) or ZERO) != cursor or state.lease_owner != self.name:
            raise _Lost(name)
        if self.hooks.definitions.load(tr, (name,)) is None:
            raise _Lost(name)
        state.lease_until_micros = now_micros() + int(self.lease_s * 1e6)
        return state

    def _advance(self, name: str, cursor: bytes, to: bytes) -> None:
        def fn(tr: Transaction) -> None:
            state = self._owned(tr, name, cursor)
            state.cursor = to
            self.hooks.states.save(tr, (name,), state)

        self.ms.run(fn)

    def _expire(self, name: str, cursor: bytes, message: str, trimmed: Any) -> None:
        def fn(tr: Transaction) -> None:
            state = self._owned(tr, name, cursor)
            state.expired_at = decode_cursor(str(trimmed)) if trimmed else b"\xff" * 12
            state.last_error = message[:500]
            self.hooks.states.save(tr, (name,), state)

        try:
            self.ms.run(fn)
        except _Lost:
            pass

    def _deliver_one(self, hook: Hook, state: HookState, cursor: bytes, stamp: bytes, change: Change,
                     result: PassResult) -> bool:
        """Deliver one event and record the outcome. True: the cursor moved past it."""
        event = payload(change, hook=hook.name, hook_id=hook.id, project=self.ms.project)
        outcome = self.deliver(hook, event)
        now = now_micros()
        name = hook.name

        def fn(tr: Transaction) -> tuple[str, HookState]:
            st = self._owned(tr, name, cursor)
            attempts = st.attempts + 1
            if outcome.delivered or (outcome.status == "failed" and attempts >= hook.max_attempts):
                status = HookDelivery.DELIVERED if outcome.delivered else HookDelivery.DEAD_LETTERED
                self.hooks.deliveries_store.save(tr, (name, stamp), HookDelivery(
                    delivery_id=event["delivery_id"], status=status, attempts=attempts, at_micros=now,
                    type=event["type"], object=change.name, worker=self.name))
                if outcome.delivered:
                    st.delivered += 1
                    st.last_delivered_micros = now
                else:
                    self.hooks.dead.save(tr, (name, stamp), HookDeadLetter(
                        payload_json=dead_payload(event), attempts=attempts, last_error=outcome.error,
                        dead_micros=now))
                    st.dead += 1
                st.cursor = stamp
                st.attempts = st.unavailable = 0
                st.last_unavailable = False
                st.next_attempt_micros = st.failing_since_micros = 0
                st.last_error = "" if outcome.delivered else st.last_error
                if not outcome.delivered:
                    st.last_error = f"dead-lettered {encode_cursor(stamp)}: {outcome.error}"[:500]
                st.last_attempt_micros = now
                self.hooks.states.save(tr, (name,), st)
                return ("delivered" if outcome.delivered else "dead"), st
            if outcome.status == "failed":
                st.attempts = attempts
            else:
                st.unavailable += 1
            st.last_unavailable = outcome.status != "failed"
            st.last_error = outcome.error
            st.failing_since_micros = st.failing_since_micros or now
            st.last_attempt_micros = now
            delay = hook.backoff(st.attempts + st.unavailable)
            if self.jitter:
                delay *= 0.5 + random.random() / 2
            st.next_attempt_micros = now + int(delay * 1e6)
            self.hooks.states.save(tr, (name,), st)
            return "retry", st

        what, st = self.ms.run(fn)
        if what == "delivered":
            result.delivered += 1
            return True
        if what == "dead":
            result.dead_lettered += 1
            LOG.warning("hook %s: event %s dead-lettered after %d failures: %s", name, encode_cursor(stamp),
                        hook.max_attempts, outcome.error)
            return True
        result.failed += 1
        result.due((st.next_attempt_micros - now_micros()) / 1e6)
        LOG.info("hook %s: delivery of %s failed (%s): %s", name, encode_cursor(stamp), outcome.status, outcome.error)
        return False

    def _retry_dead(self, hook: Hook, result: PassResult) -> None:
        """Deliver the dead letters marked for retry whose next attempt is due."""
        name = hook.name

        def due(tr: Transaction) -> list[tuple[bytes, HookDeadLetter]]:
            now = now_micros()
            return [(bytes(s.key[1]), s.record) for s in self.hooks.dead.scan(tr, *self.hooks.dead.prefix_range((name,)))
                    if s.record.retry and s.record.next_attempt_micros <= now]

        for stamp, letter in self.ms.run(due):
            event = json.loads(letter.payload_json)
            if event.get("truncated"):  # too big to keep: read from the feed again
                change = self._event_at(stamp)
                if change is None:
                    outcome = Outcome("failed", "the event is no longer in the change feed (trimmed): skip it")
                else:
                    event = payload(change, hook=hook.name, hook_id=hook.id, project=self.ms.project)
                    outcome = self.deliver(hook, event)
            else:
                outcome = self.deliver(hook, event)
            now = now_micros()

            def record(tr: Transaction) -> str:
                current = self.hooks.dead.load(tr, (name, stamp))
                if current is None or not current.retry:
                    return "gone"  # skipped or delivered by another worker meanwhile
                if outcome.delivered:
                    self.hooks.dead.delete(tr, (name, stamp))
                    self.hooks.deliveries_store.save(tr, (name, stamp), HookDelivery(
                        delivery_id=event["delivery_id"], status=HookDelivery.REDELIVERED,
                        attempts=current.attempts + current.retry_attempts + 1, at_micros=now, type=event["type"],
                        object=event["object"]["name"], worker=self.name))
                    state = self.hooks.states.load(tr, (name,))
                    if state is not None:
                        state.delivered += 1
                        state.last_delivered_micros = now
                        self.hooks.states.save(tr, (name,), state)
                    return "delivered"
                if outcome.status == "failed":
                    current.retry_attempts += 1
                current.last_error = outcome.error
                if current.retry_attempts >= hook.max_attempts:
                    current.retry = False  # dead again
                else:
                    current.next_attempt_micros = now + int(hook.backoff(current.retry_attempts + 1) * 1e6)
                self.hooks.dead.save(tr, (name, stamp), current)
                return "failed"

            what = self.ms.run(record)
            if what == "delivered":
                result.redelivered += 1
            elif what == "failed":
                result.failed += 1
                return


def dead_payload(event: dict[str, Any]) -> str:
    """The event as a dead letter keeps it: whole up to :data:`DEAD_PAYLOAD_BYTES`, else its
    identity only (``truncated``; a retry reads the event from the feed again)."""
    text = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=str)
    if len(text.encode()) <= DEAD_PAYLOAD_BYTES:
        return text
    keep = ("payload_version", "delivery_id", "hook", "project", "cursor", "type", "kinds", "object", "operation",
            "user", "committed_at")
    return json.dumps({**{k: event[k] for k in keep if k in event}, "truncated": True}, separators=(",", ":"),
                      ensure_ascii=False, default=str)


def _deliver(hook: Hook, event: dict[str, Any]) -> Outcome:
    if hook.url:
        return post(hook.url, event, hook.timeout_s)
    return call(hook.python, event)


class HookRunner:
    """The worker on a thread of its own (``ushas serve``): its own metastore over ``uri``,
    stopped by :meth:`stop` (bounded wait). A failing pass is logged and tried again later."""

    def __init__(self, uri: str, project: str, *, poll_s: float = 1.0, error_wait_s: float = 5.0) -> None:
        self.uri, self.project = uri, project
        self.poll_s, self.error_wait_s = poll_s, error_wait_s
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._main, name="ushas-hooks", daemon=True)

    def start(self) -> "HookRunner":
        self.thread.start()
        return self

    def stop(self, wait_s: float = 10.0) -> bool:
        """Ask the thread to stop and wait for it (a delivery in flight finishes first, up to
        ``wait_s``). True if it stopped."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(wait_s)
        return not self.thread.is_alive()

    def _main(self) -> None:
        from ..metastore import Metastore  # noqa: F401 - opened here, on the worker's thread

        ms = None
        while not self.stopping.is_set():
            try:
                if ms is None:
                    ms = Metastore.open(self.uri, project=self.project, create=False)
                    if getattr(ms.db, "read_only", False):
                        LOG.info("hooks: the store is read-only; no deliveries from this service")
                        return
                HookWorker(ms).run(stop=self.stopping, poll_s=self.poll_s)
            except Exception as exc:  # noqa: BLE001 - the service keeps serving; the worker tries again
                LOG.warning("hooks worker: %s: %s", type(exc).__name__, exc)
                self.stopping.wait(self.error_wait_s)
        if ms is not None:
            ms.close()


__all__ = ["BATCH", "DEAD_PAYLOAD_BYTES", "HookRunner", "HookWorker", "LEASE_S", "PassResult", "dead_payload",
           "worker_name"]
