"""The data of tables in the metadata: an unpartitioned table's data files, writes and truncates
(``touch_table``, ``write_table_files``), the data a REPLACE lets go, and partition locations that
follow a moved table directory."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from google.protobuf.message import Message

from .. import records as rec
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..data.garbage import Garbage, data_file_records, record_garbage
from ..errors import InvalidArgument
from ..model.data_files import DataFile, from_records
from ..model.names import NameLike, TableName
from ..records.store import RecordStore
from .base import MetastoreBase
from .registered_files import check_table_files
from .row_policies import refuse_row_removal
from .commits import Mutation
from .resolver import ResolvedTable
from .values import check_expected, copy_record, expect_version, now_micros, version_answer, version_of
from ..keyspace.layout import TABLE_DATA_FILES, TABLE_DATA_FILES_HISTORY, TABLE_PARTITION
from ..records.time_travel_pb2 import DataFileListChange


class TableDataOps(MetastoreBase):
    """What a table's data is in the metadata: its files, writes and truncates."""

    def _release_table_data(self, tr: Transaction, t: ResolvedTable, tn: TableName, schema: rec.TableSchema,
                            storage: rec.TableStorage, operation: str, now: int) -> None:
        """A managed table's data becomes unreachable (REPLACE TABLE): kept until purge (DataGarbage)."""
        if storage.external:
            return
        garbage = Garbage()
        if schema.partition_columns:
            for sr in RecordStore.at(t.path.add(TABLE_PARTITION), tuple(schema.partition_columns)).scan(tr):
                if sr.record.files_recorded:
                    garbage.files.extend(from_records(sr.record.data_files))
                elif sr.record.location:
                    garbage.directories.append(sr.record.location)
        else:
            listed = t.store("TableDataFiles").load(tr, ())
            if listed is not None:
                garbage.files.extend(from_records(listed.files))
            elif storage.location:
                garbage.directories.append(storage.location)
        record_garbage(tr, self.project_path, t.id, str(tn), operation, garbage, now)

    def _move_partition_locations(self, tr: Transaction, t: ResolvedTable, old: str, new: str) -> None:
        """Partitions under a table's old location follow its directory to the new one (same
        transaction as the move of the table location)."""
        from ..data.garbage import garbage_store

        if not old:
            return
        prefix = old.rstrip("/") + "/"
        target = new.rstrip("/") + "/"

        def move_files(files: Any) -> bool:
            changed = False
            for f in files:
                if f.path.startswith(prefix):
                    f.path = target + f.path[len(prefix):]
                    changed = True
            return changed

        scheme = self.resolver.scheme(tr, t)
        if scheme:
            store = t.partitions(scheme)
            for stored in list(store.scan(tr)):
                moved = copy_record(stored.record)
                changed = move_files(moved.data_files)
                if moved.location.startswith(prefix):
                    moved.location = target + moved.location[len(prefix):]
                    changed = True
                if changed:
                    store.save(tr, stored.key, moved)
        else:
            files = t.store("TableDataFiles")
            listed = files.load(tr, ())
            if listed is not None and move_files(listed.files):
                files.save(tr, (), listed)
        garbage = garbage_store(self.project_path)
        for stored in list(garbage.scan(tr, *garbage.prefix_range((t.id,)))):
            entry = copy_record(stored.record)
            dirs = [target + d[len(prefix):] if d.startswith(prefix) else d for d in entry.directories]
            if move_files(entry.files) or dirs != list(entry.directories):
                del entry.directories[:]
                entry.directories.extend(dirs)
                garbage.save(tr, tuple(stored.key), entry)

    def touch_table(self, name: NameLike, operation: str, detail: Mapping[str, Any] | None = None, *,
                    expected_version: int | None = None, write_id: str | None = None,
                    deadline_ms: int | None = None) -> int:
        """A change of a table's data that no metadata record holds (a write into an unpartitioned
        table, TRUNCATE TABLE): a new version with its commit, so whoever compares versions (the
        Spark catalog's cache) sees it. Returns the new version. ``write_id`` / ``deadline_ms``:
        a fenced write (:mod:`ushas_catalog.data.write_fence`): applied at most once, never after it
        was aborted or after the deadline."""
        tn = TableName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> int:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            return self._commit(tr, Mutation("table", str(tn), t.path, operation, t.ref.version + 1, copy_record(t.ref),
                                             detail=dict(detail or {})))

        return self._fenced(write_id, deadline_ms, tn, fn, version_answer, version_of)

    def table_data_files(self, name: NameLike) -> list[DataFile] | None:
        """An unpartitioned table's data files as its last write registered them, or None: not
        recorded (reads list the table location)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> list[DataFile] | None:
            r = self.resolver.table(tr, tn).store("TableDataFiles").load(tr, ())
            return None if r is None else from_records(r.files)

        return self.run(fn)

    def write_table_files(self, name: NameLike, files: Sequence[DataFile] | None, operation: str, *,
                          set_properties: Mapping[str, str] | None = None,
                          remove_properties: Sequence[str] = (), garbage: Garbage | None = None,
                          unchanged_since: int | None = None, expected_version: int | None = None,
                          detail: Mapping[str, Any] | None = None, write_id: str | None = None,
                          deadline_ms: int | None = None, append: bool = False) -> int:
        """A write (or truncate) of an unpartitioned table in one commit: its data files become
        ``files`` (None: not recorded), the stats properties are set / removed, ``garbage`` (the files
        let go) is kept until purge. ``unchanged_since``: :class:`WriteConflict` if the table's
        files changed after that version. Returns the new version. ``write_id`` / ``deadline_ms``:
        a fenced write (:mod:`ushas_catalog.data.write_fence`). ``append``: ``files`` are only the
        files added to the recorded list, at a cost independent of the files already there
        (:meth:`_append_table_files`; :class:`FilesNotRecorded`, nothing written, when not recorded)."""
        from ..errors import WriteConflict

        if append:
            if files is None or operation != "APPEND" or garbage or unchanged_since is not None:
                raise InvalidArgument("an append gives the files it adds, nothing let go, no overwrite check")
            return self._append_table_files(name, files, set_properties=set_properties,
                                            remove_properties=remove_properties, expected_version=expected_version,
                                            detail=detail, write_id=write_id, deadline_ms=deadline_ms)
        tn = TableName.parse(name)
        check_expected(expected_version)
        file_list = None if files is None else list(files)

        def fn(tr: Transaction) -> int:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            _check_files(self, tr, t, tn, file_list, garbage)
            store = t.store("TableDataFiles")
            old_files = store.load(tr, ())
            kept = {f.path for f in file_list or ()}
            if operation != "APPEND" or file_list is None or \
                    (old_files is not None and any(f.path not in kept for f in old_files.files)):
                refuse_row_removal(tr, self, t, tn, operation)  # rows of the old files go
            if unchanged_since is not None and old_files is not None and old_files.version > unchanged_since:
                raise WriteConflict(f"{tn} was written by another write (version {old_files.version}) after this "
                                    f"overwrite started (version {unchanged_since}): the overwrite was not committed",
                                    table=str(tn))
            v = t.ref.version + 1
            now = now_micros()
            if file_list is None:
                store.delete(tr, ())
            else:
                store.save(tr, (), rec.DataFileList(files=data_file_records(file_list), version=v))
            record_files_change(t.path, tr, v, old_files)
            previous = _set_properties(tr, t, set_properties, remove_properties)
            if garbage:
                record_garbage(tr, self.project_path, t.id, str(tn), operation, garbage, now)
            return self._commit(tr, Mutation("table", str(tn), t.path, operation, v, copy_record(t.ref),
                                             time_micros=now,
                                             previous=previous, changed=tuple(previous),
                                             detail=dict(detail or {})))

        return self._fenced(write_id, deadline_ms, tn, fn, version_answer, version_of)

    def _append_table_files(self, name: NameLike, files: Sequence[DataFile], *,
                           set_properties: Mapping[str, str] | None = None, remove_properties: Sequence[str] = (),
                           expected_version: int | None = None, detail: Mapping[str, Any] | None = None,
                           write_id: str | None = None, deadline_ms: int | None = None) -> int:
        """An append into an unpartitioned table whose files are recorded, at a cost independent of the
        files already there: ``files`` go in as chunks of the list (:meth:`RecordStore.append`) and the
        history entry names only them (``DataFileListChange.appended``), nothing of the list is read or
        rewritten. :class:`FilesNotRecorded` (nothing written) when the table's files are not recorded.
        Returns the new version."""
        from ..errors import FilesNotRecorded

        tn = TableName.parse(name)
        check_expected(expected_version)
        added = data_file_records(list(files))

        def fn(tr: Transaction) -> int:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            _check_files(self, tr, t, tn, files)
            store = t.store("TableDataFiles")
            head = store.last_appended(tr, ()) or store.load(tr, ())
            if head is None:
                raise FilesNotRecorded(f"the files of {tn} are not recorded: the write lists its location")
            v = t.ref.version + 1
            now = now_micros()
            store.append(tr, (), _list_chunks(added, v, store.chunk_bytes))
            RecordStore.of(t.path, TABLE_DATA_FILES_HISTORY).save(
                tr, (v,), DataFileListChange(previous=rec.DataFileList(version=head.version), appended=added))
            previous = _set_properties(tr, t, set_properties, remove_properties)
            return self._commit(tr, Mutation("table", str(tn), t.path, "APPEND", v, copy_record(t.ref),
                                             time_micros=now, previous=previous, changed=tuple(previous),
                                             detail=dict(detail or {})))

        return self._fenced(write_id, deadline_ms, tn, fn, version_answer, version_of)


def _check_files(ms: Any, tr: Transaction, t: ResolvedTable, tn: TableName, files: Sequence[DataFile] | None,
                 garbage: Garbage | None = None) -> None:
    """The write's files and what it lets go lie in the table (:mod:`.registered_files`), before any write."""
    if ms.caller().authorization:
        storage = t.store("TableStorage").load(tr, ())
        check_table_files(ms, tr, tn, storage.location if storage is not None else "", files, garbage)


def _list_chunks(files: list[Any], version: int, limit: int) -> list[Any]:
    """``files`` as ``DataFileList`` chunks of at most ``limit`` bytes, each carrying ``version``."""
    out: list[Any] = []
    group: list[Any] = []
    size = 32
    for f in files:
        n = f.ByteSize() + 8
        if group and size + n > limit:
            out.append(rec.DataFileList(files=group, version=version))
            group, size = [], 32
        group.append(f)
        size += n
    out.append(rec.DataFileList(files=group, version=version))
    return out


def init_table_files(path: KeySpacePath, tr: Transaction, records: Sequence[Any], version: int) -> None:
    """A new (or replaced) managed unpartitioned table has no files: an empty list, so that files
    already in its directory (a dropped table's, kept until purge) are never read as its own."""
    store = RecordStore.at(path.add(TABLE_DATA_FILES))
    schema, storage = records[0], records[1]
    if version > 1:  # a REPLACE: the old version's files stay readable as of it (catalog.time_travel)
        record_files_change(path, tr, version, store.load(tr, ()))
    if storage.external or schema.partition_columns:
        store.delete(tr, ())
    else:
        store.save(tr, (), rec.DataFileList(version=version))


def record_files_change(path: KeySpacePath, tr: Transaction, version: int, previous: Any) -> None:
    """Keeps an unpartitioned table's file list as it was before commit ``version`` (None: not
    recorded), so that reads as of an older version read exactly its files."""
    change = DataFileListChange() if previous is None else DataFileListChange(previous=previous)
    RecordStore.of(path, TABLE_DATA_FILES_HISTORY).save(tr, (version,), change)


def _set_properties(tr: Transaction, t: ResolvedTable, set_properties: Mapping[str, str] | None,
                    remove_properties: Sequence[str]) -> dict[str, Message]:
    """Sets and removes table properties in ``tr``; answers ``{"TableProperties": <before>}`` when they
    changed (the mutation's ``previous``), else nothing."""
    old_props = t.store("TableProperties").load(tr, ())
    props = copy_record(old_props)
    for key, value in (set_properties or {}).items():
        props.properties[key] = value
    for key in remove_properties:
        props.properties.pop(key, None)
    if props == old_props:
        return {}
    t.store("TableProperties").save(tr, (), props)
    return {"TableProperties": old_props}
