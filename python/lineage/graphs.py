"""Lineage graphs for display (``ushas serve``'s ``/api/v1/lineage/graph`` and ``/tables``):
every node with a signed level (negative: upstream of the start, positive: downstream), so a
layered layout puts each node in its column.

- :func:`column_graph`: columns, and "(whole dataset)" nodes — the target of a dataset-wide
  INDIRECT edge (a filter or join key that affects every column of the written dataset). Such a
  node sits at its dataset's level (one more than its sources'), never at the start's.
- :func:`table_graph`: datasets and the edges between them (column edges aggregated: how many
  DIRECT, INDIRECT and whole-dataset ones, how many runs), walked dataset by dataset: one scan of
  each dataset's edge index per level, however many columns it has.
"""
from __future__ import annotations

import uuid
from collections import deque
from typing import Any

from ushas_catalog.errors import InvalidArgument

from .links import Links, ViewVersions
from .query import LineageQueries, NodeRef
from .store import DatasetKey

DIRECTIONS = ("upstream", "downstream", "both")


def _check(direction: str, depth: int | None, since: int | None, until: int | None) -> None:
    if direction not in DIRECTIONS:
        raise InvalidArgument(f"direction must be upstream, downstream or both, not {direction!r}")
    if depth is not None and depth < 1:
        raise InvalidArgument(f"depth must be at least 1, not {depth}")
    if since is not None and until is not None and since > until:
        raise InvalidArgument("since is after until")


class _Names:
    def __init__(self, q: LineageQueries) -> None:
        self.q = q
        self.described: dict[DatasetKey, dict[str, Any]] = {}

    def dataset(self, key: DatasetKey) -> dict[str, Any]:
        if key not in self.described:
            self.described[key] = self.q.display(key)
        return self.described[key]

    def node(self, ref: NodeRef) -> str:
        base = self.dataset(ref.dataset)["name"]
        return f"{base}.{ref.column}" if ref.column is not None else base


def column_graph(q: LineageQueries, node: str, direction: str = "both", depth: int | None = 3,
                 since: int | None = None, until: int | None = None) -> dict[str, Any]:
    """The column graph around ``node`` (``DATASET`` or ``DATASET.COLUMN``)."""
    _check(direction, depth, since, until)
    start = q.resolve(node)
    names = _Names(q)
    levels: dict[NodeRef, int] = {}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    hops: list[Any] = []
    truncated = False

    def put(ref: NodeRef, level: int) -> None:
        if ref not in levels or abs(level) < abs(levels[ref]):
            levels[ref] = level

    put(start, 0)
    for way in (["upstream", "downstream"] if direction == "both" else [direction]):
        answer = q.upstream(start, depth=depth, since=since, until=until) if way == "upstream" else \
            q.downstream(start, depth=depth, since=since, until=until)
        truncated = truncated or answer.truncated
        sign = -1 if way == "upstream" else 1
        for ref, level in answer.nodes.items():
            if ref != start:
                put(ref, sign * level)
        hops.extend(answer.hops.values())
    # nodes only an edge names (a whole-dataset target, the columns of a whole-dataset start): at
    # the level of their dataset's other nodes, else one right of their source / left of their target
    by_dataset: dict[DatasetKey, int] = {}
    for ref, level in levels.items():
        if ref.dataset not in by_dataset or abs(level) < abs(by_dataset[ref.dataset]):
            by_dataset[ref.dataset] = level
    for _ in range(2):
        for hop in hops:
            for ref, other, shift in ((hop.target, hop.source, 1), (hop.source, hop.target, -1)):
                if ref in levels:
                    continue
                if ref.dataset in by_dataset:
                    levels[ref] = by_dataset[ref.dataset]
                elif other in levels:
                    levels[ref] = by_dataset[ref.dataset] = levels[other] + shift
    for hop in hops:
        for ref in (hop.target, hop.source):
            levels.setdefault(ref, 0)
        key = (names.node(hop.target), names.node(hop.source), hop.subtype.value)
        edges[key] = {"target": key[0], "source": key[1], "kind": hop.subtype.kind.value,
                      "subtype": hop.subtype.value, "runs": [str(r) for r in hop.runs], "latest_ms": hop.latest_ms,
                      "expression": q.store.expression(hop.latest) if hop.latest is not None else ""}
    nodes: dict[str, dict[str, Any]] = {}
    for ref, level in levels.items():
        nid = names.node(ref)
        if nid not in nodes or abs(level) < abs(nodes[nid]["level"]):
            nodes[nid] = {"id": nid, "dataset": names.dataset(ref.dataset)["name"], "column": ref.column,
                          "level": level, "whole_dataset": ref.column is None}
    return {"start": names.node(start), "direction": direction, "depth": depth, "since": since, "until": until,
            "truncated": truncated, "nodes": sorted(nodes.values(), key=lambda n: (n["level"], n["id"])),
            "edges": list(edges.values())}


def table_graph(q: LineageQueries, node: str, direction: str = "both", depth: int | None = 3,
                since: int | None = None, until: int | None = None) -> dict[str, Any]:
    """The dataset graph around the dataset ``node`` (a column name means its dataset)."""
    _check(direction, depth, since, until)
    start_ref = q.resolve(node)
    links = Links(q.store)
    versions = ViewVersions(q.store, since, until)
    start = links.canonical(start_ref.dataset)
    names = _Names(q)
    levels: dict[DatasetKey, int] = {start: 0}
    columns: dict[DatasetKey, set[str]] = {}
    agg: dict[tuple[DatasetKey, DatasetKey], dict[str, Any]] = {}
    truncated = False
    for way in (["upstream", "downstream"] if direction == "both" else [direction]):
        upstream = way == "upstream"
        sign = -1 if upstream else 1
        seen = {start}
        queue: deque[tuple[DatasetKey, int]] = deque([(start, 0)])
        while queue:
            current, level = queue.popleft()
            if depth is not None and level >= depth:
                if _has_edges(q, current, upstream, since, until):
                    truncated = True
                continue
            for key in [current, *links.aliases(current)]:
                edges = q.store.upstream_edges(key, None, since, until, all_columns=True) if upstream else \
                    q.store.downstream_edges(key, None, since, until, all_columns=True)
                for e in edges:
                    if not versions.keep(e):
                        continue
                    target, source = links.canonical(e.target), links.canonical(e.source)
                    if e.target_column is not None:
                        columns.setdefault(target, set()).add(e.target_column)
                    columns.setdefault(source, set()).add(e.source_column)
                    a = agg.get((source, target))
                    if a is None:
                        a = agg[(source, target)] = {"direct": 0, "indirect": 0, "whole_dataset": 0,
                                                     "runs": set(), "latest_ms": None, "pairs": set()}
                    pair = (e.target_column, e.source_column, e.subtype)
                    if pair not in a["pairs"]:
                        a["pairs"].add(pair)
                        if e.target_column is None:
                            a["whole_dataset"] += 1
                        elif e.kind.value == "DIRECT":
                            a["direct"] += 1
                        else:
                            a["indirect"] += 1
                    a["runs"].add(e.run_id)
                    a["latest_ms"] = max(a["latest_ms"] or 0, e.time_ms)
                    reached = source if upstream else target
                    if reached not in seen:
                        seen.add(reached)
                        if reached not in levels or abs(sign * (level + 1)) < abs(levels[reached]):
                            levels[reached] = sign * (level + 1)
                        queue.append((reached, level + 1))
    nodes = []
    for key, level in levels.items():
        d = names.dataset(key)
        n: dict[str, Any] = {"id": d["name"], "name": d["name"], "kind": _kind(q, key), "level": level,
                             "columns": sorted(columns.get(key, ()))}
        if isinstance(key, uuid.UUID):
            n["table_id"], n["dropped"] = str(key), bool(d.get("dropped"))
        nodes.append(n)
    edges_out = [{"source": names.dataset(s)["name"], "target": names.dataset(t)["name"], "direct": a["direct"],
                  "indirect": a["indirect"], "whole_dataset": a["whole_dataset"], "runs": len(a["runs"]),
                  "latest_ms": a["latest_ms"]} for (s, t), a in agg.items()]
    return {"start": names.dataset(start)["name"], "direction": direction, "depth": depth, "since": since,
            "until": until, "truncated": truncated, "nodes": sorted(nodes, key=lambda n: (n["level"], n["id"])),
            "edges": edges_out}


def _kind(q: LineageQueries, key: DatasetKey) -> str:
    if isinstance(key, uuid.UUID):
        return "table"
    from .model import DatasetKind

    ref = q.store.dataset(key)
    if ref is not None and ref.dataset.kind is DatasetKind.PATH:
        return "path"
    return "view" if ref is not None and q.store.is_view(ref.dataset) else "external table"


def _has_edges(q: LineageQueries, key: DatasetKey, upstream: bool, since: int | None, until: int | None) -> bool:
    return bool(q.store.has_edges(key, upstream=upstream, since=since, until=until))


__all__ = ["DIRECTIONS", "column_graph", "table_graph"]
