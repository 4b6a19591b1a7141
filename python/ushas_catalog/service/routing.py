"""Request plumbing shared by the API modules: names in path segments, query arguments, JSON
bodies, and errors as ``{"error": {"type", "message"}}`` with the type names of
:mod:`ushas_catalog.errors`.

Names in paths: a WSGI server hands the app ``PATH_INFO`` already percent-decoded, so a table
named ``a/b`` sent as ``a%2Fb`` would arrive as two segments. :func:`raw_segments` rebuilds
``PATH_INFO`` of ``/api/v1/...`` requests from the raw request URI, keeping ``/`` and ``%``
inside a segment encoded; the ``seg`` route converter decodes them again.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable
from urllib.parse import quote, unquote, unquote_to_bytes

from flask import Flask, Response, request
from werkzeug.routing import BaseConverter

from ..errors import InvalidArgument, NotFound, UshasError

API_PREFIX = "/api/v1"
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class SegmentConverter(BaseConverter):
    """One path segment, any characters (``%2F`` and ``%25`` decoded here)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value: Any) -> str:
        return quote(str(value), safe="")


def _api_path(raw: str) -> str:
    """The raw path with every segment decoded except ``/`` and ``%`` (as a WSGI latin-1 string)."""
    segments = []
    for seg in raw.split("/"):
        try:
            raw_bytes = seg.encode("latin-1")  # a WSGI string: the request's bytes, one char each
        except UnicodeEncodeError:
            raw_bytes = seg.encode("utf-8")
        data = unquote_to_bytes(raw_bytes).replace(b"%", b"%25").replace(b"/", b"%2F")
        segments.append(data.decode("latin-1"))
    return "/".join(segments)


def raw_segments(app: WSGIApp) -> WSGIApp:
    """``app`` seeing ``/api/v1/...`` paths split on the raw URI's slashes only."""

    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        raw = environ.get("REQUEST_URI") or environ.get("RAW_URI")
        if raw and environ.get("PATH_INFO", "").startswith(API_PREFIX + "/"):
            path = raw.split("?", 1)[0]
            if "://" in path:  # an absolute-form request target
                path = "/" + path.split("://", 1)[1].partition("/")[2]
            script = environ.get("SCRIPT_NAME", "")
            if script and path.startswith(script):
                path = path[len(script):]
            if path.startswith(API_PREFIX + "/"):
                environ = {**environ, "PATH_INFO": _api_path(path)}
        return app(environ, start_response)

    return wrapped


def install(app: Flask) -> None:
    """The ``seg`` converter and the raw-path routing on ``app``."""
    app.url_map.converters["seg"] = SegmentConverter
    if not getattr(app, "_ushas_raw_segments", False):
        app.wsgi_app = raw_segments(app.wsgi_app)  # type: ignore[method-assign, assignment]
        app._ushas_raw_segments = True  # type: ignore[attr-defined]


# ---- answers ----------------------------------------------------------------------------------------------
def json_text(data: Any) -> str:
    """``data`` as the API's JSON text: compact, ``<``, ``>`` and ``&`` as escapes (stored text stays text
    even where a browser might sniff it as markup)."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    out = Response(json_text(data), status=status, mimetype="application/json")
    out.headers["Cache-Control"] = "no-store"
    for k, v in (headers or {}).items():
        out.headers[k] = v
    return out


def error_response(error_type: str, message: str, status: int) -> Response:
    return json_response({"error": {"type": error_type, "message": message}}, status)


#: HTTP status of an error type (the most specific base class that is listed wins)
STATUS: dict[str, int] = {"NotFound": 404, "AlreadyExists": 409, "Conflict": 409, "NamespaceNotEmpty": 409,
                          "StoreBusy": 503, "StoreUnavailable": 503, "LimitExceeded": 400,
                          "InvalidArgument": 400, "Unauthorized": 401, "Forbidden": 403,
                          "PermissionDenied": 403}


def status_of(exc: UshasError) -> int:
    for cls in type(exc).__mro__:
        if cls.__name__ in STATUS:
            return STATUS[cls.__name__]
    return 404 if isinstance(exc, NotFound) else 400 if isinstance(exc, InvalidArgument) else 500


# ---- arguments --------------------------------------------------------------------------------------------
def int_arg(name: str, default: int | None, low: int, high: int) -> int | None:
    text = request.args.get(name, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgument(f"{name} must be an integer, not {text[:40]!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high}, not {value}")
    return value


def str_arg(name: str, *, required: bool = False, what: str = "") -> str | None:
    value = request.args.get(name)
    if value is None or value == "":
        if required:
            raise InvalidArgument(f"{name} is required{': ' + what if what else ''}")
        return None
    _check_text(name, value)
    return value


def list_arg(name: str) -> list[str]:
    values = [v for v in request.args.getlist(name) if v != ""]
    for v in values:
        _check_text(name, v)
    return values


def _check_text(name: str, value: str) -> None:
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL")


def body_object() -> dict[str, Any]:
    """The JSON object of the request body. ``Content-Type: application/json`` is required: a
    cross-site HTML form cannot send it without the browser asking first (CORS preflight)."""
    if not request.is_json:
        raise InvalidArgument("the request body must be JSON (Content-Type: application/json)")
    data = parse_json(request.get_data())
    if not isinstance(data, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return data


#: how deeply a request's JSON may nest (objects and arrays): an OpenLineage event's schema facet of nested
#: structs is the deepest the API takes
MAX_JSON_DEPTH = 64


def parse_json(data: bytes | str, what: str = "the request body") -> Any:
    """``data`` parsed as JSON: :class:`InvalidArgument` (HTTP 400) when it is not JSON, nests too deeply
    for the parser (its RecursionError) or deeper than :data:`MAX_JSON_DEPTH` (what the handlers, which
    walk values recursively, accept)."""
    import json

    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise InvalidArgument(f"{what} must be JSON nested at most {MAX_JSON_DEPTH} levels deep") from None
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:  # without recursion
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise InvalidArgument(f"{what} nests JSON deeper than {MAX_JSON_DEPTH} levels")
            todo.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return value


def paged(items: list[Any], offset: int, limit: int, total: int | None = None) -> dict[str, Any]:
    """One page of an already sliced list (``items`` holds up to ``limit + 1``)."""
    return {"items": items[:limit], "offset": offset, "limit": limit,
            "total": total if total is not None else offset + len(items[:limit]), "has_more": len(items) > limit}


def page_args(default: int = 50, high: int = 1000) -> tuple[int, int]:
    return int_arg("offset", 0, 0, 10**12) or 0, int_arg("limit", default, 1, high) or default


__all__ = ["MAX_JSON_DEPTH", "parse_json", "API_PREFIX", "SegmentConverter", "raw_segments", "install", "json_text", "json_response", "error_response",
           "status_of", "int_arg", "str_arg", "list_arg", "body_object", "paged", "page_args", "STATUS"]
