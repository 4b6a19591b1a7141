"""A CTAS / RTAS bigger than one transaction (a partitioned one whose one-transaction commit did not fit: tens of
thousands of partitions), atomic for readers like the small one (:mod:`ushas_catalog.spark.staged`).

The new table is staged **hidden**: its partitions are written in chunks (:func:`ushas_catalog.bulk.stage_writes`,
``added_version = 2``) under a table id of its own, ``Layout.table(database, id)``, that no name points to, so
no surface reaches them (a reader resolves names; listings, search, system tables and the change feed
read names and commits, and nothing is committed). The work is recorded as pending work of kind ``CTAS``
(object: the table's name, object key: the hidden table's path, detail: the write id).

The publish is ONE transaction (the caller's, :func:`publish`): the table that the name holds is dropped as
``DROP TABLE`` drops it (an RTAS), the table is created at the hidden id with every check of a create
(:func:`ushas_catalog.catalog.tables.creating_at`: version 1, CREATE TABLE), the staged write is committed
as version 2 with the write's fence, and the pending work record goes. Before it the name does not
resolve (or resolves to the old table); after it the table is there with every partition.

A crash (or an error) before the publish rolls back (:func:`_roll_back`: ``ushas repair --pending``, the
next CTAS of the name, or the failing call itself): the hidden table's keys are cleared and, when its
process died, the write is recorded ABORTED, so ``ushas purge`` deletes the files its staged entry names
(:mod:`ushas_catalog.data.staged`). Nothing follows a publish: a crash after it leaves the table whole.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from . import records as rec
from .bulk import TableAt, publish_write, stage_writes
from .bulk_work import CHUNK_ITEMS, CHUNKERS, Work, new_work, owner_alive, rollback_quietly, table_path, work_store
from .keyspace.layout import Layout
from .kv import Transaction
from .model.names import TableName
from .model.objects import MutationResult
from .model.partitions import Partition, PartitionScheme
from .model.schema import parse_schema
from .records.store import RecordStore

Metastore = Any

#: the pending work kind of a hidden CTAS
CTAS = "CTAS"
#: the version the staged write commits as (1 is the table's CREATE TABLE)
WRITE_VERSION = 2


@dataclass
class StagedTable:
    """A hidden CTAS table: its pending work, where its partitions are and how many."""

    work: Work
    at: TableAt
    table_id: uuid.UUID
    added: int


def stage(ms: "Metastore", name: TableName, schema: Any, partition_by: Sequence[str], location: str,
          items: Sequence[Partition], write_id: str | None) -> StagedTable:
    """Write ``items`` (the partitions the CTAS produced) as the partitions of a hidden new table of
    ``name``'s database, in chunks. A dead CTAS of the same name is rolled back first. On an error what
    was staged is rolled back (the write is not ended: its caller may abort or retry it)."""
    finish_dead(ms, name)
    scheme = PartitionScheme.of(parse_schema(schema), list(partition_by))
    op, tid = uuid.uuid4(), uuid.uuid4()
    work = Work(ms, op)
    detail = {"write_id": write_id} if write_id else {}

    def begin(tr: Transaction) -> Any:
        db = ms.resolver.database(tr, name.database_name, load=False)
        path = Layout.table(db.path, tid)
        work.store.save(tr, (op,), new_work(CTAS, str(name), path.key(), WRITE_VERSION, len(items), detail), new=True)
        return path

    path = ms.db.run(begin)
    at = TableAt(name, path, scheme, rec.TableStorage(location=location), WRITE_VERSION)
    try:
        added, _, _ = stage_writes(ms, work, at, items)
    except BaseException:
        roll_back(ms, StagedTable(work, at, tid, 0))
        raise
    return StagedTable(work, at, tid, added)


def publish(m: "Metastore", staged: StagedTable, detail: Mapping[str, Any]) -> MutationResult:
    """In the publish transaction (``m``: a metastore joined to it), after the table was created at
    ``staged.table_id``: commit the staged write as its version 2 (the caller fences it) and end the work."""
    return m.db.run(lambda tr: publish_write(m, staged.work, staged.at, tr, "APPEND", staged.added, 0, 0, None,
                                             detail))


def roll_back(ms: "Metastore", staged: StagedTable) -> None:
    """Undo a staging from the call that staged it (it failed, or its publish did): the write is not
    ended here (the caller aborts it, removing its files, or retries it)."""
    def forget(tr: Transaction) -> None:
        w = staged.work.load(tr)
        w.detail_json = "{}"
        staged.work.save(tr, w)

    try:
        ms.db.run(forget)
    except Exception:  # noqa: BLE001 - gone or taken over: whoever has it decides
        pass
    rollback_quietly(ms, staged.work.op)


def finish_dead(ms: "Metastore", name: TableName) -> None:
    """Roll back the CTAS works of ``name`` whose process died (the next CTAS of a name meets them)."""
    store = work_store(ms.project_path)
    dead = ms.db.run(lambda tr: [r.key[0] for r in store.scan(tr) if r.record.kind == CTAS
                                 and r.record.object == str(name)
                                 and not owner_alive(r.record.owner, r.record.heartbeat_micros)])
    for op in dead:
        rollback_quietly(ms, op)


def _roll_back(ms: "Metastore", work: Work, r: rec.PendingWork) -> None:
    """The chunker of a CTAS work (only ever rolled back: its publish removes the record): when its
    process died, the write is recorded ABORTED (``ushas purge`` then deletes its files); the hidden
    table's keys are cleared in chunks, unless a table record is there (published: nothing to undo)."""
    path = table_path(ms, r.object_key)
    write_id = json.loads(r.detail_json or "{}").get("write_id")
    if write_id:
        from .data.write_fence import abort_write

        abort_write(ms, write_id, "its CTAS was interrupted (the committing process died) and rolled back", r.object)
    while path is not None:
        begin, end = path.range()

        def chunk(tr: Transaction) -> bool:
            work.load(tr)
            if RecordStore.at(path.add("TableReference")).load(tr, ()) is not None:
                return False
            keys = [kv.key for kv in tr.get_range(begin, end, limit=CHUNK_ITEMS)]
            if keys:
                tr.clear_range(begin, keys[-1] + b"\x00")
            work.save(tr, work.load(tr))
            return len(keys) == CHUNK_ITEMS

        if not ms.db.run(chunk):
            break

    def finish(tr: Transaction) -> None:
        work.load(tr)
        work.store.delete(tr, (work.op,))

    ms.db.run(finish)


CHUNKERS[CTAS] = _roll_back

__all__ = ["CTAS", "StagedTable", "WRITE_VERSION", "finish_dead", "publish", "roll_back", "stage"]
