"""Streaming writers: the last micro-batch each streaming query committed into each table.

A micro-batch of a Structured Streaming query writing into a table (``writeStream.toTable``) is one
fenced write whose commit carries the query id (Spark's persistent ``id``, kept in the checkpoint)
and the batch id (Spark's epoch id) in its commit detail. :func:`record` — a commit-hook subscriber,
so it runs inside the commit's own transaction — keeps, per (table id, query id), the last batch
committed; a commit of a batch at or below it is refused in that transaction
(:class:`~ushas_catalog.errors.WriteConflict`), so a batch commits at most once whatever happens to
the driver. A batch that Spark runs again after a restart (its commit log did not have it yet) is
answered "committed before" by :func:`committed_before` before anything is planned, and the shim
takes the re-run's files back out: exactly once, with the checkpoint.

Stored under ``StreamProgress/(tableId, queryId)`` as JSON (``ushas keyspace``); listed by
``ushas.system.streams`` and ``ushas streams``.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from typing import Any

import fdb.tuple as fdbtuple

from ..errors import InvalidArgument, WriteConflict
from ..keyspace.layout import QUERY_ID, STREAM_PROGRESS, TABLE_ID
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction

#: the longest query id accepted (Spark's are 36-character UUIDs)
MAX_QUERY_ID = 200


@dataclass(frozen=True)
class StreamBatch:
    """A micro-batch's identity: its query's id and its batch (epoch) id."""

    query_id: str
    batch_id: int

    @classmethod
    def of(cls, request: dict[str, Any]) -> "StreamBatch | None":
        """The micro-batch a write request names (None: not a streaming write); bad values are
        :class:`InvalidArgument`."""
        query_id, batch_id = request.get("query_id"), request.get("batch_id")
        if query_id is None and batch_id is None:
            return None
        if not isinstance(query_id, str) or not query_id or len(query_id) > MAX_QUERY_ID \
                or not query_id.isprintable() or query_id != query_id.strip():
            raise InvalidArgument(f"invalid streaming query id {query_id!r}: expected a non-empty printable "
                                  f"string of at most {MAX_QUERY_ID} characters (Spark's are UUIDs)")
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or not 0 <= batch_id < 2 ** 62:
            raise InvalidArgument(f"invalid micro-batch id {batch_id!r}: expected a non-negative integer")
        return cls(query_id, batch_id)

    def detail(self) -> dict[str, Any]:
        """What the batch's commit records in its detail (``history`` shows it)."""
        return {"query_id": self.query_id, "batch_id": self.batch_id}


@dataclass(frozen=True)
class StreamProgress:
    """What a streaming query committed into a table: its last batch, the table version that batch
    made, when, by whom, and how many batches it committed."""

    table_id: str
    table: str
    query_id: str
    last_batch: int
    version: int
    time_micros: int
    user: str
    batches: int
    first_time_micros: int
    operation: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _path(project: KeySpacePath, table_id: uuid.UUID, query_id: str) -> KeySpacePath:
    return project.add(STREAM_PROGRESS).add(TABLE_ID, table_id).add(QUERY_ID, query_id)


def _decode(value: bytes, table_id: uuid.UUID, query_id: str) -> StreamProgress:
    d = json.loads(value)
    return StreamProgress(str(table_id), d.get("table", ""), query_id, int(d["last_batch"]), int(d["version"]),
                          int(d["time_micros"]), d.get("user", ""), int(d.get("batches", 1)),
                          int(d.get("first_time_micros", d["time_micros"])), d.get("operation", ""))


def load(tr: Transaction, project: KeySpacePath, table_id: uuid.UUID, query_id: str) -> StreamProgress | None:
    value = tr.get(_path(project, table_id, query_id).key())
    return None if value is None else _decode(value, table_id, query_id)


def record(tr: Transaction, project: KeySpacePath, m: Any, user: str | None) -> None:
    """Commit-hook subscriber: a table commit whose detail names a micro-batch records it as its
    query's last batch, refusing (the whole commit) a batch that is not after the last one."""
    detail = m.detail or {}
    if m.kind != "table" or "query_id" not in detail:
        return
    batch = StreamBatch.of(detail)
    if batch is None:
        return
    table_id = m.path.value
    before = load(tr, project, table_id, batch.query_id)
    if before is not None and batch.batch_id <= before.last_batch:
        raise WriteConflict(f"micro-batch {batch.batch_id} of streaming query {batch.query_id} into {m.name} was "
                            f"not committed: the query already committed batch {before.last_batch}", table=m.name)
    value = {"table": m.name, "last_batch": batch.batch_id, "version": m.version, "time_micros": m.time_micros,
             "user": user or "", "batches": (before.batches if before else 0) + 1,
             "first_time_micros": before.first_time_micros if before else m.time_micros,
             "operation": m.operation}
    tr.set(_path(project, table_id, batch.query_id).key(), json.dumps(value).encode())


def committed_before(tr: Transaction, project: KeySpacePath, table_id: uuid.UUID,
                     batch: StreamBatch) -> StreamProgress | None:
    """The query's progress when ``batch`` is already committed (a re-run), else None."""
    before = load(tr, project, table_id, batch.query_id)
    return before if before is not None and batch.batch_id <= before.last_batch else None


def list_progress(tr: Transaction, project: KeySpacePath, table_id: uuid.UUID | None = None) -> list[StreamProgress]:
    """Every streaming query's progress in the project (or into one table), by table id and query id."""
    base = project.add(STREAM_PROGRESS)
    if table_id is not None:
        base = base.add(TABLE_ID, table_id)
    begin, end = base.range()
    prefix = len(project.add(STREAM_PROGRESS).key())
    out = []
    for kv in tr.get_range(begin, end):
        table, query = fdbtuple.unpack(kv.key[prefix:])
        out.append(_decode(kv.value, table, query))
    return out


def on_purge(tr: Transaction, project: KeySpacePath, path: KeySpacePath) -> None:
    """Commit-hook subscriber (``on_purge``): a purged table's streaming progress goes with it."""
    if path.directory.name == TABLE_ID and isinstance(path.value, uuid.UUID):
        forget(tr, project, path.value)


def forget(tr: Transaction, project: KeySpacePath, table_id: uuid.UUID, query_id: str | None = None) -> None:
    """Removes a query's progress (or every query's, into a table): its next batch may commit any id."""
    base = project.add(STREAM_PROGRESS).add(TABLE_ID, table_id)
    if query_id is not None:
        tr.clear(base.add(QUERY_ID, query_id).key())
    else:
        tr.clear_range(*base.range())
