"""``POST /api/v1/catalog/ops/<op>``: the Spark shim's op table over HTTP (remote mode, docs/service.md).

One contract, two transports: the body is the request the shim sends the local bridge, the answer is the
answer it gets (``{"error": {"type", "message", "spark"}}`` included, so Spark shows the same error class),
and the same handlers run (:func:`ushas_catalog.spark.bridge.dispatch`). What the service decides, not the
client:

- **who calls**: the bearer token's user (its name, ``token:<id>`` when unnamed) with authorization on,
  always; the identity fields of the client's ``ctx`` are replaced, and a session cookie is not enough;
- **which store**: this service's own store and project (the client's ``uri`` and ``project`` are ignored);
- **which warehouse**: with ``ushas serve --warehouse``, the service's; a client's other one is checked by every
  op (``Metastore.check_warehouse``: in a declared location the caller may place data in);
- **how long**: the deadline is the client's remaining wait (``X-Ushas-Timeout-Ms``) on the service's clock;
- **read tokens** run only the ops that change nothing (:data:`READ_OPS`).

Requests are never read from files (the local bridge's ``@path`` spooling is not part of this transport).
"""
from __future__ import annotations

import json
import time
from http import HTTPStatus
from typing import Any, Iterable

from flask import Blueprint, g, request

from ..errors import BridgeError, Forbidden, InvalidArgument, Unauthorized, UshasError
from ..spark import bridge
from ..spark.ops import OPS
from ..spark.remote import CHOSEN_WAREHOUSE, READ_OPS, READ_TOKEN
from ..spark.tables import qualify
from .auth import CATALOG_OPS, AccessControl, user_of
from .routing import StartResponse, WSGIApp, json_response, json_text, status_of
from .state import LOG, ServiceState

#: the longest a client may ask the service to work on one call (ms)
MAX_TIMEOUT_MS = 600_000
DEFAULT_TIMEOUT_MS = 60_000
#: the ``ctx`` fields a client may set: the rest is the service's
CLIENT_CTX = ("catalog", "spark_catalog", "branch", "warehouse")


def remote_request(body: Any, user: str, uri: str, project: str, timeout_ms: int,
                   warehouse: str | None = None) -> dict[str, Any]:
    """The shim request a client sent, as this service runs it: its ``ctx`` reduced to the catalog it
    names, then this service's store and project and the token's user with authorization on. ``warehouse``:
    the service's (``ushas serve --warehouse``): a client's other one is marked chosen (:data:`CHOSEN_WAREHOUSE`),
    checked by every op (``Metastore.check_warehouse``)."""
    if not isinstance(body, dict):
        raise InvalidArgument("the request body must be a JSON object (a shim request)")
    ctx = body.get("ctx")
    if not isinstance(ctx, dict) or not isinstance(ctx.get("catalog"), str) or not ctx["catalog"]:
        raise InvalidArgument("the request needs ctx.catalog")
    out = {k: v for k, v in body.items() if k != "deadline_ms"}
    out["ctx"] = {**{k: ctx[k] for k in CLIENT_CTX if isinstance(ctx.get(k), str)}, "uri": uri, "project": project,
                  "user": user, "user_source": "token", "authorization": True}
    out["ctx"].setdefault("warehouse", warehouse or "spark-warehouse")
    if warehouse and qualify(out["ctx"]["warehouse"]).rstrip("/") != qualify(warehouse).rstrip("/"):
        out["ctx"][CHOSEN_WAREHOUSE] = True
    out["deadline_ms"] = int(time.time() * 1000) + timeout_ms
    return out


def timeout_of(header: str | None) -> int:
    if not header:
        return DEFAULT_TIMEOUT_MS
    try:
        value = int(header)
    except ValueError:
        raise InvalidArgument("X-Ushas-Timeout-Ms must be a whole number of milliseconds") from None
    return max(1, min(MAX_TIMEOUT_MS, value))


def answer_op(op: str, user: str, access: str, data: bytes, timeout_header: str | None,
              state: ServiceState) -> tuple[dict[str, Any], int]:
    """One op as ``user`` holding a token of ``access``: (the answer, its HTTP status). Both ways in (the
    Flask route and :func:`lane`) answer through here."""
    stores = state.stores
    try:
        if not user or access not in ("read", "write"):  # the access check lets no such request through
            raise Forbidden("the catalog ops need a bearer token")
        if op not in OPS:
            raise InvalidArgument(f"unknown catalog operation {op!r}")
        if access != "write" and op not in READ_OPS:
            raise Forbidden(f"this token may only read: '{op}' needs a write token")
        try:
            body = json.loads(data or b"null")
        except (ValueError, RecursionError):
            raise InvalidArgument("the request body is not JSON") from None
        req = remote_request(body, str(user), stores.uri, stores.project, timeout_of(timeout_header),
                             getattr(stores, "warehouse", None))
        req["ctx"][READ_TOKEN] = access != "write"  # a read token's path writes are refused (check_paths)
        return bridge.dispatch(op, req), 200
    except UshasError as exc:
        return {"error": _redacted(exc.answer(), state)}, status_of(exc)
    except Exception as exc:  # noqa: BLE001 - a bug: a clear error, the trace in the service's log
        LOG.exception("catalog op %s failed", op)
        return {"error": BridgeError(state.redact(f"{type(exc).__name__}: {exc}")).answer()}, 500


def register(bp: Blueprint, state: ServiceState) -> None:
    @bp.post("/catalog/ops/<op>")
    def catalog_op(op: str) -> Any:
        answer, status = answer_op(op, str(g.get("ushas_user") or ""), str(g.get("ushas_access") or ""),
                                   request.get_data(cache=False), request.headers.get("X-Ushas-Timeout-Ms"), state)
        return json_response(answer, status)


def op_of(environ: dict[str, Any]) -> str | None:
    """The op a request asks :func:`lane` for: a ``POST`` to ``/api/v1/catalog/ops/<op>`` whose op is plain
    (no ``%`` escape, no ``/``) and that no mount prefix moves; None for every other request (Flask's)."""
    if environ.get("REQUEST_METHOD") != "POST" or environ.get("SCRIPT_NAME"):
        return None
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI") or environ.get("PATH_INFO", "")
    path = raw.split("?", 1)[0]
    if not path.startswith(CATALOG_OPS) or path != environ.get("PATH_INFO"):
        return None  # an absolute-form target, an escape: the general path decides
    op = path[len(CATALOG_OPS):]
    return op if op and "/" not in op and "%" not in op else None


def lane(app: WSGIApp, state: ServiceState, access: AccessControl) -> WSGIApp:
    """``app`` answering the catalog ops itself (remote mode's hot path: one small read per Spark
    ``loadTable``), without Flask's request dispatch; every other request goes to ``app``. The same rules
    as the API's access check and the Flask route (:func:`answer_op`): a bearer token always (a session
    cookie is not enough), looked up at every call; read tokens run only :data:`READ_OPS`. It sits inside
    the server's Host guard and access log (:mod:`ushas_catalog.ui.server`), which add the security
    headers and log the request; the HTTP server bounds the request's size and time as for any other."""

    def ops(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        op = op_of(environ)
        if op is None:
            return app(environ, start_response)
        answer: dict[str, Any]
        header = environ.get("HTTP_AUTHORIZATION", "")
        try:
            if not header:
                raise Unauthorized("the catalog ops need a token: Authorization: Bearer <token> "
                                   "(ushas tokens create)")
            info = access.bearer(header)
        except Unauthorized as exc:
            answer, status = {"error": {"type": exc.type, "message": exc.message}}, 401
        else:
            try:
                data = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            except ValueError:
                answer, status = {"error": InvalidArgument("Content-Length is not a number").answer()}, 400
            else:
                answer, status = answer_op(op, user_of(info), info.access, data,
                                           environ.get("HTTP_X_USHAS_TIMEOUT_MS"), state)
        body = json_text(answer).encode()
        start_response(f"{status} {HTTPStatus(status).phrase}",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                        ("Cache-Control", "no-store")])
        return [body]

    return ops


def _redacted(answer: dict[str, Any], state: ServiceState) -> dict[str, Any]:
    """An error answer without the store's path (a client never learns where the store is)."""
    out = dict(answer)
    if isinstance(out.get("message"), str):
        out["message"] = state.redact(out["message"])
    return out


__all__ = ["READ_OPS", "answer_op", "lane", "op_of", "register", "remote_request"]
