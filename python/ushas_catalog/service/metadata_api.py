"""Metadata of catalogs, databases, tables, views and columns: read, history, and the writes the
CLI makes (``ushas meta tag / untag / set / unset``, owner, description), through the same
:class:`~ushas_catalog.metadata.store.MetadataStore` and Metastore calls, so validation and
history are the CLI's. The object is named by the query parameters ``catalog``, ``database``,
``table``, ``column`` (any characters; a nested column as ``a.b``)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from ..errors import InvalidArgument
from .routing import body_object, int_arg, list_arg, str_arg
from .state import ServiceState


def object_parts() -> list[str]:
    """The object the query names, as name parts (catalog[, database[, table[, column parts]]])."""
    from ..model.names import split_name

    from flask import request

    catalog = str_arg("catalog")
    if catalog is None:
        body = request.get_json(silent=True) if request.method in ("PUT", "POST", "DELETE") else None
        named = sorted(k for k in ("catalog", "database", "table", "column") if isinstance(body, dict) and k in body)
        raise InvalidArgument("the object goes in the query string: ?catalog=C[&database=D[&table=T[&column=X]]]"
                              + (f" (the body names {', '.join(named)}: the body holds only the value)"
                                 if named else ""))
    database, table, column = str_arg("database"), str_arg("table"), str_arg("column")
    parts = [catalog]
    for value, what, needs in ((database, "database", None), (table, "table", "database"),
                               (column, "column", "table")):
        if value is None:
            continue
        if needs == "database" and database is None or needs == "table" and table is None:
            raise InvalidArgument(f"{what} needs {needs}")
        if what == "column":
            parts.extend(split_name(value))
        else:
            parts.append(value)
    return [p for p in parts if p is not None]


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise InvalidArgument(f"{what} must be a non-empty list of strings")
    return value


def set_owner(state: ServiceState, parts: list[str], owner: str) -> None:
    """The owner of a catalog, database, table or view (one metastore operation, with its commit)."""
    from ..metadata.store import ObjectType
    from ..model.table_changes import SetOwner

    from ..catalog.authorization import OBJECT, Requirement, object_name, requiring
    from ..governance.privileges import USE

    ms = state.metastore
    with requiring(Requirement(USE, OBJECT, object_name(parts))):  # the change below checks MANAGE
        ref = ms.run(lambda tr: ms.metadata.resolve(tr, parts))
    if ref.type is ObjectType.CATALOG:
        raise InvalidArgument("a catalog's owner is the user who created it; set the owner of its databases, "
                              "tables and views")
    if ref.type is ObjectType.DATABASE:
        ms.alter_database(ref.name, owner=owner)
    elif ref.type is ObjectType.TABLE:
        ms.alter_table(ref.name, [SetOwner(owner)])
    elif ref.type is ObjectType.VIEW:
        ms.alter_view(ref.name, owner=owner)
    else:
        raise InvalidArgument("a column has no owner of its own: set the owner of its table")


def register(bp: Blueprint, state: ServiceState) -> None:
    ep = state.endpoint

    @bp.get("/metadata")
    @ep
    def get_metadata() -> Any:
        return state.metastore.metadata.get(object_parts()).to_json()

    @bp.get("/metadata/history")
    @ep
    def metadata_history() -> Any:
        limit = int_arg("limit", None, 1, 10**9)
        return [c.to_json() for c in state.metastore.metadata.history(object_parts(), limit=limit)]

    @bp.post("/metadata/tags")
    @ep
    def add_tags() -> Any:
        tags = _strings(body_object().get("tags"), "tags")
        return state.metastore.metadata.tag(object_parts(), tags).to_json()

    @bp.delete("/metadata/tags")
    @ep
    def remove_tags() -> Any:
        tags = list_arg("tag")
        if not tags:
            raise InvalidArgument("name the tags to remove: tag=T (repeatable)")
        return state.metastore.metadata.untag(object_parts(), tags).to_json()

    @bp.post("/metadata/properties")
    @ep
    def set_properties() -> Any:
        props = body_object().get("properties")
        if not isinstance(props, dict) or not props or not all(isinstance(v, str) for v in props.values()):
            raise InvalidArgument("properties must be a non-empty object of string values")
        return state.metastore.metadata.set(object_parts(), props).to_json()

    @bp.delete("/metadata/properties")
    @ep
    def unset_properties() -> Any:
        keys = list_arg("key")
        if not keys:
            raise InvalidArgument("name the properties to remove: key=K (repeatable)")
        return state.metastore.metadata.unset(object_parts(), keys).to_json()

    @bp.put("/metadata/owner")
    @ep
    def put_owner() -> Any:
        owner = body_object().get("owner")
        if not isinstance(owner, str) or not owner.strip():
            raise InvalidArgument("owner must be a non-empty string")
        parts = object_parts()
        set_owner(state, parts, owner)
        return state.metastore.metadata.get(parts).to_json()

    @bp.put("/metadata/description")
    @ep
    def put_description() -> Any:
        body = body_object()
        if "description" not in body:
            raise InvalidArgument("the body needs description (a string, or null to clear it)")
        text = body["description"]
        parts = object_parts()
        md = state.metastore.metadata
        if text is None or text == "":
            return md.unset(parts, ["comment"]).to_json()
        if not isinstance(text, str):
            raise InvalidArgument("description must be a string or null")
        return md.set(parts, {"comment": text}).to_json()


__all__ = ["register", "object_parts", "set_owner"]
