"""The hooks of one project: definitions, progress, deliveries and dead letters (the ``Hook``
subspace, :mod:`ushas_catalog.keyspace.layout`), and what ``ushas hooks status`` shows.

Every call is one transaction, except :meth:`HookStore.status`, which also reads the change feed
after each hook's cursor (its own transactions, at most :data:`LAG_SCAN` events per hook) to count
the events the hook is behind.
"""
from __future__ import annotations

import builtins
import datetime as dt
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from .. import records as rec  # noqa: F401 - the generated messages below are in records.hook_pb2
from ..changes.feed import decode_cursor, encode_cursor
from ..errors import CursorExpired, HookAlreadyExists, InvalidArgument, NoSuchHook
from ..keyspace.layout import HOOK, HOOK_DEAD_LETTER, HOOK_DEFINITION, HOOK_DELIVERY, HOOK_STATE
from ..kv.base import Transaction
from ..model.objects import micros_to_datetime
from ..records.hook_pb2 import HookDeadLetter, HookDefinition, HookDelivery, HookState
from ..records.store import RecordStore
from .events import Subscription, check_pattern, parse_kinds
from .transport import check_target, check_url

#: events of the feed read per hook by ``status`` to count the lag (more: shown as "N+")
LAG_SCAN = 10_000
#: a cursor before every event (a hook reading the whole retained feed)
ZERO = bytes(12)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
DEFAULTS: dict[str, float] = {"max_attempts": 10, "backoff_s": 1.0, "max_backoff_s": 300.0, "timeout_s": 10.0}


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidArgument(f"invalid hook name {str(name)[:60]!r}: 1-100 letters, digits, '_', '.', '-', "
                              f"starting with a letter or digit")
    return name


def now_micros() -> int:
    return time.time_ns() // 1000


def _iso(micros: int) -> str | None:
    return micros_to_datetime(micros).isoformat(timespec="seconds") if micros else None


@dataclass(frozen=True)
class Hook:
    """A hook's definition."""

    name: str
    id: str
    url: str
    python: str
    on: tuple[str, ...]
    table_pattern: str
    max_attempts: int
    backoff_s: float
    max_backoff_s: float
    timeout_s: float
    created_at: str | None
    created_by: str
    paused: bool

    @classmethod
    def of(cls, name: str, r: HookDefinition) -> "Hook":
        return cls(name, str(uuid.UUID(bytes=r.id)), r.url, r.python, tuple(r.on), r.table_pattern,
                   r.max_attempts or int(DEFAULTS["max_attempts"]), r.backoff_s or DEFAULTS["backoff_s"],
                   r.max_backoff_s or DEFAULTS["max_backoff_s"], r.timeout_s or DEFAULTS["timeout_s"],
                   _iso(r.created_micros), r.created_by, r.paused)

    @property
    def target(self) -> str:
        return self.url or f"python:{self.python}"

    @property
    def subscription(self) -> Subscription:
        return Subscription(self.on, self.table_pattern)

    def backoff(self, failures: int) -> float:
        """Seconds before the next attempt after ``failures`` failures in a row (bounded)."""
        return float(min(self.max_backoff_s, self.backoff_s * (2 ** min(max(failures - 1, 0), 40))))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "id": self.id, "url": self.url or None, "python": self.python or None,
                "on": list(self.on), "table": self.table_pattern or None, "max_attempts": self.max_attempts,
                "backoff_s": self.backoff_s, "max_backoff_s": self.max_backoff_s, "timeout_s": self.timeout_s,
                "created_at": self.created_at, "created_by": self.created_by, "paused": self.paused}


@dataclass(frozen=True)
class Delivery:
    cursor: str
    delivery_id: str
    status: str
    attempts: int
    at: str | None
    type: str
    object: str
    worker: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class DeadLetter:
    cursor: str
    attempts: int
    last_error: str
    dead_at: str | None
    retry: bool
    retry_attempts: int
    payload: str

    def to_json(self, with_payload: bool = False) -> dict[str, Any]:
        import json

        out = {k: v for k, v in self.__dict__.items() if k != "payload"}
        if with_payload:
            out["event"] = json.loads(self.payload)
        return out


@dataclass(frozen=True)
class HookStatus:
    """What ``ushas hooks status`` shows for one hook."""

    hook: Hook
    cursor: str
    behind: int               # matching events after the cursor (counted up to LAG_SCAN feed events)
    behind_more: bool         # the count stopped at LAG_SCAN
    oldest_pending_at: str | None
    age_s: float | None       # how long the oldest undelivered event has waited
    attempts: int
    unavailable: int
    last_error: str
    failing_since: str | None
    next_attempt_at: str | None
    delivered: int
    dead_letters: int         # in the dead-letter list now
    dead_total: int
    skipped: int
    last_delivered_at: str | None
    expired: str | None       # the feed was trimmed past the cursor: the trimmed mark
    lease_owner: str
    lease_until: str | None
    last_unavailable: bool = False   # the last failure: the receiver could not be reached (not counted)

    @property
    def state(self) -> str:
        if self.expired:
            return "CURSOR EXPIRED"
        if self.hook.paused:
            return "paused"
        if self.attempts or self.unavailable:
            return "receiver unavailable" if self.last_unavailable else "failing"
        return "behind" if self.behind else "up to date"

    @property
    def lag(self) -> str:
        count = f"{self.behind}{'+' if self.behind_more else ''}"
        return count if self.age_s is None else f"{count} ({_age(self.age_s)})"

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "hook"}
        out["hook"] = self.hook.to_json()
        out["state"] = self.state
        return out


def _age(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


class HookStore:
    """The hooks of one metastore's project (``ushas hooks ...``)."""

    def __init__(self, ms: Any) -> None:
        self.ms = ms
        base = ms.project_path.add(HOOK)
        self.definitions: RecordStore[HookDefinition] = RecordStore.of(base, HOOK_DEFINITION)
        self.states: RecordStore[HookState] = RecordStore.of(base, HOOK_STATE)
        self.deliveries_store: RecordStore[HookDelivery] = RecordStore.of(base, HOOK_DELIVERY)
        self.dead: RecordStore[HookDeadLetter] = RecordStore.of(base, HOOK_DEAD_LETTER)

    # ---- definitions ------------------------------------------------------------------------
    def add(self, name: str, *, url: str | None = None, python: str | None = None,
            on: str | Iterable[str] = "partitions", table: str | None = None, start: str = "now",
            max_attempts: int | None = None, backoff_s: float | None = None, max_backoff_s: float | None = None,
            timeout_s: float | None = None) -> Hook:
        """A new hook, delivering the events after ``start``: ``now`` (the feed's newest event),
        ``beginning`` (the oldest retained) or a cursor."""
        check_name(name)
        if (url is None) == (python is None):
            raise InvalidArgument("a hook needs exactly one of --url URL or --python module:function")
        r = HookDefinition(id=uuid.uuid4().bytes, url=check_url(url) if url is not None else "",
                           python=check_target(python) if python is not None else "",
                           on=list(parse_kinds(on)), table_pattern=check_pattern(table) if table else "",
                           created_micros=now_micros(), created_by=self.ms.user or "")
        r.max_attempts = _bounded_int("--max-attempts", max_attempts, DEFAULTS["max_attempts"], 1, 1000)
        r.backoff_s = _bounded("--backoff", backoff_s, DEFAULTS["backoff_s"], 0.001, 86400)
        r.max_backoff_s = _bounded("--max-backoff", max_backoff_s, DEFAULTS["max_backoff_s"], r.backoff_s, 7 * 86400)
        r.timeout_s = _bounded("--timeout", timeout_s, DEFAULTS["timeout_s"], 0.01, 3600)
        cursor = self.start_cursor(start)

        def fn(tr: Transaction) -> None:
            if self.definitions.load(tr, (name,)) is not None:
                raise HookAlreadyExists(f"hook {name!r} already exists", hook=name)
            self.definitions.save(tr, (name,), r)
            self.states.save(tr, (name,), HookState(cursor=cursor))

        self.ms.run(fn)
        return Hook.of(name, r)

    def start_cursor(self, start: str) -> bytes:
        feed = self.ms.change_feed
        if start == "now":
            latest = feed.latest_cursor()
            if latest is not None:
                return decode_cursor(latest)
            trimmed = feed.trimmed_cursor()
            return decode_cursor(trimmed) if trimmed else ZERO
        if start == "beginning":
            trimmed = feed.trimmed_cursor()
            return decode_cursor(trimmed) if trimmed else ZERO
        stamp = decode_cursor(start)
        trimmed = feed.trimmed_cursor()
        if trimmed is not None and stamp < decode_cursor(trimmed):
            raise CursorExpired(f"cursor {start} is older than the change feed's retention (trimmed up to {trimmed})",
                                cursor=start, trimmed=trimmed)
        return stamp

    def get(self, name: str) -> Hook:
        return self.ms.run(lambda tr: self.load(tr, name)[0])

    def load(self, tr: Transaction, name: str) -> tuple[Hook, HookState]:
        r = self.definitions.load(tr, (name,))
        if r is None:
            raise NoSuchHook(f"no hook {name!r} (ushas hooks list shows them)", hook=name)
        return Hook.of(name, r), self.states.load(tr, (name,)) or HookState(cursor=ZERO)

    def list(self) -> builtins.list[Hook]:
        def fn(tr: Transaction) -> builtins.list[Hook]:
            return [Hook.of(str(s.key[0]), s.record) for s in self.definitions.scan(tr, *self.definitions.range())]

        return self.ms.run(fn)

    def names(self) -> builtins.list[str]:
        return [h.name for h in self.list()]

    def remove(self, name: str) -> Hook:
        """The hook, its progress, deliveries and dead letters, in one transaction."""
        def fn(tr: Transaction) -> Hook:
            hook, _ = self.load(tr, name)
            self.definitions.delete(tr, (name,))
            self.states.delete(tr, (name,))
            tr.clear_range(*self.deliveries_store.prefix_range((name,)))
            tr.clear_range(*self.dead.prefix_range((name,)))
            return hook

        return self.ms.run(fn)

    def set_paused(self, name: str, paused: bool) -> Hook:
        def fn(tr: Transaction) -> Hook:
            self.load(tr, name)
            r = self.definitions.load(tr, (name,))
            assert r is not None
            r.paused = paused
            self.definitions.save(tr, (name,), r)
            return Hook.of(name, r)

        return self.ms.run(fn)

    # ---- progress -----------------------------------------------------------------------------
    def reset(self, name: str, to: str) -> str:
        """Move the cursor (``now``, ``beginning`` or a cursor) and clear a failure and an expiry: the
        way to acknowledge events lost to retention, or to replay. Returns the new cursor."""
        cursor = self.start_cursor(to)

        def fn(tr: Transaction) -> None:
            _, state = self.load(tr, name)
            fresh = HookState(cursor=cursor, delivered=state.delivered, dead=state.dead, skipped=state.skipped,
                              last_delivered_micros=state.last_delivered_micros, pruned=state.pruned)
            self.states.save(tr, (name,), fresh)

        self.ms.run(fn)
        return encode_cursor(cursor)

    def deliveries(self, name: str, limit: int = 20) -> builtins.list[Delivery]:
        """The newest ``limit`` delivery records, oldest first."""
        def fn(tr: Transaction) -> builtins.list[Delivery]:
            self.load(tr, name)
            begin, end = self.deliveries_store.prefix_range((name,))
            rows = list(self.deliveries_store.scan(tr, begin, end, limit=limit, reverse=True))
            return [_delivery(s.key[1], s.record) for s in reversed(rows)]

        return self.ms.run(fn)

    def all_deliveries(self, name: str) -> builtins.list[Delivery]:
        """Every delivery record, oldest first (tests, small hooks)."""
        def fn(tr: Transaction) -> builtins.list[Delivery]:
            self.load(tr, name)
            return [_delivery(s.key[1], s.record)
                    for s in self.deliveries_store.scan(tr, *self.deliveries_store.prefix_range((name,)))]

        return self.ms.run(fn)

    def dead_letters(self, name: str) -> builtins.list[DeadLetter]:
        def fn(tr: Transaction) -> builtins.list[DeadLetter]:
            self.load(tr, name)
            return [_dead(s.key[1], s.record) for s in self.dead.scan(tr, *self.dead.prefix_range((name,)))]

        return self.ms.run(fn)

    def retry(self, name: str, cursors: Iterable[str] = (), *, all_: bool = False) -> int:
        """Mark dead letters for the worker to try again (``max_attempts`` more counted failures
        before they are dead again). Returns how many."""
        return self._dead_action(name, cursors, all_, retry=True)

    def skip(self, name: str, cursors: Iterable[str] = (), *, all_: bool = False) -> int:
        """Remove dead letters without delivering them (a SKIPPED delivery record each)."""
        return self._dead_action(name, cursors, all_, retry=False)

    def _dead_action(self, name: str, cursors: Iterable[str], all_: bool, *, retry: bool) -> int:
        stamps = [decode_cursor(c) for c in cursors]
        if not stamps and not all_:
            raise InvalidArgument("name the dead letters (their cursors, from ushas hooks dead-letters) or --all")

        def fn(tr: Transaction) -> int:
            hook, state = self.load(tr, name)
            found = [(bytes(s.key[1]), s.record) for s in self.dead.scan(tr, *self.dead.prefix_range((name,)))]
            chosen = found if all_ else [(k, r) for k, r in found if k in set(stamps)]
            missing = set(stamps) - {k for k, _ in found}
            if missing:
                raise NoSuchHook(f"hook {name!r} has no dead letter {encode_cursor(sorted(missing)[0])}", hook=name)
            now = now_micros()
            for stamp, r in chosen:
                if retry:
                    r.retry, r.retry_attempts, r.next_attempt_micros = True, 0, 0
                    self.dead.save(tr, (name, stamp), r)
                else:
                    self.dead.delete(tr, (name, stamp))
                    import json

                    ev = json.loads(r.payload_json)
                    self.deliveries_store.save(tr, (name, stamp), HookDelivery(
                        delivery_id=ev.get("delivery_id", ""), status=HookDelivery.SKIPPED, attempts=r.attempts,
                        at_micros=now, type=ev.get("type", ""), object=ev.get("object", {}).get("name", ""),
                        worker=self.ms.user or ""))
            if not retry and chosen:
                state.skipped += len(chosen)
                self.states.save(tr, (name,), state)
            return len(chosen)

        return int(self.ms.run(fn))

    # ---- status -------------------------------------------------------------------------------
    def status(self, name: str | None = None) -> builtins.list[HookStatus]:
        names = [name] if name is not None else self.names()
        return [self._status(n) for n in names]

    def _status(self, name: str) -> HookStatus:
        def fn(tr: Transaction) -> tuple[Hook, HookState, int]:
            hook, state = self.load(tr, name)
            dead = sum(1 for _ in self.dead.scan(tr, *self.dead.prefix_range((name,))))
            return hook, state, dead

        hook, state, dead = self.ms.run(fn)
        expired = encode_cursor(state.expired_at) if state.expired_at else None
        behind, more, oldest = 0, False, None
        feed = self.ms.change_feed
        if expired is None:
            cursor, scanned = encode_cursor(state.cursor or ZERO), 0
            try:
                while scanned < LAG_SCAN:
                    events = feed.read(cursor, limit=min(500, LAG_SCAN - scanned))
                    if not events:
                        break
                    scanned += len(events)
                    for change in events:
                        if hook.subscription.matches(change):
                            behind += 1
                            oldest = oldest or change.committed_at
                    cursor = events[-1].cursor
                more = scanned >= LAG_SCAN and bool(feed.read(cursor, limit=1))
            except CursorExpired as exc:
                expired = str(exc.detail.get("trimmed") or feed.trimmed_cursor())
        age = (dt.datetime.now(dt.timezone.utc) - oldest).total_seconds() if oldest is not None else None
        return HookStatus(hook, encode_cursor(state.cursor or ZERO), behind, more,
                          oldest.isoformat(timespec="seconds") if oldest else None, age, state.attempts,
                          state.unavailable, state.last_error, _iso(state.failing_since_micros),
                          _iso(state.next_attempt_micros), state.delivered, dead, state.dead, state.skipped,
                          _iso(state.last_delivered_micros), expired, state.lease_owner,
                          _iso(state.lease_until_micros) if state.lease_until_micros > now_micros() else None,
                          state.last_unavailable)


def _delivery(stamp: Any, r: HookDelivery) -> Delivery:
    return Delivery(encode_cursor(bytes(stamp)), r.delivery_id, HookDelivery.Status.Name(r.status), r.attempts,
                    _iso(r.at_micros), r.type, r.object, r.worker)


def _dead(stamp: Any, r: HookDeadLetter) -> DeadLetter:
    return DeadLetter(encode_cursor(bytes(stamp)), r.attempts, r.last_error, _iso(r.dead_micros), r.retry,
                      r.retry_attempts, r.payload_json)


def _bounded(option: str, value: float | None, default: float, low: float, high: float) -> float:
    v = default if value is None else value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= v <= high:
        raise InvalidArgument(f"{option} must be a number from {low:g} to {high:g}, not {value!r}")
    return float(v)


def _bounded_int(option: str, value: int | None, default: float, low: int, high: int) -> int:
    v = int(default) if value is None else value
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise InvalidArgument(f"{option} must be an integer from {low} to {high}, not {value!r}")
    return v


__all__ = ["DeadLetter", "Delivery", "Hook", "HookStatus", "HookStore", "LAG_SCAN", "ZERO", "check_name",
           "now_micros"]
