"""Lineage reads: captured datasets, the column graph and the table graph (levels for every
node, "(whole dataset)" nodes included: :mod:`lineage.graphs`), impact of a column (with the
owners and tags of what it reaches; ``format=csv`` answers CSV)."""
from __future__ import annotations

import csv
import io
import uuid
from typing import Any

from flask import Blueprint, Response

from ushas_catalog.errors import InvalidArgument, UshasError
from ushas_catalog.service.routing import int_arg, page_args, paged, str_arg
from ushas_catalog.service.state import ServiceState

DATASET_KINDS = ("table", "view", "external table", "path")
MAX_DEPTH = 20


def time_arg(name: str) -> int | None:
    from ..query import parse_time

    text = str_arg(name)
    return parse_time(text, name) if text is not None and text.strip() else None


def walk_args() -> tuple[str, str, int | None, int | None, int | None]:
    node = str_arg("node", required=True, what="DATASET or DATASET.COLUMN")
    assert node is not None
    direction = str_arg("direction") or "both"
    if direction not in ("upstream", "downstream", "both"):
        raise InvalidArgument(f"direction must be upstream, downstream or both, not {direction[:40]!r}")
    return node, direction, int_arg("depth", 3, 1, MAX_DEPTH), time_arg("since"), time_arg("until")


def owner_and_tags(state: ServiceState, name: str, table_id: str | None) -> tuple[str | None, list[str]]:
    """A metastore table's owner and USER tags (None, [] for anything else)."""
    if table_id is None:
        return None, []
    from ushas_catalog.model.names import split_name

    try:
        parts = split_name(name)
        if len(parts) != 3:
            return None, []
        ms = state.metastore
        owner = ms.get_view(parts).owner if ms.view_exists(parts) else ms.get_table(parts).owner
        return owner, sorted(ms.metadata.get(parts).user.tags)
    except UshasError:
        return None, []


def dataset_page(store: Any, prefix: str, kind: str | None, offset: int, limit: int) -> list[Any]:
    """Up to ``limit + 1`` captured datasets in name order from ``offset`` (of those of ``kind``
    named ``prefix...``), read from the name index page by page: a page costs its own datasets,
    not the whole store. A name a table had before a rename is skipped (it is listed under its
    current name, when lineage saw that one)."""
    from ..store import CapturedDataset

    out: list[Any] = []
    seen: set[Any] = set()
    skipped, after = 0, None
    while len(out) <= limit:
        batch = store.names_in_order(prefix, after=after, limit=200)
        if not batch:
            break
        for name, key in batch:
            after = name
            if key in seen:
                continue
            ref = store.dataset(key)
            if ref is None:
                continue
            described = store.describe(key)
            if described["name"] != name and store.keys_named(described["name"]):
                continue  # an old name of a renamed table
            seen.add(key)
            last = store.accesses(key, limit=1, reverse=True)
            d = CapturedDataset(key, ref.dataset, described["name"], bool(described.get("dropped")),
                                last[0].time_ms if last else None, last[0].access if last else None)
            if kind is not None and d.kind != kind:
                continue
            if skipped < offset:
                skipped += 1
                continue
            out.append(d)
            if len(out) > limit:
                break
    return out


def register(bp: Blueprint, state: ServiceState, namespaces: dict[str, str] | None = None) -> None:
    ep = state.endpoint

    @bp.get("/lineage/datasets")
    @ep
    def lineage_datasets() -> Any:
        kind = str_arg("kind")
        if kind is not None and kind not in DATASET_KINDS:
            raise InvalidArgument(f"kind must be one of {', '.join(DATASET_KINDS)}, not {kind[:40]!r}")
        offset, limit = page_args()
        rows = dataset_page(state.lineage.store, str_arg("prefix") or "", kind, offset, limit)
        return paged([d.to_dict() for d in rows], offset, limit, offset + min(len(rows), limit))

    @bp.get("/lineage/graph")
    @ep
    def column_graph() -> Any:
        from ..graphs import column_graph as build

        node, direction, depth, since, until = walk_args()
        return build(state.lineage, node, direction, depth, since, until)

    @bp.get("/lineage/tables")
    @ep
    def table_graph() -> Any:
        from ..graphs import table_graph as build

        node, direction, depth, since, until = walk_args()
        return build(state.lineage, node, direction, depth, since, until)

    @bp.get("/lineage/impact")
    @ep
    def impact() -> Any:
        node = str_arg("node", required=True, what="TABLE.COLUMN (or TABLE)")
        assert node is not None
        since, until = time_arg("since"), time_arg("until")
        fmt = str_arg("format") or "json"
        if fmt not in ("json", "csv"):
            raise InvalidArgument(f"format must be json or csv, not {fmt[:40]!r}")
        q = state.lineage
        start_ref = q.resolve(node)  # a column; a whole dataset: everything downstream of any of its columns
        answer = q.impact(start_ref, since=since, until=until) if start_ref.column is not None else \
            q.downstream(start_ref, depth=None, since=since, until=until)
        described: dict[Any, dict[str, Any]] = {}
        facts: dict[Any, tuple[str | None, list[str]]] = {}
        rows = []
        for ref, depth in sorted(answer.nodes.items(), key=lambda x: (x[1], q.node_name(x[0]))):
            if ref.dataset not in described:
                described[ref.dataset] = q.display(ref.dataset)
                d = described[ref.dataset]
                facts[ref.dataset] = owner_and_tags(state, d["name"], d.get("table_id")
                                                    if isinstance(ref.dataset, uuid.UUID) else None)
            owner, tags = facts[ref.dataset]
            hops = answer.path(ref)
            path = [q.node_name(h.source) for h in hops] + [q.node_name(ref)]
            rows.append({"name": q.node_name(ref), "dataset": described[ref.dataset]["name"], "column": ref.column,
                         "depth": depth, "owner": owner, "tags": tags, "path": path,
                         "hops": [{"source": q.node_name(h.source), "target": q.node_name(h.target),
                                   "subtype": h.subtype.value} for h in hops]})
        start = q.node_name(answer.start[0])
        if fmt == "csv":
            out = io.StringIO()
            w = csv.writer(out)
            w.writerow(["name", "dataset", "column", "depth", "owner", "tags", "path"])
            for r in rows:
                w.writerow([_cell(r["name"]), _cell(r["dataset"]), _cell(r["column"] or ""), r["depth"],
                            _cell(r["owner"] or ""), _cell(";".join(r["tags"])), _cell(" <- ".join(r["path"]))])
            return Response(out.getvalue(), mimetype="text/csv", headers={
                "Content-Disposition": 'attachment; filename="impact.csv"', "Cache-Control": "no-store"})
        return {"start": start, "since": since, "until": until, "items": rows}


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


__all__ = ["register", "walk_args", "time_arg"]
