"""Value types of column lineage, shared by every producer (Spark plans, sqlglot) and consumer
(rendering, OpenLineage export, the lineage store).

The model is a graph of :class:`ColumnNode` s:

- a *dataset column* (``dataset`` set, ``expr_id`` None) is a leaf: a catalog table's column, a
  path's column, or a column of an in-query source (VALUES, range(), ...);
- an *intermediate* node (``expr_id`` set) is an attribute of the plan: a relation's output
  attribute, an alias, an aggregate result, a union output... Producers that have no Spark
  exprIds (sqlglot) use any id unique within one result.

Every intermediate node has exactly one :class:`Derivation` (the operator and expression that
produced it, with its incoming :class:`Step` s). DIRECT steps are IDENTITY / TRANSFORMATION /
AGGREGATION; column-scoped INDIRECT steps (CONDITIONAL in a CASE WHEN, WINDOW partition/order
keys) live on the derivation of the node they affect. Row-level INDIRECT dependencies (FILTER,
JOIN, GROUP_BY, SORT, ...) are kept ONCE per operator as :class:`IndirectDependency`, scoped to the
whole output (``scope is None``) or to one intermediate node (e.g. the filter inside a scalar
subquery), and expanded onto output columns only when asked.

Stability: the classes and field names here are a contract (the SQL lineage, the store and the
exports build on them); extend compatibly, never rename. ``to_dict`` / ``from_dict`` round-trip.

Texts a person reads carry no expression id (issue 36): ``Edge.expression`` of :attr:`LineageResult.edges`
and every expression of ``to_dict`` are :func:`lineage.readable.readable` (``sum(amount) AS revenue``).
Derivations keep Spark's text (``sum(amount#36) AS revenue#61``) in memory only, where the ids tell equal
names apart while composing expressions; nodes are told apart by their ``expr_id`` number, and
:meth:`ColumnNode.label` is a node's name as a person reads it.

The values built per plan node and column (:class:`Dataset`, :class:`ColumnNode`, :class:`Step`,
:class:`Derivation`, :class:`IndirectDependency`) are ``NamedTuple`` s: immutable, with named
fields, built and hashed in C. Resolving a plan builds and hashes thousands of them; as frozen
dataclasses (Python ``__init__`` and ``__hash__``) they were a quarter of the resolution time.
Like any tuple they compare equal to a plain tuple of the same values.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from .kinds import DatasetKind, EdgeKind, EdgeSubtype, compose_subtypes
from . import render
from .readable import readable, readable_dataset

FORMAT_VERSION = 1


_EMPTY_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):///+")


def normalize_uri(uri: str) -> str:
    """One spelling per location, as Hadoop's ``Path`` prints it, so a path written as
    ``file:///tmp/x/`` (a user's option) and read as ``file:/tmp/x`` (a scan's root path) is one
    dataset: an empty authority collapses (``scheme:///p`` -> ``scheme:/p``) and a trailing
    ``/`` goes. Comma-joined lists (a scan over several roots) are normalized part by part."""
    return ",".join(_normalize_one(u) for u in uri.split(",")) if uri else uri


def _normalize_one(uri: str) -> str:
    uri = _EMPTY_AUTHORITY.sub(r"\1:/", uri.strip())
    keep = _root_length(uri)
    while len(uri) > keep and uri.endswith("/"):
        uri = uri[:-1]
    return uri


def _root_length(uri: str) -> int:
    """Length of the part a trailing-slash strip must keep: ``/``, ``file:/``, ``s3a://bucket/``."""
    if "://" in uri:
        slash = uri.find("/", uri.index("://") + 3)
        return slash + 1 if slash >= 0 else len(uri)
    scheme = uri.find(":/")
    return scheme + 2 if scheme > 0 else 1


class Dataset(NamedTuple):
    """A leaf dataset (an immutable typed tuple, see :class:`ColumnNode`). Tables: ``catalog`` +
    ``identifier`` (namespace parts then table name);
    paths: ``uri`` + ``format``; in-query sources: ``description`` (e.g. ``VALUES``,
    ``range(0, 10, 1)``)."""

    kind: DatasetKind
    catalog: str | None = None
    identifier: tuple[str, ...] = ()
    uri: str | None = None
    format: str | None = None
    description: str | None = None

    @staticmethod
    def table(catalog: str | None, *identifier: str) -> Dataset:
        return Dataset(DatasetKind.TABLE, catalog=catalog, identifier=tuple(identifier))

    @staticmethod
    def path(uri: str, format: str | None = None) -> Dataset:
        return Dataset(DatasetKind.PATH, uri=normalize_uri(uri), format=format)

    @staticmethod
    def inline(description: str) -> Dataset:
        return Dataset(DatasetKind.INLINE, description=description)

    @property
    def name(self) -> str:
        """The display / lookup name: ``catalog.db.table``, the URI, or ``<description>``."""
        if self.kind is DatasetKind.TABLE:
            return ".".join(([self.catalog] if self.catalog else []) + list(self.identifier))
        if self.kind is DatasetKind.PATH:
            return self.uri or ""
        return f"<{self.description}>"

    def openlineage_name(self) -> tuple[str, str]:
        """(namespace, name) following OpenLineage's dataset naming: tables are named
        ``db.table`` in the catalog's namespace, files ``path`` in ``scheme[://authority]``."""
        if self.kind is DatasetKind.TABLE:
            return (self.catalog or "default", ".".join(self.identifier))
        if self.kind is DatasetKind.PATH:
            uri = self.uri or ""
            scheme, sep, rest = uri.partition(":")
            if not sep:
                return ("file", uri)
            if rest.startswith("//"):
                authority, _, path = rest[2:].partition("/")
                return ((f"{scheme}://{authority}" if authority else scheme), "/" + path)
            return (scheme, rest)
        return ("inline", self.description or "")

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.catalog is not None:
            out["catalog"] = self.catalog
        if self.identifier:
            out["identifier"] = list(self.identifier)
        for key in ("uri", "format", "description"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Dataset:
        return Dataset(DatasetKind(d["kind"]), catalog=d.get("catalog"),
                       identifier=tuple(d.get("identifier", ())), uri=d.get("uri"),
                       format=d.get("format"), description=d.get("description"))


class ColumnNode(NamedTuple):
    """A dataset column (``dataset`` set) or an intermediate plan attribute (``expr_id`` set).

    An immutable value (a typed tuple, like :class:`Step`): resolution builds and hashes
    thousands of them per query, and a tuple is built and hashed in C, a frozen dataclass in
    Python."""

    name: str
    dataset: Dataset | None = None
    expr_id: int | None = None
    # Spark reuses an exprId for an attribute re-defined by some operators (a Union's output
    # keeps its first child's exprIds); the index of the re-defining plan node tells them apart.
    plan_node: int | None = None

    @staticmethod
    def column(dataset: Dataset, name: str) -> ColumnNode:
        return ColumnNode(name=name, dataset=dataset)

    @staticmethod
    def attribute(name: str, expr_id: int) -> ColumnNode:
        return ColumnNode(name=name, expr_id=expr_id)

    @property
    def is_dataset_column(self) -> bool:
        return self.dataset is not None and self.expr_id is None

    def __str__(self) -> str:
        if self.expr_id is not None:
            return f"{self.name}#{self.expr_id}"
        if self.dataset is not None:
            return f"{self.dataset.name}.{self.name}"
        return self.name

    @property
    def label(self) -> str:
        """The node as a person reads it: ``str`` without the expression id (``revenue``, ``db.t.a``)."""
        if self.expr_id is None and self.dataset is not None:
            return f"{readable_dataset(self.dataset.name)}.{self.name}"
        return self.name

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.dataset is not None:
            out["dataset"] = self.dataset.to_dict()
        if self.expr_id is not None:
            out["expr_id"] = self.expr_id
        if self.plan_node is not None:
            out["plan_node"] = self.plan_node
        return out

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> ColumnNode:
        ds = d.get("dataset")
        return ColumnNode(name=d["name"], dataset=Dataset.from_dict(ds) if ds else None,
                          expr_id=d.get("expr_id"), plan_node=d.get("plan_node"))


@dataclass(frozen=True)
class Edge:
    """target <- source. ``target`` None on an INDIRECT edge means "the whole output dataset"
    (OpenLineage's dataset-level column lineage). ``expression`` is the (composed) expression."""

    target: ColumnNode | None
    source: ColumnNode
    kind: EdgeKind
    subtype: EdgeSubtype
    expression: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target.to_dict() if self.target else None,
                "source": self.source.to_dict(), "kind": self.kind.value,
                "subtype": self.subtype.value, "expression": self.expression}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Edge:
        return Edge(target=ColumnNode.from_dict(d["target"]) if d.get("target") else None,
                    source=ColumnNode.from_dict(d["source"]), kind=EdgeKind(d["kind"]),
                    subtype=EdgeSubtype(d["subtype"]), expression=d.get("expression", ""))


class Step(NamedTuple):
    """One incoming edge of a derivation (an immutable typed tuple, see :class:`ColumnNode`)."""

    source: ColumnNode
    subtype: EdgeSubtype

    @property
    def kind(self) -> EdgeKind:
        return self.subtype.kind


class Derivation(NamedTuple):
    """How one intermediate node was produced: by plan operator ``operator`` (Project, Aggregate,
    Union, HiveTableRelation, ...), through an expression whose top is ``expression_kind``
    (Alias, AttributeReference, ...) and whose text is ``expression`` (Spark's rendering, with
    ``name#exprId`` references). ``resolved`` is False when the operator is unknown to the
    resolver and lineage was passed through by exprId / position."""

    operator: str
    expression: str
    inputs: tuple[Step, ...] = ()
    expression_kind: str | None = None
    resolved: bool = True

    @property
    def label(self) -> str:
        return self.expression_kind or self.operator


class IndirectDependency(NamedTuple):
    """A row-level dependency of one operator (FILTER, JOIN, GROUP_BY, SORT, ...), stored once.
    ``scope`` None: it affects every output column; otherwise every output column whose
    derivation reaches ``scope``."""

    operator: str
    subtype: EdgeSubtype
    expression: str
    sources: tuple[ColumnNode, ...]
    scope: ColumnNode | None = None


@dataclass(frozen=True)
class Unresolved:
    """A plan node kind (or dangling reference) the resolver could not interpret."""

    kind: str
    detail: str = ""
    columns: tuple[ColumnNode, ...] = ()


@dataclass(frozen=True)
class ColumnLineage:
    """The expanded lineage of one output column."""

    column: ColumnNode
    direct: Mapping[ColumnNode, EdgeSubtype]
    indirect: frozenset[tuple[EdgeSubtype, ColumnNode]]
    complete: bool


@dataclass(frozen=True)
class LineageResult:
    """Lineage of one query / DataFrame / write. ``outputs`` are the result's columns in order
    (for writes: the target dataset's columns); ``derivations`` maps every intermediate node to
    how it was produced."""

    outputs: tuple[ColumnNode, ...]
    derivations: Mapping[ColumnNode, Derivation]
    indirect: tuple[IndirectDependency, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    target: Dataset | None = None
    operation: str | None = None  # for writes: AppendData, InsertIntoHadoopFsRelationCommand, ...
    producer: str = "spark"  # or "sqlglot"
    _cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    # ---- expansion -------------------------------------------------------------------------
    def _leaves(self, node: ColumnNode) -> dict[ColumnNode, EdgeSubtype]:
        """DIRECT leaf sources of ``node`` with the composed subtype (memoized; iterative)."""
        memo: dict[ColumnNode, dict[ColumnNode, EdgeSubtype]] = self._cache.setdefault("leaves", {})
        if node in memo:
            return memo[node]
        stack: list[tuple[ColumnNode, bool]] = [(node, False)]
        visiting: set[ColumnNode] = set()  # cycles (recursive CTEs) contribute nothing twice
        while stack:
            current, expanded = stack.pop()
            if current in memo:
                continue
            deriv = self.derivations.get(current)
            if deriv is None:
                memo[current] = {current: EdgeSubtype.IDENTITY} if current.dataset is not None else {}
                continue
            direct = [s for s in deriv.inputs if s.kind is EdgeKind.DIRECT]
            if not expanded:
                if current in visiting:
                    continue
                visiting.add(current)
                stack.append((current, True))
                stack.extend((s.source, False) for s in direct
                             if s.source not in memo and s.source not in visiting)
                continue
            acc: dict[ColumnNode, EdgeSubtype] = {}
            for s in direct:
                for leaf, sub in memo.get(s.source, {}).items():
                    composed = compose_subtypes(s.subtype, sub)
                    acc[leaf] = compose_subtypes(acc[leaf], composed) if leaf in acc else composed
            memo[current] = acc
        return memo[node]

    def _closure(self, node: ColumnNode) -> set[ColumnNode]:
        """Every node reachable from ``node`` through any step (DIRECT or INDIRECT)."""
        seen: set[ColumnNode] = set()
        stack = [node]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            deriv = self.derivations.get(current)
            if deriv is not None:
                stack.extend(s.source for s in deriv.inputs)
        return seen

    def _all_leaves(self, node: ColumnNode) -> set[ColumnNode]:
        return {n for n in self._closure(node) if n.is_dataset_column and n not in self.derivations}

    def direct_sources(self, column: ColumnNode | str) -> dict[ColumnNode, EdgeSubtype]:
        """Leaf dataset columns feeding ``column`` through DIRECT steps, with composed subtype."""
        return dict(self._leaves(self._output(column)))

    def indirect_sources(self, column: ColumnNode | str | None = None) -> set[tuple[EdgeSubtype, ColumnNode]]:
        """Leaf columns of INDIRECT dependencies. ``column`` None: the dataset-wide ones only;
        otherwise every INDIRECT dependency affecting that output column (expanded)."""
        out: set[tuple[EdgeSubtype, ColumnNode]] = set()
        if column is None:
            for dep in self.indirect:
                if dep.scope is None:
                    for src in dep.sources:
                        out.update((dep.subtype, leaf) for leaf in self._all_leaves(src))
            return out
        node = self._output(column)
        closure = self._closure(node)
        for dep in self.indirect:
            if dep.scope is None or dep.scope in closure:
                for src in dep.sources:
                    out.update((dep.subtype, leaf) for leaf in self._all_leaves(src))
        for member in closure:
            deriv = self.derivations.get(member)
            if deriv is None:
                continue
            for s in deriv.inputs:
                if s.kind is EdgeKind.INDIRECT:
                    out.update((s.subtype, leaf) for leaf in self._all_leaves(s.source))
        return out

    def _output(self, column: ColumnNode | str) -> ColumnNode:
        if isinstance(column, ColumnNode):
            return column
        matches = [c for c in self.outputs if c.name == column or str(c) == column]
        if not matches:
            raise KeyError(f"no output column {column!r}; outputs: {[str(c) for c in self.outputs]}")
        return matches[0]

    def is_complete(self, column: ColumnNode | str) -> bool:
        """True when every path from ``column`` ends at a dataset column or a constant, through
        operators the resolver understood."""
        for member in self._closure(self._output(column)):
            deriv = self.derivations.get(member)
            if deriv is None:
                if not member.is_dataset_column:
                    return False
            elif not deriv.resolved:
                return False
        return True

    @property
    def completeness(self) -> float:
        """Share of output columns fully resolved to leaves (1.0 for a result without outputs)."""
        if not self.outputs:
            return 1.0 if not self.unresolved else 0.0
        return sum(1 for c in self.outputs if self.is_complete(c)) / len(self.outputs)

    def column(self, column: ColumnNode | str) -> ColumnLineage:
        node = self._output(column)
        return ColumnLineage(node, self.direct_sources(node), frozenset(self.indirect_sources(node)),
                             self.is_complete(node))

    def columns(self) -> Iterator[ColumnLineage]:
        return (self.column(c) for c in self.outputs)

    # ---- edges -----------------------------------------------------------------------------
    def composed_expression(self, node: ColumnNode, limit: int = 2000) -> str:
        """The expression of ``node`` with intermediate references substituted by their own
        expressions down to relation attributes (bounded by ``limit`` characters per node)."""
        return render.composed_expression(self, node, limit)

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Leaf-level edges: for each output column its DIRECT sources (composed subtype and
        expression); then the INDIRECT ones, dataset-wide dependencies once (target None),
        column-scoped ones on each output column they affect."""
        if "edges" in self._cache:
            return self._cache["edges"]
        out: list[Edge] = []
        for col in self.outputs:
            expr = readable(self.composed_expression(col))
            for leaf, sub in sorted(self._leaves(col).items(), key=lambda kv: str(kv[0])):
                out.append(Edge(col, leaf, EdgeKind.DIRECT, sub, expr))
        seen: set[tuple[Any, ...]] = set()
        for dep in self.indirect:
            if dep.scope is None:
                for src in dep.sources:
                    for leaf in sorted(self._all_leaves(src), key=str):
                        key = (None, leaf, dep.subtype, dep.expression)
                        if key not in seen:
                            seen.add(key)
                            out.append(Edge(None, leaf, EdgeKind.INDIRECT, dep.subtype, readable(dep.expression)))
        for col in self.outputs:
            for sub, leaf, expr in sorted(self.scoped_indirect(col), key=lambda t: (t[0].value, str(t[1]), t[2])):
                key = (col, leaf, sub, expr)
                if key not in seen:
                    seen.add(key)
                    out.append(Edge(col, leaf, EdgeKind.INDIRECT, sub, readable(expr)))
        self._cache["edges"] = tuple(out)
        return self._cache["edges"]

    def memo(self, name: str) -> dict[Any, Any]:
        """A memo of this result by ``name`` (renderings keep theirs here)."""
        return self._cache.setdefault(name, {})

    def scoped_indirect(self, col: ColumnNode) -> set[tuple[EdgeSubtype, ColumnNode, str]]:
        closure = self._closure(col)
        found: set[tuple[EdgeSubtype, ColumnNode, str]] = set()
        for dep in self.indirect:
            if dep.scope is not None and dep.scope in closure:
                for src in dep.sources:
                    found.update((dep.subtype, leaf, dep.expression) for leaf in self._all_leaves(src))
        for member in closure:
            deriv = self.derivations.get(member)
            if deriv is None:
                continue
            for s in deriv.inputs:
                if s.kind is EdgeKind.INDIRECT:
                    found.update((s.subtype, leaf, deriv.expression) for leaf in self._all_leaves(s.source))
        return found

    def expand_indirect(self) -> tuple[Edge, ...]:
        """Every INDIRECT dependency multiplied onto each output column it affects."""
        out: list[Edge] = []
        for col in self.outputs:
            closure = self._closure(col)
            for dep in self.indirect:
                if dep.scope is None or dep.scope in closure:
                    for src in dep.sources:
                        for leaf in sorted(self._all_leaves(src), key=str):
                            out.append(Edge(col, leaf, EdgeKind.INDIRECT, dep.subtype, readable(dep.expression)))
            for sub, leaf, expr in sorted(self.scoped_indirect(col) - {
                    (d.subtype, leaf, d.expression) for d in self.indirect if d.scope is not None
                    for s in d.sources for leaf in self._all_leaves(s)},
                    key=lambda t: (t[0].value, str(t[1]), t[2])):
                out.append(Edge(col, leaf, EdgeKind.INDIRECT, sub, readable(expr)))
        return tuple(out)

    # ---- serialization ---------------------------------------------------------------------
    def nodes(self) -> list[ColumnNode]:
        """Every node of the graph, in a deterministic order (outputs first)."""
        order: dict[ColumnNode, None] = {}
        for c in self.outputs:
            order.setdefault(c)
        for node, deriv in self.derivations.items():
            order.setdefault(node)
            for s in deriv.inputs:
                order.setdefault(s.source)
        for dep in self.indirect:
            if dep.scope is not None:
                order.setdefault(dep.scope)
            for s in dep.sources:
                order.setdefault(s)
        for u in self.unresolved:
            for c in u.columns:
                order.setdefault(c)
        return list(order)

    def to_dict(self) -> dict[str, Any]:
        nodes = self.nodes()
        index = {n: i for i, n in enumerate(nodes)}
        return {
            "version": FORMAT_VERSION,
            "producer": self.producer,
            "target": self.target.to_dict() if self.target else None,
            "operation": self.operation,
            "completeness": self.completeness,
            "nodes": [n.to_dict() for n in nodes],
            "outputs": [index[c] for c in self.outputs],
            "derivations": [
                {"node": index[n], "operator": d.operator, "expression_kind": d.expression_kind,
                 "expression": readable(d.expression), "resolved": d.resolved,
                 "inputs": [{"source": index[s.source], "kind": s.kind.value, "subtype": s.subtype.value}
                            for s in d.inputs]}
                for n, d in self.derivations.items()],
            "indirect": [
                {"operator": d.operator, "subtype": d.subtype.value, "expression": readable(d.expression),
                 "sources": [index[s] for s in d.sources],
                 "scope": index[d.scope] if d.scope is not None else None}
                for d in self.indirect],
            "unresolved": [{"kind": u.kind, "detail": u.detail, "columns": [index[c] for c in u.columns]}
                           for u in self.unresolved],
            "edges": [e.to_dict() for e in self.edges],
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> LineageResult:
        nodes = [ColumnNode.from_dict(n) for n in d["nodes"]]
        derivations = {
            nodes[x["node"]]: Derivation(
                operator=x["operator"], expression=x["expression"], expression_kind=x.get("expression_kind"),
                resolved=x.get("resolved", True),
                inputs=tuple(Step(nodes[s["source"]], EdgeSubtype(s["subtype"])) for s in x["inputs"]))
            for x in d["derivations"]}
        indirect = tuple(
            IndirectDependency(x["operator"], EdgeSubtype(x["subtype"]), x["expression"],
                               tuple(nodes[i] for i in x["sources"]),
                               nodes[x["scope"]] if x.get("scope") is not None else None)
            for x in d.get("indirect", ()))
        unresolved = tuple(Unresolved(x["kind"], x.get("detail", ""), tuple(nodes[i] for i in x.get("columns", ())))
                           for x in d.get("unresolved", ()))
        result = LineageResult(outputs=tuple(nodes[i] for i in d["outputs"]), derivations=derivations,
                               indirect=indirect, unresolved=unresolved,
                               target=Dataset.from_dict(d["target"]) if d.get("target") else None,
                               operation=d.get("operation"), producer=d.get("producer", "spark"))
        if "edges" in d:  # the composed expressions as written: the dict's texts carry no ids to compose by
            result._cache["edges"] = tuple(Edge.from_dict(e) for e in d["edges"])
        return result

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    def to_openlineage(self) -> Any:
        """An OpenLineage ``columnLineage`` dataset facet
        (``openlineage.client.generated.column_lineage_dataset.ColumnLineageDatasetFacet``)."""
        return render.to_openlineage(self)

    # ---- rendering -------------------------------------------------------------------------
    def tree(self, column: ColumnNode | str) -> str:
        return readable(render.column_tree(self, self._output(column)))

    # every rendering a person reads goes through lineage.readable (no expression ids, no plan node names)
    def __str__(self) -> str:
        return readable(render.text(self))

    def to_dot(self) -> str:
        return readable(render.to_dot(self))

    def to_mermaid(self) -> str:
        return readable(render.to_mermaid(self))

    def _repr_html_(self) -> str:
        return readable(render.to_html(self))


def iter_steps(result: LineageResult) -> Iterable[Edge]:
    """Every step of the derivation graph as an Edge (target intermediate node <- source), with the
    step's local expression: the compact graph the lineage store persists."""
    for node, deriv in result.derivations.items():
        for s in deriv.inputs:
            yield Edge(node, s.source, s.kind, s.subtype, deriv.expression)
