"""What the :class:`~ushas_catalog.metastore.Metastore` returns: plain dataclasses, each
with ``to_json()`` giving a JSON-able dict (times as ISO-8601 strings, schemas as Spark's
StructType JSON) for the bridge and the CLI."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from .bucketing import Bucketing
from .row_policies import ColumnMask, RowFilter
from .schema import StructType


def micros_to_datetime(micros: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)


def _iso(t: dt.datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


@dataclass
class CatalogInfo:
    name: str
    id: str
    comment: str | None
    properties: dict[str, str]
    owner: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "id": self.id, "comment": self.comment, "properties": self.properties,
                "owner": self.owner, "created_at": _iso(self.created_at), "updated_at": _iso(self.updated_at),
                "version": self.version}


@dataclass
class DatabaseInfo:
    catalog: str
    name: str
    id: str
    comment: str | None
    location: str | None
    properties: dict[str, str]
    owner: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    version: int

    @property
    def full_name(self) -> str:
        from .names import DatabaseName

        return str(DatabaseName(self.catalog, self.name))

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "name": self.name, "id": self.id, "comment": self.comment,
                "location": self.location, "properties": self.properties, "owner": self.owner,
                "created_at": _iso(self.created_at), "updated_at": _iso(self.updated_at), "version": self.version}


@dataclass
class TableInfo:
    catalog: str
    database: str
    name: str
    id: str
    version: int
    schema_id: int
    schema: StructType
    partition_columns: list[str]
    format: str
    location: str | None
    external: bool
    properties: dict[str, str]
    comment: str | None
    owner: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    #: CLUSTERED BY ... INTO n BUCKETS (None: not bucketed)
    bucketing: Bucketing | None = None
    #: the row filter and column masks reads apply (docs/governance.md)
    row_filter: RowFilter | None = None
    column_masks: list[ColumnMask] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        from .names import TableName

        return str(TableName(self.catalog, self.database, self.name))

    def to_json(self) -> dict[str, Any]:
        out = {"catalog": self.catalog, "database": self.database, "name": self.name, "id": self.id,
               "kind": "TABLE", "version": self.version, "schema_id": self.schema_id,
               "schema": self.schema.json_value(), "partition_columns": self.partition_columns,
               "format": self.format, "location": self.location, "external": self.external,
               "properties": self.properties, "comment": self.comment, "owner": self.owner,
               "created_at": _iso(self.created_at), "updated_at": _iso(self.updated_at)}
        if self.bucketing is not None:
            out["bucketing"] = self.bucketing.to_json()
        if self.row_filter is not None:
            out["row_filter"] = self.row_filter.to_json()
        if self.column_masks:
            out["column_masks"] = [m.to_json() for m in self.column_masks]
        return out


@dataclass
class ViewInfo:
    catalog: str
    database: str
    name: str
    id: str
    version: int
    sql: str
    schema: StructType
    comment: str | None
    properties: dict[str, str]
    current_catalog: str | None
    current_namespace: list[str]
    query_column_names: list[str]
    owner: str | None
    created_at: dt.datetime
    updated_at: dt.datetime

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "database": self.database, "name": self.name, "id": self.id,
                "kind": "VIEW", "version": self.version, "sql": self.sql, "schema": self.schema.json_value(),
                "comment": self.comment, "properties": self.properties, "current_catalog": self.current_catalog,
                "current_namespace": self.current_namespace, "query_column_names": self.query_column_names,
                "owner": self.owner, "created_at": _iso(self.created_at), "updated_at": _iso(self.updated_at)}


@dataclass
class RelationSummary:
    """A table or view as listed: its name, kind and id."""

    catalog: str
    database: str
    name: str
    kind: str  # TABLE or VIEW
    id: str
    created_at: dt.datetime

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "database": self.database, "name": self.name, "kind": self.kind,
                "id": self.id, "created_at": _iso(self.created_at)}


@dataclass
class DroppedObject:
    """A dropped catalog, database or table, restorable with undrop until purged."""

    kind: str
    name: str
    id: str
    dropped_at: dt.datetime
    dropped_by: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "id": self.id, "dropped_at": _iso(self.dropped_at),
                "dropped_by": self.dropped_by}


@dataclass
class HistoryItem:
    """One version of an object: its commit (who, when, what) and, for tables, the schema
    id it had and the subspaces the commit changed."""

    version: int
    operation: str
    user: str
    committed_at: dt.datetime
    detail: dict[str, Any]
    schema_id: int | None = None
    changed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "operation": self.operation, "user": self.user,
                "committed_at": _iso(self.committed_at), "detail": self.detail, "schema_id": self.schema_id,
                "changed": self.changed}


@dataclass
class MutationResult:
    """What a partition operation did: the table version it made (``None`` if it changed
    nothing) and how many partitions it added / dropped / replaced."""

    version: int | None
    added: int = 0
    dropped: int = 0
    replaced: int = 0
    skipped: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "added": self.added, "dropped": self.dropped, "replaced": self.replaced,
                "skipped": self.skipped}


@dataclass
class SubspaceStats:
    project: str
    subspace: str
    keys: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"project": self.project, "subspace": self.subspace, "keys": self.keys, "bytes": self.bytes}


def detail_from_json(text: str) -> dict[str, Any]:
    return json.loads(text) if text else {}
