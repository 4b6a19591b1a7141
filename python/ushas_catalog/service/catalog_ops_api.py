"""``POST /api/v1/catalog/ops/<op>``: the Spark shim's op table over HTTP (remote mode, docs/service.md).

One contract, two transports: the body is the request the shim sends the local bridge, the answer is the
answer it gets (``{"error": {"type", "message", "spark"}}`` included, so Spark shows the same error class),
and the same handlers run (:func:`ushas_catalog.spark.bridge.dispatch`). What the service decides, not the
client:

- **who calls**: the bearer token's user (its name, ``token:<id>`` when unnamed) with authorization on,
  always; the identity fields of the client's ``ctx`` are replaced, and a session cookie is not enough;
- **which store**: this service's own store and project (the client's ``uri`` and ``project`` are ignored);
- **how long**: the deadline is the client's remaining wait (``X-Ushas-Timeout-Ms``) on the service's clock;
- **read tokens** run only the ops that change nothing (:data:`READ_OPS`).

Requests are never read from files (the local bridge's ``@path`` spooling is not part of this transport).
"""
from __future__ import annotations

import json
import time
from typing import Any

from flask import Blueprint, g, request

from ..errors import BridgeError, Forbidden, InvalidArgument, UshasError
from ..spark import bridge
from ..spark.ops import OPS
from ..spark.remote import READ_OPS
from .routing import json_response, status_of
from .state import LOG, ServiceState

#: the longest a client may ask the service to work on one call (ms)
MAX_TIMEOUT_MS = 600_000
DEFAULT_TIMEOUT_MS = 60_000
#: the ``ctx`` fields a client may set: the rest is the service's
CLIENT_CTX = ("catalog", "spark_catalog", "branch", "warehouse")


def remote_request(body: Any, user: str, uri: str, project: str, timeout_ms: int) -> dict[str, Any]:
    """The shim request a client sent, as this service runs it: its ``ctx`` reduced to the catalog it
    names, then this service's store and project and the token's user with authorization on."""
    if not isinstance(body, dict):
        raise InvalidArgument("the request body must be a JSON object (a shim request)")
    ctx = body.get("ctx")
    if not isinstance(ctx, dict) or not isinstance(ctx.get("catalog"), str) or not ctx["catalog"]:
        raise InvalidArgument("the request needs ctx.catalog")
    out = {k: v for k, v in body.items() if k != "deadline_ms"}
    out["ctx"] = {**{k: ctx[k] for k in CLIENT_CTX if isinstance(ctx.get(k), str)}, "uri": uri, "project": project,
                  "user": user, "user_source": "token", "authorization": True}
    out["ctx"].setdefault("warehouse", "spark-warehouse")
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


def register(bp: Blueprint, state: ServiceState) -> None:
    stores = state.stores

    @bp.post("/catalog/ops/<op>")
    def catalog_op(op: str) -> Any:
        try:
            user, access = g.get("ushas_user"), g.get("ushas_access")
            if not user or access not in ("read", "write"):  # the access check lets no such request through
                raise Forbidden("the catalog ops need a bearer token")
            if op not in OPS:
                raise InvalidArgument(f"unknown catalog operation {op!r}")
            if access != "write" and op not in READ_OPS:
                raise Forbidden(f"this token may only read: '{op}' needs a write token")
            body = json.loads(request.get_data(cache=False) or b"null")
            req = remote_request(body, str(user), stores.uri, stores.project,
                                 timeout_of(request.headers.get("X-Ushas-Timeout-Ms")))
            return json_response(bridge.dispatch(op, req))
        except ValueError:
            return json_response({"error": InvalidArgument("the request body is not JSON").answer()}, 400)
        except UshasError as exc:
            return json_response({"error": _redacted(exc.answer(), state)}, status_of(exc))
        except Exception as exc:  # noqa: BLE001 - a bug: a clear error, the trace in the service's log
            LOG.exception("catalog op %s failed", op)
            return json_response({"error": BridgeError(state.redact(f"{type(exc).__name__}: {exc}")).answer()}, 500)


def _redacted(answer: dict[str, Any], state: ServiceState) -> dict[str, Any]:
    """An error answer without the store's path (a client never learns where the store is)."""
    out = dict(answer)
    if isinstance(out.get("message"), str):
        out["message"] = state.redact(out["message"])
    return out


__all__ = ["READ_OPS", "register", "remote_request"]
