"""``POST /api/v1/catalog/lineage``: where a remote-mode Spark driver's lineage capture stores its runs
(:class:`lineage.remote_store.RemoteLineageStore`; docs/service.md, "Remote mode").

Body ``{"method", "args", "kwargs", "project", "catalogs"}`` in :mod:`ushas_catalog.remote.wire`'s
encoding; ``method`` is ``record`` (one resolved run), ``report_source`` (the capture's counters) or
``add_dropped``. A write token is needed (as for the OpenLineage receiver). What the service decides: a
run's ``user`` is the token's user (not the one the driver says), and a capture's counters are published
under ``<token user>/<application id>``; ``catalogs`` (Spark catalog -> metastore catalog) only names
tables, as the embedded capture's mapping does.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from flask import Blueprint, g, request

from ushas_catalog.errors import BridgeError, Forbidden, InvalidArgument, UshasError
from ushas_catalog.remote import wire
from ushas_catalog.service.routing import json_response, status_of
from ushas_catalog.service.state import LOG, ServiceState

METHODS = frozenset({"record", "report_source", "add_dropped"})


def register(bp: Blueprint, state: ServiceState, namespaces: dict[str, str] | None = None) -> None:
    stores = state.stores

    @bp.post("/catalog/lineage")
    def lineage_ingest() -> Any:
        try:
            user, access = g.get("ushas_user"), g.get("ushas_access")
            if access != "write":
                raise Forbidden("storing lineage needs a write token")
            try:
                body = json.loads(request.get_data(cache=False) or b"null")
            except ValueError:
                raise InvalidArgument("the request body is not JSON") from None
            if not isinstance(body, dict) or body.get("method") not in METHODS:
                raise InvalidArgument(f"method must be one of {sorted(METHODS)}")
            if (body.get("project") or stores.project) != stores.project:
                raise InvalidArgument(f"this catalog service serves project {stores.project!r}")
            catalogs = body.get("catalogs") or {}
            if not isinstance(catalogs, dict) or not all(isinstance(v, str) for v in catalogs.values()):
                raise InvalidArgument("catalogs must map Spark catalog names to metastore catalog names")
            args, kwargs = wire.decode(body.get("args") or []), wire.decode(body.get("kwargs") or {})
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise InvalidArgument("args must be a list and kwargs an object")
            with stores.lock:
                store = _store(stores, catalogs)
                result = _run(store, str(body["method"]), str(user), args, kwargs)
            return json_response({"result": wire.encode(result)})
        except UshasError as exc:
            err = exc.to_json()
            err["message"] = state.redact(str(err.get("message", "")))
            return json_response({"error": err}, status_of(exc))
        except TypeError as exc:
            return json_response({"error": InvalidArgument(f"bad arguments: {exc}").to_json()}, 400)
        except Exception as exc:  # noqa: BLE001 - a bug: a clear error, the trace in the service's log
            LOG.exception("lineage ingest failed")
            return json_response({"error": BridgeError(state.redact(f"{type(exc).__name__}: {exc}")).to_json()}, 500)


def _store(stores: Any, catalogs: dict[str, str]) -> Any:
    from ..store import LineageStore
    from ..tables import MetastoreTableIds

    ms = stores.metastore
    return LineageStore(ms.db, stores.project, layout=ms.layout, tables=MetastoreTableIds(ms, catalogs))


def _run(store: Any, method: str, user: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    from ..store import CapturedRun

    if method == "record":
        if len(args) != 1 or kwargs or not isinstance(args[0], CapturedRun):
            raise InvalidArgument("record takes one captured run")
        captured = args[0]
        return store.record(dataclasses.replace(captured, run=dataclasses.replace(captured.run, user=user)))
    if method == "report_source":
        if len(args) != 1:
            raise InvalidArgument("report_source takes the source and its counters")
        return store.report_source(f"{user}/{args[0]}", **kwargs)
    return store.add_dropped(*args, **kwargs)


__all__ = ["register"]
