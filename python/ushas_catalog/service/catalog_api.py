"""Catalogs, databases, tables, views, partitions (paged), history and as-of reads:
``/api/v1/catalogs/{catalog}/databases/{database}/tables/{table}...`` (every name one
percent-encoded path segment)."""
from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, request

from ..catalog.row_policies import as_reader_sees, refuse_partition_metadata
from ..errors import InvalidArgument, NotFound
from .routing import int_arg, page_args, paged, str_arg
from .state import ServiceState

C = "/catalogs/<seg:catalog>"
D = C + "/databases/<seg:database>"


def prefix_arg() -> dict[str, str] | None:
    text = (request.args.get("prefix") or "").strip()
    if not text:
        return None
    spec: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise InvalidArgument(f"prefix takes col=value[,col=value...], not {text[:80]!r}")
        spec[key.strip()] = value.strip()
    return spec


def with_metadata(state: ServiceState, out: dict[str, Any], name: tuple[str, str, str]) -> dict[str, Any]:
    """A table's or view's JSON with its metadata, full name and whether lineage knows it."""
    from ..model.names import TableName

    try:
        out["metadata"] = state.metastore.metadata.get(name).to_json()
    except NotFound:
        out["metadata"] = None
    full = str(TableName(*name))
    out["full_name"] = full
    out["lineage"] = state.lineage.resolve_dataset(full) is not None
    return out


def relations(state: ServiceState, catalog: str, database: str, kind: str | None,
              prefix: str | None) -> dict[str, Any]:
    offset, limit = page_args()
    rows = state.metastore.list_relations((catalog, database))
    picked = [r for r in rows if (kind is None or r.kind == kind) and (prefix is None or r.name.startswith(prefix))]
    return paged([r.to_json() for r in picked[offset:offset + limit + 1]], offset, limit, len(picked))


def register(bp: Blueprint, state: ServiceState) -> None:
    ep = state.endpoint

    @bp.get("/catalogs")
    @ep
    def list_catalogs() -> Any:
        items = [c.to_json() for c in state.metastore.list_catalogs()]
        return paged(items, 0, max(len(items), 1), len(items))

    @bp.get(C)
    @ep
    def get_catalog(catalog: str) -> Any:
        return state.metastore.get_catalog((catalog,)).to_json()

    @bp.get(C + "/databases")
    @ep
    def list_databases(catalog: str) -> Any:
        offset, limit = page_args()
        items = [d.to_json() for d in state.metastore.list_databases((catalog,))]
        return paged(items[offset:offset + limit + 1], offset, limit, len(items))

    @bp.get(D)
    @ep
    def get_database(catalog: str, database: str) -> Any:
        return state.metastore.get_database((catalog, database)).to_json()

    @bp.get(D + "/relations")
    @ep
    def list_relations(catalog: str, database: str) -> Any:
        kind = str_arg("kind")
        if kind is not None and kind not in ("TABLE", "VIEW"):
            raise InvalidArgument(f"kind must be TABLE or VIEW, not {kind[:40]!r}")
        return relations(state, catalog, database, kind, str_arg("prefix"))

    @bp.get(D + "/tables")
    @ep
    def list_tables(catalog: str, database: str) -> Any:
        return relations(state, catalog, database, "TABLE", None)

    @bp.get(D + "/views")
    @ep
    def list_views(catalog: str, database: str) -> Any:
        return relations(state, catalog, database, "VIEW", None)

    @bp.get(D + "/tables/<seg:table>")
    @ep
    def get_table(catalog: str, database: str, table: str) -> Any:
        name = (catalog, database, table)
        return with_metadata(state, as_reader_sees(state.metastore, state.metastore.get_table(name)).to_json(), name)

    @bp.get(D + "/views/<seg:view>")
    @ep
    def get_view(catalog: str, database: str, view: str) -> Any:
        name = (catalog, database, view)
        return with_metadata(state, state.metastore.get_view(name).to_json(), name)

    @bp.get(D + "/tables/<seg:table>/partitions")
    @ep
    def list_partitions(catalog: str, database: str, table: str) -> Any:
        offset, limit = page_args()
        ms = state.metastore
        name = (catalog, database, table)
        info = ms.get_table(name)
        if not info.partition_columns:
            return {"items": [], "columns": [], "offset": offset, "limit": limit, "has_more": False}
        items = []
        for i, p in enumerate(ms.list_partitions(name, prefix=prefix_arg(), limit=offset + limit + 1)):
            if i >= offset:
                items.append(p.to_json())
        refuse_partition_metadata(ms, info, "the partition listing")  # after list_partitions checked SELECT
        return {"items": items[:limit], "columns": info.partition_columns, "offset": offset, "limit": limit,
                "has_more": len(items) > limit}

    @bp.get(D + "/tables/<seg:table>/history")
    @ep
    def table_history(catalog: str, database: str, table: str) -> Any:
        ms = state.metastore
        ms.get_table((catalog, database, table))  # a view's name: NoSuchTable
        return [h.to_json() for h in ms.history((catalog, database, table), limit=int_arg("limit", None, 1, 10**9))]

    @bp.get(D + "/views/<seg:view>/history")
    @ep
    def view_history(catalog: str, database: str, view: str) -> Any:
        ms = state.metastore
        ms.get_view((catalog, database, view))
        return [h.to_json() for h in ms.history((catalog, database, view))]

    @bp.get(D + "/tables/<seg:table>/as-of")
    @ep
    def table_as_of(catalog: str, database: str, table: str) -> Any:
        version = int_arg("version", None, 0, 2**62)
        time = str_arg("time")
        if (version is None) == (time is None):
            raise InvalidArgument("as-of takes version=N or time=ISO-DATE-TIME (one of them)")
        as_of: int | dt.datetime
        if version is not None:
            as_of = version
        else:
            assert time is not None
            try:
                as_of = dt.datetime.fromisoformat(time.strip())
            except ValueError:
                raise InvalidArgument(f"time: {time[:40]!r} is not an ISO date-time") from None
        name = (catalog, database, table)
        return with_metadata(state, as_reader_sees(state.metastore, state.metastore.get_table(name, as_of=as_of)).to_json(),
                             name)


__all__ = ["register", "with_metadata", "prefix_arg"]
