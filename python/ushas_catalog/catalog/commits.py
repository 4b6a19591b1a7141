"""The bookkeeping of every mutation (:func:`record_commit`) and the commit hook: a small registry
on each metastore instance through which the layers above (metadata sync, change feed, search
index merges) subscribe to commits, removals and purges, without the catalog importing them."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from google.protobuf.message import Message

from .. import records as rec
from ..keyspace.layout import HEADS
from ..keyspace.tree import KeySpacePath
from ..kv.base import Transaction
from ..model.partitions import PartitionScheme
from ..model.value_limits import check_head
from ..records.store import RecordStore
from .values import now_micros
from .visibility import check_no_pending


@dataclass
class Mutation:
    """One committed change of one object, as :meth:`Metastore._commit` records it."""

    kind: str                 # "catalog", "database", "table", "view", "function", "object"
    name: str                 # the object's qualified name
    path: KeySpacePath        # the object's id path
    operation: str            # "CREATE TABLE", "ADD PARTITIONS", ...
    version: int              # the version this commit makes (previous + 1)
    head: Any                 # the head record holding the version, written by _commit
    detail: dict[str, Any] = field(default_factory=dict)
    previous_head: Any = None  # catalog / database / view: the head before, into *History
    previous: dict[str, Message] = field(default_factory=dict)  # table: {"TableSchema": old, ...}
    changed: tuple[str, ...] = ()
    time_micros: int = field(default_factory=now_micros)
    # partition operations: (partition values, record) added / dropped, for the change feed
    partition_scheme: PartitionScheme | None = None
    added_partitions: Sequence[tuple[tuple[Any, ...], rec.Partition]] = ()
    dropped_partitions: Sequence[tuple[tuple[Any, ...], rec.Partition]] = ()
    partitions_cleared: bool = False  # every partition removed (REPLACE TABLE)



CommitSubscriber = Callable[[Transaction, Mutation], None]
RemovalSubscriber = Callable[..., None]
PurgeSubscriber = Callable[[Transaction, KeySpacePath], None]


class CommitHooks:
    """Subscribers of one metastore instance. ``on_commit(tr, mutation)``: every commit, inside
    its transaction, after the bookkeeping; ``on_removal(tr, kind=, name=, object_id=, version=,
    operation=, change=, before=)``: an object's keys were removed (purge, drop of a view);
    ``on_purge(tr, path)``: before the keys under ``path`` are cleared; ``after_run()``: after a
    transaction of an operation committed (on the caller's thread: subscribers that take time
    hand their work to a background thread)."""

    def __init__(self) -> None:
        self.commit: list[CommitSubscriber] = []
        self.removal: list[RemovalSubscriber] = []
        self.purge: list[PurgeSubscriber] = []
        self.after: list[Callable[[], None]] = []

    def on_commit(self, fn: CommitSubscriber) -> CommitSubscriber:
        self.commit.append(fn)
        return fn

    def on_removal(self, fn: RemovalSubscriber) -> RemovalSubscriber:
        self.removal.append(fn)
        return fn

    def on_purge(self, fn: PurgeSubscriber) -> PurgeSubscriber:
        self.purge.append(fn)
        return fn

    def after_run(self, fn: Callable[[], None]) -> Callable[[], None]:
        self.after.append(fn)
        return fn

    def committed(self, tr: Transaction, m: Mutation) -> None:
        for fn in self.commit:
            fn(tr, m)

    def removed(self, tr: Transaction, **event: Any) -> None:
        for fn in self.removal:
            fn(tr, **event)

    def purged(self, tr: Transaction, path: KeySpacePath) -> None:
        for fn in self.purge:
            fn(tr, path)

    def ran(self) -> None:
        for fn in self.after:
            fn()


def check_records(tr: Transaction, m: Mutation) -> None:
    """In a commit: the head record of a catalog, database or view, the changed schema, storage or
    properties record of a table (read back from the transaction), each within the limits of
    :mod:`ushas_catalog.model.value_limits`, so the object can always be altered and dropped later."""
    if m.kind != "table":
        check_head(m.head, f"the {m.kind} {m.name}")
        return
    for sub in m.changed:
        if sub in ("TableSchema", "TableProperties", "TableStorage"):
            record = RecordStore.at(m.path.add(sub)).load(tr, ())
            if record is not None:
                check_head(record, f"the {sub[5:].lower()} of table {m.name}")


def record_commit(tr: Transaction, m: Mutation, user: str) -> int:
    """THE place every mutation is recorded; called once per mutating operation, after the
    operation wrote its data, in the same transaction.

    Writes: the head record with ``version`` and ``updated_at`` set (for tables the
    ``TableReference``), the ``*Commit`` record (operation, user, time, detail), the previous head
    (catalog / database / view) or the replaced table records (``TableSchema`` ... into
    ``TableSchemaHistory`` ...) and, for tables, the ``TableHistory`` entry."""
    head_sub, history_sub, commit_sub = HEADS[m.kind]
    if m.kind == "table" and m.head.pending_operations:
        check_no_pending(m.head, m.detail, m.name)
    check_records(tr, m)
    v = m.version
    m.head.version = v
    m.head.updated_at_micros = m.time_micros
    RecordStore.at(m.path.add(head_sub)).save(tr, (), m.head)
    if m.kind == "table":
        for sub, old in m.previous.items():
            RecordStore.at(m.path.add(sub + "History")).save(tr, (v,), old, new=True)
        RecordStore.at(m.path.add(history_sub)).save(tr, (v,), rec.HistoryEntry(
            version=v, committed_at_micros=m.time_micros, operation=m.operation, schema_id=m.head.schema_id,
            changed=list(m.changed)), new=True)
    elif m.previous_head is not None:
        RecordStore.at(m.path.add(history_sub)).save(tr, (v,), m.previous_head, new=True)
    RecordStore.at(m.path.add(commit_sub)).save(tr, (v,), rec.Commit(
        version=v, operation=m.operation, user=user, committed_at_micros=m.time_micros,
        detail_json=json.dumps(m.detail, separators=(",", ":"), default=str, ensure_ascii=False)), new=True)
    return v
