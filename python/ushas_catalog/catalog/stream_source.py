"""What a streaming read of a table takes from each commit: the files it added, in commit order.

A table version's commit changes partitions (``TablePartitionHistory`` keeps each changed partition as
it was before, keyed by the version) or an unpartitioned table's file list (``TableDataFilesHistory``).
The files commit ``v`` added are the partition's files after ``v`` less its files before ``v``; the
files after ``v`` are the partition's current record, or what the next later change of it found. One
backward scan of the history from the head down to the first version wanted gives both, so no
per-commit record is needed and nothing is written: a read of the commits after ``after`` costs the
changes made since (a streaming read stays near the head).

A commit that also removed files (an overwrite, a delete, a truncate, a dropped partition) is a
*change commit*: a streaming source fails on it or skips it whole (``skipChangeCommits``); a
compaction (operation ``COMPACT``) replaces files by the same rows and is skipped.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from .. import records as rec
from ..errors import InvalidArgument
from ..keyspace.layout import TABLE_DATA_FILES_HISTORY
from ..kv import Transaction
from ..model.data_files import DataFile, from_records
from ..model.names import NameLike, TableName
from ..records.store import RecordStore
from .history import HistoryOps
from .partition_appends import before_change, list_before
from .resolver import ResolvedTable
from .visibility import as_of

#: versions one call reads at most (a stream far behind catches up over several triggers)
MAX_VERSIONS = 1000
#: the operation of a compaction: the same rows in fewer files, no change for a streaming reader
COMPACT = "COMPACT"


@dataclass(frozen=True)
class AddedFile:
    """A file a commit added: its partition (values as JSON, as ``PartitionScheme.json_row`` makes them;
    ``()`` unpartitioned) and location."""

    partition: tuple[Any, ...]
    location: str | None
    file: DataFile


@dataclass(frozen=True)
class CommitFiles:
    """One commit as a streaming read sees it: the files it added (ordered by partition then path)
    and how many it removed."""

    version: int
    operation: str
    added: list[AddedFile] = field(default_factory=list)
    removed: int = 0

    @property
    def changes_data(self) -> bool:
        """It removed files and is not a compaction: rows went away or were rewritten."""
        return self.removed > 0 and self.operation != COMPACT


@dataclass(frozen=True)
class StreamCommits:
    """The commits after a version: the table's id (a stream stops when it changes: the table was
    replaced), its head version, partition column names, and the commits read (up to ``through``)."""

    table_id: str
    head: int
    columns: list[str]
    through: int
    commits: list[CommitFiles]


def _files(record: Any, what: str) -> list[DataFile]:
    if record is None:
        return []
    if not record.files_recorded:
        raise InvalidArgument(f"{what}: its files were not recorded by the catalog (added with a LOCATION, "
                              f"imported or repaired), so a streaming read cannot tell which are new")
    return from_records(record.data_files)


def _diff(before: list[DataFile], after: list[DataFile]) -> tuple[list[DataFile], int]:
    old = {f.path for f in before}
    new = {f.path for f in after}
    return sorted((f for f in after if f.path not in old), key=lambda f: f.path), len(old - new)


class StreamSourceOps(HistoryOps):
    """The reading side of Structured Streaming: the files of commits in commit order."""

    def stream_commits(self, name: NameLike, after: int, max_versions: int = MAX_VERSIONS) -> StreamCommits:
        """The commits after version ``after`` (up to ``max_versions`` of them) with the files each
        added, in one transaction."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> StreamCommits:
            t = self.resolver.table(tr, tn)
            head = t.ref.version
            through = min(head, max(after, 0) + max(1, max_versions))
            scheme = self.resolver.scheme(tr, t)
            commits = t.store("TableCommit")
            out: dict[int, CommitFiles] = {}
            for v in range(max(after, 0) + 1, through + 1):
                c = commits.load(tr, (v,))
                out[v] = CommitFiles(v, c.operation if c is not None else "")
            if scheme is None or not scheme.names:
                changes = self._unpartitioned_changes(tr, t, after, through)
            else:
                changes = self._partition_changes(tr, t, scheme, after, through)
            for v, added, removed in reversed(changes):  # by version, then partition (the keys' order)
                c = out[v]
                out[v] = CommitFiles(v, c.operation, c.added + added, c.removed + removed)
            ordered = [c for _, c in sorted(out.items())]
            names = list(scheme.names) if scheme is not None else []
            return StreamCommits(str(t.id), head, names, through, ordered)

        return self.run(fn)

    def _partition_changes(self, tr: Transaction, t: ResolvedTable, scheme: Any, after: int,
                           through: int) -> list[tuple[int, list[AddedFile], int]]:
        store, history = t.partitions(scheme), t.partition_history(scheme)
        row = scheme.json_row()
        state: dict[tuple[Any, ...], Any] = {}  # a partition as it was after the version being undone
        out: list[tuple[int, list[AddedFile], int]] = []
        begin = history.prefix_range((max(after, 0) + 1,))[0]
        for sr in history.scan(tr, begin, history.range()[1], reverse=True):
            v, key, change = sr.key[0], tuple(sr.key[1:]), sr.record
            if key not in state:
                current = store.load(tr, key)
                state[key] = None if current is None else as_of(current, t.ref.version)
            then = state[key]
            before = before_change(change, then)
            if v <= through:
                what = f"partition {dict(zip(scheme.names, key))} of table {t.name} (version {v})"
                if change.action == rec.PartitionChange.APPENDED:  # what it appended, nothing removed
                    added, removed = sorted(from_records(change.appended), key=lambda f: f.path), 0
                else:
                    added, removed = _diff(_files(before, what), _files(then, what))
                location = (then.location if then is not None else None) or None
                out.append((v, [AddedFile(tuple(row(key)), location, f) for f in added], removed))
            state[key] = before
        return out

    def _unpartitioned_changes(self, tr: Transaction, t: ResolvedTable, after: int,
                               through: int) -> list[tuple[int, list[AddedFile], int]]:
        then = t.store("TableDataFiles").load(tr, ())
        history = RecordStore.of(t.path, TABLE_DATA_FILES_HISTORY)
        out: list[tuple[int, list[AddedFile], int]] = []
        begin = history.key((max(after, 0) + 1,))
        for sr in history.scan(tr, begin, history.range()[1], reverse=True):
            v = sr.key[0]
            before = list_before(sr.record, then)
            if v <= through:
                if sr.record.appended:  # an append: what it appended, nothing removed
                    added, removed = sorted(from_records(sr.record.appended), key=lambda f: f.path), 0
                else:
                    after_files = [] if then is None else from_records(then.files)
                    added, removed = _diff([] if before is None else from_records(before.files), after_files)
                out.append((v, [AddedFile((), None, f) for f in added], removed))
            then = before
        return out

    def first_version_since(self, name: NameLike, when: dt.datetime) -> int:
        """The first version committed at or after ``when`` (the head + 1 when none was)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> int:
            t = self.resolver.table(tr, tn)
            commits = t.store("TableCommit")
            micros = (when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
            lo, hi = 1, t.ref.version + 1
            while lo < hi:
                mid = (lo + hi) // 2
                c = commits.load(tr, (mid,))
                if c is not None and c.committed_at_micros >= micros:
                    hi = mid
                else:
                    lo = mid + 1
            return lo

        return self.run(fn)


__all__ = ["StreamSourceOps", "StreamCommits", "CommitFiles", "AddedFile", "COMPACT", "MAX_VERSIONS"]
