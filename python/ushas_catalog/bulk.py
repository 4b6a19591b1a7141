"""Operations bigger than one transaction, done the FoundationDB way.

The protocol (pending work records, owners, resuming) is :mod:`ushas_catalog.bulk_work`; the big drops
and purges are :mod:`ushas_catalog.bulk_objects`; reading and writing partition records in bulk is
:mod:`ushas_catalog.bulk_records`; this module holds the partition operations and is what
``Metastore.big`` is (every call of :class:`~ushas_catalog.catalog.visibility.BigOperations`). It sits above :mod:`ushas_catalog.metadata` (it also un-indexes and re-indexes in chunks), so the catalog
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

Writes (:func:`replace_partitions`: a Spark write's commit of more than :data:`WRITE_BULK_AT`
partitions, or one that did not fit one transaction) go the same way, with one more kind of staged
record: a partition the write replaces (an overwrite, an append into an existing partition) is
written at version ``v`` carrying the record it replaces (``replaced``), which readers of an older
version see (:func:`~ushas_catalog.catalog.visibility.as_of`); its cleanup drops that copy, its
rollback puts it back. The publish transaction is the write's fenced commit
(:mod:`ushas_catalog.data.write_fence`): a retry of the same write applies nothing twice.

Size (over 600 lines): the partition operations share the begin / stage / publish / chunk walk and
their record helpers; the writes are the third user of them, kept beside the other two.

Catalog and database drops (``DROP ... CASCADE`` of more than :data:`BULK_AT` objects): the
drop itself (name freed, the object hidden) is one transaction; taking the objects in it out of
the search index is chunked work (``UNINDEX``). Purging such an object (``purge``, ``drop …
purge``) removes its dropped name in one transaction (nothing of it is reachable any more) and
deletes its tables in chunks (``PURGE``).
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import fdb.tuple as fdbtuple

from . import records as rec
from .bulk_objects import big_object, defer_purge, defer_unindex, many_objects  # noqa: F401 - Metastore.big
from .bulk_work import (BULK_AT, CHUNK_BYTES, CHUNK_ITEMS, CHUNKERS, PendingWork, Work, after_ops,  # noqa: F401
                        finish_for, finish_pending, has_after, new_work, now_micros, owner_alive, pending_work,
                        resume, rollback_quietly, run_after, table_path, unlist, work_store)
from .catalog.partition_appends import byte_count, file_count
from .catalog.resolver import ResolvedTable
from .catalog.visibility import TooBig, bulk_pending, check_no_pending, visible, visible_raw  # noqa: F401 - the readers' side, shown here too
from .errors import Conflict, FilesNotRecorded, InvalidArgument, NoSuchPartition, PartitionAlreadyExists
from .keyspace.tree import KeySpacePath
from .kv import Transaction
from .model.names import TableName
from .model.objects import MutationResult
from .model.partitions import Partition, PartitionScheme
from .bulk_records import existing as _existing, put as _put, remove as _remove
from .bulk_records import size as _size, values as _values
from .records.store import Joined, RecordStore

#: the facade (:class:`ushas_catalog.metastore.Metastore`), which wires this module in as ``Metastore.big``:
#: not imported here, so the two do not import each other
Metastore = Any


@dataclass
class TableAt:
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
           detail: Mapping[str, Any]) -> tuple[Work, TableAt]:
    op = uuid.uuid4()
    work = Work(ms, op)

    def fn(tr: Transaction) -> TableAt:
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
        work.store.save(tr, (op,), new_work(kind, str(tn), t.path.key(), v, total, detail), new=True)
        return TableAt(tn, t.path, scheme, storage, v)

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
        rollback_quietly(ms, work.op)
        raise


def _stage_adds(ms: "Metastore", work: Work, t: TableAt, items: Sequence[Partition],
                if_not_exists: bool) -> tuple[int, int]:
    scheme, store, history = t.scheme, t.partitions(), t.history()
    version_prefix = fdbtuple.pack((t.version,))
    added_change = rec.PartitionChange(action=rec.PartitionChange.ADDED).SerializeToString()
    seen: set[bytes] = set()
    added = skipped = 0
    position = 0
    while position < len(items):
        batch = items[position:position + CHUNK_ITEMS]
        now = now_micros()
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


def drop_partitions(ms: "Metastore", tn: TableName, specs: Sequence[Mapping[str, Any]], if_exists: bool,
                    expected_version: int | None, release_data: bool) -> MutationResult:
    """``Metastore.drop_partitions`` too big for one transaction: marked in chunks, published in one
    transaction, the marked keys deleted in chunks after (see the module docstring)."""
    work, t = _begin(ms, tn, "DROP PARTITIONS", expected_version, 0, {"release_data": release_data})
    try:
        dropped, missing = _mark_drops(ms, work, t, specs, if_exists)
        if not dropped:
            rollback_quietly(ms, work.op)
            return MutationResult(None, skipped=missing)
        result = _publish(ms, work, t, "DROP PARTITIONS", {"dropped": dropped},
                          MutationResult(t.version, dropped=dropped, skipped=missing))
    except BaseException:
        rollback_quietly(ms, work.op)
        raise
    resume(ms, work.op, work)  # the cleanup chunks
    return result


def _mark_drops(ms: "Metastore", work: Work, t: TableAt, specs: Sequence[Mapping[str, Any]],
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
                    data = sr.record.SerializeToString(deterministic=True)
                    marks[fdbtuple.pack(sr.key)] = Joined(data) if sr.joined else data
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
                _put(tr, store, packed, marked, _size(data))
                tr.set(history.prefix + version_prefix + packed,
                       rec.PartitionChange(action=rec.PartitionChange.DROPPED, previous=old).SerializeToString())
            w.done += len(marks)
            work.save(tr, w)
            return len(marks), miss, i, at

        n, miss, index, resume_at = ms.db.run(chunk)
        dropped += n
        missing += miss
    return dropped, missing



def _live_at(ms: "Metastore", tr: Transaction, t: TableAt, operation: str,
             work: Work) -> tuple[ResolvedTable, rec.TableReference]:
    """The table a staged operation publishes into, still the one it staged at the version before its own,
    and a copy of its reference to update (a Conflict otherwise: the table is blocked while it runs)."""
    live = ms.resolver.table(tr, t.name)
    if live.path.key() != t.path.key() or live.ref.version != t.version - 1:  # pragma: no cover - blocked
        raise Conflict(f"table {t.name} changed during {operation} (operation {work.op})", table=str(t.name))
    ref = rec.TableReference()
    ref.CopyFrom(live.ref)
    return live, ref


def _publish(ms: "Metastore", work: Work, t: TableAt, operation: str, counts: Mapping[str, int],
             result: MutationResult) -> MutationResult:
    """The one transaction that makes a staged partition operation visible (its commit)."""
    from .catalog.commits import Mutation

    def fn(tr: Transaction) -> MutationResult:
        w = work.load(tr)
        live, ref = _live_at(ms, tr, t, operation, work)
        if result.version is None:  # nothing to commit (every partition skipped)
            unlist(ref, work.op)
            live.store("TableReference").save(tr, (), ref)
            work.store.delete(tr, (work.op,))
            return result
        if operation == "ADD PARTITIONS":  # nothing left to do after the commit
            unlist(ref, work.op)
            work.store.delete(tr, (work.op,))
        else:
            w.state = rec.PendingWork.PUBLISHED
            w.cursor = b""
            w.total, w.done = counts.get("dropped", 0), 0
            work.save(tr, w)
        ms.commit(tr, Mutation("table", str(t.name), t.path, operation, t.version, ref, time_micros=now_micros(),
                                changed=("TablePartition",),
                                detail={**counts, "operation_id": str(work.op), "bulk": True},
                                partition_scheme=t.scheme))
        return result

    return ms.run(fn)




# ---- a write bigger than one transaction ----------------------------------------------------------
#: a write (:meth:`Metastore.replace_partitions`: a Spark write's commit) putting or dropping more partitions
#: than this is staged in chunks and published in one transaction (smaller: one transaction; one that
#: still does not fit falls back to chunks too)
WRITE_BULK_AT = 5_000
#: partitions per staging chunk of a write (well under the 5 s of a transaction on a loaded machine)
WRITE_CHUNK = 2_000


def replace_partitions(ms: "Metastore", tn: TableName, drop_specs: Sequence[Mapping[str, Any]],
                       items: Sequence[Partition], *, expected_version: int | None, garbage: Any,
                       operation: str, unchanged_since: int | None, detail: Mapping[str, Any],
                       fence: Any, append: bool = False) -> MutationResult:
    """``Metastore.replace_partitions`` (a write's commit: append, overwrite) too big for one transaction,
    all-or-nothing for readers: the table's next version ``v`` is reserved (*begin*); the partitions
    ``drop_specs`` match are marked ``dropped_version = v`` and each partition of ``items`` is written
    with ``added_version = v`` — over an existing one, carrying it as ``replaced``, which readers of an
    older version go on seeing — in chunks (*staging*); one transaction commits version ``v``, the
    write's fence and its garbage (*publish*); cleanup chunks then delete the dropped keys and the
    ``replaced`` copies. A crash before publish leaves staged records no reader sees, rolled back by
    ``ushas repair --pending`` (or the next write of the table), which also ends the fenced write
    (ABORTED) and hands its files to purge. ``append``: ``items`` carry only the files the write added
    (``replace_partitions(append=True)``): a partition that exists gets them added to its whole file list
    (staging rewrites it whole anyway); :class:`~ushas_catalog.errors.FilesNotRecorded`, nothing staged
    left, when its files are not recorded."""
    from .data.write_fence import Writer, check_fence, run_fenced

    done = check_fence(ms, fence, str(tn))
    if done is not None:  # a retry of a write that committed: its answer, nothing applied again
        a = done.answer or {}
        return MutationResult(a.get("version"), added=a.get("added", 0), dropped=a.get("dropped", 0),
                              replaced=a.get("replaced", 0))
    work_detail = {"operation": operation}
    if fence is not None:
        work_detail["write_id"] = fence.write_id
    work, t = _begin(ms, tn, "WRITE", expected_version, len(items) + len(drop_specs), work_detail)
    try:
        if unchanged_since is not None:
            ms.db.run(lambda tr: _check_unchanged_since(tr, t, unchanged_since, items, drop_specs))
        puts: set[tuple[Any, ...]] = set()
        for p in items:
            key = t.scheme.key(p.values)
            if key in puts:
                raise InvalidArgument(f"partition {_spec_text(t.scheme, key)} is given twice")
            puts.add(key)
        drops = [s for s in drop_specs if (sel := t.scheme.selection(s))[1] or len(sel[0]) != len(t.scheme.columns)
                 or sel[0] not in puts]  # a partition both dropped and written is replaced: not marked first
        marked = _mark_drops(ms, work, t, drops, True)[0] if drops else 0
        added, replaced, kept = stage_writes(ms, work, t, items, append)
        dropped = marked - kept
        ran: list[bool] = []

        def attempt(fn: Any) -> Any:
            def each(tr: Transaction) -> Any:
                ran.clear()
                return fn(tr)
            return ms.run(each)

        late = _garbage_count(garbage) > GARBAGE_IN_PUBLISH  # recorded in chunks: before the publish, bound
        if late and fence is not None:                        # to the write; unfenced, after it
            _record_bound_garbage(ms, work, t, operation, garbage, fence.write_id)

        def publish(tr: Transaction) -> MutationResult:
            result = publish_write(ms, work, t, tr, operation, added, replaced, dropped, None if late else garbage,
                                    detail)
            ran.append(True)
            return result

        result = run_fenced(attempt, ms.project_path, fence, str(tn), publish, lambda r: (r.to_json(), r.version),
                            lambda a: MutationResult(a.get("version"), added=a.get("added", 0),
                                                     dropped=a.get("dropped", 0), replaced=a.get("replaced", 0)),
                            Writer.of(ms))
    except BaseException:
        _rollback_in_call(ms, work)
        raise
    if not ran:  # another attempt of this fenced write committed first: this one's staging is undone
        _rollback_in_call(ms, work)
        return result
    if late and fence is None:
        _record_late_garbage(ms, t, operation, garbage)
    if replaced or marked:
        try:
            resume(ms, work.op, work)  # the cleanup chunks
        except Exception as e:  # noqa: BLE001 - committed: left pending, ushas repair --pending finishes it
            import logging

            logging.getLogger(__name__).warning("cleanup of write %s left pending: %s", work.op, e)
    return result


#: a write's garbage of more files and directories than this is recorded outside its publishing transaction, in
#: transactions of this many (~100 bytes a path: 100,000 replaced files alone would pass the 10 MB limit): a
#: fenced write's before its publish, in entries bound to its write id (garbage once it is COMMITTED, forgotten
#: once it is ABORTED: :mod:`ushas_catalog.data.garbage`); an unfenced one's after it (a crash between the two
#: leaves those files unrecorded: kept, never deleted by purge)
GARBAGE_IN_PUBLISH = 20_000


def _garbage_count(garbage: Any) -> int:
    return len(garbage.files) + len(garbage.directories) if garbage else 0


def _record_late_garbage(ms: "Metastore", t: TableAt, operation: str, garbage: Any) -> None:
    from .data.garbage import Garbage, record_garbage

    now, n = now_micros(), GARBAGE_IN_PUBLISH
    for i in range(0, max(len(garbage.files), len(garbage.directories)), n):
        part = Garbage(files=garbage.files[i:i + n], directories=garbage.directories[i:i + n])
        ms.db.run(lambda tr, part=part: record_garbage(tr, ms.project_path, t.path.value, str(t.name), operation,
                                                       part, now))


def _record_bound_garbage(ms: "Metastore", work: Work, t: TableAt, operation: str, garbage: Any,
                          write_id: str) -> None:
    """A fenced write's garbage, before its publish, in entries bound to its write id, one transaction each;
    their keys (table id, time, ``uuid5(operation id, i)``) are named in the work record
    (``bound_garbage``: time, count) so that a roll-back removes them (:func:`forget_bound_garbage`)."""
    from .data.garbage import Garbage, bound_operation, record_garbage

    now, n = now_micros(), GARBAGE_IN_PUBLISH
    for count, i in enumerate(range(0, max(len(garbage.files), len(garbage.directories)), n), start=1):
        part = Garbage(files=garbage.files[i:i + n], directories=garbage.directories[i:i + n])

        def fn(tr: Transaction, part: Any = part, count: int = count) -> None:
            w = work.load(tr)
            d = json.loads(w.detail_json or "{}")
            d["bound_garbage"] = [now, count]
            w.detail_json = json.dumps(d, separators=(",", ":"))
            work.save(tr, w)
            record_garbage(tr, ms.project_path, t.path.value, str(t.name), bound_operation(operation, write_id),
                           part, now, entry_id=uuid.uuid5(work.op, str(count - 1)))

        ms.db.run(fn)


def forget_bound_garbage(tr: Transaction, ms: "Metastore", op: uuid.UUID, table_id: uuid.UUID,
                         detail: Mapping[str, Any]) -> None:
    """Removes the bound garbage entries a write's work recorded (its staging is rolled back: the write let
    nothing go)."""
    from .data.garbage import delete_garbage

    time_micros, count = detail.get("bound_garbage") or (0, 0)
    for i in range(count):
        delete_garbage(tr, ms.project_path, (table_id, time_micros, uuid.uuid5(op, str(i))))


def _rollback_in_call(ms: "Metastore", work: Work) -> None:
    """Undo a write's staging from the call that staged it: the caller sees the error and may retry the
    same fenced write, so the write is not ended and its files are not handed to purge."""
    def forget(tr: Transaction) -> None:
        w = work.load(tr)
        d = json.loads(w.detail_json or "{}")
        d.pop("write_id", None)
        path = table_path(ms, w.object_key)
        if path is not None:
            forget_bound_garbage(tr, ms, work.op, path.value, d)
        d.pop("bound_garbage", None)
        w.detail_json = json.dumps(d, separators=(",", ":"))
        work.save(tr, w)

    try:
        ms.db.run(forget)
    except Exception:  # noqa: BLE001 - gone or taken over: whoever has it decides
        pass
    rollback_quietly(ms, work.op)


def _check_unchanged_since(tr: Transaction, t: TableAt, since: int, items: Sequence[Partition],
                           drop_specs: Sequence[Mapping[str, Any]]) -> None:
    """:class:`WriteConflict` if a commit after ``since`` (up to the reserved version: nothing else can
    commit now) changed a partition this write puts or drops."""
    from .errors import WriteConflict

    current = t.version - 1
    if current <= since:
        return
    history = t.history()
    puts = {t.scheme.key(p.values) for p in items}
    selections = [t.scheme.selection(s) for s in drop_specs]
    for sr in history.scan(tr, history.prefix_range((since + 1,))[0], history.prefix_range((current,))[1]):
        key = tuple(sr.key[1:])
        if key in puts or any(key[:len(lead)] == lead and all(key[i] == v for i, v in filters.items())
                              for lead, filters in selections):
            raise WriteConflict(f"partition {_spec_text(t.scheme, key)} of {t.name} was changed by another write "
                                f"(version {sr.key[0]}) after this overwrite started (version {since}): "
                                f"the overwrite was not committed", table=str(t.name),
                                partition=t.scheme.spec(key))


def stage_writes(ms: "Metastore", work: Work, t: TableAt, items: Sequence[Partition],
                  append: bool = False) -> tuple[int, int, int]:
    """Write the partitions of a write for version ``t.version``, chunk by chunk: (added, replaced, and of
    those replaced how many this write's drop had marked). ``append``: each item's files are added to the
    partition's (:func:`_appended`)."""
    scheme, store, history = t.scheme, t.partitions(), t.history()
    version_prefix = fdbtuple.pack((t.version,))
    added_change = rec.PartitionChange(action=rec.PartitionChange.ADDED).SerializeToString()
    now = now_micros()
    prepared: list[tuple[bytes, rec.Partition]] = []
    for p in items:  # outside any transaction: encoding is most of the cost
        key = scheme.key(p.values)
        location = p.location if p.location is not None else _default_location(t.storage, scheme, key)
        r = ms.partition_record(p, location, now)
        r.added_version = t.version
        prepared.append((fdbtuple.pack(key), r))
    added = replaced = kept = 0
    position = 0
    while position < len(prepared):
        batch = prepared[position:position + WRITE_CHUNK]

        def chunk(tr: Transaction) -> tuple[int, int, int]:
            w = work.load(tr)
            current = _values(tr, store, [k for k, _ in batch])  # every read before the writes
            a = r = k = 0
            for packed, new in batch:
                data = current.get(packed)
                if data is None:
                    _put(tr, store, packed, new, 0)
                    tr.set(history.prefix + version_prefix + packed, added_change)
                    a += 1
                    continue
                old = rec.Partition.FromString(data)
                if old.dropped_version == t.version:  # this write's drop marked it: replaced instead
                    old.dropped_version = 0
                    k += 1
                if append:
                    staged = _appended(old, new, f"partition {_spec_text(scheme, fdbtuple.unpack(packed))} of {t.name}")
                else:
                    staged = rec.Partition()
                    staged.CopyFrom(new)
                    for tag, value in old.tags.items():  # an overwrite keeps the partition's tags
                        if tag not in staged.tags:
                            staged.tags[tag] = value
                staged.replaced.CopyFrom(old)
                _put(tr, store, packed, staged, _size(data))
                tr.set(history.prefix + version_prefix + packed,
                       rec.PartitionChange(action=rec.PartitionChange.REPLACED, previous=old).SerializeToString())
                r += 1
            w.done += len(batch)
            work.save(tr, w)
            return a, r, k

        a, r, k = ms.db.run(chunk)
        added, replaced, kept = added + a, replaced + r, kept + k
        position += len(batch)
    return added, replaced, kept


def _appended(old: rec.Partition, new: rec.Partition, what: str) -> rec.Partition:
    """The partition ``old`` with the files of ``new`` (an append's record of the files it added) added to its
    file list, counts summed (its rows unknown unless both knew them), staged for ``new.added_version``.
    Appended chunks of ``old`` (:mod:`ushas_catalog.catalog.partition_appends`) are joined in it already:
    the staged record is whole. :class:`FilesNotRecorded` when ``old``'s files are not recorded."""
    if not old.files_recorded:
        raise FilesNotRecorded(f"the files of {what} are not recorded: the write lists its directory")
    out = rec.Partition()
    out.CopyFrom(old)
    out.ClearField("replaced")
    out.dropped_version = 0
    out.added_version = new.added_version
    out.files, out.bytes = file_count(old) + file_count(new), byte_count(old) + byte_count(new)
    if old.HasField("rows") and new.HasField("rows"):
        out.rows = old.rows + new.rows
    else:
        out.ClearField("rows")
    out.data_files.extend(new.data_files)
    return out


def publish_write(ms: "Metastore", work: Work, t: TableAt, tr: Transaction, operation: str, added: int,
                   replaced: int, dropped: int, garbage: Any, detail: Mapping[str, Any]) -> MutationResult:
    """The transaction that commits a staged write (inside its fence)."""
    from .catalog.commits import Mutation
    from .data.garbage import record_garbage

    w = work.load(tr)
    live, ref = _live_at(ms, tr, t, operation, work)
    if replaced or dropped:  # cleanup chunks follow: the dropped keys, the replaced copies
        w.state = rec.PendingWork.PUBLISHED
        w.cursor = b""
        w.total, w.done = replaced + dropped, 0
        work.save(tr, w)
    else:  # only new partitions: nothing left to do after the commit
        unlist(ref, work.op)
        work.store.delete(tr, (work.op,))
    now = now_micros()
    if garbage:
        record_garbage(tr, ms.project_path, t.path.value, str(t.name), operation, garbage, now)
    ms.commit(tr, Mutation("table", str(t.name), t.path, operation, t.version, ref, time_micros=now,
                            changed=("TablePartition",),
                            detail={"added": added, "replaced": replaced, "dropped": dropped, **dict(detail),
                                    "operation_id": str(work.op), "bulk": True},
                            partition_scheme=t.scheme))
    return MutationResult(t.version, added=added, dropped=dropped, replaced=replaced)


def _partition_chunks(ms: "Metastore", work: Work, r: rec.PendingWork) -> None:
    """Roll back (ROLLING_BACK) or finish a drop (PUBLISHED): walk the history entries at the
    operation's version, chunk by chunk; then unlist the operation from the table."""
    path = table_path(ms, r.object_key)
    version = r.version
    rolling_back = r.state == rec.PendingWork.ROLLING_BACK
    detail = json.loads(r.detail_json or "{}")

    def arity_of(tr: Transaction) -> int | None:
        if path is None:
            return None
        schema = RecordStore.at(path.add("TableSchema")).load(tr, ())
        return None if schema is None else len(schema.partition_columns)

    arity = ms.db.run(arity_of)
    release = False  # a fenced write's staging undone after its process died: ended, its files to purge
    if rolling_back and r.kind == "WRITE" and detail.get("write_id"):
        from .data.write_fence import ABORTED, abort_write

        ended = abort_write(ms, detail["write_id"], "its commit was interrupted (the committing process "
                                                    "died) and rolled back", r.object)
        release = ended.state == ABORTED
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
                    staged = rec.Partition.FromString(data) if data is not None else None
                    if staged is None:
                        pass
                    elif change.action == rec.PartitionChange.ADDED:
                        if staged.added_version == version:
                            _remove(tr, key, _size(data))
                            if release:
                                garbage.files.extend(from_records(staged.data_files))
                    elif change.action == rec.PartitionChange.REPLACED and staged.added_version == version:
                        _put(tr, store, packed, change.previous, _size(data))  # a write's: put back
                        if release:
                            kept = {f.path for f in change.previous.data_files}
                            garbage.files.extend(f for f in from_records(staged.data_files) if f.path not in kept)
                    elif staged.dropped_version == version:
                        staged.dropped_version = 0
                        _put(tr, store, packed, staged, _size(data))
                    tr.clear(hkey)
                elif data is not None and change.action == rec.PartitionChange.REPLACED:
                    written = rec.Partition.FromString(data)  # a published write: its replaced copy goes
                    if written.added_version == version and written.HasField("replaced"):
                        written.ClearField("replaced")
                        _put(tr, store, packed, written, _size(data))
                elif data is not None and (gone := rec.Partition.FromString(data)).dropped_version == version:
                    _remove(tr, key, _size(data))
                    if gone.tags:  # its tag index entries go with it
                        unindex(tr, path, fdbtuple.unpack(packed), gone.tags)
                    if detail.get("release_data") and change.HasField("previous"):
                        old = change.previous
                        if old.files_recorded:
                            garbage.files.extend(from_records(old.data_files))
                        elif old.location:
                            garbage.directories.append(old.location)
            if garbage:
                record_garbage(tr, ms.project_path, path.value, r.object,
                               f"ABORTED WRITE {detail.get('write_id')}" if release else "DROP PARTITIONS",
                               garbage, now_micros())
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
        if path is not None and rolling_back:  # a write's garbage recorded before its publish: never let go
            forget_bound_garbage(tr, ms, work.op, path.value, detail)
        if path is not None:
            refs = RecordStore.at(path.add("TableReference"))
            ref = refs.load(tr, ())
            if ref is not None:
                unlist(ref, work.op)
                refs.save(tr, (), ref)
        work.store.delete(tr, (work.op,))

    ms.db.run(finish)




CHUNKERS["ADD PARTITIONS"] = CHUNKERS["DROP PARTITIONS"] = CHUNKERS["WRITE"] = _partition_chunks


__all__ = ["BULK_AT", "CHUNK_ITEMS", "PendingWork", "add_partitions", "drop_partitions", "finish_pending",
           "replace_partitions", "WRITE_BULK_AT",
           "finish_for", "pending_work", "visible", "visible_raw", "check_no_pending", "owner_alive", "run_after",
           "has_after", "big_object", "defer_purge", "defer_unindex", "many_objects", "work_store"]
