"""The UI's Flask app: the page (``/``, its static files, ``/favicon.ico``). The page is a client of
the versioned REST API (``/api/v1``, :mod:`ushas_catalog.service`, mounted on this app by
:class:`.server.Service`), which answers every read and write with its access control.

The unversioned endpoints of the first UI (``/api/catalogs``, ``/api/relations/...``,
``/api/lineage`` ...) are retired: they answered reads without the API's token and authorization
checks. A request to one is answered ``410 Gone`` naming its ``/api/v1`` replacement
(:data:`RETIRED`), so a script written against them fails with a clear message.

Every response carries the security headers of :mod:`.security` (a CSP without inline script,
no framing, ``nosniff``, no referrer). An unexpected error is logged and answered with a 500
that says only that.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request, send_from_directory

from ..service.state import OwnStores
from .security import SECURITY_HEADERS

STATIC = Path(__file__).parent / "static"
LOG = logging.getLogger("ushas.ui")

#: first segment of a retired ``/api/...`` path -> where its answer is in API v1
RETIRED: dict[str, str] = {
    "info": "/api/v1/info",
    "catalogs": "/api/v1/catalogs[/{catalog}/databases]",
    "databases": "/api/v1/catalogs/{catalog}/databases/{database}/relations",
    "relations": "/api/v1/catalogs/{catalog}/databases/{database}/tables|views/{name}[/partitions|/history]",
    "search": "/api/v1/search?q=",
    "datasets": "/api/v1/lineage/datasets",
    "lineage": "/api/v1/lineage/graph",
    "runs": "/api/v1/runs?dataset=",
}


def create_app(uri: str, project: str = "default") -> Flask:
    app = Flask(__name__, static_folder=None)
    app.config["USHAS"] = OwnStores(uri, project)

    @app.after_request
    def secure(response: Response) -> Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Any:
        from werkzeug.exceptions import HTTPException

        if isinstance(exc, HTTPException):  # 404 of an unknown page, 405, ...: JSON, no detail
            return jsonify({"error": {"type": type(exc).__name__, "message": exc.description or exc.name}}), exc.code
        LOG.exception("unexpected error answering %s", request.path)
        return jsonify({"error": {"type": "InternalError", "message": "internal error (see the service log)"}}), 500

    @app.get("/")
    def index() -> Any:
        return send_from_directory(STATIC, "index.html")

    @app.get("/favicon.ico")
    def favicon() -> Any:
        return send_from_directory(STATIC, "favicon.svg", mimetype="image/svg+xml")

    @app.get("/static/<path:name>")
    def static_file(name: str) -> Any:
        return send_from_directory(STATIC, name)

    @app.route("/api/<path:rest>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    def retired(rest: str) -> Any:
        first = rest.split("/", 1)[0]
        if first == "v1" or first not in RETIRED:  # /api/v1 is the API's blueprint (mounted or not)
            return jsonify({"error": {"type": "NotFound", "message": f"no endpoint /api/{rest}"}}), 404
        return jsonify({"error": {"type": "Gone", "message": f"/api/{first}... was retired: use "
                                  f"{RETIRED[first]} (see /api/v1/openapi.json)"}}), 410

    return app
