"""Lineage in remote mode (docs/service.md, "Remote mode"): the capture of a Spark driver whose lineage
catalog is served by ``ushas serve`` resolves its runs here, as always (grouping, plan resolution: no store
needed), and stores them through the service: :class:`RemoteLineageStore` is the capture's store, each
``record`` / ``report_source`` one ``POST /api/v1/catalog/lineage`` with the catalog's token. The capture's
queue and worker thread stay what they are, so a query never waits for the service, and a run the service
does not take after the capture's retries is dropped and counted (``ushas lineage status``)."""
from __future__ import annotations

from typing import Any, Mapping

from ushas_catalog.remote.http import CLIENT, Client, Endpoint
from ushas_catalog.remote.metastore import call_method

PATH = "/api/v1/catalog/lineage"
TIMEOUT_S = 30.0


class RemoteLineageStore:
    """The part of :class:`lineage.store.LineageStore` the capture uses, served by the catalog service."""

    def __init__(self, url: str, token: str, project: str, catalogs: Mapping[str, str] | None = None, *,
                 client: Client | None = None, timeout: float = TIMEOUT_S) -> None:
        self.endpoint = Endpoint.parse(url)
        self._token = token
        self.project = project
        self.catalogs = dict(catalogs or {})
        self._client = client or CLIENT
        self.timeout = timeout

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return call_method(self._client, self.endpoint, PATH, self._token, self.timeout, method, args, kwargs,
                           {"project": self.project, "catalogs": self.catalogs})

    def record(self, captured: Any) -> bool:
        return bool(self._call("record", captured))

    def add_dropped(self, count: int) -> None:
        self._call("add_dropped", count)

    def report_source(self, source: str, *, captured: int, dropped: int, pending: int, add_dropped: int = 0) -> None:
        self._call("report_source", source, captured=captured, dropped=dropped, pending=pending,
                   add_dropped=add_dropped)

    def close(self) -> None:
        """Nothing to close: connections are kept per thread and reused."""


__all__ = ["RemoteLineageStore", "PATH"]
