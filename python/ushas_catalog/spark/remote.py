"""Remote mode of the Spark bridge: a catalog whose ``uri`` is ``http(s)://host:port`` is served by
``ushas serve`` (docs/service.md, "Remote mode"). This module is the thin forwarder: every shim request
of such a catalog goes, as it is, to ``POST /api/v1/catalog/ops/<op>`` with the catalog's token; the
service runs the same handlers (:func:`ushas_catalog.spark.bridge.dispatch`) as the token's user with
authorization on, and its answer — an error included, with its Spark error class — is the answer.

The client decides nothing about who calls: the shim's identity fields are not sent, and a catalog that
sets ``user`` or ``authorization`` is refused. The credential, in order: the catalog's ``token`` option,
its ``token-file`` (a file holding one token), the ``USHAS_TOKEN`` environment variable. A call waits at
most what is left of the shim's ``bridge.timeout``; an unreachable or silent service is
:class:`~ushas_catalog.errors.ServiceUnreachable` (``ushas service at URL unreachable``), never a hang.
"""
from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

from ..errors import BridgeError, InvalidArgument, ServiceUnreachable
from ..remote.http import CLIENT, Client, Endpoint, is_remote, resolve_token

#: the catalog-ops endpoint of the service, below its root
OPS_PATH = "/api/v1/catalog/ops/"
#: seconds a call waits when its request carries no deadline
DEFAULT_TIMEOUT_S = 60.0
#: the fenced commits: when the service may have taken one and gave no answer, the shim must not read an
#: error answer (it would remove the write's files as never registered) but a failed call, after which it
#: asks what became of the write (``abort_write``) and otherwise names the write id
FENCED_COMMITS = frozenset({"commit_write", "commit_staged"})
#: the catalog options remote mode refuses: the service decides who calls and always checks
REFUSED_OPTIONS = ("user", "authorization")
#: the ops a read token may run: they change nothing (``open`` writes only a missing catalog, and only for
#: a user with CREATE on the project; a refusal of any op is recorded in the change feed); the service enforces
#: it (:mod:`ushas_catalog.service.catalog_ops_api`). ``check_paths`` (a plan's files read and written by path)
#: only checks: under a read token it refuses every governed path write (``read_token`` in the request context)
READ_OPS = frozenset({
    "open", "list_namespaces", "namespace_exists", "load_namespace", "load_relation", "load_table",
    "relation_exists", "list_partitions", "partition_exists", "load_partition", "list_files",
    "table_size", "describe", "list_functions", "load_function", "describe_function", "list_procedures",
    "load_procedure", "rows_table", "rows_page", "write_outcome", "check_write", "check_paths", "stream_latest", "stream_batch"})
#: the request context field the service sets (never a client): whether the caller's token is a read token
READ_TOKEN = "read_token"
#: a ``ctx`` field only the catalog service sets: the client's warehouse is not the service's own (``ushas serve
#: --warehouse``), so each op checks it (``Metastore.check_warehouse``: a declared location the caller may place in)
CHOSEN_WAREHOUSE = "warehouse_chosen"
#: the ops the shim sends the service itself once ``open`` has answered (its direct transport,
#: ``io.ushas.spark.RemoteTransport``): the reads, one HTTP round trip from the JVM instead of a Py4J call into
#: this process and then HTTP. The same request, the same answer, the same checks by the service; ``open``
#: itself comes here, so the catalog's options and token are checked before the shim gets the transport.
DIRECT_OPS = READ_OPS - {"open"}
#: the catalog option that turns the direct transport off (``false``: every op through Python)
DIRECT_OPTION = "direct"
#: set by the shim on a request its direct transport sends here after the service refused its token (never
#: sent on to the service); the answer then carries the token resolved anew in :data:`TOKEN_FIELD`
RETRIED = "transport_retry"
TOKEN_FIELD = "transport_token"


def refused_options(ctx: dict[str, Any]) -> None:
    """Remote mode refuses the options by which a client says who it is or whether it is checked."""
    remote = ctx.get("remote") or {}
    refused = [o for o in remote.get("set") or [] if o in REFUSED_OPTIONS]
    if refused:
        catalog = ctx.get("spark_catalog") or ctx.get("catalog")
        shown = ", ".join(f"spark.sql.catalog.{catalog}.{o}" for o in refused)
        raise InvalidArgument(f"{shown}: not allowed for a catalog served by {Endpoint.parse(ctx['uri']).url}: "
                              f"the service's token decides who calls, and its calls are always checked "
                              f"(remove the option)")


#: the shim's context fields the service never gets from a client (it sets who calls itself)
_PRIVATE_CTX = ("remote", "user", "user_source", "authorization")


def forward(op: str, request: dict[str, Any], client: Client | None = None) -> dict[str, Any]:
    """One shim request of a remote catalog, answered by the service (errors as answers, unchanged)."""
    answer = json.loads(forward_text(op, request, client))
    return dict(answer)


def forward_text(op: str, request: dict[str, Any], client: Client | None = None) -> str:
    """:func:`forward`'s answer as the JSON text the service sent (what the bridge hands the shim: an answer
    of 10,000 partitions is not parsed and written again here). A non-200 answer must be a JSON error."""
    ctx = dict(request.get("ctx") or {})
    ep = Endpoint.parse(str(ctx["uri"]))
    refused_options(ctx)
    catalog = str(ctx.get("spark_catalog") or ctx.get("catalog") or "")
    token = resolve_token(ctx.get("remote") or {}, catalog)
    body = dict(request)
    retried = bool(body.pop(RETRIED, False))
    body["ctx"] = {k: v for k, v in ctx.items() if k not in _PRIVATE_CTX}
    deadline_ms = request.get("deadline_ms")
    timeout = DEFAULT_TIMEOUT_S if deadline_ms is None else (float(deadline_ms) / 1000.0 - time.time())
    if timeout <= 0:
        raise ServiceUnreachable(f"ushas service at {ep.url} unreachable: the call's time ran out before it "
                                 f"was sent")
    body.pop("deadline_ms", None)  # the service's deadline comes from TIMEOUT_HEADER, on its own clock
    status, data = (client or CLIENT).post(ep, OPS_PATH + quote(op, safe=""), token,
                                           json.dumps(body, default=str).encode(), timeout)
    text = data.decode("utf-8", errors="replace")
    if status == 200 and text.startswith("{"):
        if op == "open":
            return with_transport(text, ep, token, ctx)
        return with_token(text, token) if retried else text
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or "error" not in answer:
        raise BridgeError(f"the ushas service at {ep.url} answered '{op}' with HTTP {status} and no JSON answer "
                          f"(is it an ushas service?)")
    if retried:  # an error answer: the token worked unless the service refused it too
        return with_token(text, token if status != 401 else "")
    return text


def with_token(answer: str, token: str) -> str:
    """The answer of an op the shim's direct transport retried here after the service refused its token
    (a ``token-file`` rotated since ``open``), with the token that worked (:data:`TOKEN_FIELD`): the shim
    sends its next direct calls with it instead of being refused first every time (``""``: none worked)."""
    parsed = json.loads(answer)
    if not isinstance(parsed, dict):
        return answer
    parsed[TOKEN_FIELD] = token
    return json.dumps(parsed)


def with_transport(opened: str, ep: Endpoint, token: str, ctx: dict[str, Any]) -> str:
    """The service's ``open`` answer with the shim's direct transport (:data:`DIRECT_OPS`): the ops URL and
    the token this forwarder checked and resolved; none when the catalog sets ``direct=false``."""
    answer = json.loads(opened)
    direct = str((ctx.get("remote") or {}).get(DIRECT_OPTION, "true")).strip().lower()
    if direct not in ("true", "false"):
        catalog = ctx.get("spark_catalog") or ctx.get("catalog")
        raise InvalidArgument(f"spark.sql.catalog.{catalog}.{DIRECT_OPTION} must be true or false, not {direct!r}")
    if direct == "true" and isinstance(answer, dict) and "error" not in answer:
        answer["transport"] = {"url": ep.url, "ops_url": ep.url + OPS_PATH, "token": token,
                               "ops": sorted(DIRECT_OPS)}
    return json.dumps(answer)


__all__ = ["CHOSEN_WAREHOUSE", "DIRECT_OPS", "READ_OPS", "READ_TOKEN", "forward", "forward_text", "is_remote", "OPS_PATH"]
