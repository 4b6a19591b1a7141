"""What the catalog's processes hold of lineage: the capture hub of a process (the bridge's ``lineage.event``
op feeds it), the lineage queries ``ushas serve`` and ``ushas ui`` answer with, and the lineage store the
system and metadata tables read over a metastore's (joined) database."""
from __future__ import annotations

from typing import Any

from ..capture import CaptureHub
from ..query import LineageQueries
from ..store import LineageStore
from ..tables import MetastoreTableIds, open_lineage_store


def capture_hub() -> CaptureHub:
    """The process service ``lineage``: the queues of the lineage listener's events."""
    return CaptureHub()


def lineage_event(request: dict[str, Any], may_create: bool) -> dict[str, Any]:
    """The bridge op ``lineage.event`` (the lineage listener): queued, answered at once, no metastore lock;
    executions are grouped into actions, then captured (:mod:`lineage.actions`). ``may_create``: whether a
    missing store may be created (a PySpark driver yes, a launched bridge no)."""
    from ushas_catalog.spark.registry import REGISTRY

    from .. import actions

    if isinstance(request.get("store"), dict):
        request["store"].setdefault("create", may_create)
    answer: dict[str, Any] = actions.receive(REGISTRY.service("lineage"), request)
    return answer


class ServedQueries(LineageQueries):
    """The lineage queries of a service's store, closed with the service."""

    def close(self) -> None:
        self.store.close()


def served_queries(uri: str, project: str) -> ServedQueries:
    """The service store ``lineage``: queries over the store ``uri`` (never created here)."""
    return ServedQueries(open_lineage_store(uri, project, create=False))


def read_queries(ms: Any) -> LineageQueries:
    """The read store ``lineage``: queries over ``ms``'s database (its transaction, when joined), naming
    tables by the metastore's ids."""
    return LineageQueries(LineageStore(ms.db, ms.project, layout=ms.layout, tables=MetastoreTableIds(ms)))


__all__ = ["ServedQueries", "capture_hub", "lineage_event", "read_queries", "served_queries"]
