"""Reading a table as it was: its files as of a version, a time or a named version (tag).

A version's files are the current ones with every later change undone: partitioned tables from
``TablePartitionHistory`` (each change keeps the partition before it), unpartitioned ones from
``TableDataFilesHistory`` (each write keeps the file list before it). The files an overwrite, a
truncate or a dropped partition let go stay on disk until ``purge`` (:mod:`ushas_catalog.data.purge`)
deletes them; a purge leaves a ``TablePurgeMark``, and a version committed before the newest
replaced files it deleted is no longer readable: reading it is an error naming that purge. Tagged
versions (``TableTag``) keep their files through purges while the tag lives.

Retention: the table property ``ushas.retention`` (an age: ``7d``, ``12h``) keeps a table's replaced
files at least that long, whatever age a purge is given, so every version of the last ``7d`` stays
readable (:func:`retention_of`).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import records as rec
from ..data.purge import RETENTION_PROPERTY, retention_of
from ..errors import AlreadyExists, InvalidArgument, NoSuchVersion, NotFound
from ..keyspace.layout import TABLE_DATA_FILES_HISTORY, TABLE_PURGE_MARK, TABLE_TAG
from ..kv import Transaction
from ..model.data_files import DataFile, from_records
from ..model.names import NameLike, TableName
from ..model.objects import TableInfo, micros_to_datetime
from ..model.partitions import PartitionScheme
from ..records.store import RecordStore
from ..records.time_travel_pb2 import PurgeMark, VersionTag
from .history import HistoryOps
from .infos import table_info
from .partition_appends import list_before, partitions_before
from .resolver import ResolvedTable
from .visibility import as_of
from .values import now_micros

AsOf = int | dt.datetime | str
KeyRanges = Callable[[PartitionScheme], Sequence[tuple[bytes, bytes]]]


@dataclass(frozen=True)
class FilesAsOf:
    """The files of one version: ``partitions`` ((key, record) of each partition then) for a
    partitioned table, else ``files`` (None: not recorded, read the location)."""

    version: int
    scheme: PartitionScheme | None
    partitions: list[tuple[tuple[Any, ...], rec.Partition]]
    files: list[DataFile] | None


@dataclass(frozen=True)
class TagInfo:
    name: str
    version: int
    created: dt.datetime
    user: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "created": self.created.isoformat(), "user": self.user}


def _tag_name(tag: str) -> str:
    name = (tag or "").strip()
    if not name or name.isdigit() or len(name) > 255:
        raise InvalidArgument(f"invalid tag name {tag!r}: a non-empty name that is not a number (up to 255 "
                              f"characters)")
    return name


def table_files_at(tr: Transaction, t: ResolvedTable, v: int) -> list[DataFile] | None:
    """An unpartitioned table's files at version ``v`` (None: not recorded, and ``v`` is current);
    NoSuchVersion when the catalog did not keep them."""
    current = t.store("TableDataFiles").load(tr, ())
    then = current
    history = RecordStore.of(t.path, TABLE_DATA_FILES_HISTORY)
    for sr in history.scan(tr, history.key((v + 1,)), history.range()[1], reverse=True):
        then = list_before(sr.record, then)  # newest first: an append is undone from the list after it
    if then is None:
        if v == t.ref.version:
            return None
        raise NoSuchVersion(f"version {v} of table {t.name} cannot be read: the catalog did not record its "
                            f"files then (it reads the table's location, which holds the current files)",
                            table=str(t.name))
    if then.version > v:
        raise NoSuchVersion(f"version {v} of table {t.name} cannot be read: its files were replaced at version "
                            f"{then.version}, before the catalog kept file lists of old versions",
                            table=str(t.name))
    return from_records(then.files)


class TimeTravelOps(HistoryOps):
    """Versions of a table as they were: their schema and files, tags, and what purge left readable."""

    # ---- versions ----------------------------------------------------------------------------------
    def _version_of(self, tr: Transaction, t: ResolvedTable, as_of: AsOf) -> int:
        """The version ``as_of`` names: a number, a time (the version current then) or a tag."""
        if isinstance(as_of, str):
            text = as_of.strip()
            if text.isdigit():
                return self._resolve_as_of(tr, t, int(text))
            tag = RecordStore.of(t.path, TABLE_TAG).load(tr, (text,))
            if tag is None:
                raise NoSuchVersion(f"table {t.name} has no version or tag {as_of!r}", table=str(t.name))
            return tag.version
        return self._resolve_as_of(tr, t, as_of)

    def _check_readable(self, tr: Transaction, t: ResolvedTable, version: int) -> None:
        """NoSuchVersion naming the purge that deleted files of ``version`` (current and tagged
        versions are always readable)."""
        if version == t.ref.version:
            return
        mark = RecordStore.of(t.path, TABLE_PURGE_MARK).load(tr, ())
        if mark is None:
            return
        commit = t.store("TableCommit").load(tr, (version,))
        assert commit is not None, f"missing commit {version}"
        if mark.through_micros <= commit.committed_at_micros or version in self._tagged(tr, t):
            return
        first = self._first_readable(tr, t, mark)
        raise NoSuchVersion(
            f"version {version} of table {t.name} is no longer readable: the purge of "
            f"{micros_to_datetime(mark.purged_at_micros).isoformat()} (by {mark.user or 'unknown'}) deleted files "
            f"it read; versions {first} to {t.ref.version} are readable (see its history; table property "
            f"{RETENTION_PROPERTY} keeps versions longer)", table=str(t.name))

    def _tagged(self, tr: Transaction, t: ResolvedTable) -> set[int]:
        return {sr.record.version for sr in RecordStore.of(t.path, TABLE_TAG).scan(tr)}

    def _first_readable(self, tr: Transaction, t: ResolvedTable, mark: PurgeMark | None) -> int:
        """The oldest version no purge took files from (binary search over commit times)."""
        if mark is None:
            return 1
        commits = t.store("TableCommit")
        lo, hi = 1, t.ref.version
        while lo < hi:
            mid = (lo + hi) // 2
            c = commits.load(tr, (mid,))
            if c is not None and mark.through_micros <= c.committed_at_micros:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def first_readable_version(self, name: NameLike) -> int:
        """The oldest version of a table whose files are all still there (tagged ones aside)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> int:
            t = self.resolver.table(tr, tn)
            return self._first_readable(tr, t, RecordStore.of(t.path, TABLE_PURGE_MARK).load(tr, ()))

        return self.run(fn)

    def table_as_of(self, name: NameLike, as_of: AsOf) -> TableInfo:
        """The table (schema, storage, properties) as of a version, time or tag, if still readable."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> TableInfo:
            t = self.resolver.table(tr, tn)
            version = self._version_of(tr, t, as_of)
            self._check_readable(tr, t, version)
            current = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            past = {sub: self._head_at(tr, t, sub, version, r) for sub, r in current.items()}
            if list(past["TableSchema"].partition_columns) != list(current["TableSchema"].partition_columns):
                raise InvalidArgument(f"table {tn} was partitioned by {list(past['TableSchema'].partition_columns)} "
                                      f"at version {version}, not by "
                                      f"{list(current['TableSchema'].partition_columns)}: reading it as of a "
                                      f"version before its partition columns changed is not supported",
                                      table=str(tn))
            commit = t.store("TableCommit").load(tr, (version,))
            ref = rec.TableReference(version=version, schema_id=past["TableSchema"].schema_id,
                                     created_at_micros=t.ref.created_at_micros,
                                     updated_at_micros=commit.committed_at_micros)
            return table_info(tn, t.id, ref, past["TableSchema"], past["TableStorage"], past["TableProperties"])

        return self.run(fn)

    def files_as_of(self, name: NameLike, version: int, ranges: KeyRanges | None = None) -> FilesAsOf:
        """The data files of ``version`` (partitions whose keys fall in ``ranges(scheme)``, as
        :meth:`scan_partitions` takes them; None: all), in one transaction."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> FilesAsOf:
            t = self.resolver.table(tr, tn)
            v = self._resolve_as_of(tr, t, version)
            self._check_readable(tr, t, v)
            scheme = self.resolver.scheme(tr, t)
            if scheme is None or not scheme.names:
                return FilesAsOf(v, None, [], table_files_at(tr, t, v))
            return FilesAsOf(v, scheme, self._partitions_at(tr, t, scheme, v, ranges), None)

        return self.run(fn)

    def _partitions_at(self, tr: Transaction, t: ResolvedTable, scheme: PartitionScheme, v: int,
                       ranges: KeyRanges | None) -> list[tuple[tuple[Any, ...], rec.Partition]]:
        """Every later change undone, newest first: a partition then is what its oldest later change
        found (restore does the same: :mod:`ushas_catalog.catalog.restore`)."""
        store, history = t.partitions(scheme), t.partition_history(scheme)
        then = partitions_before(tr, store, history, history.prefix_range((v + 1,))[0])
        out: list[tuple[tuple[Any, ...], rec.Partition]] = []
        bounds = [(store.prefix + b, store.prefix + e) for b, e in ranges(scheme)] if ranges else [store.range()]
        for b, e in bounds:
            for sr in store.scan(tr, b, e):
                key, shown = tuple(sr.key), as_of(sr.record, v)
                if key in then or shown is None:
                    continue
                out.append((key, shown))
        out.extend((key, old) for key, old in then.items() if old is not None)
        return out

    # ---- named versions ------------------------------------------------------------------------------
    def create_tag(self, name: NameLike, tag: str, version: AsOf | None = None) -> TagInfo:
        """Names a version (default: the current one); AlreadyExists if the tag does. The version must
        still be readable."""
        tn, tag_name = TableName.parse(name), _tag_name(tag)

        def fn(tr: Transaction) -> TagInfo:
            t = self.resolver.table(tr, tn)
            v = t.ref.version if version is None else self._version_of(tr, t, version)
            self._check_readable(tr, t, v)
            tags = RecordStore.of(t.path, TABLE_TAG)
            if tags.load(tr, (tag_name,)) is not None:
                raise AlreadyExists(f"table {tn} already has a tag {tag_name!r}", table=str(tn))
            record = VersionTag(version=v, created_at_micros=now_micros(), user=self.user or "")
            tags.save(tr, (tag_name,), record, new=True)
            return TagInfo(tag_name, v, micros_to_datetime(record.created_at_micros), record.user)

        return self.run(fn)

    def drop_tag(self, name: NameLike, tag: str) -> TagInfo:
        tn, tag_name = TableName.parse(name), tag.strip()

        def fn(tr: Transaction) -> TagInfo:
            t = self.resolver.table(tr, tn)
            tags = RecordStore.of(t.path, TABLE_TAG)
            record = tags.load(tr, (tag_name,))
            if record is None:
                raise NotFound(f"table {tn} has no tag {tag_name!r}", table=str(tn))
            tags.delete(tr, (tag_name,))
            return TagInfo(tag_name, record.version, micros_to_datetime(record.created_at_micros), record.user)

        return self.run(fn)

    def list_tags(self, name: NameLike) -> list[TagInfo]:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> list[TagInfo]:
            t = self.resolver.table(tr, tn)
            return [TagInfo(sr.key[0], sr.record.version, micros_to_datetime(sr.record.created_at_micros),
                            sr.record.user) for sr in RecordStore.of(t.path, TABLE_TAG).scan(tr)]

        return self.run(fn)

    def tagged_files(self, name: NameLike) -> set[str]:
        """The paths every tagged version of the table reads: a purge keeps them."""
        out: set[str] = set()
        for tag in self.list_tags(name):
            found = self.files_as_of(name, tag.version)
            if found.scheme is None:
                out.update(f.path for f in found.files or [])
            else:
                out.update(f.path for _, r in found.partitions for f in r.data_files)
        return out

    # ---- purge ---------------------------------------------------------------------------------------
    def mark_purged(self, name: NameLike, through_micros: int) -> None:
        """A purge deleted replaced files of the table recorded up to ``through_micros``: versions
        committed before that are no longer readable (:meth:`_check_readable`)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> None:
            t = self.resolver.table(tr, tn)
            marks = RecordStore.of(t.path, TABLE_PURGE_MARK)
            old = marks.load(tr, ())
            through = max(through_micros, old.through_micros if old is not None else 0)
            marks.save(tr, (), PurgeMark(purged_at_micros=now_micros(), through_micros=through, user=self.user or ""))

        self.run(fn)


__all__ = ["TimeTravelOps", "table_files_at", "FilesAsOf", "TagInfo", "RETENTION_PROPERTY", "retention_of"]
