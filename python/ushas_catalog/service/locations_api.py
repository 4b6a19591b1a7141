"""Declared external locations (docs/governance.md, "External locations"): ``GET /api/v1/locations``,
``POST /api/v1/locations`` (``{"name", "url", "comment"}``), ``GET`` / ``DELETE /api/v1/locations/{name}`` and
``POST /api/v1/locations/{name}/grants`` (``{"privilege", "principal"}``), as the token's user, through the
metastore's own calls (the same privilege checks as the CLI and SQL)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from ..errors import InvalidArgument
from .routing import body_object
from .state import ServiceState

LOC = "/locations/<seg:name>"


def _str(body: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = body.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InvalidArgument(f"the body needs {key} (a string)")
    return value


def register(bp: Blueprint, state: ServiceState) -> None:
    ep = state.endpoint

    @bp.get("/locations")
    @ep
    def list_locations() -> Any:
        return [loc.to_json() for loc in state.metastore.list_locations()]

    @bp.post("/locations")
    @ep
    def create_location() -> Any:
        body = body_object()
        return state.metastore.create_location(_str(body, "name"), _str(body, "url"),
                                               _str(body, "comment", required=False)).to_json()

    @bp.get(LOC)
    @ep
    def get_location(name: str) -> Any:
        return state.metastore.get_location(name).to_json()

    @bp.delete(LOC)
    @ep
    def drop_location(name: str) -> Any:
        state.metastore.drop_location(name)
        return {"dropped": name}

    @bp.post(LOC + "/grants")
    @ep
    def grant_on_location(name: str) -> Any:
        body = body_object()
        done = state.metastore.grant(_str(body, "privilege"), f"location:{name}", _str(body, "principal"))
        return {"granted": done}
