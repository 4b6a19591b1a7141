"""The lineage store: captured runs in the project's ``DataLineage`` subspace, usage
counters in ``UsageProfile`` (the directories are declared in ``ushas_catalog.keyspace.layout``).

Size (over 600 lines): :class:`LineageStore` is one transaction layout (runs, accesses, edges,
usage) read and written by the same key helpers; splitting reads from writes is the next step.

One captured run = ONE transaction that writes:

- ``LineageRun`` / runId                         -> the run record (JSON)
- ``LineageRunByTime`` / time / runId             -> ""   (runs in time order: export, status)
- ``LineageRunDataset`` / runId + (access, ds)   -> dataset descriptor ("what did run R touch")
- ``LineageDatasetAccess`` / ds + (time, runId, access) -> ""   ("who read / wrote X between t1 and t2")
- ``LineageRunEdge`` / runId + (tgt, tcol, src, scol, subtype) -> expression
- ``LineageUpstream`` / tgt + (tcol, time, runId, src, scol, subtype) -> ""   (by target)
- ``LineageDownstream`` / src + (scol, time, runId, tgt, tcol, subtype) -> ""  (by source)
- ``LineageDataset`` / ds -> descriptor; ``LineageDatasetName`` / name + (ds,) -> "" (names ever seen)
- ``LineageCounter`` / "captured" (atomic add); ``DatasetUsage`` / ds + (day, "reads"|"writes") (atomic add)

A dataset key ``ds`` is the table's UUID when the dataset is a table of the metastore (so
lineage survives renames and a dropped table shows as dropped), else its name (a Hive /
session-catalog table ``spark_catalog.db.t``, a path URI). Times are epoch milliseconds of
the run's end; every index is ordered by time, so "as of" / since / until are range bounds
or a filter on the scanned keys. Every read is a range scan over one prefix.

The run id is derived from (application id, execution id), so storing the same run twice
(a retry after a commit whose answer was lost) is a no-op: the transaction reads the run key
first and writes nothing when it is there.
"""
from __future__ import annotations

import json
import struct
import time
import uuid
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, Iterable, Protocol

import fdb.tuple as fdbtuple

from ushas_catalog.errors import InvalidArgument, NoSuchRun
from ushas_catalog.keyspace.tree import KeySpacePath
from ushas_catalog.kv.base import Database, Transaction
from ushas_catalog.keyspace.layout import (COUNTER, DATASET_NAME, DATASET_USAGE, DATA_LINEAGE, LINEAGE_CAPTURE_SOURCE,
                                           LINEAGE_COUNTER, LINEAGE_DATASET, LINEAGE_DATASET_ACCESS,
                                           LINEAGE_DATASET_NAME, LINEAGE_DOWNSTREAM, LINEAGE_RUN, LINEAGE_RUN_BY_TIME,
                                           LINEAGE_RUN_DATASET, LINEAGE_RUN_EDGE, LINEAGE_UPSTREAM, NAME, RUN_ID,
                                           SOURCE, TABLE_ID, TIME, USAGE_PROFILE)
from ushas_catalog.metadata.sync import record_lineage_write

from .model import Dataset, DatasetKind, Edge, EdgeKind, EdgeSubtype

#: namespace of the deterministic run ids (uuid5 of "application id/execution id")
RUN_NAMESPACE = uuid.UUID("6f1d3c3e-6c1b-4d55-9a53-3b6c2f0a7e11")

DatasetKey = uuid.UUID | str

#: the longest SQL text kept on a run record (values are limited to 100 kB)
MAX_SQL_CHARS = 60_000
#: the longest expression kept per edge
MAX_EXPRESSION_CHARS = 2_000
#: the longest error message kept on a run record
MAX_ERROR_CHARS = 4_000

DAY_MS = 86_400_000


class Access(str, Enum):
    READ = "read"
    WRITE = "write"


class RunStatus(str, Enum):
    COMPLETE = "COMPLETE"
    FAIL = "FAIL"


def run_id_for(application_id: str, execution_id: int) -> uuid.UUID:
    """The id of the run of execution ``execution_id`` in application ``application_id``."""
    return uuid.uuid5(RUN_NAMESPACE, f"{application_id}/{execution_id}")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Run:
    """One query execution (one user action; Spark's nested executions are merged into it)."""

    run_id: uuid.UUID
    application_id: str
    application_name: str
    execution_id: int
    user: str
    start_ms: int
    end_ms: int
    status: RunStatus
    operation: str = ""
    sql: str | None = None
    error: str | None = None
    #: set when the run was captured at table level only (a budget was exceeded): the reason
    table_level: str | None = None
    #: the job name, as OpenLineage names Spark jobs: ``<app>.<command>.<target>`` (lineage.run_names)
    job: str = ""
    #: the statement kind: ``INSERT INTO``, ``CREATE TABLE AS SELECT``, ``QUERY`` (a run that only reads)...
    kind: str = ""
    #: the server client the run was for (lineage.clients): its session, ``connect`` | ``thrift``, client type
    session_id: str | None = None
    client_kind: str | None = None
    client_type: str | None = None
    #: a streaming micro-batch (one run per batch): its query's id (kept in the checkpoint) and batch id
    stream_query_id: str | None = None
    batch_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": str(self.run_id), "application_id": self.application_id,
                "application_name": self.application_name, "execution_id": self.execution_id,
                "user": self.user, "start_ms": self.start_ms, "end_ms": self.end_ms,
                "status": self.status.value, "operation": self.operation, "sql": self.sql,
                "error": self.error, "table_level": self.table_level, "job": self.job, "kind": self.kind,
                "session_id": self.session_id, "client_kind": self.client_kind, "client_type": self.client_type,
                **({"stream_query_id": self.stream_query_id, "batch_id": self.batch_id}
                   if self.stream_query_id is not None else {})}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Run:
        return Run(run_id=uuid.UUID(d["run_id"]), application_id=d["application_id"],
                   application_name=d.get("application_name", ""), execution_id=int(d["execution_id"]),
                   user=d.get("user", ""), start_ms=int(d["start_ms"]), end_ms=int(d["end_ms"]),
                   status=RunStatus(d["status"]), operation=d.get("operation", ""), sql=d.get("sql"),
                   error=d.get("error"), table_level=d.get("table_level"), job=d.get("job") or "",
                   kind=d.get("kind") or "", session_id=d.get("session_id"), client_kind=d.get("client_kind"),
                   client_type=d.get("client_type"), stream_query_id=d.get("stream_query_id"),
                   batch_id=d.get("batch_id"))


@dataclass(frozen=True)
class CapturedRun:
    """What the capture hands the store: the run, the datasets it read and wrote, and the
    leaf-level column edges (target dataset column <- source dataset column)."""

    run: Run
    reads: tuple[Dataset, ...] = ()
    writes: tuple[Dataset, ...] = ()
    edges: tuple[Edge, ...] = ()


@dataclass(frozen=True)
class TableState:
    """What the metastore says of a table id now."""

    name: str
    dropped: bool = False


class TableIds(Protocol):
    """Maps catalog tables to their metastore ids and back (implemented over the metastore)."""

    def table_id(self, tr: Transaction, dataset: Dataset) -> uuid.UUID | None:
        """The id of the metastore table ``dataset`` names now, or None (not a metastore table)."""

    def table_state(self, tr: Transaction, table_id: uuid.UUID, last_name: str | None = None) -> TableState | None:
        """The table's current name (or its name when dropped), None when the metastore has
        no trace of it (purged). ``last_name``: the name lineage last saw it under (a hint)."""


class NoTableIds:
    """No metastore: every dataset is keyed by its name."""

    def table_id(self, tr: Transaction, dataset: Dataset) -> uuid.UUID | None:
        return None

    def table_state(self, tr: Transaction, table_id: uuid.UUID, last_name: str | None = None) -> TableState | None:
        return None


@dataclass(frozen=True)
class DatasetRef:
    """A dataset as stored: its key, and the dataset as last captured."""

    key: DatasetKey
    dataset: Dataset

    @property
    def name(self) -> str:
        return self.dataset.name

    def to_value(self) -> bytes:
        d = self.dataset.to_dict()
        if isinstance(self.key, uuid.UUID):
            d["table_id"] = str(self.key)
        return json.dumps(d, separators=(",", ":")).encode()

    @staticmethod
    def from_value(key: DatasetKey, value: bytes) -> DatasetRef:
        return DatasetRef(key, Dataset.from_dict(json.loads(value)))


@dataclass(frozen=True)
class StoredEdge:
    """One stored column edge of one run. ``target_column`` None: a dataset-wide INDIRECT edge."""

    target: DatasetKey
    target_column: str | None
    source: DatasetKey
    source_column: str
    subtype: EdgeSubtype
    run_id: uuid.UUID
    time_ms: int

    @property
    def kind(self) -> EdgeKind:
        return self.subtype.kind


@dataclass(frozen=True)
class AccessRow:
    dataset: DatasetKey
    time_ms: int
    run_id: uuid.UUID
    access: Access


@dataclass(frozen=True)
class CapturedDataset:
    """One dataset lineage was captured for (:meth:`LineageStore.captured_datasets`)."""

    key: DatasetKey
    dataset: Dataset  # as last captured
    name: str  # the current name (a metastore table renamed since shows its new name)
    dropped: bool
    last_access_ms: int | None
    last_access: Access | None

    @property
    def kind(self) -> str:
        """``table`` (a table of this metastore), ``external table`` (a Hive / session-catalog /
        other catalog's table, known by name only) or ``path`` (files read or written by path)."""
        if self.dataset.kind is DatasetKind.PATH:
            return "path"
        return "table" if isinstance(self.key, uuid.UUID) else "external table"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "dropped": self.dropped,
                               "last_access_ms": self.last_access_ms,
                               "last_access": self.last_access.value if self.last_access else None,
                               "dataset": self.dataset.to_dict()}
        if isinstance(self.key, uuid.UUID):
            out["table_id"] = str(self.key)
        return out


@dataclass(frozen=True)
class Usage:
    day: str  # YYYY-MM-DD (UTC)
    reads: int
    writes: int


@dataclass(frozen=True)
class StoreStatus:
    captured: int
    dropped: int
    pending: int
    #: per capturing process: application id -> {"captured", "dropped", "pending", "updated_ms"}
    sources: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"captured": self.captured, "dropped": self.dropped, "pending": self.pending,
                "sources": self.sources}


def _le(n: int) -> bytes:
    return struct.pack("<q", n)


def _from_le(b: bytes | None) -> int:
    return struct.unpack("<q", b)[0] if b else 0


def _day(ms: int) -> int:
    return ms // DAY_MS


def _day_text(day: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))


def _bound(ms: int | None, default: int) -> int:
    return default if ms is None else int(ms)


_MAX_MS = 2 ** 62


class LineageStore:
    """The lineage of one project. Writes: :meth:`record` (one transaction per run). Reads:
    range scans, each in its own short transaction (a BFS never holds one open)."""

    def __init__(self, db: Database, project: str, *, layout: Any = None,
                 tables: TableIds | None = None, owns_db: bool = False) -> None:
        from ushas_catalog.keyspace.layout import DEFAULT_LAYOUT

        self.db = db
        self.project = project
        self.layout = layout or DEFAULT_LAYOUT
        self.tables: TableIds = tables or NoTableIds()
        self._owns_db = owns_db
        root = self.layout.project(project)
        self._root = root
        lineage = root.add(DATA_LINEAGE)
        self._run = lineage.add(LINEAGE_RUN)
        self._by_time = lineage.add(LINEAGE_RUN_BY_TIME)
        self._run_ds = lineage.add(LINEAGE_RUN_DATASET)
        self._access = lineage.add(LINEAGE_DATASET_ACCESS)
        self._run_edge = lineage.add(LINEAGE_RUN_EDGE)
        self._up = lineage.add(LINEAGE_UPSTREAM)
        self._down = lineage.add(LINEAGE_DOWNSTREAM)
        self._ds = lineage.add(LINEAGE_DATASET)
        self._names = lineage.add(LINEAGE_DATASET_NAME)
        self._counter = lineage.add(LINEAGE_COUNTER)
        self._source = lineage.add(LINEAGE_CAPTURE_SOURCE)
        self._usage = root.add(USAGE_PROFILE).add(DATASET_USAGE)

    @classmethod
    def open(cls, uri: str, project: str = "default", *, tables: TableIds | None = None) -> LineageStore:
        from ushas_catalog.kv import open_database

        return cls(open_database(uri), project, tables=tables, owns_db=True)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()

    # ---- keys --------------------------------------------------------------------------------
    @staticmethod
    def _ds_path(base: KeySpacePath, key: DatasetKey) -> KeySpacePath:
        if isinstance(key, uuid.UUID):
            return base.add(TABLE_ID, key)
        return base.add(DATASET_NAME, key)

    def _counter_key(self, name: str) -> bytes:
        return self._counter.add(COUNTER, name).key()

    # ---- writes ------------------------------------------------------------------------------
    def dataset_key(self, tr: Transaction, dataset: Dataset) -> DatasetKey:
        return self.identify(tr, dataset)[0]

    def identify(self, tr: Transaction, dataset: Dataset) -> tuple[DatasetKey, Dataset]:
        """The key of ``dataset`` and the dataset as stored: a path that is (or lies under) a
        metastore table's location is that table (lineage.identity), kept with its path."""
        if dataset.kind is DatasetKind.PATH:
            by_path = getattr(self.tables, "table_for_path", None)
            found = by_path(tr, dataset) if by_path is not None else None
            if found is not None:
                return found
        return self._dataset_key(tr, dataset), dataset

    def _dataset_key(self, tr: Transaction, dataset: Dataset) -> DatasetKey:
        if dataset.kind is DatasetKind.TABLE:
            table_id = self.tables.table_id(tr, dataset)
            if table_id is not None:
                return table_id
        if dataset.kind is DatasetKind.INLINE:
            raise InvalidArgument(f"in-query source {dataset.name} is not a stored dataset")
        name = dataset.name
        if not name:
            raise InvalidArgument(f"dataset without a name: {dataset.to_dict()}")
        return name

    def record(self, captured: CapturedRun) -> bool:
        """Store one run in one transaction. False when that run was already stored."""
        _validate(captured)
        return self.db.run(lambda tr: self._record(tr, captured))

    def record_many(self, captured: list[CapturedRun]) -> int:
        """Store several runs in ONE transaction (bulk loads: imports, generated stores); the
        caller keeps the batch within a transaction's limits. The number newly stored."""
        for c in captured:
            _validate(c)
        return int(self.db.run(lambda tr: sum(self._record(tr, c) for c in captured)))

    def _record(self, tr: Transaction, captured: CapturedRun) -> bool:
        run = captured.run
        run_key = self._run.add(RUN_ID, run.run_id).key()
        if tr.get(run_key) is not None:
            return False
        t = run.end_ms
        tr.set(run_key, json.dumps(_clip_run(run).to_dict(), separators=(",", ":")).encode())
        tr.set(self._by_time.add(TIME, t).add(RUN_ID, run.run_id).key(), b"")
        keys: dict[Dataset, DatasetKey] = {}

        def key_of(ds: Dataset) -> DatasetKey:
            if ds not in keys:
                keys[ds], stored = self.identify(tr, ds)
                ref = DatasetRef(keys[ds], stored)
                tr.set(self._ds_path(self._ds, keys[ds]).key(), ref.to_value())
                for name in dict.fromkeys((stored.name, ds.name)):
                    tr.set(self._names.add(NAME, name).pack((keys[ds],)), b"")
            return keys[ds]

        day = _day(t)
        ok = run.status is RunStatus.COMPLETE
        for access, datasets in ((Access.READ, captured.reads), (Access.WRITE, captured.writes)):
            for ds in dict.fromkeys(d for d in datasets if d.kind is not DatasetKind.INLINE):
                k = key_of(ds)
                tr.set(self._run_ds.add(RUN_ID, run.run_id).pack((access.value, k)),
                       DatasetRef(k, self.identify(tr, ds)[1]).to_value())
                tr.set(self._ds_path(self._access, k).pack((t, run.run_id, access.value)), b"")
                if ok:
                    counter = "reads" if access is Access.READ else "writes"
                    tr.add(self._ds_path(self._usage, k).pack((day, counter)), 1)
                    if access is Access.WRITE and isinstance(k, uuid.UUID):
                        # SYSTEM metadata of the written metastore table, in this run's transaction
                        record_lineage_write(tr, self._root, k, run_id=run.run_id, at_ms=t,
                                             user=run.user or "unknown")
        if ok:
            for edge in captured.edges:
                if edge.source.dataset is None or edge.source.dataset.kind is DatasetKind.INLINE:
                    continue
                if edge.target is not None and edge.target.dataset is None:
                    continue
                src = key_of(edge.source.dataset)
                target_ds = edge.target.dataset if edge.target is not None else _single_write(captured)
                if target_ds is None or target_ds.kind is DatasetKind.INLINE:
                    continue
                tgt = key_of(target_ds)
                tcol = edge.target.name if edge.target is not None else None
                scol = edge.source.name
                sub = edge.subtype.value
                tr.set(self._run_edge.add(RUN_ID, run.run_id).pack((tgt, tcol, src, scol, sub)),
                       edge.expression[:MAX_EXPRESSION_CHARS].encode())
                tr.set(self._ds_path(self._up, tgt).pack((tcol, t, run.run_id, src, scol, sub)), b"")
                tr.set(self._ds_path(self._down, src).pack((scol, t, run.run_id, tgt, tcol, sub)), b"")
        tr.add(self._counter_key("captured"), 1)
        if run.status is RunStatus.FAIL:
            tr.add(self._counter_key("failed"), 1)
        return True

    def add_dropped(self, count: int) -> None:
        """Count runs the capture had to drop (atomic; called once the store answers again)."""
        if count < 0:
            raise InvalidArgument("a dropped count cannot be negative")
        if count:
            self.db.run(lambda tr: tr.add(self._counter_key("dropped"), count))

    def report_source(self, source: str, *, captured: int, dropped: int, pending: int,
                      add_dropped: int = 0) -> None:
        """Publish one capturing process's counters (what ``ushas lineage status`` shows), and
        add the drops not yet counted in the store, in one transaction."""
        if add_dropped < 0:
            raise InvalidArgument("a dropped count cannot be negative")
        value = json.dumps({"captured": captured, "dropped": dropped, "pending": pending,
                            "updated_ms": now_ms()}).encode()

        def write(tr: Transaction) -> None:
            tr.set(self._source.add(SOURCE, source).key(), value)
            if add_dropped:
                tr.add(self._counter_key("dropped"), add_dropped)

        self.db.run(write)

    # ---- reads: runs ------------------------------------------------------------------------
    def get_run(self, run_id: uuid.UUID) -> Run:
        value = self.db.run(lambda tr: tr.get(self._run.add(RUN_ID, run_id).key()))
        if value is None:
            raise NoSuchRun(f"no lineage run {run_id}")
        return Run.from_dict(json.loads(value))

    def has_run(self, run_id: uuid.UUID) -> bool:
        return self.db.run(lambda tr: tr.get(self._run.add(RUN_ID, run_id).key())) is not None

    def find_runs(self, prefix: str) -> list[uuid.UUID]:
        """Run ids whose text starts with ``prefix`` (the CLI accepts an unambiguous prefix).
        A full id is one point read; a prefix scans the run index."""
        try:
            full = uuid.UUID(prefix)
        except ValueError:
            full = None
        if full is not None:
            return [full] if self.has_run(full) else []
        begin, end = self._run.range()

        def scan(tr: Transaction) -> list[uuid.UUID]:
            out = []
            for kv in tr.get_range(begin, end, snapshot=True):
                rid = self.layout.keyspace.parse(kv.key).value_of(RUN_ID)
                if str(rid).startswith(prefix.lower()):
                    out.append(rid)
            return out

        return self.db.run(scan)

    def runs_between(self, since: int | None = None, until: int | None = None, *,
                     limit: int = 0, reverse: bool = False) -> list[Run]:
        """Runs that ended in ``[since, until]``, in time order (newest first if ``reverse``)."""
        begin = self._by_time.add(TIME, _bound(since, 0)).key()
        end = self._by_time.add(TIME, _bound(until, _MAX_MS - 1) + 1).key()

        def scan(tr: Transaction) -> list[Run]:
            out = []
            for kv in tr.get_range(begin, end, limit=limit, reverse=reverse, snapshot=True):
                rid = self.layout.keyspace.parse(kv.key).value_of(RUN_ID)
                value = tr.get(self._run.add(RUN_ID, rid).key(), snapshot=True)
                if value is not None:
                    out.append(Run.from_dict(json.loads(value)))
            return out

        return self.db.run(scan)

    def run_datasets(self, run_id: uuid.UUID) -> list[tuple[Access, DatasetRef]]:
        base = self._run_ds.add(RUN_ID, run_id)

        def scan(tr: Transaction) -> list[tuple[Access, DatasetRef]]:
            out = []
            for kv in tr.get_range(*base.range(), snapshot=True):
                access, key = _suffix(base, kv.key)
                out.append((Access(access), DatasetRef.from_value(key, kv.value)))
            return out

        return self.db.run(scan)

    def run_edges(self, run_id: uuid.UUID) -> list[tuple[StoredEdge, str]]:
        """The edges one run stored, with their expressions."""
        base = self._run_edge.add(RUN_ID, run_id)
        run = self.get_run(run_id)

        def scan(tr: Transaction) -> list[tuple[StoredEdge, str]]:
            out = []
            for kv in tr.get_range(*base.range(), snapshot=True):
                tgt, tcol, src, scol, sub = _suffix(base, kv.key)
                out.append((StoredEdge(tgt, tcol, src, scol, EdgeSubtype(sub), run_id, run.end_ms),
                            kv.value.decode()))
            return out

        return self.db.run(scan)

    def expression(self, edge: StoredEdge) -> str:
        key = self._run_edge.add(RUN_ID, edge.run_id).pack(
            (edge.target, edge.target_column, edge.source,
             edge.source_column, edge.subtype.value))
        value = self.db.run(lambda tr: tr.get(key, snapshot=True))
        return value.decode() if value is not None else ""

    def accesses(self, key: DatasetKey, since: int | None = None, until: int | None = None, *,
                 access: Access | None = None, limit: int = 0, reverse: bool = False) -> list[AccessRow]:
        """Who read / wrote dataset ``key`` in ``[since, until]``: one range scan."""
        base = self._ds_path(self._access, key)
        begin = base.pack((_bound(since, 0),))
        end = base.pack((_bound(until, _MAX_MS - 1) + 1,))

        def scan(tr: Transaction) -> list[AccessRow]:
            out = []
            for kv in tr.get_range(begin, end, reverse=reverse, snapshot=True):
                t, rid, acc = _suffix(base, kv.key)
                if access is None or acc == access.value:
                    out.append(AccessRow(key, t, rid, Access(acc)))
                    if limit and len(out) >= limit:
                        break
            return out

        return self.db.run(scan)

    # ---- reads: edges -----------------------------------------------------------------------
    def upstream_edges(self, target: DatasetKey, column: str | None, since: int | None = None,
                       until: int | None = None, *, all_columns: bool = False) -> list[StoredEdge]:
        """Edges INTO ``target``: into ``column`` (plus the dataset-wide INDIRECT ones), or into
        every column when ``all_columns``; edges of runs that ended in ``[since, until]``."""
        return self._edges(self._up, target, column, since, until, all_columns, upstream=True)

    def downstream_edges(self, source: DatasetKey, column: str | None, since: int | None = None,
                         until: int | None = None, *, all_columns: bool = False) -> list[StoredEdge]:
        """Edges OUT OF ``source`` column ``column`` (or every column when ``all_columns``)."""
        return self._edges(self._down, source, column, since, until, all_columns, upstream=False)

    def has_edges(self, key: DatasetKey, *, upstream: bool, since: int | None = None,
                  until: int | None = None) -> bool:
        """Whether any edge leads into (``upstream``) or out of dataset ``key``, in the window:
        without one, a single-key read; else a scan that stops at the first edge in it."""
        base = self._ds_path(self._up if upstream else self._down, key)
        lo, hi = _bound(since, 0), _bound(until, _MAX_MS - 1)
        begin, end = base.range()

        def scan(tr: Transaction) -> bool:
            for kv in tr.get_range(begin, end, limit=1 if since is None and until is None else 0, snapshot=True):
                if since is None and until is None or lo <= _suffix(base, kv.key)[1] <= hi:
                    return True  # the range is streamed: stopping here reads no further
            return False

        return self.db.run(scan)

    def _edges(self, index: KeySpacePath, key: DatasetKey, column: str | None, since: int | None,
               until: int | None, all_columns: bool, upstream: bool) -> list[StoredEdge]:
        base = self._ds_path(index, key)
        lo, hi = _bound(since, 0), _bound(until, _MAX_MS - 1)
        if all_columns:
            ranges = [base.range()]
        else:
            cols: list[str | None] = [column]
            if upstream and column is not None:
                cols.append(None)  # dataset-wide INDIRECT edges affect every column
            ranges = [(base.pack((c, lo)), base.pack((c, hi + 1))) for c in cols]

        base_len = len(base.key())

        def scan(tr: Transaction) -> list[StoredEdge]:
            out = []
            for begin, end in ranges:
                for kv in tr.get_range(begin, end, snapshot=True):
                    col, t, rid, other, ocol, sub = _edge_suffix(base_len, kv.key)
                    if not lo <= t <= hi:
                        continue
                    if upstream:
                        out.append(StoredEdge(key, col, other, ocol, EdgeSubtype(sub), rid, t))
                    else:
                        out.append(StoredEdge(other, ocol, key, col, EdgeSubtype(sub), rid, t))
            return out

        return self.db.run(scan)

    # ---- reads: datasets --------------------------------------------------------------------
    def dataset(self, key: DatasetKey) -> DatasetRef | None:
        value = self.db.run(lambda tr: tr.get(self._ds_path(self._ds, key).key(), snapshot=True))
        return DatasetRef.from_value(key, value) if value is not None else None

    def keys_named(self, name: str) -> list[DatasetKey]:
        """Every dataset key ever captured under ``name`` (tables renamed since included)."""
        base = self._names.add(NAME, name)

        def scan(tr: Transaction) -> list[DatasetKey]:
            return [_suffix(base, kv.key)[0] for kv in tr.get_range(*base.range(), snapshot=True)]

        return self.db.run(scan)

    def names_in_order(self, prefix: str = "", *, after: str | None = None,
                       limit: int = 100) -> list[tuple[str, DatasetKey]]:
        """(name, key) of the dataset name index in name order: names starting with ``prefix``,
        after the name ``after``, at most ``limit`` (one range scan: what a paged list reads)."""
        base = self._names.key()
        begin = base + fdbtuple.pack((prefix,))[:-1] if prefix else self._names.range()[0]
        end = begin + b"\xff" if prefix else self._names.range()[1]
        if after is not None:
            begin = max(begin, base + fdbtuple.pack((after,)) + b"\xff")

        def scan(tr: Transaction) -> list[tuple[str, DatasetKey]]:
            return [tuple(fdbtuple.unpack(kv.key[len(base):]))  # type: ignore[misc]
                    for kv in tr.get_range(begin, end, limit=limit, snapshot=True)]

        return self.db.run(scan)

    def current_table_id(self, dataset: Dataset) -> uuid.UUID | None:
        return self.db.run(lambda tr: self.tables.table_id(tr, dataset))

    def table_locations(self) -> Any:
        """Where the metastore's tables are, read now (a :class:`~lineage.identity.TableLocations`),
        or None when this store has no metastore."""
        scan = getattr(self.tables, "scan_locations", None)
        return self.db.run(scan) if scan is not None else None

    def location_of(self, table_id: uuid.UUID) -> str | None:
        """The location of a live metastore table (canonical spelling), or None."""
        of = getattr(self.tables, "location_of", None)
        if of is None:
            return None
        ref = self.dataset(table_id)
        return self.db.run(lambda tr: of(tr, table_id, ref.name if ref is not None else None))

    def path_keys_under(self, location: str) -> list[DatasetKey]:
        """Keys of the path datasets captured at ``location`` or under it (by name; paths
        captured before a table existed there are keyed by their path)."""
        from .identity import canonical_uri

        loc = canonical_uri(location)
        exact = self._names.add(NAME, loc)
        prefix = self._names.key() + fdbtuple.pack((loc.rstrip("/") + "/",))[:-1]

        def scan(tr: Transaction) -> list[DatasetKey]:
            out: list[DatasetKey] = [_suffix(exact, kv.key)[0] for kv in tr.get_range(*exact.range(), snapshot=True)]
            for kv in tr.get_range(prefix, prefix + b"\xff", snapshot=True):
                name, key = fdbtuple.unpack(kv.key[len(self._names.key()):])
                out.append(key)
            return [k for k in dict.fromkeys(out) if isinstance(k, str)]

        return self.db.run(scan)

    def describe(self, key: DatasetKey) -> dict[str, Any]:
        """Display form of a dataset key: its current name, and whether it was dropped."""
        ref = self.dataset(key)
        if isinstance(key, uuid.UUID):
            last = ref.name if ref is not None else None
            state = self.db.run(lambda tr: self.tables.table_state(tr, key, last))
            if state is not None:
                return {"name": state.name, "table_id": str(key), "dropped": state.dropped}
            name = ref.name if ref is not None else str(key)
            return {"name": name, "table_id": str(key), "dropped": True}
        return {"name": key, "dropped": False}

    def captured_datasets(self) -> list[CapturedDataset]:
        """Every dataset lineage was captured for — metastore tables, Hive / other catalogs'
        tables and paths — with its current name, whether it was dropped, and its latest access
        (read or write). Ordered by name. One scan of the dataset index, then one short reverse
        read of each dataset's accesses."""
        begin, end = self._ds.range()
        prefix = len(self._ds.key())

        def scan(tr: Transaction) -> list[DatasetRef]:
            return [DatasetRef.from_value(fdbtuple.unpack(kv.key[prefix:])[0], kv.value)
                    for kv in tr.get_range(begin, end, snapshot=True)]

        out = []
        for ref in self.db.run(scan):
            described = self.describe(ref.key)
            last = self.accesses(ref.key, limit=1, reverse=True)
            out.append(CapturedDataset(ref.key, ref.dataset, described["name"], bool(described.get("dropped")),
                                       last[0].time_ms if last else None, last[0].access if last else None))
        return sorted(out, key=lambda d: (d.name, str(d.key)))

    def usage(self, key: DatasetKey, since: int | None = None, until: int | None = None) -> list[Usage]:
        """Reads / writes per day (UTC) of dataset ``key``."""
        base = self._ds_path(self._usage, key)
        begin = base.pack((_day(_bound(since, 0)),))
        end = base.pack((_day(_bound(until, _MAX_MS - 1)) + 1,))

        def scan(tr: Transaction) -> dict[int, dict[str, int]]:
            days: dict[int, dict[str, int]] = {}
            for kv in tr.get_range(begin, end, snapshot=True):
                day, counter = _suffix(base, kv.key)
                days.setdefault(day, {})[counter] = _from_le(kv.value)
            return days

        days = self.db.run(scan)
        return [Usage(_day_text(d), c.get("reads", 0), c.get("writes", 0)) for d, c in sorted(days.items())]

    def status(self) -> StoreStatus:
        begin, end = self._source.range()

        def read(tr: Transaction) -> StoreStatus:
            captured = _from_le(tr.get(self._counter_key("captured"), snapshot=True))
            dropped = _from_le(tr.get(self._counter_key("dropped"), snapshot=True))
            sources: dict[str, dict[str, int]] = {}
            for kv in tr.get_range(begin, end, snapshot=True):
                name = self.layout.keyspace.parse(kv.key).value_of(SOURCE)
                sources[name] = json.loads(kv.value)
            pending = sum(int(s.get("pending", 0)) for s in sources.values())
            return StoreStatus(captured, dropped, pending, sources)

        return self.db.run(read)


def _suffix(base: KeySpacePath, key: bytes) -> tuple[Any, ...]:
    return fdbtuple.unpack(key[len(base.key()):])


#: UUIDs decoded from edge keys, by their bytes: the same datasets and runs come back in every scan
_UUIDS: dict[bytes, uuid.UUID] = {}


def _edge_suffix(start: int, key: bytes) -> tuple[Any, ...]:
    """``fdbtuple.unpack(key[start:])`` for an edge index key (column, time, run, dataset,
    column, subtype): the element kinds those keys hold (null, string, non-negative int, UUID)
    decoded inline, UUIDs shared; anything else by ``fdb.tuple``. A graph walk decodes thousands."""
    out: list[Any] = []
    pos, n = start, len(key)
    while pos < n:
        code = key[pos]
        if code == 0x00:
            out.append(None)
            pos += 1
        elif code == 0x02:
            end = key.find(b"\x00", pos + 1)
            while end + 1 < n and key[end + 1] == 0xFF:
                end = key.find(b"\x00", end + 2)
            raw = key[pos + 1:end]
            out.append((raw.replace(b"\x00\xff", b"\x00") if b"\x00" in raw else raw).decode("utf-8"))
            pos = end + 1
        elif 0x14 <= code < 0x1C:
            size = code - 0x14
            out.append(int.from_bytes(key[pos + 1:pos + 1 + size], "big"))
            pos += 1 + size
        elif code == 0x30:
            raw = key[pos + 1:pos + 17]
            found = _UUIDS.get(raw)
            if found is None:
                if len(_UUIDS) > 200_000:
                    _UUIDS.clear()
                found = _UUIDS[raw] = uuid.UUID(bytes=raw)
            out.append(found)
            pos += 17
        else:
            return tuple(fdbtuple.unpack(key[start:]))
    return tuple(out)


def _single_write(captured: CapturedRun) -> Dataset | None:
    writes = [d for d in captured.writes if d.kind is not DatasetKind.INLINE]
    return writes[0] if len(writes) == 1 else None


def _clip_run(run: Run) -> Run:
    sql = run.sql
    if sql is not None and len(sql) > MAX_SQL_CHARS:
        sql = sql[:MAX_SQL_CHARS] + " …[truncated]"
    error = run.error
    if error is not None and len(error) > MAX_ERROR_CHARS:
        error = error[:MAX_ERROR_CHARS] + " …[truncated]"
    return replace(run, sql=sql, error=error)


def _validate(captured: CapturedRun) -> None:
    run = captured.run
    if run.end_ms < run.start_ms:
        raise InvalidArgument(f"run {run.run_id} ends ({run.end_ms}) before it starts ({run.start_ms})")
    if run.start_ms < 0:
        raise InvalidArgument(f"run {run.run_id} has a negative start time")
    for edge in captured.edges:
        if edge.source.dataset is None:
            raise InvalidArgument(f"edge source {edge.source} is not a dataset column")


def edges_of(results: Iterable[Any]) -> tuple[Edge, ...]:
    """The leaf-level edges of several :class:`~lineage.model.LineageResult` s, each edge once."""
    seen: dict[Edge, None] = {}
    for result in results:
        for edge in result.edges:
            seen.setdefault(edge)
    return tuple(seen)


Opener = Callable[[], LineageStore]

__all__ = ["Access", "AccessRow", "CapturedDataset", "CapturedRun", "DatasetKey", "DatasetRef", "LineageStore", "NoTableIds",
           "Run", "RunStatus", "StoreStatus", "StoredEdge", "TableIds", "TableState", "Usage", "edges_of",
           "now_ms", "run_id_for", "Opener"]
