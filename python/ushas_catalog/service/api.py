"""The API v1 blueprint: every resource module's routes under ``/api/v1``, the OpenAPI document,
``/info``, the browser session, and access control (:mod:`.auth`) in front of all of them."""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask

from ..extensions import extensions
from . import (catalog_api, catalog_ops_api, changes_api, metadata_api, metastore_call_api, objects_api,
               search_api, locations_api)
from .auth import AccessControl
from .routing import API_PREFIX, error_response, install, json_response
from .state import ServiceState, redactor, store_kind

OPENAPI = Path(__file__).parent / "openapi.json"


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    """The checked-in OpenAPI document (``service/openapi.json``, equal to :func:`.spec.document`)."""
    return dict(json.loads(OPENAPI.read_text(encoding="utf-8")))


def register_api(app: Flask, stores: Any, *, access: AccessControl | None = None,
                 namespaces: dict[str, str] | None = None) -> ServiceState:
    """Mount API v1 on ``app`` over ``stores`` (the UI app's :class:`~.state.Stores`)."""
    install(app)
    state = ServiceState(stores, redactor(stores.uri))
    access = access or AccessControl(stores, require_read_token=False)
    bp = Blueprint("api_v1", __name__, url_prefix=API_PREFIX)
    bp.before_request(access.check)

    @bp.get("/openapi.json")
    def openapi() -> Any:
        return json_response(openapi_document())

    @bp.get("/info")
    def info() -> Any:
        return json_response({"project": stores.project, "store": store_kind(stores.uri), "api": "v1",
                              "auth": {"reads": "token" if access.require_read_token else "open",
                                       "writes": "token"}})

    access.register(bp)
    for module in (catalog_api, catalog_ops_api, metastore_call_api, search_api, metadata_api, changes_api,
                   objects_api, locations_api):
        module.register(bp, state)
    for routes in extensions().routes:  # the extensions' routes (lineage: its reads, runs, ingest, the receiver)
        routes.register.load()(bp, dataclasses.replace(state, need=routes.need), namespaces or {})

    @bp.route("/<path:rest>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    def unknown(rest: str) -> Any:
        return error_response("NotFound", "no such API endpoint", 404)

    app.register_blueprint(bp)
    return state


__all__ = ["register_api", "openapi_document", "OPENAPI"]
