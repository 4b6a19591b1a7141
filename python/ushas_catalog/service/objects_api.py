"""Versioned objects (docs/objects.md): ``/api/v1/catalogs/{catalog}/databases/{database}/objects...``: list,
create, read, drop, undrop, versions (add, read one, read as of a time, roll back), history, and the records
of user-defined subspaces, through ``Metastore.objects`` (the CLI's calls: same validation, same commits)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from ..errors import InvalidArgument, NotFound
from .catalog_api import D
from .routing import body_object, int_arg, page_args, paged, parse_json, str_arg
from .state import ServiceState

OBJ = D + "/objects/<seg:name>"


def _str(body: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidArgument(f"the body needs {key} (a string)")
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{key} must be a string")
    return value


def _props(body: dict[str, Any]) -> dict[str, str] | None:
    value = body.get("properties")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidArgument("properties must be an object of string values")
    return value


def register(bp: Blueprint, state: ServiceState) -> None:
    ep = state.endpoint

    def objects() -> Any:
        return state.metastore.objects

    @bp.get(D + "/objects")
    @ep
    def list_objects(catalog: str, database: str) -> Any:
        offset, limit = page_args()
        dropped = (str_arg("dropped") or "false").lower()
        if dropped not in ("true", "false"):
            raise InvalidArgument("dropped must be true or false")
        found = objects().list((catalog, database), kind=str_arg("kind"), dropped=dropped == "true")
        return paged([o.to_json() for o in found[offset:offset + limit + 1]], offset, limit, len(found))

    @bp.post(D + "/objects")
    @ep
    def create_object(catalog: str, database: str) -> Any:
        body = body_object()
        name = _str(body, "name", required=True)
        kind, location = _str(body, "kind", required=True), _str(body, "location", required=True)
        return objects().create((catalog, database, name or ""), kind or "", location or "",
                                properties=_props(body), comment=_str(body, "comment")).to_json()

    @bp.get(OBJ)
    @ep
    def get_object(catalog: str, database: str, name: str) -> Any:
        return objects().get((catalog, database, name)).to_json()

    @bp.delete(OBJ)
    @ep
    def drop_object(catalog: str, database: str, name: str) -> Any:
        objects().drop((catalog, database, name))
        return {"dropped": f"{catalog}.{database}.{name}"}

    @bp.post(OBJ + "/undrop")
    @ep
    def undrop_object(catalog: str, database: str, name: str) -> Any:
        return objects().undrop((catalog, database, name), str_arg("id")).to_json()

    @bp.get(OBJ + "/history")
    @ep
    def object_history(catalog: str, database: str, name: str) -> Any:
        limit = int_arg("limit", None, 1, 10**9)
        return [h.to_json() for h in objects().history((catalog, database, name), limit=limit)]

    @bp.get(OBJ + "/versions")
    @ep
    def list_versions(catalog: str, database: str, name: str) -> Any:
        limit = int_arg("limit", None, 1, 10**9)
        return [v.to_json() for v in objects().versions((catalog, database, name), limit=limit)]

    @bp.post(OBJ + "/versions")
    @ep
    def add_version(catalog: str, database: str, name: str) -> Any:
        body = body_object()
        return objects().add_version((catalog, database, name), _str(body, "location"), properties=_props(body),
                                     comment=_str(body, "comment")).to_json()

    @bp.get(OBJ + "/versions/<seg:version>")
    @ep
    def get_version(catalog: str, database: str, name: str, version: str) -> Any:
        if not version.isdigit() or int(version) < 1 or len(version) > 18:
            raise InvalidArgument(f"a version is a number >= 1, not {version[:40]!r}")
        return objects().version((catalog, database, name), int(version)).to_json()

    @bp.get(OBJ + "/as-of")
    @ep
    def version_as_of(catalog: str, database: str, name: str) -> Any:
        time = str_arg("time", required=True, what="an ISO date-time")
        return objects().version((catalog, database, name), as_of=time).to_json()

    @bp.post(OBJ + "/rollback")
    @ep
    def rollback(catalog: str, database: str, name: str) -> Any:
        version = body_object().get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgument("the body needs version (an integer >= 1)")
        return objects().rollback((catalog, database, name), version).to_json()

    register_subspaces(bp, state)




def _json_arg(name: str) -> Any:
    text = str_arg(name)
    if text is None:
        return None
    return parse_json(text, f"{name} (a key value, or a list of them)")


def register_subspaces(bp: Blueprint, state: ServiceState) -> None:
    """User-defined subspaces of an object: types, and records by primary key."""
    import base64
    import binascii

    ep = state.endpoint
    sub = OBJ + "/subspaces/<seg:subspace>"

    def objects() -> Any:
        return state.metastore.objects

    @bp.get(OBJ + "/subspaces")
    @ep
    def list_subspaces(catalog: str, database: str, name: str) -> Any:
        return [t.to_json() for t in objects().types((catalog, database, name))]

    @bp.post(OBJ + "/subspaces")
    @ep
    def register_subspace(catalog: str, database: str, name: str) -> Any:
        body = body_object()
        subspace = _str(body, "name", required=True)
        encoded = _str(body, "descriptor_set", required=True) or ""
        try:
            descriptors = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgument("descriptor_set must be a base64 serialized FileDescriptorSet") from None
        key = body.get("primary_key")
        if not isinstance(key, list) or not key or not all(isinstance(k, str) for k in key):
            raise InvalidArgument("primary_key must be a non-empty list of field names")
        return objects().register_type((catalog, database, name), subspace, descriptors,
                                       message_type=_str(body, "message_type"), primary_key=key).to_json()

    @bp.get(sub + "/records")
    @ep
    def scan_records(catalog: str, database: str, name: str, subspace: str) -> Any:
        limit = int_arg("limit", 100, 1, 10_000)
        reverse = (str_arg("reverse") or "false").lower()
        if reverse not in ("true", "false"):
            raise InvalidArgument("reverse must be true or false")
        rows = objects().scan((catalog, database, name), subspace, _json_arg("from"), _json_arg("to"), limit=limit,
                              reverse=reverse == "true")
        return [{"key": list(k), "record": r} for k, r in rows]

    @bp.put(sub + "/records")
    @ep
    def put_record(catalog: str, database: str, name: str, subspace: str) -> Any:
        record = body_object().get("record")
        if not isinstance(record, dict):
            raise InvalidArgument("the body needs record: an object of the message's fields")
        return {"key": list(objects().put((catalog, database, name), subspace, record))}

    @bp.get(sub + "/record")
    @ep
    def get_record(catalog: str, database: str, name: str, subspace: str) -> Any:
        key = _json_arg("key")
        if key is None:
            raise InvalidArgument("key is required (JSON: a value, or a list of them)")
        found = objects().read((catalog, database, name), subspace, key)
        if found is None:
            raise NotFound(f"no {subspace} record with key {json_text(key)}")
        return {"key": key if isinstance(key, list) else [key], "record": found}

    @bp.delete(sub + "/record")
    @ep
    def delete_record(catalog: str, database: str, name: str, subspace: str) -> Any:
        key = _json_arg("key")
        if key is None:
            raise InvalidArgument("key is required (JSON: a value, or a list of them)")
        if not objects().delete((catalog, database, name), subspace, key):
            raise NotFound(f"no {subspace} record with key {json_text(key)}")
        return {"deleted": key if isinstance(key, list) else [key]}


def json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)[:200]


__all__ = ["register", "register_subspaces"]
