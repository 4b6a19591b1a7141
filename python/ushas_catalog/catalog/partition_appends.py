"""Appends to partitions whose files are recorded, at a cost independent of the files already there.

A partition record holds its whole file list. An append (a streaming micro-batch, an ``INSERT INTO``)
does not rewrite it: the new files and the new counters go in as one more chunk of the record
(:meth:`~ushas_catalog.records.store.RecordStore.append`: protobuf merges concatenated messages, so
reading the record back gives the old list followed by the new files, and the new counters), and the
partition's history entry (``TablePartitionHistory``) is an ``APPENDED`` change that names only the
files added and the partition's fields before it, not the old list. So batch N of a stream writes as
many bytes as batch 1. A full rewrite (an overwrite, a compaction, a row-level change) writes the
record whole again, in one key (or the value-limit chunks), as before.

Readers that go back in time undo changes newest first: :func:`before_change` gives a partition as it
was before a change from the partition as it was after it (time travel, restore, streaming reads)."""
from __future__ import annotations

from typing import Any

from .. import records as rec
from ..errors import Conflict
from ..kv import Transaction
from ..records.store import RecordStore


def before_change(change: rec.PartitionChange, after: rec.Partition | None) -> rec.Partition | None:
    """The partition before ``change``, given the partition after it (``after``; None when the change
    left no partition): None for ADDED, the kept record for DROPPED / REPLACED; for APPENDED, ``after``
    without the files the change appended, with the fields it had before."""
    if change.action == rec.PartitionChange.ADDED:
        return None
    if change.action != rec.PartitionChange.APPENDED:
        return change.previous
    out = rec.Partition()
    out.CopyFrom(change.previous)
    if after is not None:
        gone = {f.path for f in change.appended}
        out.data_files.extend(f for f in after.data_files if f.path not in gone)
    return out


def partitions_before(tr: Transaction, store: RecordStore[rec.Partition], history: RecordStore[rec.PartitionChange],
                      begin: bytes) -> dict[tuple[Any, ...], rec.Partition | None]:
    """Every partition a change at or after the history key ``begin`` touched, as it was before the
    oldest of those changes (None: it did not exist): the changes undone newest first, from the
    partitions as they are now."""
    then: dict[tuple[Any, ...], rec.Partition | None] = {}
    for sr in history.scan(tr, begin, history.range()[1], reverse=True):
        key, change = tuple(sr.key[1:]), sr.record
        if change.action == rec.PartitionChange.APPENDED:
            after = then[key] if key in then else store.load(tr, key)
        else:
            after = None  # not needed: the change kept the whole partition before it
        then[key] = before_change(change, after)
    return then


def append_files(tr: Transaction, store: RecordStore[rec.Partition], history: RecordStore[rec.PartitionChange],
                 v: int, key: tuple[Any, ...], old: rec.Partition, added: rec.Partition) -> rec.Partition | None:
    """Append the files of ``added`` (a partition record of the appended files only: ``data_files``,
    ``files`` / ``bytes`` counting them, ``rows`` the rows written or unset) to the stored partition
    ``old`` at ``key`` for commit ``v``. Returns the partition's record when it had to be rewritten whole
    (its row count becomes unknown: a chunk cannot unset a field), else None (one chunk added, an
    APPENDED history entry). ``old`` must have its files recorded (:class:`Conflict` otherwise)."""
    if not old.files_recorded:
        raise Conflict("a partition's files stopped being recorded since the write was planned")
    files = (old.files if old.HasField("files") else len(old.data_files)) + added.files
    size = (old.bytes if old.HasField("bytes") else sum(f.size for f in old.data_files)) + added.bytes
    if old.HasField("rows") and not added.HasField("rows"):  # the rows become unknown: rewrite it whole
        whole = rec.Partition()
        whole.CopyFrom(old)
        whole.data_files.extend(added.data_files)
        whole.files, whole.bytes = files, size
        whole.ClearField("rows")
        store.save(tr, key, whole)
        history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.REPLACED, previous=old), new=True)
        return whole
    delta = rec.Partition(files_recorded=True, files=files, bytes=size, data_files=added.data_files)
    if old.HasField("rows"):
        delta.rows = old.rows + added.rows
    fields = rec.Partition()
    fields.CopyFrom(old)
    fields.ClearField("data_files")
    store.append(tr, key, delta)
    history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.APPENDED, previous=fields,
                                                     appended=added.data_files), new=True)
    return None
