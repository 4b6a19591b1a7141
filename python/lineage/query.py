"""Questions over the lineage store: upstream, downstream, impact, runs of a dataset, one run.

Transitive walks are breadth-first over range scans of the upstream / downstream indexes:
each visited node costs one scan of its own key prefix (bounded by since / until), a visited
set protects against cycles (a table that feeds itself through a pipeline), ``depth`` bounds
the walk. Every answer keeps, for each node it reached, the edge that reached it first, so
it can explain the path: the hops and their expressions from the start to that node.

Edges stored by many runs (the same job every day) are one hop in an answer, with the runs
that produced it.
"""
from __future__ import annotations

import datetime as dt
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from ushas_catalog.errors import InvalidArgument, NoSuchColumn, NoSuchRun, NoSuchTable, UshasError

from .identity import canonical_uri, looks_like_path, partition_of
from .links import Links, ViewVersions
from .model import Dataset, DatasetKind, EdgeSubtype
from .store import Access, DatasetKey, LineageStore, Run, StoredEdge



def parse_time(text: str | None, what: str = "time") -> int | None:
    """A time bound of a lineage query (``since`` / ``until``) in epoch milliseconds from user
    text: digits (epoch ms) or an ISO date / date-time (UTC unless it says otherwise).
    ``what`` names the bound in the error."""
    if text is None:
        return None
    text = text.strip()
    if text.isascii() and text.isdigit():
        if len(text) > 18:  # beyond any time a store holds (and int64)
            raise InvalidArgument(f"{what}: {text[:24]!r}... is out of range for epoch milliseconds")
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"{what}: {text!r} is neither epoch milliseconds nor an ISO date-time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)

@dataclass(frozen=True)
class NodeRef:
    """A column of a stored dataset; ``column`` None = the whole dataset."""

    dataset: DatasetKey
    column: str | None = None


@dataclass
class Hop:
    """One edge of an answer: target <- source, with every run (in the window) that produced it."""

    target: NodeRef
    source: NodeRef
    subtype: EdgeSubtype
    runs: list[uuid.UUID] = field(default_factory=list)
    latest_ms: int = 0
    latest: StoredEdge | None = None

    @property
    def key(self) -> tuple[NodeRef, NodeRef, EdgeSubtype]:
        return (self.target, self.source, self.subtype)

    def add(self, edge: StoredEdge) -> None:
        if edge.run_id not in self.runs:
            self.runs.append(edge.run_id)
        if self.latest is None or edge.time_ms >= self.latest_ms:
            self.latest_ms, self.latest = edge.time_ms, edge


@dataclass
class Answer:
    """The result of a transitive walk."""

    direction: str  # "upstream" | "downstream"
    start: tuple[NodeRef, ...]
    depth: int | None
    since: int | None
    until: int | None
    #: every node reached -> hops from the start (the start itself only when a cycle leads back)
    nodes: dict[NodeRef, int] = field(default_factory=dict)
    hops: dict[tuple[NodeRef, NodeRef, EdgeSubtype], Hop] = field(default_factory=dict)
    #: the hop through which each reached node was first reached (the BFS tree)
    via: dict[NodeRef, Hop] = field(default_factory=dict)
    #: True when the depth limit stopped the walk while there was more to visit
    truncated: bool = False
    scans: int = 0

    def datasets(self) -> list[DatasetKey]:
        return list(dict.fromkeys(n.dataset for n in self.nodes))

    def columns(self) -> list[NodeRef]:
        return [n for n in self.nodes if n.column is not None]

    def path(self, node: NodeRef) -> list[Hop]:
        """The hops from a start node to ``node`` (in walk order). A column the walk reached from a whole
        dataset (after a dataset-wide hop: a FILTER or JOIN affects every column) goes on through the hop
        that reached the dataset, so no step between the start and ``node`` is left out."""
        if node not in self.nodes:
            raise InvalidArgument(f"{node} was not reached by this {self.direction} walk")
        out: list[Hop] = []
        current = node
        seen: set[NodeRef] = set()
        while current in self.via and current not in seen:
            seen.add(current)
            hop = self.via[current]
            out.append(hop)
            current = hop.target if self.direction == "upstream" else hop.source
            whole = NodeRef(current.dataset, None)
            if current not in self.via and current not in self.start and whole in self.via:
                current = whole  # reached as part of the whole dataset the walk went on from
        out.reverse()
        return out


class LineageQueries:
    """The query API over one :class:`~lineage.store.LineageStore`."""

    def __init__(self, store: LineageStore) -> None:
        self.store = store

    # ---- names -------------------------------------------------------------------------------
    def resolve_dataset(self, name: str) -> DatasetKey | None:
        """The dataset key a user-typed name denotes: a metastore table by its current name,
        then any dataset ever captured under that name (a Hive table, a path, a dropped or
        renamed table), also with ``spark_catalog.`` prepended for ``db.table``."""
        if looks_like_path(name):  # any spelling: /x, file:/x, file:///x, trailing slash
            uri = canonical_uri(name)
            table_id = Links(self.store).table_for_path(uri)
            if table_id is not None:
                return table_id
            keys = self.store.keys_named(uri)
            return keys[-1] if keys else None
        candidates = [name]
        parts = name.split(".")
        if len(parts) == 2 and "://" not in name and ":" not in name:
            candidates.append(f"spark_catalog.{name}")
        for candidate in candidates:
            cparts = candidate.split(".")
            if len(cparts) >= 3 and ":" not in candidate:
                table_id = self.store.current_table_id(Dataset.table(cparts[0], *cparts[1:]))
                if table_id is not None:
                    return table_id
            keys = self.store.keys_named(candidate)
            if keys:
                # prefer a key still known under this very name, else the last captured one
                for key in keys:
                    if self.store.describe(key)["name"] == candidate:
                        return key
                return keys[-1]
        return None

    def resolve(self, text: str) -> NodeRef:
        """``TABLE`` or ``TABLE.COLUMN`` (tables: ``catalog.db.table``; paths: ``file:/x`` or
        ``file:/x.column`` when ``file:/x`` is a captured dataset)."""
        text = text.strip()
        if not text:
            raise InvalidArgument("empty dataset name")
        key = self.resolve_dataset(text)
        if key is not None:
            return NodeRef(key, None)
        head, dot, column = text.rpartition(".")
        if dot and head and column:
            key = self.resolve_dataset(head)
            if key is not None:
                return NodeRef(key, self.column(key, column))
        raise NoSuchTable(f"no captured lineage for {text!r} (neither a dataset nor dataset.column)")

    def columns(self, key: DatasetKey) -> list[str]:
        """The columns a walk may start from: those of the table's current schema (a metastore table) and
        every column captured lineage names, in order."""
        names = set(self.store.columns_of(key))
        metastore = getattr(self.store.tables, "metastore", None)
        shown = self.display(key)
        if metastore is not None and not shown.get("dropped"):
            try:
                names.update(metastore.get_table(shown["name"]).schema.names)
            except UshasError:  # not a table of this metastore (a view, another catalog's table): lineage only
                pass
        return sorted(names)

    def column(self, key: DatasetKey, column: str) -> str:
        """``column`` of dataset ``key`` as lineage stores it (a case-insensitive match), else
        :class:`~ushas_catalog.errors.NoSuchColumn` naming the column and the dataset's columns."""
        known = self.columns(key)
        if column in known:
            return column
        folded = [c for c in known if c.lower() == column.lower()]
        if len(folded) == 1:
            return folded[0]
        name = self.display(key)["name"]
        listed = ", ".join(known[:50]) + (f", ... ({len(known)} in all)" if len(known) > 50 else "")
        listed = listed or "unknown (no schema and no captured column lineage)"
        raise NoSuchColumn(f"{name} has no column {column!r}: its columns are {listed}", table=name, column=column,
                           columns=known)

    def display(self, key: DatasetKey) -> dict[str, Any]:
        return self.store.describe(key)

    # ---- walks ---------------------------------------------------------------------------------
    def upstream(self, start: NodeRef | str, *, depth: int | None = None, since: int | None = None,
                 until: int | None = None) -> Answer:
        """Where ``start`` comes from: every column (and dataset) it was derived from."""
        return self._walk("upstream", start, depth, since, until)

    def downstream(self, start: NodeRef | str, *, depth: int | None = None, since: int | None = None,
                   until: int | None = None) -> Answer:
        """Where ``start`` flows to: every column (and dataset) derived from it."""
        return self._walk("downstream", start, depth, since, until)

    def impact(self, column: NodeRef | str, *, since: int | None = None, until: int | None = None) -> Answer:
        """Every downstream column of ``column`` (no depth limit), with the runs of each edge."""
        node = self.resolve(column) if isinstance(column, str) else column
        if node.column is None:
            raise InvalidArgument("impact takes a column: TABLE.COLUMN")
        return self._walk("downstream", node, None, since, until)

    def _walk(self, direction: str, start: NodeRef | str, depth: int | None, since: int | None,
              until: int | None) -> Answer:
        if depth is not None and depth < 1:
            raise InvalidArgument(f"depth must be at least 1, not {depth}")
        if since is not None and until is not None and since > until:
            raise InvalidArgument("since is after until")
        node = self.resolve(start) if isinstance(start, str) else start
        answer = Answer(direction, (node,), depth, since, until)
        upstream = direction == "upstream"
        links = Links(self.store)
        versions = ViewVersions(self.store, since, until)
        node = NodeRef(links.canonical(node.dataset), node.column)
        answer.start = (node,)
        visited: set[NodeRef] = {node}
        queue: deque[tuple[NodeRef, int]] = deque([(node, 0)])
        while queue:
            current, level = queue.popleft()
            if depth is not None and level >= depth:
                if self._has_edges(current, upstream, since, until):
                    answer.truncated = True
                continue
            whole = current.column is None
            edges = []
            for key in [current.dataset, *links.aliases(current.dataset)]:
                if upstream:
                    edges += self.store.upstream_edges(key, current.column, since, until, all_columns=whole)
                else:
                    edges += self.store.downstream_edges(key, current.column, since, until, all_columns=whole)
                answer.scans += 1
            for edge in edges:
                if not versions.keep(edge):  # a view's superseded definition
                    continue
                target = NodeRef(links.canonical(edge.target), edge.target_column)
                source = NodeRef(links.canonical(edge.source), edge.source_column)
                hop = answer.hops.get((target, source, edge.subtype))
                if hop is None:
                    hop = answer.hops[(target, source, edge.subtype)] = Hop(target, source, edge.subtype)
                hop.add(edge)
                reached = source if upstream else target
                if reached == node and reached not in answer.nodes:
                    # a cycle back to the start: report it, never walk it again
                    answer.nodes[reached] = level + 1
                    answer.via[reached] = hop
                elif reached not in visited:
                    visited.add(reached)
                    answer.nodes[reached] = level + 1
                    answer.via[reached] = hop
                    queue.append((reached, level + 1))
        return answer

    def _has_edges(self, node: NodeRef, upstream: bool, since: int | None, until: int | None) -> bool:
        if upstream:
            return bool(self.store.upstream_edges(node.dataset, node.column, since, until,
                                                  all_columns=node.column is None))
        return bool(self.store.downstream_edges(node.dataset, node.column, since, until,
                                                all_columns=node.column is None))

    # ---- runs --------------------------------------------------------------------------------
    def runs(self, dataset: NodeRef | str, *, since: int | None = None, until: int | None = None,
             access: Access | None = None) -> list[tuple[Access, Run]]:
        """Who read / wrote ``dataset`` in ``[since, until]``, oldest first."""
        node = self.resolve(dataset) if isinstance(dataset, str) else dataset
        rows = self.store.accesses(node.dataset, since, until, access=access)
        for alias in Links(self.store).aliases(node.dataset):  # paths captured before the table existed
            rows += self.store.accesses(alias, since, until, access=access)
        rows.sort(key=lambda r: (r.time_ms, str(r.run_id)))
        runs: dict[uuid.UUID, Run] = {}
        out = []
        for row in rows:
            if row.run_id not in runs:
                runs[row.run_id] = self.store.get_run(row.run_id)
            out.append((row.access, runs[row.run_id]))
        return out

    def run(self, run_id: uuid.UUID | str) -> dict[str, Any]:
        """One run: its record, the datasets it read and wrote, its column edges."""
        rid = self._run_id(run_id)
        run = self.store.get_run(rid)
        datasets = self.store.run_datasets(rid)
        edges = self.store.run_edges(rid)
        return {
            "run": run.to_dict(),
            "inputs": [self._access_json(ref) for acc, ref in datasets if acc is Access.READ],
            "outputs": [self._access_json(ref) for acc, ref in datasets if acc is Access.WRITE],
            "edges": [self._edge_json(e, expr) for e, expr in edges],
        }

    def _run_id(self, run_id: uuid.UUID | str) -> uuid.UUID:
        if isinstance(run_id, uuid.UUID):
            return run_id
        matches = self.store.find_runs(run_id.strip())
        if not matches:
            raise NoSuchRun(f"no lineage run {run_id!r}")
        if len(matches) > 1:
            raise InvalidArgument(f"run id prefix {run_id!r} is ambiguous ({len(matches)} runs)")
        return matches[0]

    # ---- JSON ----------------------------------------------------------------------------------
    def _dataset_json(self, key: DatasetKey) -> dict[str, Any]:
        return self.display(key)

    def _access_json(self, ref: Any) -> dict[str, Any]:
        """A dataset a run touched; a table accessed by path also shows that path and the
        partition its directory names (lineage.identity)."""
        out = self._dataset_json(ref.key)
        ds = ref.dataset
        if ds.kind is DatasetKind.TABLE and ds.uri and isinstance(ref.key, uuid.UUID):
            out["path"] = ds.uri
            spec = partition_of(ds.uri, self.store.location_of(ref.key))
            if spec:
                out["partition"] = spec
        return out

    def node_name(self, node: NodeRef) -> str:
        name = self.display(node.dataset)["name"]
        return f"{name}.{node.column}" if node.column is not None else name

    def _edge_json(self, edge: StoredEdge, expression: str) -> dict[str, Any]:
        return {"target": self.node_name(NodeRef(edge.target, edge.target_column)),
                "source": self.node_name(NodeRef(edge.source, edge.source_column)),
                "kind": edge.kind.value, "subtype": edge.subtype.value, "expression": expression}

    def answer_json(self, answer: Answer, *, explain: bool = False) -> dict[str, Any]:
        names: dict[DatasetKey, dict[str, Any]] = {}

        def ds(key: DatasetKey) -> dict[str, Any]:
            if key not in names:
                names[key] = self.display(key)
            return names[key]

        def name(node: NodeRef) -> str:
            base = ds(node.dataset)["name"]
            return f"{base}.{node.column}" if node.column is not None else base

        def hop_json(hop: Hop, with_expression: bool) -> dict[str, Any]:
            out: dict[str, Any] = {"target": name(hop.target), "source": name(hop.source),
                                   "kind": hop.subtype.kind.value, "subtype": hop.subtype.value,
                                   "runs": [str(r) for r in hop.runs], "latest_ms": hop.latest_ms}
            if with_expression and hop.latest is not None:
                out["expression"] = self.store.expression(hop.latest)
            return out

        out: dict[str, Any] = {
            "direction": answer.direction,
            "start": [name(n) for n in answer.start],
            "depth": answer.depth, "since": answer.since, "until": answer.until,
            "truncated": answer.truncated,
            "datasets": [{**ds(k), "depth": min(d for n, d in answer.nodes.items() if n.dataset == k)}
                         for k in answer.datasets()],
            "columns": [{"name": name(n), "depth": answer.nodes[n]} for n in answer.columns()],
            "edges": [hop_json(h, False) for h in answer.hops.values()],
        }
        if explain:
            out["paths"] = {name(n): [hop_json(h, True) for h in answer.path(n)] for n in answer.nodes}
        return out

    def runs_json(self, rows: Iterable[tuple[Access, Run]]) -> list[dict[str, Any]]:
        return [{"access": acc.value, **run.to_dict()} for acc, run in rows]
