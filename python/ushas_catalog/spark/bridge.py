"""The Python end of the Spark bridge: one entry point for every call of the JVM shim.

The shim (``io.ushas.spark.UshasCatalog``) sends ``call(op, json)`` over Py4J and gets one JSON
answer; errors are answered as ``{"error": {"type", "message"}}`` and the shim throws the Spark
exception of ``errors.SPARK_EXCEPTION``. Two ways in:

* inside a PySpark driver, :func:`ushas_catalog.spark.register` hands a :class:`Backend` to the
  shim over the session's own gateway (callback server);
* with configuration only (``spark-submit``, ``spark-sql``), the shim starts a Py4J gateway and
  launches ``python -m ushas_catalog.bridge`` (:func:`main`), which connects back, registers and
  lives until the JVM closes its stdin.

The ONE registry of the bridge (opened metastores by (uri, project), each with its bridge-side
caches) is :data:`ushas_catalog.spark.registry.REGISTRY`.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from typing import Any, Callable

from ..errors import BridgeError, OutcomeUnknown, UshasError
from ..extensions import extensions
from . import remote, shares, statement_transaction
from .authorization import run_op
from .registry import REGISTRY, Opened
from .statements import STATEMENTS

#: an op handler: (opened metastore, request) -> JSON-able answer
Handler = Callable[[Any, dict[str, Any]], dict[str, Any]]




#: longer messages go through a file: Py4J stalls ~44 ms on any message over ~8k characters and
#: needs ~0.5 ms per 1k characters of a callback's answer (the shim's ``Bridge.INLINE_MAX`` matches)
INLINE_MAX = 7000


def receive(payload: str) -> str:
    """A request as the shim sent it: inline JSON, or ``@<path>`` of a file holding it (the shim
    deletes it once answered)."""
    if payload.startswith("@"):
        with open(payload[1:], encoding="utf-8") as f:
            return f.read()
    return payload


def reply(answer: str) -> str:
    """An answer for the shim: inline when short, else ``@<path>`` of a private temp file that the
    shim reads and deletes."""
    if len(answer) <= INLINE_MAX:
        return answer
    fd, path = tempfile.mkstemp(prefix="ushas-answer-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(answer)
    return "@" + path


def handle(op: str, payload: str) -> str:
    """One call from the shim: parse, dispatch to :mod:`ushas_catalog.spark.ops`, answer JSON
    (long requests and answers travel as files: :func:`receive`, :func:`reply`)."""
    if op == "ping":  # the shim's liveness check while a call waits: no parsing, no lock
        return '{"pong": true}'
    return reply(_answer(op, payload))


def _answer(op: str, payload: str) -> str:
    try:
        request = json.loads(receive(payload))
        if not isinstance(request, dict):
            raise BridgeError("a bridge request is a JSON object")
        statement = STATEMENTS.get(op)
        if statement is not None:  # one round trip for the calls Spark makes one by one (spark.statements)
            if remote.is_remote((request.get("ctx") or {}).get("uri")):  # each call the service's
                return json.dumps(statement(request, _answered), default=str)
            # a local store: the calls in one transaction (spark.statement_transaction)
            return json.dumps(statement_transaction.run(op, statement, request, opened_for(request), _answered,
                                                        _error_of), default=str)
        if extensions().bridge_ops.get(op) is None and remote.is_remote((request.get("ctx") or {}).get("uri")):
            return remote.forward_text(op, request)  # remote mode: the service's answer, as it sent it
        return json.dumps(_run(op, request), default=str)
    except Exception as exc:  # noqa: BLE001 - answered as an error object (or raised: _error_of)
        return json.dumps({"error": _error_of(op, exc)})


def _run(op: str, request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one parsed request (exceptions raised): an extension's op, the catalog service's
    (remote mode), or this bridge's (:func:`dispatch`)."""
    extension_op = extensions().bridge_ops.get(op)
    if extension_op is not None:  # an extension's op (the lineage listener's lineage.event): no metastore lock
        answer: dict[str, Any] = extension_op.load()(request, may_create())
        return answer
    if remote.is_remote((request.get("ctx") or {}).get("uri")):  # remote mode: the service answers
        forwarded: dict[str, Any] = json.loads(remote.forward_text(op, request))
        return forwarded
    return dispatch(op, request)


def _error_of(op: str, exc: Exception) -> dict[str, Any]:
    """The ``error`` object answering ``op`` that raised ``exc``; re-raises what must reach the shim as a failed
    call (a fenced commit whose outcome is unknown: the shim asks what became of the write)."""
    if isinstance(exc, OutcomeUnknown):
        if op in remote.FENCED_COMMITS:
            raise exc
        return exc.answer()
    if isinstance(exc, UshasError):
        return exc.answer()
    traceback.print_exception(exc, file=sys.stderr)  # anything else: a clear error, the trace on stderr
    return {"type": "BridgeError", "message": f"{type(exc).__name__}: {exc}"}


def _answered(op: str, request: dict[str, Any]) -> dict[str, Any]:
    """One call of a statement (:mod:`ushas_catalog.spark.statements`), answered exactly as the shim's own call
    of ``op`` with that request would be: the same handler and errors, without encoding the request and the
    answer as JSON text and parsing them back (a statement reads the answer's fields; the statement's own
    answer is encoded once)."""
    try:
        return _run(op, request)
    except Exception as exc:  # noqa: BLE001 - as _answer
        return {"error": _error_of(op, exc)}


def dispatch(op: str, request: dict[str, Any]) -> dict[str, Any]:
    """One shim request (parsed) run by its op's handler on the store its ``ctx`` names, as the caller
    its ``ctx`` names: the local bridge's path, and the catalog service's (``ushas serve`` rewrites
    ``ctx`` to its own store and the token's user first: :mod:`ushas_catalog.service.catalog_ops_api`)."""
    from . import ops as spark_ops

    handler = spark_ops.OPS.get(op)
    if handler is None:
        raise BridgeError(f"unknown bridge operation {op!r}")
    opened = opened_for(request)
    with opened.held(op, request.get("deadline_ms")):
        answer: dict[str, Any] = shares.handle(opened, op, lambda ms, r: run_op(handler, op, ms, r),
                                               request)  # a share catalog: its read-only view; as the caller
    return answer


def opened_for(request: dict[str, Any]) -> Opened:
    """The store (and branch) a request's ``ctx`` names, opened at its first call."""
    ctx = request.get("ctx") or {}
    if not ctx.get("uri"):
        raise BridgeError("the request carries no store uri")
    create = ctx.get("create")
    return REGISTRY.get(ctx["uri"], ctx.get("project") or "default",
                        create=may_create() if create is None else bool(create),
                        spark_catalog=ctx.get("spark_catalog")).on_branch(ctx.get("branch"))


class Backend:
    """Implements the Java interface ``io.ushas.spark.PythonBackend``."""

    def call(self, op: str, payload: str) -> str:
        return handle(op, payload)

    def toString(self) -> str:  # Py4J may ask
        return "ushas_catalog.bridge.Backend"

    class Java:
        implements = ["io.ushas.spark.PythonBackend"]


#: this process is the bridge the shim launched (configuration-only Spark), not a PySpark driver
LAUNCHED = False


def may_create() -> bool:
    """Whether a Spark catalog without ``.create`` may create its missing store: in a PySpark driver yes (as
    ``configure()`` does, and it says so); a launched bridge (configuration only) never: a mistyped uri is an
    error naming it, not a new empty store."""
    return not LAUNCHED


def main() -> int:
    """Entry point of the bridge process the shim launches (config-only mode)."""
    global LAUNCHED
    LAUNCHED = True
    from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway

    try:
        port = int(os.environ["USHAS_BRIDGE_PORT"])
        secret = os.environ["USHAS_BRIDGE_SECRET"]
    except (KeyError, ValueError):
        print("ushas_catalog.bridge is started by the Spark shim (USHAS_BRIDGE_PORT / USHAS_BRIDGE_SECRET unset)",
              file=sys.stderr)
        return 2
    gateway = JavaGateway(
        gateway_parameters=GatewayParameters(port=port, auth_token=secret, auto_convert=False),
        callback_server_parameters=CallbackServerParameters(port=0, auth_token=secret, daemonize=True,
                                                            daemonize_connections=True))
    callback_port = gateway.get_callback_server().get_listening_port()
    gateway.jvm.io.ushas.spark.Bridge.registerLaunched(Backend(), callback_port)
    try:
        sys.stdin.read()  # the JVM holds the pipe: EOF means it is gone
    finally:
        REGISTRY.close()
        gateway.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
