"""Spark's view of a table: the properties Spark passes to ``createTable`` -> the metastore's
arguments, and a metastore table -> what the shim builds its ``Table`` from."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ..errors import InvalidArgument
from ..data.locations import check_free, normalized
from ..model.names import new_table_name

#: file formats Spark's V1 file path reads and writes for a catalog table
FORMATS: frozenset[str] = frozenset({"parquet", "orc", "json", "csv", "avro", "text"})

#: TableCatalog.PROP_* that are fields of the metastore table, not user properties
RESERVED: frozenset[str] = frozenset({"provider", "location", "comment", "owner", "external",
                                      "is_managed_location", "table_type"})
#: TableCatalog.OPTION_PREFIX: USING ... OPTIONS (k v) arrive as option.k, kept as properties
OPTION_PREFIX = "option."
#: the shim's CreateTableStrategy (the session extension): the TBLPROPERTIES keys the statement also gave,
#: with the same value, in OPTIONS (a JSON list). Spark hands a V2 catalog each option also as a plain
#: property; with this the plain copies are dropped and the table properties kept. Never stored.
TBLPROPERTIES_MARKER = "__ushas_tblproperties_also_options"


@dataclass(frozen=True)
class SparkCtx:
    """The ``ctx`` of every shim request: the catalog instance's options."""

    uri: str
    project: str
    catalog: str
    spark_catalog: str
    warehouse: str

    @classmethod
    def of(cls, request: dict[str, Any]) -> "SparkCtx":
        c = request["ctx"]
        return cls(c["uri"], c.get("project") or "default", c["catalog"], c.get("spark_catalog") or c["catalog"],
                   c["warehouse"])


def database_of(namespace: list[str]) -> str:
    """Spark namespace -> database: exactly one level."""
    if len(namespace) != 1:
        shown = ".".join(namespace) if namespace else "(none)"
        raise InvalidArgument(f"namespace {shown!r}: Ushas catalogs have one namespace level (the database); "
                              f"use catalog.database.table")
    return namespace[0]


def table_name(ctx: SparkCtx, request: dict[str, Any]) -> tuple[str, str, str]:
    return ctx.catalog, database_of(request["namespace"]), request["name"]


def qualify(location: str) -> str:
    """A location as Hadoop qualifies it: local paths become ``file:/abs/path``."""
    parsed = urlparse(location)
    if parsed.scheme and len(parsed.scheme) > 1:
        return location.rstrip("/") if location.rstrip("/") else location
    return "file:" + os.path.abspath(location)


def managed_location(ctx: SparkCtx, db_location: str | None, database: str, table: str) -> str:
    base = db_location.rstrip("/") if db_location else f"{ctx.warehouse.rstrip('/')}/{database}.db"
    return f"{qualify(base)}/{table}"


def create_arguments(ctx: SparkCtx, database: str, table: str, request: dict[str, Any],
                     db_location: str | None, kept_data: bool = False) -> dict[str, Any]:
    """``createTable(ident, TableInfo)`` -> keyword arguments of ``Metastore.create_table``.
    The name must be able to name a new table, and a managed table's default location must
    be free (Spark's ``LOCATION_ALREADY_EXISTS``; see :mod:`ushas_catalog.data.locations`) unless
    ``kept_data``: a dropped table of the same name keeps its data there until purged."""
    new_table_name((ctx.catalog, database, table))
    props: dict[str, str] = dict(request.get("properties") or {})
    partition_by: list[str] = []
    bucketing = None
    for t in request.get("partitioning") or []:
        if t.get("transform") in ("bucket", "sorted_bucket") and bucketing is None:
            from ..model.bucketing import from_transform

            bucketing = from_transform(str(t["transform"]), str(t.get("text") or ""))
            continue
        if t.get("transform") != "identity" or len(t.get("columns") or []) != 1:
            raise InvalidArgument(f"partition transform {t.get('text')!r} is not supported: Ushas tables are "
                                  f"partitioned by columns (PARTITIONED BY (col, ...)) and bucketed by "
                                  f"CLUSTERED BY (col, ...) [SORTED BY (col, ...)] INTO n BUCKETS")
        partition_by.append(t["columns"][0])
    fmt = (props.get("provider") or "parquet").lower()
    if fmt not in FORMATS:
        raise InvalidArgument(f"unknown table format {props.get('provider')!r}: "
                              f"use one of {', '.join(sorted(FORMATS))}")
    location = props.get("location")
    external = bool(location) and props.get("is_managed_location", "false").lower() != "true"
    if props.get("external", "").lower() == "true" and location:
        external = True
    managed = managed_location(ctx, db_location, database, table)
    location = qualify(location) if location else managed
    if not external and not kept_data:
        check_free((ctx.spark_catalog, database, table), location)
    user = {k: v for k, v in props.items() if k not in RESERVED and k != TBLPROPERTIES_MARKER}
    if TBLPROPERTIES_MARKER in props:  # told by the session extension: the options' plain copies go
        kept = set(json.loads(props[TBLPROPERTIES_MARKER]))
        opts = {k[len(OPTION_PREFIX):] for k in props if k.startswith(OPTION_PREFIX)}
        user = {k: v for k, v in user.items() if k not in opts or k in kept}
    return {"schema": request["schema"], "partition_by": partition_by, "format": fmt, "location": location,
            "properties": user, "comment": props.get("comment"), "owner": props.get("owner"),
            "external": external, "bucketing": bucketing,
            # Spark's is_managed_location marks the catalog's own location: only when it is (a client states it)
            "default_location": not external and normalized(location) == normalized(managed)}


def partition_columns_last(schema: str, partition_by: list[str]) -> str:
    """``schema`` (Spark's JSON) with the partition columns moved to its end, in ``partition_by``'s order:
    where Spark's session catalog puts them when a table is created (``CREATE TABLE t (a, b, c) PARTITIONED
    BY (a)`` has columns b, c, a in DESC, ``SELECT *`` and SHOW CREATE TABLE)."""
    import json

    if not partition_by:
        return schema
    doc = json.loads(schema)
    fields = doc.get("fields") or []
    by_fold = {str(f["name"]).lower(): f for f in fields}
    wanted = [by_fold[c.lower()] for c in partition_by if c.lower() in by_fold]
    if len(wanted) != len(partition_by):
        return schema  # an unknown partition column: create_table names it
    moved = {id(f) for f in wanted}
    ordered = [f for f in fields if id(f) not in moved] + wanted
    if ordered == fields:
        return schema
    doc["fields"] = ordered
    return json.dumps(doc)


def rename_move(ctx: SparkCtx, info: Any, db_location: str | None, new_db_location: str | None,
                new_name: tuple[str, str, str]) -> dict[str, str] | None:
    """Where a renamed table's data goes: a managed table at its default location moves to the
    default location of its new name (Hive semantics); external tables, and managed tables placed
    elsewhere, keep their location (``None``)."""
    if info.external:
        return None
    old = qualify(location_of(ctx, info))
    if old != managed_location(ctx, db_location, info.database, info.name):
        return None
    new = managed_location(ctx, new_db_location, new_name[1], new_name[2])
    return None if new == old else {"from": old, "to": new}


def location_of(ctx: SparkCtx, info: Any) -> str:
    """A table's data location; a table made through the API without one (its database has no
    location either) lives under the catalog instance's warehouse."""
    return info.location or managed_location(ctx, None, info.database, info.name)


#: the catalog's write counters (``writes.STATS_PROPERTIES``): statistics, not properties Spark shows
WRITE_COUNTERS: frozenset[str] = frozenset({"numFiles", "totalSize", "numRows"})


def spark_properties(ctx: SparkCtx, info: Any) -> dict[str, str]:
    """The property map Spark reads a table from (provider, location, comment, ...); the write
    counters stay out of it, as the session catalog keeps its statistics out of TBLPROPERTIES."""
    props = {k: v for k, v in info.properties.items() if k not in WRITE_COUNTERS}
    props["provider"] = info.format
    props["location"] = location_of(ctx, info)
    if info.comment is not None:
        props["comment"] = info.comment
    if info.owner:
        props["owner"] = info.owner
    if info.external:
        props["external"] = "true"
    else:
        # Spark's mark of a managed table (TableCatalog.PROP_IS_MANAGED_LOCATION): SHOW CREATE TABLE
        # leaves LOCATION out, so replaying it creates a managed table again
        props["is_managed_location"] = "true"
    return props


def table_answer(ctx: SparkCtx, info: Any) -> dict[str, Any]:
    """A metastore table -> the shim's ``table`` object."""
    return {"schema": info.schema.json(), "partition_by": list(info.partition_columns),
            "properties": spark_properties(ctx, info), "format": info.format, "location": location_of(ctx, info),
            "external": info.external, "version": info.version,
            "bucketing": info.bucketing.to_json() if getattr(info, "bucketing", None) is not None else None,
            # the stored policies: cache.lookup turns them into what the reader applies (``policy``)
            "row_filter": info.row_filter.to_json() if getattr(info, "row_filter", None) is not None else None,
            "column_masks": [m.to_json() for m in getattr(info, "column_masks", ())]}


def view_answer(view: Any) -> dict[str, Any]:
    props = {k: v for k, v in view.properties.items()
             if not k.startswith("view.sqlConfig.") and k != "view.schemaMode"}
    if view.comment is not None:
        props["comment"] = view.comment
    if view.owner:
        props["owner"] = view.owner
    sql_configs = {k[len("view.sqlConfig."):]: v for k, v in view.properties.items()
                   if k.startswith("view.sqlConfig.")}
    return {"sql": view.sql, "schema": view.schema.json(), "properties": props,
            "current_catalog": view.current_catalog, "current_namespace": list(view.current_namespace),
            "query_column_names": list(view.query_column_names), "sql_configs": sql_configs,
            "schema_mode": view.properties.get("view.schemaMode")}
