"""Operations bigger than one transaction, done the FoundationDB way.

Size (over 600 lines): one protocol (begin, stage, publish, clean up, resume) shared by the partition
operations, the big drops and purges and the search-index chunks; its halves would import each other.
It sits above :mod:`ushas_catalog.metadata` (it also un-indexes and re-indexes in chunks), so the catalog
operations reach it through ``Metastore.big`` (:class:`~ushas_catalog.catalog.visibility.BigOperations`).

FoundationDB (and the embedded engine, which enforces its limits) allows 5 s and 10 MB per
transaction. Adding or dropping a million partitions, or dropping a catalog of 100,000 tables,
does not fit; these operations run as **one small transaction that makes the change visible
atomically** plus **bounded chunks** (each at most :data:`CHUNK_ITEMS` items and well under the
limits), recorded as durable pending work (``PendingWork`` subspace, one record per operation:
kind, object, state, cursor, owner) so that a crash at any point leaves work that
:func:`finish_pending` (``ushas repair --pending``, or the next write of the object) finishes.

Partition operations (``add_partitions`` / ``drop_partitions`` of more than :data:`BULK_AT`):

1. *begin* (one transaction): the table's next version ``v`` is reserved by listing the
   operation in ``TableReference.pending_operations``; while it is listed, every other write
   of the table fails with :class:`~ushas_catalog.errors.OperationInProgress` (or, when the
   process running the operation died, finishes it first and goes on).
2. *staging* chunks: an add writes its partitions with ``added_version = v``; a drop marks the
   partitions it matches with ``dropped_version = v``; both write their ``TablePartitionHistory``
   entries at ``(v, ...)``. Readers see a partition only when ``added_version <= version`` and
   not ``0 < dropped_version <= version`` (``version``: the table version they read, pinned for
   the whole of a listing), so nothing of a staged operation is visible.
3. *publish* (one transaction): the commit of version ``v`` (one history entry, one change-feed
   event naming the operation, statistics updated once). At that instant every staged partition
   appears (add) or disappears (drop), together.
4. a drop's *cleanup* chunks then delete the marked keys (and record their data as garbage when
   asked), and the operation leaves the table's pending list.

A crash while staging rolls back (the caller's input is gone; the caller saw an error): the
history entries at ``(v, ...)`` name exactly what was staged. A crash after publish rolls forward.

Catalog and database drops (``DROP ... CASCADE`` of more than :data:`BULK_AT` objects): the
drop itself (name freed, the object hidden) is one transaction; taking the objects in it out of
the search index is chunked work (``UNINDEX``). Purging such an object (``purge``, ``drop …
purge``) removes its dropped name in one transaction (nothing of it is reachable any more) and
deletes its tables in chunks (``PURGE``).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import fdb.tuple as fdbtuple

from . import records as rec
from .catalog.visibility import TooBig, bulk_pending, check_no_pending, visible, visible_raw  # noqa: F401 - the readers' side, shown here too
from .errors import (Conflict, InvalidArgument, NoSuchPartition, PartitionAlreadyExists,
                     UshasError)
from .keyspace.layout import PENDING_WORK
from .keyspace.tree import KeySpacePath
from .kv import Transaction
from .kv.base import FDB_LIMITS
from .metadata.sync import defer_children
from .model.names import TableName
from .model.objects import MutationResult, micros_to_datetime
from .model.partitions import Partition, PartitionScheme
from .records.store import RecordStore, split_elements

if TYPE_CHECKING:
    from .metastore import Metastore

#: partition operations with more items than this run in chunks (smaller ones: one transaction)
BULK_AT = 20_000
#: catalog / database drops holding more objects than this take them out of the index in chunks
BULK_OBJECTS_AT = 1_000
#: items (partitions, objects) per chunk transaction
CHUNK_ITEMS = 10_000
#: tables purged per chunk transaction
PURGE_TABLES_PER_CHUNK = 200
#: objects (un)indexed per chunk transaction at most
UNINDEX_PER_CHUNK = 2_000
#: a chunk that has run this long stops at the next item (the engine allows 5 s)
CHUNK_SECONDS = 1.0
#: bytes written per chunk at most (the engine allows 10 MB)
CHUNK_BYTES = 3_000_000
#: seconds without a chunk after which a running operation's process counts as dead
STALE_AFTER_S = 60.0

_TOKEN = uuid.uuid4().hex[:8]


def _now() -> int:
    return time.time_ns() // 1000


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_TOKEN}"


def owner_alive(owner: str, heartbeat_micros: int) -> bool:
    """Whether the process that runs an operation still does: on this host, its pid exists (a
    pid reused by another process keeps it "alive" until the heartbeat is stale); elsewhere, its
    last chunk is younger than :data:`STALE_AFTER_S`."""
    if owner == _owner():
        return True
    stale = _now() - heartbeat_micros > STALE_AFTER_S * 1_000_000
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host == socket.gethostname() and pid_text.isdigit():
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        if os.getpid() == int(pid_text):  # this process, another (forgotten) token: not running
            return False
    return not stale


def work_store(project: KeySpacePath) -> RecordStore[rec.PendingWork]:
    return RecordStore.of(project, PENDING_WORK)


@dataclass(frozen=True)
class PendingWork:
    """One operation bigger than one transaction that is not finished."""

    operation_id: str
    kind: str            # ADD PARTITIONS, DROP PARTITIONS, UNINDEX, PURGE
    object: str          # the object's name
    state: str           # STAGING, PUBLISHED, ROLLING_BACK
    done: int            # items processed
    total: int           # items known (0: unknown)
    owner: str           # host:pid:token of the process running it
    running: bool        # that process is alive (finish_pending leaves it alone)
    started_at: dt.datetime

    @property
    def progress(self) -> str:
        return f"{self.done}/{self.total}" if self.total else str(self.done)

    def to_json(self) -> dict[str, Any]:
        return {"operation_id": self.operation_id, "kind": self.kind, "object": self.object, "state": self.state,
                "done": self.done, "total": self.total, "owner": self.owner, "running": self.running,
                "started_at": self.started_at.isoformat()}


def _pending(op: uuid.UUID, r: rec.PendingWork) -> PendingWork:
    return PendingWork(str(op), r.kind, r.object, rec.PendingWork.State.Name(r.state), r.done, r.total, r.owner,
                       owner_alive(r.owner, r.heartbeat_micros), micros_to_datetime(r.started_micros))


def pending_work(ms: "Metastore") -> list[PendingWork]:
    """The unfinished operations of ``ms``'s project (what ``ushas check`` reports)."""
    store = work_store(ms.project_path)
    return ms.db.run(lambda tr: [_pending(r.key[0], r.record) for r in store.scan(tr)])


def finish_pending(ms: "Metastore", operation_id: str | uuid.UUID | None = None, *,
                   include_running: bool = False, data_paths: list[str] | None = None) -> list[PendingWork]:
    """Finish the pending work of the project (or the one operation ``operation_id``) whose
    process died: staging that had not published is rolled back, published work is completed.
    ``include_running``: also take over operations whose process looks alive (their own chunks
    then fail). ``data_paths`` receives the data paths a finished purge found (to delete now).
    Returns what was finished."""
    done: list[PendingWork] = []
    for w in pending_work(ms):
        if operation_id is not None and w.operation_id != str(operation_id):
            continue
        if w.running and not include_running:
            continue
        del _paths(ms)[:]
        if _resume(ms, uuid.UUID(w.operation_id)):
            done.append(w)
        if data_paths is not None:
            data_paths.extend(_paths(ms))
        del _paths(ms)[:]
    return done


def finish_for(ms: "Metastore", operations: Sequence[str]) -> bool:
    """The table's pending operations (ids) whose process died, finished (a write of the table met
    them). True if all are gone, so the write can go on."""
    cleared = True
    store = work_store(ms.project_path)
    for text in operations:
        op = uuid.UUID(text)
        r = ms.db.run(lambda tr: store.load(tr, (op,)))
        if r is None:
            cleared = False  # listed on the table without a record: damage, reported by check
            continue
        if owner_alive(r.owner, r.heartbeat_micros):
            cleared = False
            continue
        _resume(ms, op)
    return cleared


# ---- the work record -------------------------------------------------------------------------
class _Work:
    """One operation's work record, owned by this process."""

    def __init__(self, ms: "Metastore", op: uuid.UUID) -> None:
        self.ms = ms
        self.op = op
        self.store = work_store(ms.project_path)
        self.owner = _owner()

    def load(self, tr: Transaction) -> rec.PendingWork:
        """The record, checked to be still ours (else :class:`Conflict`: another process took over)."""
        r = self.store.load(tr, (self.op,))
        if r is None or r.owner != self.owner:
            raise Conflict(f"operation {self.op} was finished or taken over by another process "
                           f"({r.owner if r is not None else 'gone'})", operation_id=str(self.op))
        return r

    def save(self, tr: Transaction, r: rec.PendingWork) -> None:
        r.heartbeat_micros = _now()
        self.store.save(tr, (self.op,), r)

    def take_over(self) -> rec.PendingWork | None:
        def fn(tr: Transaction) -> rec.PendingWork | None:
            r = self.store.load(tr, (self.op,))
            if r is None:
                return None
            r.owner = self.owner
            self.save(tr, r)
            return r

        return self.ms.db.run(fn)


def _new_work(kind: str, obj: str, key: bytes, version: int = 0, total: int = 0,
              detail: Mapping[str, Any] | None = None) -> rec.PendingWork:
    now = _now()
    return rec.PendingWork(kind=kind, state=rec.PendingWork.STAGING, object=obj, object_key=key, version=version,
                           total=total, owner=_owner(), heartbeat_micros=now, started_micros=now,
                           detail_json=json.dumps(dict(detail or {}), separators=(",", ":")))


# ---- partition operations --------------------------------------------------------------------
@dataclass
class _TableAt:
    name: TableName
    path: KeySpacePath
    scheme: PartitionScheme
    storage: rec.TableStorage
    version: int  # the reserved version

    def partitions(self) -> RecordStore[rec.Partition]:
        return RecordStore.at(self.path.add("TablePartition"), self.scheme.names)

    def history(self) -> RecordStore[rec.PartitionChange]:
        return RecordStore.at(self.path.add("TablePartitionHistory"), ("version",) + self.scheme.names)


def _begin(ms: "Metastore", tn: TableName, kind: str, expected_version: int | None, total: int,
           detail: Mapping[str, Any]) -> tuple[_Work, _TableAt]:
    op = uuid.uuid4()
    work = _Work(ms, op)

    def fn(tr: Transaction) -> _TableAt:
        t = ms.resolver.table(tr, tn)
        if expected_version is not None and t.ref.version != expected_version:
            raise Conflict(f"table {tn} is at version {t.ref.version}, not the expected {expected_version}",
                           object=str(tn), expected_version=expected_version, actual_version=t.ref.version)
        if t.ref.pending_operations:
            check_no_pending(t.ref, {}, str(tn))
        scheme = ms.resolver.scheme(tr, t)
        if not scheme:
            raise InvalidArgument(f"table {tn} is not partitioned", table=str(tn))
        storage = t.store("TableStorage").load(tr, ())
        ref = rec.TableReference()
        ref.CopyFrom(t.ref)
        ref.pending_operations.append(op.bytes)
        t.store("TableReference").save(tr, (), ref)
        v = t.ref.version + 1
        work.store.save(tr, (op,), _new_work(kind, str(tn), t.path.key(), v, total, detail), new=True)
        return _TableAt(tn, t.path, scheme, storage, v)

    return work, ms.run(fn)


def _default_location(storage: rec.TableStorage, scheme: PartitionScheme, key: tuple[Any, ...]) -> str:
    return storage.location.rstrip("/") + "/" + scheme.path(key) if storage.location else ""


def _spec_text(scheme: PartitionScheme, key: tuple[Any, ...]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in scheme.spec(key).items()) + ")"


def add_partitions(ms: "Metastore", tn: TableName, items: Sequence[Partition], if_not_exists: bool,
                   expected_version: int | None) -> MutationResult:
    """``Metastore.add_partitions`` of more than :data:`BULK_AT` partitions: staged in chunks,
    published in one transaction (see the module docstring)."""
    work, t = _begin(ms, tn, "ADD PARTITIONS", expected_version, len(items), {"if_not_exists": if_not_exists})
    try:
        added, skipped = _stage_adds(ms, work, t, items, if_not_exists)
        return _publish(ms, work, t, "ADD PARTITIONS", {"added": added, "skipped": skipped},
                        MutationResult(t.version, added=added, skipped=skipped) if added else
                        MutationResult(None, skipped=skipped))
    except BaseException:
        _rollback_quietly(ms, work.op)
        raise


def _stage_adds(ms: "Metastore", work: _Work, t: _TableAt, items: Sequence[Partition],
                if_not_exists: bool) -> tuple[int, int]:
    scheme, store, history = t.scheme, t.partitions(), t.history()
    version_prefix = fdbtuple.pack((t.version,))
    added_change = rec.PartitionChange(action=rec.PartitionChange.ADDED).SerializeToString()
    seen: set[bytes] = set()
    added = skipped = 0
    position = 0
    while position < len(items):
        batch = items[position:position + CHUNK_ITEMS]
        now = _now()
        prepared: list[tuple[bytes, bytes]] = []
        local_skipped = 0
        for p in batch:
            key = scheme.key(p.values)
            packed = fdbtuple.pack(key)
            if packed in seen:
                if if_not_exists:
                    local_skipped += 1
                    continue
                raise PartitionAlreadyExists(f"partition {_spec_text(scheme, key)} of {t.name} is given twice",
                                             table=str(t.name), partition=scheme.spec(key))
            seen.add(packed)
            location = p.location if p.location is not None else _default_location(t.storage, scheme, key)
            r = ms.partition_record(p, location, now)
            r.added_version = t.version
            prepared.append((packed, r.SerializeToString(deterministic=True)))

        def chunk(tr: Transaction) -> tuple[int, int]:
            w = work.load(tr)
            existing = _existing(tr, store, [k for k, _ in prepared])
            n = skip = 0
            for packed, data in prepared:
                if packed in existing:
                    if if_not_exists:
                        skip += 1
                        continue
                    key = fdbtuple.unpack(packed)
                    raise PartitionAlreadyExists(f"partition {_spec_text(scheme, key)} of {t.name} already exists",
                                                 table=str(t.name), partition=scheme.spec(key))
                tr.set(store.prefix + packed, data)
                tr.set(history.prefix + version_prefix + packed, added_change)
                n += 1
            w.done += len(batch)
            work.save(tr, w)
            return n, skip

        n, skip = ms.db.run(chunk)
        added += n
        skipped += skip + local_skipped
        position += len(batch)
    return added, skipped


def _existing(tr: Transaction, store: RecordStore[rec.Partition], packed: list[bytes]) -> set[bytes]:
    """Which of these packed keys are stored: one key-range read over their span when it is
    dense, else point reads."""
    if not packed:
        return set()
    if len(packed) < 32:
        return {k for k in packed if store.exists_packed(tr, k)}
    wanted = set(packed)
    plen, limit = len(store.prefix), 4 * len(packed)
    found: set[bytes] = set()
    count = 0
    for kv in tr.get_range(store.prefix + min(packed), store.prefix + max(packed) + b"\xff", limit=limit + 1):
        count += 1
        suffix = kv.key[plen:]
        if suffix in wanted:
            found.add(suffix)
        else:
            for k in wanted:  # a split record's chunk key: (pk..., i)
                if suffix.startswith(k) and k not in found:
                    found.add(k)
                    break
    if count > limit:
        return {k for k in packed if store.exists_packed(tr, k)}
    return found


def drop_partitions(ms: "Metastore", tn: TableName, specs: Sequence[Mapping[str, Any]], if_exists: bool,
                    expected_version: int | None, release_data: bool) -> MutationResult:
    """``Metastore.drop_partitions`` too big for one transaction: marked in chunks, published in one
    transaction, the marked keys deleted in chunks after (see the module docstring)."""
    work, t = _begin(ms, tn, "DROP PARTITIONS", expected_version, 0, {"release_data": release_data})
    try:
        dropped, missing = _mark_drops(ms, work, t, specs, if_exists)
        if not dropped:
            _rollback_quietly(ms, work.op)
            return MutationResult(None, skipped=missing)
        result = _publish(ms, work, t, "DROP PARTITIONS", {"dropped": dropped},
                          MutationResult(t.version, dropped=dropped, skipped=missing))
    except BaseException:
        _rollback_quietly(ms, work.op)
        raise
    _resume(ms, work.op, work)  # the cleanup chunks
    return result


def _mark_drops(ms: "Metastore", work: _Work, t: _TableAt, specs: Sequence[Mapping[str, Any]],
                if_exists: bool) -> tuple[int, int]:
    """Mark the partitions the specs match, chunk by chunk (each chunk reads everything it needs
    first, then writes: reads after writes are slow on the write buffer)."""
    scheme, store, history = t.scheme, t.partitions(), t.history()
    version_prefix = fdbtuple.pack((t.version,))
    selections = [scheme.selection(s) for s in specs]
    full = len(scheme.columns)
    dropped = missing = 0
    index = 0
    resume_at: bytes | None = None  # inside a partial spec's range
    while index < len(specs):
        start, begin_at = index, resume_at

        def chunk(tr: Transaction) -> tuple[int, int, int, bytes | None]:
            w = work.load(tr)
            i, at = start, begin_at
            miss = 0
            marks: dict[bytes, bytes] = {}  # packed key -> serialized record
            while i < len(specs) and len(marks) < CHUNK_ITEMS:
                lead, filters = selections[i]
                if len(lead) == full:  # a run of full specs: one range read over their span
                    j = i
                    while j < len(specs) and j - i < CHUNK_ITEMS - len(marks) and len(selections[j][0]) == full:
                        j += 1
                    wanted = [fdbtuple.pack(selections[k][0]) for k in range(i, j)]
                    found = _values(tr, store, wanted)
                    for k, packed in zip(range(i, j), wanted):
                        data = found.get(packed)
                        if data is None:
                            if not if_exists:
                                raise NoSuchPartition(f"no partition {_spec_text(scheme, selections[k][0])} in "
                                                      f"{t.name}", table=str(t.name))
                            miss += 1
                        elif rec.Partition.FromString(data).dropped_version != t.version:
                            marks[packed] = data
                    i, at = j, None
                    continue
                b, e = store.prefix_range(lead)
                matched = at is not None
                more = False
                for sr in store.scan(tr, at or b, e):
                    if filters and not all(sr.key[j] == v for j, v in filters.items()):
                        continue
                    matched = True
                    if sr.record.dropped_version == t.version:
                        continue
                    if len(marks) >= CHUNK_ITEMS:
                        at, more = store.key(sr.key), True
                        break
                    marks[fdbtuple.pack(sr.key)] = sr.record.SerializeToString(deterministic=True)
                if more:
                    break
                if not matched:
                    if not if_exists:
                        raise NoSuchPartition(f"no partition {dict(specs[i])} in {t.name}", table=str(t.name))
                    miss += 1
                i, at = i + 1, None
            for packed, data in marks.items():  # the writes, after every read
                old = rec.Partition.FromString(data)
                marked = rec.Partition()
                marked.CopyFrom(old)
                marked.dropped_version = t.version
                _put(tr, store, packed, marked, len(data))
                tr.set(history.prefix + version_prefix + packed,
                       rec.PartitionChange(action=rec.PartitionChange.DROPPED, previous=old).SerializeToString())
            w.done += len(marks)
            work.save(tr, w)
            return len(marks), miss, i, at

        n, miss, index, resume_at = ms.db.run(chunk)
        dropped += n
        missing += miss
    return dropped, missing


def _values(tr: Transaction, store: RecordStore[rec.Partition], packed: list[bytes]) -> dict[bytes, bytes]:
    """The serialized records at these packed keys (absent: not stored): one range read over their
    span when it is dense, else point reads."""
    if not packed:
        return {}
    wanted = set(packed)
    plen, limit, arity = len(store.prefix), 4 * len(packed) + 64, store.arity
    out: dict[bytes, bytes] = {}
    split: set[bytes] = set()
    count = 0
    for kv in tr.get_range(store.prefix + min(packed), store.prefix + max(packed) + b"\xff", limit=limit + 1):
        count += 1
        suffix = kv.key[plen:]
        if suffix in wanted:
            out[suffix] = kv.value
        else:
            k = b"".join(split_elements(suffix)[:arity])
            if k in wanted:
                split.add(k)
    if count > limit:
        found = {k: _load_packed(tr, store, k) for k in packed}
        return {k: v for k, v in found.items() if v is not None}
    for k in split:  # a record split over several keys (big file lists): joined
        data = _load_packed(tr, store, k)
        if data is not None:
            out[k] = data
    return out


def _put(tr: Transaction, store: RecordStore[rec.Partition], packed: bytes, record: rec.Partition,
         old_size: int) -> None:
    """Rewrite a partition record: one set when neither it nor the one it replaces is split
    (a clear_range per key would make the write buffer sort itself each time)."""
    data = record.SerializeToString(deterministic=True)
    if old_size <= store.chunk_bytes and len(data) <= store.chunk_bytes:
        tr.set(store.prefix + packed, data)
    else:
        store.save_packed(tr, packed, record)


def _remove(tr: Transaction, key: bytes, size: int) -> None:
    if size <= FDB_LIMITS.value_bytes:
        tr.clear(key)
    else:
        tr.clear_range(key, key + b"\xff")


def _load_packed(tr: Transaction, store: RecordStore[rec.Partition], packed: bytes) -> bytes | None:
    key = store.prefix + packed
    parts: list[bytes] = []
    for kv in tr.get_range(key, key + b"\xff"):
        if kv.key == key:
            return kv.value
        parts.append(kv.value)
    return b"".join(parts) if parts else None


def _publish(ms: "Metastore", work: _Work, t: _TableAt, operation: str, counts: Mapping[str, int],
             result: MutationResult) -> MutationResult:
    """The one transaction that makes a staged partition operation visible (its commit)."""
    from .catalog.commits import Mutation

    def fn(tr: Transaction) -> MutationResult:
        w = work.load(tr)
        live = ms.resolver.table(tr, t.name)
        if live.path.key() != t.path.key() or live.ref.version != t.version - 1:  # pragma: no cover - blocked
            raise Conflict(f"table {t.name} changed during {operation} (operation {work.op})", table=str(t.name))
        ref = rec.TableReference()
        ref.CopyFrom(live.ref)
        if result.version is None:  # nothing to commit (every partition skipped)
            _unlist(ref, work.op)
            live.store("TableReference").save(tr, (), ref)
            work.store.delete(tr, (work.op,))
            return result
        if operation == "ADD PARTITIONS":  # nothing left to do after the commit
            _unlist(ref, work.op)
            work.store.delete(tr, (work.op,))
        else:
            w.state = rec.PendingWork.PUBLISHED
            w.cursor = b""
            w.total, w.done = counts.get("dropped", 0), 0
            work.save(tr, w)
        ms.commit(tr, Mutation("table", str(t.name), t.path, operation, t.version, ref, time_micros=_now(),
                                changed=("TablePartition",),
                                detail={**counts, "operation_id": str(work.op), "bulk": True},
                                partition_scheme=t.scheme))
        return result

    return ms.run(fn)


def _unlist(ref: rec.TableReference, op: uuid.UUID) -> None:
    keep = [o for o in ref.pending_operations if o != op.bytes]
    del ref.pending_operations[:]
    ref.pending_operations.extend(keep)


def _rollback_quietly(ms: "Metastore", op: uuid.UUID) -> None:
    try:
        _resume(ms, op, rollback=True)
    except UshasError:  # left pending: ushas repair --pending (or the next write) finishes it
        pass


# ---- resuming -------------------------------------------------------------------------------
def _resume(ms: "Metastore", op: uuid.UUID, work: _Work | None = None, *, rollback: bool = False) -> bool:
    """Run operation ``op`` to its end from its recorded state: roll back what was staged
    (STAGING, ROLLING_BACK), or finish what was published. Returns False if it was gone."""
    work = work or _Work(ms, op)
    r = work.take_over()
    if r is None:
        return False
    if r.state == rec.PendingWork.STAGING or rollback:
        if r.state == rec.PendingWork.PUBLISHED:  # too late to undo: finish instead
            rollback = False
        else:
            def mark(tr: Transaction) -> None:
                w = work.load(tr)
                w.state = rec.PendingWork.ROLLING_BACK
                w.cursor = b""
                work.save(tr, w)

            ms.db.run(mark)
            r.state = rec.PendingWork.ROLLING_BACK
    if r.kind in ("ADD PARTITIONS", "DROP PARTITIONS"):
        _partition_chunks(ms, work, r)
    elif r.kind == "UNINDEX":
        _unindex_chunks(ms, work, r)
    elif r.kind == "PURGE":
        _purge_chunks(ms, work, r)
    else:  # pragma: no cover - a newer version's work
        raise InvalidArgument(f"pending operation {op} has an unknown kind {r.kind!r}")
    return True


def _table_path(ms: "Metastore", key: bytes) -> KeySpacePath | None:
    try:
        resolved = ms.layout.keyspace.parse(key)
    except Exception:  # noqa: BLE001
        return None
    return resolved.path


def _partition_chunks(ms: "Metastore", work: _Work, r: rec.PendingWork) -> None:
    """Roll back (ROLLING_BACK) or finish a drop (PUBLISHED): walk the history entries at the
    operation's version, chunk by chunk; then unlist the operation from the table."""
    path = _table_path(ms, r.object_key)
    version = r.version
    rolling_back = r.state == rec.PendingWork.ROLLING_BACK
    detail = json.loads(r.detail_json or "{}")

    def arity_of(tr: Transaction) -> int | None:
        if path is None:
            return None
        schema = RecordStore.at(path.add("TableSchema")).load(tr, ())
        return None if schema is None else len(schema.partition_columns)

    arity = ms.db.run(arity_of)
    while path is not None and arity:
        hist_prefix = path.add("TablePartitionHistory").key() + fdbtuple.pack((version,))
        part_prefix = path.add("TablePartition").key()

        def chunk(tr: Transaction) -> bool:
            from .catalog.partition_tags import unindex
            from .data.garbage import Garbage, record_garbage
            from .model.data_files import from_records

            w = work.load(tr)
            begin = w.cursor or hist_prefix
            entries = [(kv.key, kv.key[len(hist_prefix):], kv.value)
                       for kv in tr.get_range(begin, hist_prefix + b"\xff", limit=CHUNK_ITEMS)]
            store = RecordStore.at(path.add("TablePartition"), ("k",) * arity)
            current = _values(tr, store, [packed for _, packed, _ in entries])
            garbage = Garbage()
            for hkey, packed, value in entries:  # the writes, after every read
                change = rec.PartitionChange.FromString(value)
                data = current.get(packed)
                key = part_prefix + packed
                if rolling_back:
                    if change.action == rec.PartitionChange.ADDED:
                        if data is not None and rec.Partition.FromString(data).added_version == version:
                            _remove(tr, key, len(data))
                    elif data is not None:
                        old = rec.Partition.FromString(data)
                        if old.dropped_version == version:
                            old.dropped_version = 0
                            _put(tr, store, packed, old, len(data))
                    tr.clear(hkey)
                elif data is not None and (gone := rec.Partition.FromString(data)).dropped_version == version:
                    _remove(tr, key, len(data))
                    if gone.tags:  # its tag index entries go with it
                        unindex(tr, path, fdbtuple.unpack(packed), gone.tags)
                    if detail.get("release_data") and change.HasField("previous"):
                        old = change.previous
                        if old.files_recorded:
                            garbage.files.extend(from_records(old.data_files))
                        elif old.location:
                            garbage.directories.append(old.location)
            if garbage:
                record_garbage(tr, ms.project_path, path.value, r.object, "DROP PARTITIONS", garbage, _now())
            if rolling_back:
                w.cursor = b""  # the entries read are gone: start again from the beginning
            elif entries:
                w.cursor = entries[-1][0] + b"\x00"
            w.done += len(entries)
            work.save(tr, w)
            return len(entries) == CHUNK_ITEMS

        if not ms.db.run(chunk):
            break

    def finish(tr: Transaction) -> None:
        work.load(tr)
        if path is not None:
            refs = RecordStore.at(path.add("TableReference"))
            ref = refs.load(tr, ())
            if ref is not None:
                _unlist(ref, work.op)
                refs.save(tr, (), ref)
        work.store.delete(tr, (work.op,))

    ms.db.run(finish)


# ---- catalog / database drops ------------------------------------------------------------------
def many_objects(ms: "Metastore", tr: Transaction, path: KeySpacePath) -> bool:
    """Whether the catalog / database at ``path`` holds more than :data:`BULK_OBJECTS_AT` objects
    (counting stops there)."""
    seen = 0
    for _ in _object_keys(ms, tr, path, limit=BULK_OBJECTS_AT + 1):
        seen += 1
        if seen > BULK_OBJECTS_AT:
            return True
    return False


def _object_keys(ms: "Metastore", tr: Transaction, path: KeySpacePath, *, dropped: bool = False,
                 limit: int = 0) -> Iterable[uuid.UUID]:
    """Ids of the databases of a catalog and tables / views of its databases (of a database: its
    tables and views), live ones (and dropped ones with ``dropped``)."""
    kind = path.directory.name
    count = 0
    if kind == "catalogId":
        dbs = path.add("Database")
        ids = [uuid.UUID(bytes=r.record.id) for r in ms.resolver.names(dbs, "Database").scan(tr)]
        if dropped:
            ids.extend(r.key[1] for r in ms.resolver.dropped(dbs, "Database").scan(tr))
        for did in ids:
            yield did
            count += 1
            for oid in _object_keys(ms, tr, dbs.add("databaseId", did), dropped=dropped):
                yield oid
                count += 1
                if limit and count >= limit:
                    return
    elif kind == "databaseId":
        tables = path.add("Table")
        for r in ms.resolver.names(tables, "Table").scan(tr, limit=limit):
            yield uuid.UUID(bytes=r.record.id)
        if dropped:
            for r in ms.resolver.dropped(tables, "Table").scan(tr):
                yield r.key[1]


def defer_unindex(ms: "Metastore", tr: Transaction, name: str, path: KeySpacePath, indexed: bool) -> None:
    """In a drop's (``indexed=False``) or undrop's transaction: the objects in the catalog /
    database at ``path`` leave (or re-enter) the search index in chunks, after the commit (the
    metadata sync of ``tr`` then handles the object itself only)."""
    defer_children(tr, path)
    store = work_store(ms.project_path)
    for r in list(store.scan(tr)):  # an unfinished (un)indexing of the same object is superseded
        if r.record.kind == "UNINDEX" and r.record.object_key == path.key():
            store.delete(tr, r.key)
    op = uuid.uuid4()
    work_store(ms.project_path).save(tr, (op,), _published(_new_work("UNINDEX", name, path.key(),
                                                                     detail={"indexed": indexed})), new=True)
    _after(ms).append(op)


_AFTER: "weakref.WeakKeyDictionary[Any, list[uuid.UUID]]" = weakref.WeakKeyDictionary()
_PATHS: "weakref.WeakKeyDictionary[Any, list[str]]" = weakref.WeakKeyDictionary()


def _after(ms: "Metastore") -> list[uuid.UUID]:
    return _AFTER.setdefault(ms, [])


def _paths(ms: "Metastore") -> list[str]:
    return _PATHS.setdefault(ms, [])


def _published(r: rec.PendingWork) -> rec.PendingWork:
    r.state = rec.PendingWork.PUBLISHED
    return r


def _chunk_ids(ms: "Metastore", tr: Transaction, path: KeySpacePath, after: bytes, limit: int,
               dropped: bool) -> list[tuple[bytes, uuid.UUID, KeySpacePath]]:
    """The next ``limit`` objects in the catalog / database at ``path`` after position ``after``,
    each with its position and id path. Positions are packed ``(database id, section, name[, id])``:
    section 0 is a catalog's database itself, 1 its live tables and views by name, 2 its dropped
    tables; so each chunk reads only the names after the cursor."""
    from .keyspace.layout import Layout

    out: list[tuple[bytes, uuid.UUID, KeySpacePath]] = []
    zero = uuid.UUID(int=0)
    dbs: list[tuple[uuid.UUID, KeySpacePath]]
    if path.directory.name == "catalogId":
        base = path.add("Database")
        dids = [uuid.UUID(bytes=r.record.id) for r in ms.resolver.names(base, "Database").scan(tr)]
        if dropped:
            dids.extend(r.key[1] for r in ms.resolver.dropped(base, "Database").scan(tr))
        dbs = [(d, base.add("databaseId", d)) for d in sorted(dids)]
    else:
        dbs = [(zero, path)]
    cursor = fdbtuple.unpack(after) if after else ()
    for did, dpath in dbs:
        if cursor and did < cursor[0]:
            continue
        mine = bool(cursor) and cursor[0] == did
        if path.directory.name == "catalogId" and not mine:
            out.append((fdbtuple.pack((did, 0)), did, dpath))
            if len(out) >= limit:
                return out
        tables = dpath.add("Table")
        for section, store in ((1, ms.resolver.names(tables, "Table")), (2, ms.resolver.dropped(tables, "Table"))):
            if section == 2 and not dropped:
                continue
            if mine and cursor[1] > section:
                continue
            begin, end = store.range()
            if mine and cursor[1] == section:
                begin = store.key(tuple(cursor[2:])) + b"\xff"
            for r in store.scan(tr, begin, end, limit=limit - len(out)):
                if section == 1:
                    oid, kind = uuid.UUID(bytes=r.record.id), r.record.kind
                else:
                    oid, kind = r.key[1], rec.ObjectKind.TABLE
                p = (Layout.view if kind == rec.ObjectKind.VIEW else Layout.table)(dpath, oid)
                out.append((fdbtuple.pack((did, section) + tuple(r.key)), oid, p))
            if len(out) >= limit:
                return out
    return out


def _unindex_chunks(ms: "Metastore", work: _Work, r: rec.PendingWork) -> None:
    from .metadata.store import MetadataKeys, MetadataWriter

    path = _table_path(ms, r.object_key)
    indexed = bool(json.loads(r.detail_json or "{}").get("indexed"))
    while path is not None:
        def chunk(tr: Transaction) -> bool:
            started = time.monotonic()
            w = work.load(tr)
            items = _chunk_ids(ms, tr, path, w.cursor, UNINDEX_PER_CHUNK, dropped=False)
            writer = MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog")
            n = 0
            for pos, oid, _ in items:
                writer.set_indexed(oid, indexed)
                w.cursor = pos
                n += 1
                if time.monotonic() - started > CHUNK_SECONDS:
                    break
            writer.finish(0)
            w.done += n
            work.save(tr, w)
            return n > 0 and (n < len(items) or len(items) == UNINDEX_PER_CHUNK)

        if not ms.db.run(chunk):
            break
    ms.db.run(lambda tr: (work.load(tr), work.store.delete(tr, (work.op,))))


def big_object(ms: "Metastore", tr: Transaction, path: KeySpacePath) -> bool:
    """Whether purging (or un-indexing) the object at ``path`` needs chunks: a catalog or database
    with more than :data:`BULK_OBJECTS_AT` objects, a table with more than :data:`BULK_AT`
    partitions (counting stops there)."""
    if path.directory.name == "tableId":
        prefix = path.add("TablePartition").key()
        return sum(1 for _ in tr.get_range(prefix, prefix + b"\xff", limit=BULK_AT + 1)) > BULK_AT
    if path.directory.name in ("catalogId", "databaseId"):
        return many_objects(ms, tr, path)
    return False


def defer_purge(ms: "Metastore", tr: Transaction, name: str, kind: str, path: KeySpacePath, version: int,
                operation: str) -> None:
    """In the transaction that makes a dropped catalog, database or table unreachable (its name
    entry removed): its keys, metadata and data are deleted in chunks after the commit (the data
    paths then go to the caller: :func:`run_after`)."""
    detail: dict[str, Any] = {"kind": kind, "operation": operation}
    if path.directory.name == "tableId":  # whether another table shares its location: decided now
        detail["shared"] = _shares_location(tr, path)
    store = work_store(ms.project_path)
    for r in list(store.scan(tr)):  # (un)indexing what is purged now is moot: superseded
        if r.record.kind == "UNINDEX" and r.record.object_key.startswith(path.key()):
            store.delete(tr, r.key)
    op = uuid.uuid4()
    work_store(ms.project_path).save(tr, (op,), _published(_new_work(
        "PURGE", name, path.key(), version=version, detail=detail)), new=True)
    _after(ms).append(op)


def _shares_location(tr: Transaction, table: KeySpacePath) -> bool:
    """Whether a live table of the same database has its data at, in or around this table's location
    (then only this table's recorded files are deleted, as :func:`~ushas_catalog.data_purge.table_data_paths`
    decides)."""
    from .keyspace.layout import Layout

    storage = RecordStore.at(table.add("TableStorage")).load(tr, ())
    if storage is None or storage.external or not storage.location:
        return False
    location = storage.location.rstrip("/")
    db = table.parent.parent
    for sr in RecordStore.at(db.add("Table").add("TableObjectName")).scan(tr):
        oid = uuid.UUID(bytes=sr.record.id)
        if oid == table.value or sr.record.kind != rec.ObjectKind.TABLE:
            continue
        other = RecordStore.at(Layout.table(db, oid).add("TableStorage")).load(tr, ())
        if other is not None and other.location and (_under(other.location, location)
                                                     or _under(location, other.location)):
            return True
    return False


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def _purge_table_step(ms: "Metastore", tr: Transaction, tpath: KeySpacePath, after: bytes, budget: int,
                      shared: bool) -> tuple[list[str], bytes | None, int]:
    """Purge up to ``budget`` partitions of the table at ``tpath`` (from key ``after``); when none
    are left, the table itself (garbage entries, metadata, keys). Returns the data paths to
    delete, where to continue (None: the table is gone) and the items used."""
    from .metadata import sync as metadata_sync
    from .data.garbage import delete_garbage, scan_garbage

    storage = RecordStore.at(tpath.add("TableStorage")).load(tr, ())
    schema = RecordStore.at(tpath.add("TableSchema")).load(tr, ())
    managed = storage is not None and not storage.external and bool(storage.location)
    location = storage.location.rstrip("/") if managed else ""
    paths: list[str] = []
    used = 0
    if schema is not None and schema.partition_columns:
        prefix = tpath.add("TablePartition").key()
        begin = after or prefix
        rows = list(tr.get_range(begin, prefix + b"\xff", limit=budget + 1))
        more = len(rows) > budget
        rows = rows[:budget]
        for kv in rows if managed else ():
            try:
                r = rec.Partition.FromString(kv.value)
            except Exception:  # noqa: BLE001 - one piece of a split record
                continue
            if r.files_recorded:
                paths.extend(f.path for f in r.data_files if shared or not _under(f.path, location))
            elif shared and r.location and not _under(location, r.location):
                paths.append(r.location)
        used = len(rows)
        if more:
            tr.clear_range(begin, rows[-1].key + b"\x00")
            return paths, rows[-1].key + b"\x00", used
    elif managed:
        listed = RecordStore.at(tpath.add("TableDataFiles")).load(tr, ())
        if listed is not None:
            paths.extend(f.path for f in listed.files if shared or not _under(f.path, location))
    for e in list(scan_garbage(tr, ms.project_path, tpath.value)):
        delete_garbage(tr, ms.project_path, e.key)
        if managed:
            paths.extend(f.path for f in e.files if shared or not _under(f.path, location))
            paths.extend(d for d in e.directories if shared and not _under(location, d))
    if managed and not shared:
        paths.insert(0, location)
    metadata_sync.on_purge(ms, tr, tpath)
    tr.clear_range(*tpath.range())
    return paths, None, used + 1


def _purge_chunks(ms: "Metastore", work: _Work, r: rec.PendingWork) -> None:
    path = _table_path(ms, r.object_key)
    detail = json.loads(r.detail_json or "{}")
    found: list[str] = []
    while path is not None:
        def chunk(tr: Transaction) -> bool:
            from .metadata.store import MetadataKeys, MetadataWriter

            started = time.monotonic()
            w = work.load(tr)
            cursor = fdbtuple.unpack(w.cursor) if w.cursor else (b"", b"")
            position, inner = cursor[0], cursor[1]
            budget = CHUNK_ITEMS
            objects = PURGE_TABLES_PER_CHUNK
            paths: list[str] = []
            done = False
            if path.directory.name == "tableId":
                got, nxt, used = _purge_table_step(ms, tr, path, inner, budget, bool(detail.get("shared")))
                paths.extend(got)
                position, inner, done = b"", nxt or b"", nxt is None
                w.done += used
            else:
                while budget > 0 and objects > 0 and time.monotonic() - started < CHUNK_SECONDS:
                    objects -= 1
                    items = _chunk_ids(ms, tr, path, position, 1, dropped=True)
                    if not items:
                        done = True
                        break
                    pos, oid, obj = items[0]
                    if obj.directory.name == "tableId":
                        got, nxt, used = _purge_table_step(ms, tr, obj, inner, budget, False)
                        paths.extend(got)
                        budget -= used
                        if nxt is not None:
                            inner = nxt
                            break
                    elif obj.directory.name == "viewId":
                        from .metadata import sync as metadata_sync

                        metadata_sync.on_purge(ms, tr, obj)
                        tr.clear_range(*obj.range())
                        budget -= 1
                    else:  # a database: its own keys go with the catalog's range at the end
                        MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog").purge(oid)
                        budget -= 1
                    position, inner = pos, b""
                    w.done += 1
            w.cursor = fdbtuple.pack((position, inner))
            work.save(tr, w)
            return not done, paths

        more, paths = ms.db.run(chunk)
        found.extend(paths)
        if not more:
            break

    def finish(tr: Transaction) -> None:
        from .metadata.store import MetadataKeys, MetadataWriter

        work.load(tr)
        if path is not None:
            if path.directory.name != "tableId":
                MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog").purge(path.value)
                tr.clear_range(*path.range())
            ms.change_feed.record_removal(tr, kind=detail.get("kind", "catalog"), name=r.object,
                                          object_id=path.value, version=r.version,
                                          operation=detail.get("operation", "PURGE"), change=rec.ChangeEvent.PURGED)
        work.store.delete(tr, (work.op,))

    ms.db.run(finish)
    _paths(ms).extend(found)


def _give_paths(out: list[str], paths: list[str]) -> None:
    out.extend(paths)


def run_after(ms: "Metastore", *, background: bool = False) -> list[str]:
    """The chunked work the last transaction deferred (:func:`defer_unindex`, :func:`defer_purge`),
    run now; returns the data paths purging found (for the caller to delete). ``background``:
    search-index work runs in a daemon thread instead (a long-lived process: the Spark bridge);
    if the process ends first it stays pending, finished by ``ushas repair --pending``."""
    import threading

    ops = list(_after(ms))
    del _after(ms)[:]
    del _paths(ms)[:]
    later: list[uuid.UUID] = []
    for op in ops:
        if background:
            r = ms.db.run(lambda tr: work_store(ms.project_path).load(tr, (op,)))
            if r is not None and r.kind == "UNINDEX":
                later.append(op)
                continue
        _resume(ms, op)
    paths = list(_paths(ms))
    del _paths(ms)[:]
    if later:
        def finish() -> None:
            for op in later:
                try:
                    _resume(ms, op)
                except Exception:  # noqa: BLE001 - left pending: ushas repair --pending finishes it
                    return

        threading.Thread(target=finish, name="ushas-bulk-unindex", daemon=True).start()
    return paths


def has_after(ms: "Metastore") -> bool:
    return bool(_AFTER.get(ms))


__all__ = ["BULK_AT", "CHUNK_ITEMS", "PendingWork", "add_partitions", "drop_partitions", "finish_pending",
           "pending_work", "visible", "visible_raw", "check_no_pending", "owner_alive", "run_after"]
