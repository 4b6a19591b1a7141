"""The UI's Flask app: the page (``/``, its static files, ``/favicon.ico``) and the former
unversioned JSON endpoints (``/api/...``). The page itself is a client of the versioned REST API
(``/api/v1``, :mod:`ushas_catalog.service`, mounted on this app by :class:`.server.Service`); the
endpoints below stay for scripts written against them.

Endpoints (every answer is JSON; an error is ``{"error": {"type", "message"}}`` with 404 for a
missing object and 400 for bad input):

- ``/api/catalogs``; ``/api/catalogs/<c>/databases``; ``/api/databases/<c>/<d>/relations``
- ``/api/relations/<c>/<d>/<n>``: a table or view, with its tags and properties (metadata) and
  whether lineage was captured for it; ``.../partitions?offset=&limit=&prefix=k=v,...`` (paged);
  ``.../history``
- ``/api/search?q=``: the discovery index (``Metastore.search``): tags, properties, columns
- ``/api/datasets?kind=table|external table|path``: every dataset lineage was captured for
  (metastore tables, Hive / other catalogs' tables, paths), with its kind and latest access
- ``/api/lineage?node=NAME[.COLUMN]&direction=upstream|downstream|both&depth=N&since=&until=``:
  the column graph: nodes, and edges with their type and expression
- ``/api/runs?dataset=NAME&since=&until=``: who read / wrote a dataset
- ``/api/info``: the project and the kind of store (never its location)

Every response carries the security headers of :mod:`.security` (a CSP without inline script,
no framing, ``nosniff``, no referrer). Error messages never show the store's location; an
unexpected error is logged and answered with a 500 that says only that.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from flask import Flask, Response, jsonify, request, send_from_directory

from ..errors import InvalidArgument, NotFound, UshasError
from ..service.state import OwnStores, redactor, store_kind
from .security import SECURITY_HEADERS

STATIC = Path(__file__).parent / "static"
#: partitions per page unless ``limit`` says otherwise, and the most one page may hold
PAGE_SIZE = 50
MAX_PAGE = 1000
MAX_DEPTH = 20
LOG = logging.getLogger("ushas.ui")




def parse_time(text: str | None, what: str) -> int | None:
    """A form field's time bound (:func:`lineage.query.parse_time`); an empty field = no bound."""
    from lineage.query import parse_time as parse_bound

    return parse_bound(text, what) if text is not None and text.strip() else None


def _int_arg(name: str, default: int | None, low: int, high: int) -> int | None:
    text = request.args.get(name, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgument(f"{name} must be an integer, not {text!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high}, not {value}")
    return value


def _prefix_arg() -> dict[str, str] | None:
    text = request.args.get("prefix", "").strip()
    if not text:
        return None
    spec: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise InvalidArgument(f"prefix takes col=value[,col=value...], not {text!r}")
        spec[key.strip()] = value.strip()
    return spec


def create_app(uri: str, project: str = "default") -> Flask:
    app = Flask(__name__, static_folder=None)
    stores = OwnStores(uri, project)
    app.config["USHAS"] = stores
    redact = redactor(uri)

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

    def api(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(**kw: Any) -> Any:
            try:
                with stores.lock:
                    return jsonify(fn(**kw))
            except UshasError as exc:
                return jsonify({"error": {"type": exc.type, "message": redact(exc.message)}}), (
                    404 if isinstance(exc, NotFound) else 400)
        wrapped.__name__ = fn.__name__
        return wrapped

    @app.get("/")
    def index() -> Any:
        return send_from_directory(STATIC, "index.html")

    @app.get("/favicon.ico")
    def favicon() -> Any:
        return send_from_directory(STATIC, "favicon.svg", mimetype="image/svg+xml")

    @app.get("/static/<path:name>")
    def static_file(name: str) -> Any:
        return send_from_directory(STATIC, name)

    @app.get("/api/info")
    @api
    def info() -> Any:
        return {"project": project, "store": store_kind(uri)}

    @app.get("/api/catalogs")
    @api
    def catalogs() -> Any:
        return [c.to_json() for c in stores.metastore.list_catalogs()]

    @app.get("/api/catalogs/<c>/databases")
    @api
    def databases(c: str) -> Any:
        return [d.to_json() for d in stores.metastore.list_databases(c)]

    @app.get("/api/databases/<c>/<d>/relations")
    @api
    def relations(c: str, d: str) -> Any:
        return [r.to_json() for r in stores.metastore.list_relations((c, d))]

    @app.get("/api/relations/<c>/<d>/<n>")
    @api
    def relation(c: str, d: str, n: str) -> Any:
        ms = stores.metastore
        name = (c, d, n)
        if ms.view_exists(name):
            out = ms.get_view(name).to_json()
        else:
            out = ms.get_table(name).to_json()
        try:
            out["metadata"] = ms.metadata.get(name).to_json()
        except NotFound:
            out["metadata"] = None
        full = f"{c}.{d}.{n}"
        out["full_name"] = full
        out["lineage"] = stores.lineage.resolve_dataset(full) is not None
        return out

    @app.get("/api/relations/<c>/<d>/<n>/partitions")
    @api
    def partitions(c: str, d: str, n: str) -> Any:
        offset = _int_arg("offset", 0, 0, 10**12) or 0
        limit = _int_arg("limit", PAGE_SIZE, 1, MAX_PAGE) or PAGE_SIZE
        ms = stores.metastore
        table = ms.get_table((c, d, n))
        if not table.partition_columns:
            return {"columns": [], "offset": 0, "limit": limit, "partitions": [], "has_more": False}
        items = []
        for i, p in enumerate(ms.list_partitions((c, d, n), prefix=_prefix_arg(), limit=offset + limit + 1)):
            if i >= offset:
                items.append(p.to_json())
        return {"columns": table.partition_columns, "offset": offset, "limit": limit,
                "partitions": items[:limit], "has_more": len(items) > limit}

    @app.get("/api/relations/<c>/<d>/<n>/history")
    @api
    def history(c: str, d: str, n: str) -> Any:
        return [h.to_json() for h in stores.metastore.history((c, d, n))]

    @app.get("/api/search")
    @api
    def search() -> Any:
        q = request.args.get("q", "").strip()
        if not q:
            raise InvalidArgument("search needs a query: q=...")
        limit = _int_arg("limit", 25, 1, 200)
        page = stores.metastore.search(q, limit=limit, cursor=request.args.get("cursor") or None)
        return {"source": "discovery index", **page.to_json()}

    @app.get("/api/datasets")
    @api
    def datasets() -> Any:
        return lineage_datasets(stores.lineage, request.args.get("kind", "").strip() or None)

    @app.get("/api/lineage")
    @api
    def lineage_graph() -> Any:
        node = request.args.get("node", "").strip()
        if not node:
            raise InvalidArgument("lineage needs node=DATASET or node=DATASET.COLUMN")
        direction = request.args.get("direction", "both")
        if direction not in ("upstream", "downstream", "both"):
            raise InvalidArgument(f"direction must be upstream, downstream or both, not {direction!r}")
        depth = _int_arg("depth", 3, 1, MAX_DEPTH)
        since = parse_time(request.args.get("since"), "since")
        until = parse_time(request.args.get("until"), "until")
        return graph(stores.lineage, node, direction, depth, since, until)

    @app.get("/api/runs")
    @api
    def runs() -> Any:
        name = request.args.get("dataset", "").strip()
        if not name:
            raise InvalidArgument("runs needs dataset=NAME")
        q = stores.lineage
        rows = q.runs(name, since=parse_time(request.args.get("since"), "since"),
                      until=parse_time(request.args.get("until"), "until"))
        return {"dataset": name, "runs": list(reversed(q.runs_json(rows)))}

    return app


#: the kinds of captured datasets (``CapturedDataset.kind``), for the ``kind`` filter
DATASET_KINDS = ("table", "external table", "path")


def lineage_datasets(q: Any, kind: str | None = None) -> list[dict[str, Any]]:
    """Every dataset lineage was captured for (metastore tables, other catalogs' and Hive tables,
    paths), with its kind and latest access; only those of ``kind`` when given."""
    if kind is not None and kind not in DATASET_KINDS:
        raise InvalidArgument(f"kind must be one of {', '.join(DATASET_KINDS)}, not {kind!r}")
    return [d.to_dict() for d in q.store.captured_datasets() if kind is None or d.kind == kind]


def graph(q: Any, node: str, direction: str, depth: int | None, since: int | None,
          until: int | None) -> dict[str, Any]:
    """The column graph around ``node``: nodes (columns, and the dataset itself when asked for a
    whole dataset) and edges (target <- source, type, expression, runs)."""
    start = q.resolve(node)
    names: dict[Any, str] = {}

    def name(ref: Any) -> str:
        if ref.dataset not in names:
            names[ref.dataset] = q.display(ref.dataset)["name"]
        base = names[ref.dataset]
        return f"{base}.{ref.column}" if ref.column is not None else base

    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    truncated = False

    def add_node(ref: Any, level: int) -> None:
        key = name(ref)
        if key not in nodes or abs(level) < abs(nodes[key]["level"]):
            nodes[key] = {"id": key, "dataset": names[ref.dataset], "column": ref.column, "level": level}

    add_node(start, 0)
    for way in (["upstream", "downstream"] if direction == "both" else [direction]):
        answer = q.upstream(start, depth=depth, since=since, until=until) if way == "upstream" else \
            q.downstream(start, depth=depth, since=since, until=until)
        truncated = truncated or answer.truncated
        sign = -1 if way == "upstream" else 1
        for ref, level in answer.nodes.items():
            if ref != start:
                add_node(ref, sign * level)
        for hop in answer.hops.values():
            for ref in (hop.target, hop.source):
                if name(ref) not in nodes:  # a whole-dataset start: its columns sit with it
                    add_node(ref, 0)
            key = (name(hop.target), name(hop.source), hop.subtype.value)
            edges[key] = {"target": key[0], "source": key[1], "kind": hop.subtype.kind.value,
                          "subtype": hop.subtype.value, "runs": [str(r) for r in hop.runs],
                          "latest_ms": hop.latest_ms,
                          "expression": q.store.expression(hop.latest) if hop.latest is not None else ""}
    return {"start": name(start), "direction": direction, "depth": depth, "since": since, "until": until,
            "truncated": truncated, "nodes": sorted(nodes.values(), key=lambda n: (n["level"], n["id"])),
            "edges": list(edges.values())}
