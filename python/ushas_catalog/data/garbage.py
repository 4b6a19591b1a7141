"""Data kept until purge: the files an overwrite, a truncate or a dropped partition made
unreachable, recorded (``DataGarbage``, project level, keyed by table id and time) in the
transaction of the change that let them go, and deleted only by a purge.

A write too big to record its garbage in its publish transaction (:mod:`ushas_catalog.bulk`) records it
*before* the publish, in entries **bound** to its write id (:func:`bound_operation`): purge treats them as
garbage only once the write is COMMITTED, forgets them (the files stay: the write never let them go) once
it is ABORTED, and keeps them while it may still commit.

A dropped table needs no entry: its metadata (partitions with their file lists) stays until the
table is purged, and that is what purging it deletes (:mod:`ushas_catalog.data.purge`).
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from .. import records as rec
from ..model.data_files import DataFile, from_records, to_records
from ..keyspace.tree import KeySpacePath
from ..keyspace.layout import DATA_GARBAGE
from ..kv import Transaction
from ..records.store import RecordStore


def data_file_records(files: Iterable[DataFile]) -> list[rec.DataFile]:
    """Protobuf ``DataFile`` records of a file list."""
    return to_records(files, rec.DataFile)


@dataclass
class Garbage:
    """What one change lets go: exact files, and directories of partitions that recorded no file
    list (their data files older than the change, and in no live file list, go at purge)."""

    files: list[DataFile] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.files or self.directories)

    def add_partition(self, old: Any, keep_directories: bool = True) -> None:
        """The data of a replaced or dropped partition (a :class:`~ushas_catalog.model.partitions.Partition`)."""
        if old.data_files is not None:
            self.files.extend(old.data_files)
        elif old.location and keep_directories:
            self.directories.append(old.location)


@dataclass(frozen=True)
class GarbageEntry:
    key: tuple[Any, ...]          # (table id, time micros, entry id)
    table: str
    operation: str
    files: list[DataFile]
    directories: list[str]
    time_micros: int

    @property
    def table_id(self) -> uuid.UUID:
        return self.key[0]


def garbage_store(project: KeySpacePath) -> RecordStore[rec.DataGarbage]:
    return RecordStore.of(project, DATA_GARBAGE)


def record_garbage(tr: Transaction, project: KeySpacePath, table_id: uuid.UUID, table: str, operation: str,
                   garbage: Garbage, time_micros: int, *, entry_id: uuid.UUID | None = None) -> None:
    """Records ``garbage`` (nothing when empty) in ``tr``: the change's own transaction (``entry_id``: the
    entry's id, default a new one)."""
    if not garbage:
        return
    garbage_store(project).save(tr, (table_id, time_micros, entry_id or uuid.uuid4()), rec.DataGarbage(
        table=table, operation=operation, files=data_file_records(garbage.files),
        directories=list(garbage.directories), time_micros=time_micros), new=True)


def scan_garbage(tr: Transaction, project: KeySpacePath, table_id: uuid.UUID | None = None,
                 before_micros: int | None = None) -> Iterator[GarbageEntry]:
    """Entries of one table (or all), those recorded before ``before_micros`` when given."""
    store = garbage_store(project)
    begin, end = store.prefix_range((table_id,)) if table_id is not None else store.range()
    for r in store.scan(tr, begin, end):
        if before_micros is not None and r.record.time_micros >= before_micros:
            continue
        yield GarbageEntry(tuple(r.key), r.record.table, r.record.operation, from_records(r.record.files),
                           list(r.record.directories), r.record.time_micros)


def delete_garbage(tr: Transaction, project: KeySpacePath, key: tuple[Any, ...]) -> None:
    garbage_store(project).delete(tr, key)


_BOUND = re.compile(r" \(once write (\S+) commits\)$")


def bound_operation(operation: str, write_id: str) -> str:
    """The operation of an entry that is garbage only once write ``write_id`` is COMMITTED."""
    return f"{operation} (once write {write_id} commits)"


def bound_write(entry: GarbageEntry) -> str | None:
    """The write id an entry is bound to (:func:`bound_operation`); None for other entries."""
    m = _BOUND.search(entry.operation)
    return m.group(1) if m else None
