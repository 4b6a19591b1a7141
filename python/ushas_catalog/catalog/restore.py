"""Restoring a table's metadata as it was at a version or a time (``CALL ushas.system.restore_table``):
its schema, its properties and its partitions (with their file lists), as ONE new commit, ``RESTORE``,
so the restore is itself a version in history and another restore undoes it.

What is not restored: the storage (format, location: the data stays where it is). An unpartitioned
table's file list (and its size statistics) is restored when the catalog kept it for that version
(``TableDataFilesHistory``, :mod:`ushas_catalog.catalog.time_travel`), else left as it is. Partition columns cannot
change (they are in every partition's key), so a version with other partition columns is refused.

Files: a partition brought back reads the files its record lists; the files of the partitions it
replaces or drops are let go (kept until purge, like an overwrite's), and the files it brings back are
taken out of the table's purge list (``DataGarbage``) in the same transaction, so a later purge never
deletes what the table reads. Files already purged cannot come back: a restore to before a purge reads
what is left.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from .. import records as rec
from ..data.garbage import Garbage, data_file_records, garbage_store, record_garbage
from ..errors import InvalidArgument, NoSuchVersion
from ..kv import Transaction
from ..model.data_files import from_records
from ..model.names import NameLike, TableName
from ..model.partitions import Partition, PartitionScheme
from .commits import Mutation
from .history import HistoryOps
from .partition_appends import partitions_before
from .resolver import ResolvedTable
from .row_policies import keep_policies, refuse_row_removal
from .table_data import record_files_change
from .time_travel import table_files_at
from .values import check_expected, copy_record, expect_version, now_micros

#: an unpartitioned table's properties that describe its current files: never restored
FILE_STATS = ("numFiles", "totalSize", "numRows")


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the version it made (None: the table already was as then), the version restored."""

    version: int | None
    restored_version: int
    schema_changed: bool
    properties_changed: bool
    partitions_added: int
    partitions_dropped: int
    partitions_replaced: int

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "restored_version": self.restored_version,
                "schema_changed": self.schema_changed, "properties_changed": self.properties_changed,
                "partitions_added": self.partitions_added, "partitions_dropped": self.partitions_dropped,
                "partitions_replaced": self.partitions_replaced}


class RestoreOps(HistoryOps):
    """``restore_table``: a table's schema, properties and partitions as of a version, as a new version."""

    def restore_table(self, name: NameLike, as_of: int | dt.datetime, *,
                      expected_version: int | None = None) -> RestoreResult:
        tn = TableName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> RestoreResult:
            t = self.resolver.table(tr, tn)
            refuse_row_removal(tr, self, t, tn, "RESTORE")  # a restore may remove rows hidden from the caller
            expect_version("table", tn, t.ref.version, expected_version)
            target = self._resolve_as_of(tr, t, as_of)
            current = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            past = {sub: self._head_at(tr, t, sub, target, r) for sub, r in current.items()}
            now_schema, then_schema = current["TableSchema"], past["TableSchema"]
            if list(then_schema.partition_columns) != list(now_schema.partition_columns):
                raise InvalidArgument(f"{tn} was partitioned by {list(then_schema.partition_columns)} at version "
                                      f"{target}, not by {list(now_schema.partition_columns)}: partition columns "
                                      f"cannot be restored", table=str(tn))
            v = t.ref.version + 1
            ref = copy_record(t.ref)
            previous: dict[str, Message] = {}
            if then_schema.schema != now_schema.schema:
                restored = rec.TableSchema(schema_id=now_schema.schema_id + 1, schema=then_schema.schema,
                                           partition_columns=then_schema.partition_columns,
                                           created_at_micros=now_micros())
                t.store("TableSchema").save(tr, (), restored)
                previous["TableSchema"] = now_schema
                ref.schema_id = restored.schema_id
            props = copy_record(past["TableProperties"])
            files_restored = False
            if not now_schema.partition_columns:
                files_restored = self._restore_files(tr, t, tn, target, v, current)
            if not now_schema.partition_columns and not files_restored:
                for key in FILE_STATS:
                    props.properties.pop(key, None)
                    if key in current["TableProperties"].properties:
                        props.properties[key] = current["TableProperties"].properties[key]
            # row filters and column masks are governance, not data: a restore (MODIFY) keeps the current
            # ones (changing them needs MANAGE: set / drop_row_filter, set / drop_column_mask)
            keep_policies(current["TableProperties"], props)
            if props != current["TableProperties"]:
                t.store("TableProperties").save(tr, (), props)
                previous["TableProperties"] = current["TableProperties"]
            added: list[tuple[tuple[Any, ...], rec.Partition]] = []
            gone: list[tuple[tuple[Any, ...], rec.Partition]] = []
            replaced = 0
            scheme = self.resolver.scheme(tr, t) if now_schema.partition_columns else None
            if scheme is not None:
                added, gone, replaced = self._restore_partitions(tr, t, tn, scheme, target, v, current)
            changed = tuple(previous) + (("TablePartition",) if added or gone else ()) + \
                (("TableDataFiles",) if files_restored else ())
            result = RestoreResult(None, target, "TableSchema" in previous, "TableProperties" in previous,
                                   len(added) - replaced, len(gone) - replaced, replaced)
            if not changed:
                return result
            self._commit(tr, Mutation("table", str(tn), t.path, "RESTORE", v, ref, previous=previous,
                                      changed=changed, detail={"restored_version": target, **result.to_json()},
                                      partition_scheme=scheme, added_partitions=added, dropped_partitions=gone))
            return RestoreResult(v, target, result.schema_changed, result.properties_changed,
                                 result.partitions_added, result.partitions_dropped, result.partitions_replaced)

        return self.run(fn)

    def _restore_files(self, tr: Transaction, t: ResolvedTable, tn: TableName, target: int, v: int,
                       current: dict[str, Any]) -> bool:
        """An unpartitioned table's file list as of ``target`` (its history: catalog.time_travel), when
        the catalog kept it; the files it lets go are kept until purge. Whether it changed."""
        try:
            then = table_files_at(tr, t, target)
        except NoSuchVersion:
            return False  # not recorded then: the files stay as they are
        store = t.store("TableDataFiles")
        now = store.load(tr, ())
        if then is None or now is None or {f.path for f in then} == {f.path for f in now.files}:
            return False
        store.save(tr, (), rec.DataFileList(files=data_file_records(then), version=v))
        record_files_change(t.path, tr, v, now)
        kept = {f.path for f in then}
        if not current["TableStorage"].external:
            released = Garbage(files=[f for f in from_records(now.files) if f.path not in kept])
            record_garbage(tr, self.project_path, t.id, str(tn), "RESTORE", released, now_micros())
        _keep_files(tr, self.project_path, t, kept)
        return True

    def _restore_partitions(self, tr: Transaction, t: ResolvedTable, tn: TableName, scheme: PartitionScheme,
                            target: int, v: int, current: dict[str, Any]
                            ) -> tuple[list[tuple[tuple[Any, ...], rec.Partition]],
                                       list[tuple[tuple[Any, ...], rec.Partition]], int]:
        """Undoes, newest first, what every commit after ``target`` did to a partition: a partition's
        state at ``target`` is what its oldest later change found."""
        store, history = t.partitions(scheme), t.partition_history(scheme)
        then = partitions_before(tr, store, history, history.prefix_range((target + 1,))[0])
        now_records = {key: store.load(tr, key) for key in then}  # every read before the first write
        added: list[tuple[tuple[Any, ...], rec.Partition]] = []
        gone: list[tuple[tuple[Any, ...], rec.Partition]] = []
        replaced = 0
        released, kept = Garbage(), set()
        managed = not current["TableStorage"].external
        for key, old in then.items():
            now = now_records[key]
            if old == now:
                continue
            if now is not None:
                gone.append((key, now))
                if managed:
                    released.add_partition(_partition(scheme, key, now))
            if old is None:
                assert now is not None
                store.delete(tr, key)
                history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.DROPPED, previous=now),
                             new=True)
                continue
            kept.update(f.path for f in old.data_files)
            if now is None:
                store.save(tr, key, old, new=True)
                history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.ADDED), new=True)
            else:
                store.save(tr, key, old)
                history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.REPLACED, previous=now),
                             new=True)
                replaced += 1
            added.append((key, old))
        released.files = [f for f in released.files if f.path not in kept]
        if kept:
            _keep_files(tr, self.project_path, t, kept)
        record_garbage(tr, self.project_path, t.id, str(tn), "RESTORE", released, now_micros())
        return added, gone, replaced


def _partition(scheme: PartitionScheme, key: tuple[Any, ...], r: rec.Partition) -> Partition:
    return Partition(values=scheme.values(key), location=r.location or None,
                     data_files=from_records(r.data_files) if r.files_recorded else None)


def _keep_files(tr: Transaction, project: Any, t: ResolvedTable, paths: set[str]) -> None:
    """The table's purge list without ``paths`` (files a restore brought back)."""
    store = garbage_store(project)
    for sr in store.scan(tr, *store.prefix_range((t.id,))):
        files = [f for f in sr.record.files if f.path not in paths]
        if len(files) == len(sr.record.files):
            continue
        if not files and not sr.record.directories:
            store.delete(tr, tuple(sr.key))
            continue
        entry = copy_record(sr.record)
        del entry.files[:]
        entry.files.extend(files)
        store.save(tr, tuple(sr.key), entry)


__all__ = ["RestoreOps", "RestoreResult", "FILE_STATS"]
