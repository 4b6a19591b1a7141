"""Durable pending work: the record of an operation bigger than one transaction (``PendingWork``
subspace: kind, object, state, cursor, owner and heartbeat), who owns it, resuming it after a crash
(``ushas repair --pending``, or the next write that meets it) and the work a transaction deferred to run
after it. The operations themselves are :mod:`ushas_catalog.bulk` (partitions) and
:mod:`ushas_catalog.bulk_objects` (big drops and purges); each registers how its kind of work goes on
(:data:`CHUNKERS`). The limits every chunk keeps are here, so tests can shrink them in one place."""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


from . import records as rec
from .errors import (Conflict, InvalidArgument, UshasError)
from .keyspace.layout import PENDING_WORK
from .keyspace.tree import KeySpacePath
from .kv import Transaction
from .model.objects import micros_to_datetime
from .records.store import RecordStore

#: the facade (:class:`ushas_catalog.metastore.Metastore`), which wires this module in as ``Metastore.big``:
#: not imported here, so the two do not import each other
Metastore = Any

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


def now_micros() -> int:
    return time.time_ns() // 1000


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_TOKEN}"


def owner_alive(owner: str, heartbeat_micros: int) -> bool:
    """Whether the process that runs an operation still does: on this host, its pid exists (a
    pid reused by another process keeps it "alive" until the heartbeat is stale); elsewhere, its
    last chunk is younger than :data:`STALE_AFTER_S`."""
    if owner == owner_id():
        return True
    stale = now_micros() - heartbeat_micros > STALE_AFTER_S * 1_000_000
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
    kind: str            # ADD PARTITIONS, DROP PARTITIONS, WRITE, CTAS, UNINDEX, PURGE
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


def pending_of(op: uuid.UUID, r: rec.PendingWork) -> PendingWork:
    return PendingWork(str(op), r.kind, r.object, rec.PendingWork.State.Name(r.state), r.done, r.total, r.owner,
                       owner_alive(r.owner, r.heartbeat_micros), micros_to_datetime(r.started_micros))


def pending_work(ms: "Metastore") -> list[PendingWork]:
    """The unfinished operations of ``ms``'s project (what ``ushas check`` reports)."""
    store = work_store(ms.project_path)
    return ms.db.run(lambda tr: [pending_of(r.key[0], r.record) for r in store.scan(tr)])


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
        del after_paths(ms)[:]
        if resume(ms, uuid.UUID(w.operation_id)):
            done.append(w)
        if data_paths is not None:
            data_paths.extend(after_paths(ms))
        del after_paths(ms)[:]
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
        resume(ms, op)
    return cleared


# ---- the work record -------------------------------------------------------------------------
class Work:
    """One operation's work record, owned by this process."""

    def __init__(self, ms: "Metastore", op: uuid.UUID) -> None:
        self.ms = ms
        self.op = op
        self.store = work_store(ms.project_path)
        self.owner = owner_id()

    def load(self, tr: Transaction) -> rec.PendingWork:
        """The record, checked to be still ours (else :class:`Conflict`: another process took over)."""
        r = self.store.load(tr, (self.op,))
        if r is None or r.owner != self.owner:
            raise Conflict(f"operation {self.op} was finished or taken over by another process "
                           f"({r.owner if r is not None else 'gone'})", operation_id=str(self.op))
        return r

    def save(self, tr: Transaction, r: rec.PendingWork) -> None:
        r.heartbeat_micros = now_micros()
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


def new_work(kind: str, obj: str, key: bytes, version: int = 0, total: int = 0,
              detail: Mapping[str, Any] | None = None) -> rec.PendingWork:
    now = now_micros()
    return rec.PendingWork(kind=kind, state=rec.PendingWork.STAGING, object=obj, object_key=key, version=version,
                           total=total, owner=owner_id(), heartbeat_micros=now, started_micros=now,
                           detail_json=json.dumps(dict(detail or {}), separators=(",", ":")))


# ---- partition operations --------------------------------------------------------------------

#: how each kind of pending work goes on from its record: ``kind -> fn(ms, work, record)``, registered by
#: the modules that start such work (:mod:`ushas_catalog.bulk`, :mod:`ushas_catalog.bulk_objects`)
CHUNKERS: dict[str, Callable[["Metastore", "Work", rec.PendingWork], None]] = {}


def unlist(ref: rec.TableReference, op: uuid.UUID) -> None:
    keep = [o for o in ref.pending_operations if o != op.bytes]
    del ref.pending_operations[:]
    ref.pending_operations.extend(keep)


def rollback_quietly(ms: "Metastore", op: uuid.UUID) -> None:
    try:
        resume(ms, op, rollback=True)
    except UshasError:  # left pending: ushas repair --pending (or the next write) finishes it
        pass


# ---- resuming -------------------------------------------------------------------------------
def resume(ms: "Metastore", op: uuid.UUID, work: Work | None = None, *, rollback: bool = False) -> bool:
    """Run operation ``op`` to its end from its recorded state: roll back what was staged
    (STAGING, ROLLING_BACK), or finish what was published. Returns False if it was gone."""
    work = work or Work(ms, op)
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
    go_on = CHUNKERS.get(r.kind)
    if go_on is None:  # pragma: no cover - a newer version's work
        raise InvalidArgument(f"pending operation {op} has an unknown kind {r.kind!r}")
    go_on(ms, work, r)
    return True



def table_path(ms: "Metastore", key: bytes) -> KeySpacePath | None:
    try:
        resolved = ms.layout.keyspace.parse(key)
    except Exception:  # noqa: BLE001
        return None
    return resolved.path



_AFTER: "weakref.WeakKeyDictionary[Any, list[uuid.UUID]]" = weakref.WeakKeyDictionary()
_PATHS: "weakref.WeakKeyDictionary[Any, list[str]]" = weakref.WeakKeyDictionary()


def after_ops(ms: "Metastore") -> list[uuid.UUID]:
    return _AFTER.setdefault(ms, [])


def after_paths(ms: "Metastore") -> list[str]:
    return _PATHS.setdefault(ms, [])


def published(r: rec.PendingWork) -> rec.PendingWork:
    r.state = rec.PendingWork.PUBLISHED
    return r


def give_paths(out: list[str], paths: list[str]) -> None:
    out.extend(paths)


def run_after(ms: "Metastore", *, background: bool = False) -> list[str]:
    """The chunked work the last transaction deferred (:func:`defer_unindex`, :func:`defer_purge`),
    run now; returns the data paths purging found (for the caller to delete). ``background``:
    search-index work runs in a daemon thread instead (a long-lived process: the Spark bridge);
    if the process ends first it stays pending, finished by ``ushas repair --pending``."""
    import threading

    ops = list(after_ops(ms))
    del after_ops(ms)[:]
    del after_paths(ms)[:]
    later: list[uuid.UUID] = []
    for op in ops:
        if background:
            r = ms.db.run(lambda tr: work_store(ms.project_path).load(tr, (op,)))
            if r is not None and r.kind == "UNINDEX":
                later.append(op)
                continue
        resume(ms, op)
    paths = list(after_paths(ms))
    del after_paths(ms)[:]
    if later:
        def finish() -> None:
            for op in later:
                try:
                    resume(ms, op)
                except Exception:  # noqa: BLE001 - left pending: ushas repair --pending finishes it
                    return

        threading.Thread(target=finish, name="ushas-bulk-unindex", daemon=True).start()
    return paths


def has_after(ms: "Metastore") -> bool:
    return bool(_AFTER.get(ms))

