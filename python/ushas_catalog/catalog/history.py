"""History and as-of reads: a table's commits and its head records as they were at a version or a time."""
from __future__ import annotations

import datetime as dt
from itertools import islice

from google.protobuf.message import Message

from .. import records as rec
from ..errors import InvalidArgument, NoSuchVersion
from ..kv import Transaction
from ..model.names import DatabaseName, NameLike, TableName, parse_any
from ..model.objects import HistoryItem, detail_from_json, micros_to_datetime
from ..records.store import RecordStore
from .base import MetastoreBase
from .resolver import ResolvedTable


class HistoryOps(MetastoreBase):
    """A table's head records as of a version or a time, and every object's commits."""

    def _resolve_as_of(self, tr: Transaction, t: ResolvedTable, as_of: int | dt.datetime) -> int:
        current = t.ref.version
        if isinstance(as_of, bool):
            raise InvalidArgument("as_of must be a version number or a datetime, not a bool")
        if isinstance(as_of, int):
            if not 1 <= as_of <= current:
                raise NoSuchVersion(f"table {t.name} has versions 1 to {current}, not {as_of}", table=str(t.name))
            return as_of
        if isinstance(as_of, dt.datetime):
            when = as_of if as_of.tzinfo else as_of.replace(tzinfo=dt.timezone.utc)
            micros = (when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
            commits = t.store("TableCommit")

            def time_of(v: int) -> int:
                c = commits.load(tr, (v,))
                assert c is not None, f"missing commit {v}"
                return c.committed_at_micros

            if time_of(1) > micros:
                raise NoSuchVersion(f"table {t.name} did not exist at {when.isoformat()}", table=str(t.name))
            lo, hi = 1, current  # the greatest version committed at or before `micros`
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if time_of(mid) <= micros:
                    lo = mid
                else:
                    hi = mid - 1
            return lo
        raise InvalidArgument(f"as_of must be a version number or a datetime, not {type(as_of).__name__}")

    def _head_at(self, tr: Transaction, t: ResolvedTable, sub: str, version: int, current: Message) -> Message:
        history = t.store(sub + "History")
        begin = history.key((version + 1,))
        for r in history.scan(tr, begin, history.range()[1], limit=1):
            return r.record
        return current

    def history(self, name: NameLike, limit: int | None = None) -> list[HistoryItem]:
        """Commits of a table or view (3-part name), database (2) or catalog (1), newest first."""
        parsed = parse_any(name)

        def fn(tr: Transaction) -> list[HistoryItem]:
            entries: dict[int, rec.HistoryEntry] = {}
            if isinstance(parsed, TableName):
                _, entry = self.resolver.relation(tr, parsed)
                if entry is not None and entry.kind == rec.ObjectKind.VIEW:
                    path, commit_sub = self.resolver.view(tr, parsed).path, "ViewCommit"
                else:
                    t = self.resolver.table(tr, parsed)
                    path, commit_sub = t.path, "TableCommit"
                    for r in islice(t.store("TableHistory").scan(tr, reverse=True), limit):
                        entries[r.key[0]] = r.record
            elif isinstance(parsed, DatabaseName):
                path, commit_sub = self.resolver.database(tr, parsed, load=False).path, "DatabaseCommit"
            else:
                path, commit_sub = self.resolver.catalog(tr, parsed, load=False).path, "CatalogCommit"
            out = []
            for r in islice(RecordStore.at(path.add(commit_sub)).scan(tr, reverse=True), limit):
                c = r.record
                h = entries.get(c.version)
                out.append(HistoryItem(c.version, c.operation, c.user, micros_to_datetime(c.committed_at_micros),
                                       detail_from_json(c.detail_json), h.schema_id if h else None,
                                       list(h.changed) if h else []))
            return out

        return self.run(fn)
