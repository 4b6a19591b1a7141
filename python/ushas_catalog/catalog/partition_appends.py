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
from ..errors import FilesNotRecorded
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


def list_before(change: Any, after: Any) -> Any:
    """An unpartitioned table's file list (``DataFileList``) before a ``DataFileListChange``, given the list
    after it (None: not recorded): the kept copy, or for an append the list after it without the files it
    appended, with the version before it. None: not recorded before it."""
    if not change.HasField("previous"):
        return None
    if not change.appended:
        return change.previous
    out = rec.DataFileList(version=change.previous.version)
    if after is not None:
        gone = {f.path for f in change.appended}
        out.files.extend(f for f in after.files if f.path not in gone)
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


def current_fields(tr: Transaction, store: RecordStore[rec.Partition], key: tuple[Any, ...]) -> rec.Partition | None:
    """The partition at ``key`` for an append to look at: the newest appended chunk alone when it has one (it
    carries every field of the partition but the files before it: one key read, whatever the files already
    there), else the whole record (once after each whole rewrite); None: no partition."""
    return store.last_appended(tr, key) or store.load(tr, key)


def append_files(tr: Transaction, store: RecordStore[rec.Partition], history: RecordStore[rec.PartitionChange],
                 v: int, key: tuple[Any, ...], old: rec.Partition, added: rec.Partition) -> rec.Partition | None:
    """Append the files of ``added`` (a partition record of the appended files only: ``data_files``,
    ``files`` / ``bytes`` counting them, ``rows`` the rows written or unset) to the stored partition at
    ``key`` for commit ``v``; ``old``: its fields (:func:`current_fields`: the files in it may be only some
    of the partition's). Returns the partition's record when it had to be rewritten whole (its row count
    becomes unknown: a chunk cannot unset a field), else None (chunks added, an APPENDED history entry).
    :class:`FilesNotRecorded` when the partition's files are not recorded."""
    if not old.files_recorded:
        raise FilesNotRecorded("the partition's files are not recorded: the write lists its directory")
    files, size = file_count(old) + file_count(added), byte_count(old) + byte_count(added)
    if old.HasField("rows") and not added.HasField("rows"):  # the rows become unknown: rewrite it whole
        whole = store.load(tr, key) or old
        before = rec.Partition()
        before.CopyFrom(whole)
        whole.ClearField("replaced")
        whole.data_files.extend(added.data_files)
        whole.files, whole.bytes = files, size
        whole.ClearField("rows")
        store.save(tr, key, whole)
        history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.REPLACED, previous=before),
                     new=True)
        return whole
    fields = rec.Partition()
    fields.CopyFrom(old)
    fields.ClearField("data_files")
    fields.ClearField("replaced")  # a bulk write's copy of the record before it: never in a chunk
    header = rec.Partition()
    header.CopyFrom(fields)  # every field again: the newest chunk tells the partition alone
    header.files, header.bytes = files, size
    if old.HasField("rows"):
        header.rows = old.rows + added.rows
    store.append(tr, key, _chunks(header, list(added.data_files), store.chunk_bytes))
    history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.APPENDED, previous=fields,
                                                     appended=added.data_files), new=True)
    return None


def file_count(r: rec.Partition) -> int:
    """The partition's file count: ``files``, or its recorded files counted when unset."""
    return r.files if r.HasField("files") else len(r.data_files)


def byte_count(r: rec.Partition) -> int:
    """The partition's size: ``bytes``, or its recorded files' sizes summed when unset."""
    return r.bytes if r.HasField("bytes") else sum(f.size for f in r.data_files)


def _chunks(header: rec.Partition, files: list[Any], limit: int) -> list[rec.Partition]:
    """``header`` with ``files``, as chunks of at most ``limit`` bytes, each carrying the whole header."""
    base = header.ByteSize() + 16
    out: list[rec.Partition] = []
    group: list[Any] = []
    size = base
    for f in files:
        n = f.ByteSize() + 8
        if group and size + n > limit:
            out.append(_with(header, group))
            group, size = [], base
        group.append(f)
        size += n
    out.append(_with(header, group))
    return out


def _with(header: rec.Partition, files: list[Any]) -> rec.Partition:
    chunk = rec.Partition()
    chunk.CopyFrom(header)
    chunk.data_files.extend(files)
    return chunk
