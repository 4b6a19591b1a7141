"""The change feed: an ordered log of every catalog mutation of one project.

Writing
    :meth:`ChangeFeed.record` is called by ``Metastore._commit`` (and by the drops that
    remove keys without a commit: drop with purge, drop of a view, purge of a dropped
    object), in the mutation's own transaction. It appends one :class:`ChangeEvent` record
    under ``ChangeFeed/ChangeEvent/(versionstamp)`` with ``set_versionstamped_key``: the
    engine fills in the commit's versionstamp, so events are in commit order across every
    process, and an event exists if and only if its mutation committed. An event too big
    for one value (100 kB: a large partition list) is split over ``(versionstamp, 1)``,
    ``(versionstamp, 2)`` ...

Reading
    :meth:`ChangeFeed.changes` yields :class:`Change` values after a cursor (an opaque
    string: the event's versionstamp), optionally following new events (polling). Both
    engines only let a reader see a versionstamp once every smaller one has committed (the
    sqlite engine assigns stamps under its write lock at commit; FoundationDB by commit
    version), so a consumer resuming from the last cursor it processed never misses nor
    repeats an event.

Retention
    :meth:`ChangeFeed.trim` removes the events older than a horizon with one
    ``clear_range`` from the start of the feed up to the first event newer than the horizon,
    and records the last removed versionstamp (``ChangeFeedState/('trimmed',)``): a cursor
    before it raises :class:`~ushas_catalog.errors.CursorExpired` instead of silently
    skipping the trimmed events.
"""
from __future__ import annotations

import datetime as dt
import json
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

import fdb.tuple as fdbtuple
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from .. import records as rec
from ..errors import CursorExpired, InvalidArgument
from ..kv.base import Transaction
from ..keyspace.layout import CHANGE_EVENT, CHANGE_FEED, CHANGE_FEED_STATE, NAME
from ..model.objects import micros_to_datetime
from ..records.store import RecordStore

if TYPE_CHECKING:
    from ..catalog.commits import Mutation
    from ..catalog.core import CatalogCore as Metastore

#: cursors are this prefix + the event's 12-byte versionstamp in hex
CURSOR_PREFIX = "fc1-"
#: events read per transaction
READ_BATCH = 500
#: bytes per key of a split event (under FoundationDB's 100 kB value limit)
CHUNK_BYTES = 90_000
#: the tuple type code of a versionstamp and its encoded length (code + 10 + 2 bytes)
_VS_CODE = 0x33
_VS_LEN = 13

Change_ = rec.ChangeEvent.Change

_BY_OPERATION: dict[str, int] = {
    "ADD PARTITIONS": Change_.PARTITIONS_ADDED,
    "DROP PARTITIONS": Change_.PARTITIONS_DROPPED,
    "REPLACE PARTITIONS": Change_.PARTITIONS_REPLACED,
    "REPLACE TABLE": Change_.REPLACED,
    "REPLACE VIEW": Change_.REPLACED,
}
_BY_VERB: dict[str, int] = {
    "CREATE": Change_.CREATED, "ALTER": Change_.ALTERED, "RENAME": Change_.RENAMED, "DROP": Change_.DROPPED,
    "UNDROP": Change_.UNDROPPED, "PURGE": Change_.PURGED,
}


def change_of(operation: str) -> int:
    """The change kind of a commit operation (``ALTER TABLE`` -> ALTERED); an operation
    this module does not know is an ALTERED change."""
    if operation in _BY_OPERATION:
        return _BY_OPERATION[operation]
    return _BY_VERB.get(operation.split(" ", 1)[0], Change_.ALTERED)


# --- values ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChangedPartition:
    """One partition a change added or dropped."""

    spec: dict[str, str]
    location: str | None
    key: bytes = field(repr=False)   # the packed partition values (the TablePartition key)

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec, "location": self.location}


@dataclass(frozen=True)
class Change:
    """One event of the feed. ``cursor`` resumes right after it."""

    cursor: str
    change: str                  # CREATED, ALTERED, RENAMED, REPLACED, DROPPED, UNDROPPED, PURGED, PARTITIONS_*
    kind: str                    # catalog, database, table, view
    operation: str
    object_id: str
    name: str
    version: int
    user: str
    committed_at: dt.datetime
    before: dict[str, Any]
    after: dict[str, Any]
    added: list[ChangedPartition]
    dropped: list[ChangedPartition]
    partitions_cleared: bool
    purged: bool
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"cursor": self.cursor, "change": self.change, "kind": self.kind, "operation": self.operation,
                "object_id": self.object_id, "name": self.name, "version": self.version, "user": self.user,
                "committed_at": self.committed_at.isoformat(), "before": self.before, "after": self.after,
                "added": [p.to_json() for p in self.added], "dropped": [p.to_json() for p in self.dropped],
                "partitions_cleared": self.partitions_cleared, "purged": self.purged, "detail": self.detail}

    def summary(self) -> str:
        """One line: when, change, name, version, who (and partition counts)."""
        extra = ""
        if self.added or self.dropped:
            extra = f" +{len(self.added)}/-{len(self.dropped)} partitions"
        if self.partitions_cleared:
            extra += " (partitions cleared)"
        return (f"{self.committed_at.isoformat(timespec='seconds')}  {self.change:<19} {self.kind:<8} {self.name}"
                f"  v{self.version}  {self.user}{extra}  [{self.cursor}]")


@dataclass(frozen=True)
class TrimResult:
    """What :meth:`ChangeFeed.trim` removed: how many events, and the cursor of the last."""

    removed: int
    last_removed: str | None

    def to_json(self) -> dict[str, Any]:
        return {"removed": self.removed, "last_removed": self.last_removed}


# --- cursors --------------------------------------------------------------------------------
def encode_cursor(stamp: bytes) -> str:
    return CURSOR_PREFIX + stamp.hex()


def decode_cursor(cursor: str) -> bytes:
    """The 12-byte versionstamp a cursor names; a malformed cursor is an InvalidArgument."""
    if not isinstance(cursor, str) or not cursor.startswith(CURSOR_PREFIX):
        raise InvalidArgument(f"invalid change feed cursor {cursor!r}: expected {CURSOR_PREFIX}<24 hex digits> "
                              f"as printed by 'ushas changes'")
    body = cursor[len(CURSOR_PREFIX):]
    try:
        stamp = bytes.fromhex(body)
    except ValueError:
        stamp = b""
    if len(stamp) != 12 or len(body) != 24:
        raise InvalidArgument(f"invalid change feed cursor {cursor!r}: expected {CURSOR_PREFIX}<24 hex digits>")
    return stamp


def parse_duration(text: str) -> dt.timedelta:
    """``90s``, ``15m``, ``12h``, ``7d``, ``2w`` as a timedelta (InvalidArgument otherwise)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    t = text.strip().lower() if isinstance(text, str) else ""
    if len(t) < 2 or t[-1] not in units or not (t[:-1].isascii() and t[:-1].isdigit()):
        raise InvalidArgument(f"invalid duration {text!r}: expected a number and a unit s, m, h, d or w (e.g. 7d)")
    seconds = int(t[:-1]) * units[t[-1]] if len(t) <= 20 else None
    if seconds is None or seconds >= dt.timedelta.max.days * 86400:
        raise InvalidArgument(f"invalid duration {text[:24]!r}: out of range (at most 999999999d)")
    return dt.timedelta(seconds=seconds)


# --- the feed -------------------------------------------------------------------------------
class ChangeFeed:
    """The change feed of one metastore's project: ``Metastore.change_feed``."""

    def __init__(self, ms: "Metastore") -> None:
        self.ms = ms
        root = ms.project_path.add(CHANGE_FEED)
        self.events_prefix = root.add(CHANGE_EVENT).key()
        self._state = root.add(CHANGE_FEED_STATE)
        #: next user version (the 2 bytes after the versionstamp) per transaction
        self._seq: "weakref.WeakKeyDictionary[Transaction, int]" = weakref.WeakKeyDictionary()

    # ---- writing ----------------------------------------------------------------------------
    def record(self, tr: Transaction, m: "Mutation") -> None:
        """Append the event of commit ``m`` (called by ``Metastore._commit``, after the head
        record is written)."""
        ev = rec.ChangeEvent(change=change_of(m.operation), kind=m.kind, operation=m.operation,
                             object_id=m.path.value.bytes, name=m.name, version=m.version, user=self.ms.user,
                             committed_at_micros=m.time_micros,
                             detail_json=json.dumps(m.detail, separators=(",", ":"), default=str, ensure_ascii=False))
        before, after = self._before_after(tr, m)
        ev.before_json = _dump(before)
        ev.after_json = _dump(after)
        scheme = m.partition_scheme
        for target, items in ((ev.added, m.added_partitions), (ev.dropped, m.dropped_partitions)):
            for key, r in items:
                assert scheme is not None, "partition changes need the partition scheme"
                target.add(key=fdbtuple.pack(key), spec=scheme.spec(key), location=r.location)
        ev.partitions_cleared = m.partitions_cleared
        self.append(tr, ev)

    def record_removal(self, tr: Transaction, *, kind: str, name: str, object_id: uuid.UUID, version: int,
                       operation: str, change: int, before: Message | None = None, purged: bool = True,
                       detail: dict[str, Any] | None = None, user: str | None = None) -> None:
        """An event for a removal that makes no commit (its keys are gone): drop with purge,
        drop of a view, purge of a dropped object; also governance events (grants, roles, denials)."""
        ev = rec.ChangeEvent(change=change, kind=kind, operation=operation, object_id=object_id.bytes, name=name,
                             version=version, user=self.ms.user if user is None else user,
                             committed_at_micros=time.time_ns() // 1000,
                             purged=purged, before_json=_dump(_records(before)) if before is not None else "",
                             after_json="", detail_json=json.dumps(detail or {}, separators=(",", ":"), default=str))
        self.append(tr, ev)

    def append(self, tr: Transaction, event: rec.ChangeEvent) -> None:
        seq = self._seq.get(tr, 0)
        if seq > 0xFFFF:
            raise InvalidArgument("more than 65536 change events in one transaction")
        self._seq[tr] = seq + 1
        data = event.SerializeToString(deterministic=True)
        stamp = self.events_prefix + bytes([_VS_CODE]) + b"\xff" * 10 + seq.to_bytes(2, "big")
        offset = (len(self.events_prefix) + 1).to_bytes(4, "little")
        if len(data) <= CHUNK_BYTES:
            tr.set_versionstamped_key(stamp + offset, data)
            return
        for i, start in enumerate(range(0, len(data), CHUNK_BYTES), start=1):
            tr.set_versionstamped_key(stamp + fdbtuple.pack((i,)) + offset, data[start:start + CHUNK_BYTES])

    def _before_after(self, tr: Transaction, m: "Mutation") -> tuple[dict[str, Any], dict[str, Any]]:
        before: dict[str, Any] = {}
        after: dict[str, Any] = {"version": m.version}
        if m.version > 1:
            before["version"] = m.version - 1
        if "from" in m.detail and "to" in m.detail:
            before["name"], after["name"] = m.detail["from"], m.detail["to"]
        if m.kind == "table":
            after["schema_id"] = m.head.schema_id
            old_schema = m.previous.get("TableSchema")
            if m.version > 1:
                before["schema_id"] = old_schema.schema_id if old_schema is not None else m.head.schema_id
            for sub, old in m.previous.items():
                before[sub] = _records(old)
            for sub in m.changed:
                if sub == "TablePartition":
                    continue
                now = RecordStore.at(m.path.add(sub)).load(tr, ())
                if now is not None:
                    after[sub] = _records(now)
        else:
            if m.previous_head is not None:
                before.update(_records(m.previous_head))
            after.update(_records(m.head))
        return before, after

    # ---- reading ----------------------------------------------------------------------------
    def read(self, since: str | None = None, limit: int = READ_BATCH) -> list[Change]:
        """At most ``limit`` events after cursor ``since`` (from the oldest retained without
        one), in one transaction. Raises CursorExpired if events after ``since`` were trimmed."""
        return self._read(since, limit)[0]

    def _read(self, since: str | None, limit: int) -> tuple[list[Change], bool]:
        """:meth:`read`, and whether more events may follow (the read stopped at a limit)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgument(f"limit must be an integer >= 1, not {limit!r}")
        after = decode_cursor(since) if since is not None else None
        begin = self.events_prefix + (bytes([_VS_CODE]) + after + b"\xff" if after is not None else b"")
        end = self.events_prefix + b"\xff"

        def fn(tr: Transaction) -> tuple[list[Change], bool]:
            trimmed = tr.get(self._state_key("trimmed"))
            if after is not None and trimmed is not None and after < trimmed:
                raise CursorExpired(f"cursor {since} is older than the change feed's retention: events up to "
                                    f"{encode_cursor(trimmed)} were trimmed; restart from the beginning "
                                    f"(no --since) and rebuild", cursor=since, trimmed=encode_cursor(trimmed))
            rows, more = self._scan(tr, begin, end, limit)
            return [self._decode(stamp, data) for stamp, data in rows], more

        return self.ms.run(fn)

    def changes(self, since: str | None = None, follow: bool = False, poll_interval: float = 1.0,
                batch: int = READ_BATCH, stop: Callable[[], bool] | None = None) -> Iterator[Change]:
        """Every event after ``since`` in commit order; with ``follow``, keep polling for new
        ones (every ``poll_interval`` seconds when idle) until ``stop()`` is true or the
        consumer stops iterating. Resume with the ``cursor`` of the last event processed."""
        if since is not None:
            decode_cursor(since)
        cursor = since
        while True:
            events, more = self._read(cursor, batch)
            yield from events
            if events:
                cursor = events[-1].cursor
            if more:
                continue
            if not follow or (stop is not None and stop()):
                return
            time.sleep(poll_interval)
            if stop is not None and stop():
                return

    def latest_cursor(self) -> str | None:
        """The cursor of the newest event (start here to see only what comes next)."""
        def fn(tr: Transaction) -> str | None:
            for kv in tr.get_range(self.events_prefix, self.events_prefix + b"\xff", limit=1, reverse=True):
                return encode_cursor(kv.key[len(self.events_prefix) + 1:len(self.events_prefix) + _VS_LEN])
            return None

        return self.ms.run(fn)

    def trimmed_cursor(self) -> str | None:
        """The cursor of the last event removed by retention (None: nothing trimmed)."""
        stamp = self.ms.run(lambda tr: tr.get(self._state_key("trimmed")))
        return encode_cursor(stamp) if stamp is not None else None

    # ---- retention ----------------------------------------------------------------------------
    def trim(self, older_than: dt.timedelta | None = None, *, before: dt.datetime | None = None,
             batch: int = READ_BATCH) -> TrimResult:
        """Remove the events committed before the horizon (``now - older_than``, or
        ``before``): one ``clear_range`` from the start of the feed up to the first event
        newer than the horizon. Finding that event reads the feed in batches (snapshot
        transactions); the clear is one transaction."""
        if (older_than is None) == (before is None):
            raise InvalidArgument("trim needs exactly one of older_than (a timedelta) or before (a datetime)")
        if older_than is not None:
            if not isinstance(older_than, dt.timedelta) or older_than < dt.timedelta(0):
                raise InvalidArgument(f"older_than must be a timedelta >= 0, not {older_than!r}")
            horizon = time.time_ns() // 1000 - older_than // dt.timedelta(microseconds=1)
        else:
            if not isinstance(before, dt.datetime):
                raise InvalidArgument(f"before must be a datetime, not {type(before).__name__}")
            when = before if before.tzinfo else before.replace(tzinfo=dt.timezone.utc)
            horizon = (when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
        begin, end = self.events_prefix, self.events_prefix + b"\xff"
        removed = 0
        last: bytes | None = None
        stop_key: bytes | None = None
        while stop_key is None:
            rows, more = self.ms.run(lambda tr: self._scan(tr, begin, end, batch))
            for stamp, data in rows:
                if rec.ChangeEvent.FromString(data).committed_at_micros > horizon:
                    stop_key = self.events_prefix + bytes([_VS_CODE]) + stamp
                    break
                removed += 1
                last = stamp
            if stop_key is None:
                if not more or not rows:
                    break
                begin = self.events_prefix + bytes([_VS_CODE]) + rows[-1][0] + b"\xff"
        if last is None:
            return TrimResult(0, None)
        clear_end = stop_key if stop_key is not None else self.events_prefix + bytes([_VS_CODE]) + last + b"\xff"
        mark = last

        def clear(tr: Transaction) -> None:
            key = self._state_key("trimmed")
            previous = tr.get(key)
            tr.clear_range(self.events_prefix, clear_end)
            if previous is None or previous < mark:
                tr.set(key, mark)

        self.ms.run(clear)
        return TrimResult(removed, encode_cursor(last))

    # ---- internals ------------------------------------------------------------------------------
    def _state_key(self, name: str) -> bytes:
        return self._state.add(NAME, name).key()

    def _scan(self, tr: Transaction, begin: bytes, end: bytes,
              limit: int) -> tuple[list[tuple[bytes, bytes]], bool]:
        """(12-byte stamp, serialized event) of up to ``limit`` events in [begin, end),
        joining split events (a split event cut by the batch is completed), and whether
        more events may follow."""
        plen = len(self.events_prefix)
        rows = list(tr.get_range(begin, end, limit=limit * 2))
        events: list[tuple[bytes, list[bytes]]] = []
        for kv in rows:
            stamp = kv.key[plen + 1:plen + _VS_LEN]
            if events and events[-1][0] == stamp:
                events[-1][1].append(kv.value)
            else:
                events.append((stamp, [kv.value]))
        if rows and len(rows) == limit * 2 and len(rows[-1].key) > plen + _VS_LEN:
            # the last event is split and may be cut: read all of its chunks
            stamp = events[-1][0]
            group = self.events_prefix + bytes([_VS_CODE]) + stamp
            events[-1] = (stamp, [kv.value for kv in tr.get_range(group, group + b"\xff")])
        more = len(rows) == limit * 2 or len(events) > limit
        return [(stamp, b"".join(parts)) for stamp, parts in events[:limit]], more

    def _decode(self, stamp: bytes, data: bytes) -> Change:
        ev = rec.ChangeEvent.FromString(data)
        return Change(encode_cursor(stamp), rec.ChangeEvent.Change.Name(ev.change), ev.kind, ev.operation,
                      str(uuid.UUID(bytes=ev.object_id)), ev.name, ev.version, ev.user,
                      micros_to_datetime(ev.committed_at_micros), _load(ev.before_json), _load(ev.after_json),
                      [_partition(p) for p in ev.added], [_partition(p) for p in ev.dropped],
                      ev.partitions_cleared, ev.purged, _load(ev.detail_json))


def _records(message: Message) -> dict[str, Any]:
    """A record as a JSON-able dict: set fields only, numbers as numbers (int64 too),
    enums by name, bytes as hex, nested messages and maps as dicts."""
    out: dict[str, Any] = {}
    for fd, value in message.ListFields():
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[fd.name] = {k: _value(vfd, v) for k, v in value.items()}
        elif fd.is_repeated:
            out[fd.name] = [_value(fd, v) for v in value]
        else:
            out[fd.name] = _value(fd, value)
    return out


def _value(fd: FieldDescriptor, value: Any) -> Any:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return _records(value)
    if fd.type == FieldDescriptor.TYPE_ENUM:
        ev = fd.enum_type.values_by_number.get(value)
        return ev.name if ev is not None else value
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return value.hex()
    return value


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False) if value else ""


def _load(text: str) -> dict[str, Any]:
    return json.loads(text) if text else {}


def _partition(p: rec.PartitionDelta) -> ChangedPartition:
    return ChangedPartition(dict(p.spec), p.location or None, p.key)
