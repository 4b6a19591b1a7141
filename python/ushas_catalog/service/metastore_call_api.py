"""``POST /api/v1/metastore/call``: the metastore API over HTTP, for ``Metastore.open("http://...")`` and
``ushas --uri http://...`` (:mod:`ushas_catalog.remote.metastore`; docs/service.md, "Remote mode").

Body ``{"method", "args", "kwargs", "project", "branch"}`` (values in :mod:`ushas_catalog.remote.wire`'s
encoding); answer ``{"result": ...}`` or ``{"error": {"type", "message", "detail"}}``. Only the methods
authorization checks (:data:`ushas_catalog.catalog.authorization.RULES`, the grant methods that check
themselves) are offered, always run as the bearer token's user with authorization on; a read token runs only
those that need no more than USE or SELECT. An answer that is an iterator is sent as a list.

A client sends only the parameters a client may set (:func:`client_arguments`): a method's parameters minus its
:data:`CATALOG_ONLY` ones, which the catalog's own code sets (docs/service.md, "What a client may send"); a positional
argument counts as the parameter it lands on. Anything else is one ``InvalidArgument`` (HTTP 400) before the call runs.
"""
from __future__ import annotations

import inspect
import json
from typing import Any

from flask import Blueprint, g, request

from ..catalog.authorization import ANYONE, RULES
from ..errors import BridgeError, Forbidden, InvalidArgument, UshasError
from ..governance.identity import Caller, calling
from ..governance.privileges import SELECT, USE
from ..remote import wire
from .routing import json_response, status_of
from .state import LOG, ServiceState, acting_as

#: the methods that check their own privileges (grants and roles)
SELF_CHECKED = frozenset({"grant", "revoke", "create_role", "drop_role", "grant_role", "revoke_role", "grants",
                          "roles", "principals_of", "caller"})
#: of those, what a read token may call
SELF_CHECKED_READS = frozenset({"grants", "roles", "principals_of", "caller"})
#: methods that never end or hand out the store: not offered even though a rule names them
REFUSED = frozenset({"changes"})
#: at most this many items of an iterator answer
MAX_ITEMS = 1_000_000


def offered_methods() -> frozenset[str]:
    """Every metastore method the service offers (``RemoteMetastore.SERVED`` is the same list)."""
    return frozenset((set(RULES) | SELF_CHECKED) - REFUSED)


def offered(method: str, access: str) -> None:
    """Refuses a method the service does not offer, or that ``access`` may not call."""
    if method in REFUSED or (method not in RULES and method not in SELF_CHECKED) or method.startswith("_"):
        raise InvalidArgument(f"the catalog service does not offer the metastore method {method!r}")
    if access == "write":
        return
    rule = RULES.get(method)
    reads = method in SELF_CHECKED_READS or (rule is not None and rule.privilege in (ANYONE, USE, SELECT)
                                             and not getattr(rule, "creates", False))
    if not reads:
        raise Forbidden(f"this token may only read: {method} needs a write token")


#: the parameters of offered methods that only the catalog's own code sets: a client's call naming one (by keyword or
#: by position) is refused. ``default_location``: the location is the catalog's default one, whose placement is not
#: checked; ``garbage``: files the next purge deletes; ``own``: the table's own location, inside which any placement
#: passes; ``all_projects`` / ``batch``: every project of the store, and the scan's size; ``read_only``: the token's.
#: Every other parameter of an offered method is the client's (the table in docs/service.md says why).
CATALOG_ONLY: dict[str, frozenset[str]] = {
    "create_table": frozenset({"default_location"}),
    "write_table_files": frozenset({"garbage"}),
    "replace_partitions": frozenset({"garbage"}),
    "check_placement": frozenset({"own"}),
    "stats": frozenset({"all_projects", "batch"}),
    "check_paths": frozenset({"read_only"}),
}


def client_parameters(ms: Any, method: str) -> frozenset[str]:
    """The parameters of ``method`` a client may set: its signature's, minus its :data:`CATALOG_ONLY` ones."""
    params = inspect.signature(getattr(ms, method)).parameters
    return frozenset(params) - CATALOG_ONLY.get(method, frozenset())


def client_arguments(ms: Any, method: str, args: list[Any], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    """``args`` and ``kwargs`` bound to ``method``'s parameters, each one a client may set (:func:`client_parameters`):
    else InvalidArgument naming the method and the parameter (arguments the method does not take: the same)."""
    try:
        bound = inspect.signature(getattr(ms, method)).bind(*args, **kwargs)
    except TypeError as exc:
        raise InvalidArgument(f"{method}: {exc}") from None
    allowed = client_parameters(ms, method)
    for name in bound.arguments:
        if name not in allowed:
            raise InvalidArgument(f"{method}: {name} is set by the catalog service, not by a client")
    return bound


#: the checks of paths a statement reads and writes (``catalog.locations``): ``read_only`` is the token's, never the
#: client's (:data:`CATALOG_ONLY`)
PATH_CHECKS = frozenset({"check_paths", "check_path_read", "check_path_write"})


def path_check_call(method: str, args: list[Any], kwargs: dict[str, Any], bound: inspect.BoundArguments,
                    access: str) -> tuple[str, list[Any], dict[str, Any]]:
    """(method, args, kwargs) to run for a client's call (``bound``: its arguments, checked by
    :func:`client_arguments`, which refuses a client's ``read_only``): a path check runs with ``read_only`` set by the
    service from the token (a read token's governed writes are refused, as on ``/catalog/ops/check_paths``), and a
    read token's ``check_path_write`` is its ``check_paths`` of writes, read only. Other methods pass unchanged."""
    if method not in PATH_CHECKS or access == "write":
        return method, args, kwargs
    if method == "check_path_write":
        return "check_paths", [], {"writes": bound.arguments.get("paths"), "read_only": True}
    if method == "check_paths":
        return method, [], {**bound.arguments, "read_only": True}
    return method, args, kwargs  # check_path_read: reads only


#: the answer list of the drops and purges (``drop_table(..., purge=True, data_paths=[])``): the data their purge frees
DATA_PATHS = "data_paths"


def own_data_paths(ms: Any, method: str, bound: inspect.BoundArguments) -> list[str] | None:
    """For a method that answers the data its purge frees in ``data_paths``: the service's own list, put in the
    call's arguments in place of the client's (which must be empty: a client never names a path), and deleted by
    the service once the call committed (:func:`delete_purged_data`). None for other methods."""
    if DATA_PATHS not in inspect.signature(getattr(ms, method)).parameters:
        return None
    sent = bound.arguments.get(DATA_PATHS)
    if sent is not None and sent != []:
        raise InvalidArgument(f"{method}: {DATA_PATHS} is an answer list (the data the purge frees, which the "
                              f"catalog service deletes): send an empty list or none")
    found: list[str] = []
    bound.arguments[DATA_PATHS] = found
    return found


def delete_purged_data(ms: Any, found: list[str], kept_before: int) -> None:
    """Deletes what a drop or purge answered in :data:`DATA_PATHS` (the purge rules chose it: a managed table's
    location or its recorded files inside it, ``data.purge.bounded``), as ``ushas drop --purge`` does on a local store;
    recorded files outside their table were kept (``ms.kept_paths``: dropped from the service's list here, which
    otherwise grows call after call). Paths on a file system this host cannot reach are logged and left."""
    from ..data.purge import delete_local

    kept = getattr(ms, "kept_paths", None)
    if isinstance(kept, list):
        del kept[kept_before:]
    report = delete_local(found)
    if report.unreachable:
        LOG.warning("purge: %d path(s) not on the service's file system were not deleted: %s",
                    len(report.unreachable), ", ".join(report.unreachable[:3]))


def register(bp: Blueprint, state: ServiceState) -> None:
    stores = state.stores

    @bp.post("/metastore/call")
    def metastore_call() -> Any:
        try:
            user, access = g.get("ushas_user"), g.get("ushas_access")
            if not user or access not in ("read", "write"):
                raise Forbidden("the metastore API needs a bearer token")
            try:
                body = json.loads(request.get_data(cache=False) or b"null")
            except ValueError:
                raise InvalidArgument("the request body is not JSON") from None
            if not isinstance(body, dict):
                raise InvalidArgument("the request body must be a JSON object")
            method = str(body.get("method") or "")
            project = body.get("project") or stores.project
            if project != stores.project:
                raise InvalidArgument(f"this catalog service serves project {stores.project!r}, not {project!r}")
            with stores.lock, calling(Caller(str(user), True)), acting_as(stores, str(user)):
                if method == "whoami":
                    return json_response({"result": {"user": str(user), "project": stores.project,
                                                     "access": access}})
                offered(method, str(access))
                args, kwargs = wire.decode(body.get("args") or []), wire.decode(body.get("kwargs") or {})
                if not isinstance(args, list) or not isinstance(kwargs, dict):
                    raise InvalidArgument("args must be a list and kwargs an object")
                ms = stores.metastore
                branch = body.get("branch")
                if branch:
                    ms = ms.branch(str(branch))
                bound = client_arguments(ms, method, args, kwargs)
                method, args, kwargs = path_check_call(method, args, kwargs, bound, str(access))
                found = own_data_paths(ms, method, bound)
                kept_before = 0
                if found is not None:
                    args, kwargs = list(bound.args), dict(bound.kwargs)
                    kept_before = len(getattr(ms, "kept_paths", None) or [])
                out = getattr(ms, method)(*args, **kwargs)
                if found is not None:
                    delete_purged_data(ms, found, kept_before)
                if inspect.isgenerator(out) or hasattr(out, "__next__"):
                    out = [x for _, x in zip(range(MAX_ITEMS), out)]
                return json_response({"result": wire.encode(out)})
        except UshasError as exc:
            err = exc.to_json()
            err["message"] = state.redact(str(err.get("message", "")))
            return json_response({"error": err}, status_of(exc))
        except TypeError as exc:  # wrong arguments for the method
            return json_response({"error": InvalidArgument(f"{body.get('method')}: {exc}").to_json()}, 400)
        except Exception as exc:  # noqa: BLE001 - a bug: a clear error, the trace in the service's log
            LOG.exception("metastore call failed")
            return json_response({"error": BridgeError(state.redact(f"{type(exc).__name__}: {exc}")).to_json()}, 500)


__all__ = ["CATALOG_ONLY", "DATA_PATHS", "client_arguments", "client_parameters", "delete_purged_data", "offered",
           "offered_methods", "own_data_paths", "register"]
