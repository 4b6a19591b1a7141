"""What ``ushas demo`` shows of lineage (the catalog's demo section, :mod:`ushas_catalog.extensions`): it
waits for the lineage listener's runs to reach the store, then prints the upstream lineage tree of the
report's columns (the tree ``ushas lineage upstream`` prints: :mod:`lineage.edge_tree`)."""
from __future__ import annotations

import time
from typing import Any

from ushas_catalog.extensions import DemoReport

from ..edge_tree import tree_lines
from ..query import LineageQueries
from ..tables import open_lineage_store


def wait_for_lineage(uri: str, project: str, dataset: str, timeout: float) -> bool:
    """Wait until the listener's runs have reached the store: ``dataset`` has a write."""
    from ushas_catalog.spark.registry import REGISTRY

    deadline = time.monotonic() + timeout
    store = open_lineage_store(uri, project)
    try:
        q = LineageQueries(store)
        while time.monotonic() < deadline:
            REGISTRY.service("lineage").flush(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
            key = q.resolve_dataset(dataset)
            if key is not None and any(row.access.value == "write" for row in store.accesses(key)):
                return True
            time.sleep(0.5)
        return False
    finally:
        store.close()


def lineage_tree(uri: str, project: str, dataset: str) -> tuple[dict[str, Any], str]:
    """The upstream lineage of every column of ``dataset``: (JSON answer, tree text)."""
    store = open_lineage_store(uri, project)
    try:
        q = LineageQueries(store)
        answer = q.upstream(dataset)
        data = q.answer_json(answer)
        roots = sorted({e["target"] for e in data["edges"]
                        if e["target"] == dataset or e["target"].startswith(dataset + ".")})
        lines = [f"Lineage of {dataset} (upstream, from the store)",
                 *tree_lines(data["edges"], roots, upstream=True, indent="  ",
                             datasets=[x["name"] for x in data["datasets"]])]
        return data, "\n".join(lines)
    finally:
        store.close()


class LineageSection:
    """The demo section ``lineage``: its JSON answer under ``"lineage"``, the tree, and the command to ask more."""

    def wait(self, uri: str, project: str, dataset: str, timeout: float) -> bool:
        return wait_for_lineage(uri, project, dataset, timeout)

    def report(self, uri: str, project: str, dataset: str, column: str) -> DemoReport:
        data, text = lineage_tree(uri, project, dataset)
        return DemoReport("lineage", data, text,
                          (f"Query lineage: ushas --uri {uri} lineage upstream {dataset}.{column}",))


SECTION = LineageSection()

__all__ = ["SECTION", "LineageSection", "lineage_tree", "wait_for_lineage"]
