"""The values of the lineage store (:mod:`lineage.store`): runs and their status, a captured run
with its datasets and edges, dataset references, accesses, usage counters and the store's status."""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from ushas_catalog.kv.base import Transaction

from .model import Dataset, DatasetKind, Edge, EdgeKind, EdgeSubtype

#: namespace of the deterministic run ids (uuid5 of "application id/execution id")
RUN_NAMESPACE = uuid.UUID("6f1d3c3e-6c1b-4d55-9a53-3b6c2f0a7e11")

DatasetKey = uuid.UUID | str

#: the longest SQL text kept on a run record (values are limited to 100 kB)
MAX_SQL_CHARS = 60_000
#: the longest expression kept per edge
MAX_EXPRESSION_CHARS = 2_000
#: the most characters of written column names kept on a run record (more: the list is not kept)
MAX_COLUMNS_CHARS = 30_000
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
    #: the columns of the run's one written dataset, in order (those without any source too: an
    #: exported event lists them with empty ``inputFields``); empty when unknown or several written
    columns: tuple[str, ...] = ()
    #: a streaming micro-batch (one run per batch): its query's id (kept in the checkpoint) and batch id
    stream_query_id: str | None = None
    batch_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self._fields()
        if self.columns:
            out["columns"] = list(self.columns)
        return out

    def _fields(self) -> dict[str, Any]:
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
                   client_type=d.get("client_type"), columns=tuple(d.get("columns") or ()),
                   stream_query_id=d.get("stream_query_id"), batch_id=d.get("batch_id"))


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
    view: bool = False  # a view of this metastore

    @property
    def kind(self) -> str:
        """``table`` (a table of this metastore), ``view`` (a view of this metastore), ``external table`` (a
        Hive / session-catalog / other catalog's table, known by name only) or ``path`` (files read or
        written by path)."""
        if self.dataset.kind is DatasetKind.PATH:
            return "path"
        if self.view:
            return "view"
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
