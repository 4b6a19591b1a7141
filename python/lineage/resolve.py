"""Column lineage of an analyzed Spark plan: ONE bottom-up pass over the plan document with a hash
map exprId -> column node; time linear in the number of plan nodes plus expression nodes.

Size (over 600 lines): one handler per Spark operator kind of the single pass; they share the
pass state (the exprId map), so the pass reads in one place.

Nodes arrive in post-order (children, CTE definitions and subquery plans before the node using
them), so a single loop in index order sees every attribute defined before it is referenced.
Each operator kind has a handler; an unknown kind never fails: its output passes through by
exprId (or by position from its first child), the kind is reported in ``unresolved`` and the
affected columns count as incomplete in ``completeness``.

Row-level INDIRECT dependencies (FILTER, JOIN, GROUP_BY, SORT) are recorded once per operator.
Inside a scalar subquery they are scoped to the column the subquery feeds; inside IN / EXISTS /
lateral subqueries they filter the outer rows, so they move to the enclosing scope.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from .model import (
    ColumnNode,
    Dataset,
    Derivation,
    EdgeKind,
    EdgeSubtype,
    IndirectDependency,
    LineageResult,
    Step,
    Unresolved,
    compose_subtypes,
)
from .fields import ARRAY_BUILDERS, STRUCT_BUILDERS, field_ordinal, generator, generator_outputs, struct_members
from .plan import Attr, Expr, PlanDocument, PlanNode, gc_paused
from .views import TEMP_VIEW_COLUMN, VIEW_COLUMN, VIEW_KINDS, view_definition

ROOT_SCOPE = -1
IDENTITY = EdgeSubtype.IDENTITY
# tuple.__new__(NamedTupleClass, values): a model value built without the Python-level __new__
# of a NamedTuple (every field given, in order), in the few paths run for every column reference
_new = tuple.__new__

# Operators that do not change the attributes flowing through them (their output is a subset
# of their children's, same exprIds) and add no column dependency of their own.
PASS_THROUGH = frozenset({
    "WithCTE", "GlobalLimit", "LocalLimit", "Limit", "Offset", "Tail", "Sample",
    "Repartition", "RepartitionByExpression", "RebalancePartitions", "ResolvedHint",
    "OneRowRelation", "Subquery", "WithWatermark", "EventTimeWatermark",
})

SUBQUERY_KINDS = frozenset({"ScalarSubquery", "ListQuery", "Exists", "LateralSubquery"})
NON_REFERENCES = frozenset({"NamedLambdaVariable", "Alias"})
WRITE_KINDS = frozenset({
    "InsertIntoHadoopFsRelationCommand", "InsertIntoHiveTable", "InsertIntoDataSourceCommand",
    "InsertIntoDataSourceDirCommand", "InsertIntoHiveDirCommand", "SaveIntoDataSourceCommand",
    "CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
    "OptimizedCreateHiveTableAsSelectCommand", "AppendData", "OverwriteByExpression",
    "OverwritePartitionsDynamic", "CreateTableAsSelect", "ReplaceTableAsSelect", "SaveAsV1TableCommand",
    "WriteToMicroBatchDataSource",  # a streaming micro-batch into a V2 table (its `relation`)
})
# Ranking window functions take the window's ORDER BY expressions as their children.
RANKING = frozenset({"Rank", "DenseRank", "PercentRank", "CumeDist", "RowNumber", "NTile"})
# subqueries whose plan's output is the expression's value (IN's list is compared to a value)
VALUE_SUBQUERIES = frozenset({"ScalarSubquery", "ListQuery"})

DIRECT = EdgeKind.DIRECT
AGGREGATION, TRANSFORMATION = EdgeSubtype.AGGREGATION, EdgeSubtype.TRANSFORMATION
CONDITIONAL, WINDOW = EdgeSubtype.CONDITIONAL, EdgeSubtype.WINDOW
# Expression kinds that change the context of the references below them (Pass.refs)
_SUBQUERY, _AGGREGATE, _WINDOW, _CASE_WHEN, _IF = "subquery", "aggregate", "window", "case when", "if"
_FIELD, _PIVOT = "field", "pivot"
_CONTEXT: Mapping[str, str] = {
    "GetStructField": _FIELD,
    "PivotFirst": _PIVOT,
    **{k: _SUBQUERY for k in SUBQUERY_KINDS},
    "AggregateExpression": _AGGREGATE,
    "WindowSpecDefinition": _WINDOW,
    **{k: _WINDOW for k in RANKING},
    "CaseWhen": _CASE_WHEN,
    "If": _IF,
}


class _Refs(NamedTuple):
    """References found in one expression: steps (source, subtype) and subquery plan indices."""

    steps: tuple[Step, ...]
    subqueries: tuple[int, ...]


@dataclass(frozen=True)
class _Write:
    target: Dataset
    operation: str
    columns: tuple[tuple[str, ColumnNode | None, tuple[Step, ...], str], ...]


@dataclass
class _Pass:
    """Working state of one resolution (local to :func:`resolve`; never shared)."""

    doc: PlanDocument
    env: dict[int, ColumnNode] = field(default_factory=dict)
    derivations: dict[ColumnNode, Derivation] = field(default_factory=dict)
    indirect: list[IndirectDependency] = field(default_factory=list)
    pending: dict[int, list[IndirectDependency]] = field(default_factory=dict)
    scope_of: list[int] = field(default_factory=list)
    cte_defs: dict[int, PlanNode] = field(default_factory=dict)
    datasets: dict[int, Dataset] = field(default_factory=dict)
    writes: dict[int, _Write] = field(default_factory=dict)
    unresolved: dict[tuple[str, str], list[ColumnNode]] = field(default_factory=dict)
    loop_refs: dict[Any, list[tuple[ColumnNode, int]]] = field(default_factory=dict)
    # relation attributes not referenced yet: exprId -> (relation node, its dataset); defined on
    # first reference (a scan outputs every column of its table; most are never used)
    lazy: dict[int, tuple[PlanNode, Dataset, str, str]] = field(default_factory=dict)
    # struct columns built in the plan: column -> the steps feeding each member (lineage.fields)
    members: dict[ColumnNode, tuple[tuple[Step, ...], ...]] = field(default_factory=dict)

    # ---- attribute map ----------------------------------------------------------------------
    def ref(self, expr_id: int, name: str) -> ColumnNode:
        node = self.env.get(expr_id)
        if node is None and expr_id in self.lazy:
            node = self._materialize(expr_id)
        if node is None:  # dangling: defined by nothing we saw
            node = ColumnNode(name, expr_id=expr_id)
            self.env[expr_id] = node
            self.report("UnresolvedReference", f"{name}#{expr_id}", node)
        return node

    def known(self, expr_id: int) -> bool:
        return expr_id in self.env or expr_id in self.lazy

    def _materialize(self, expr_id: int) -> ColumnNode:
        """The column node of a relation attribute, on its first reference."""
        rel, ds, name, ds_name = self.lazy.pop(expr_id)
        leaf = _new(ColumnNode, (name, ds, None, None))
        return self.define(name, expr_id, rel.index,
                           _new(Derivation, (rel.kind, ds_name, (_new(Step, (leaf, IDENTITY)),), None, True)))

    def define(self, name: str, expr_id: int, index: int, deriv: Derivation) -> ColumnNode:
        node = _new(ColumnNode, (name, None, expr_id, None))
        if node in self.derivations or self.env.get(expr_id) == node:
            node = ColumnNode(name, expr_id=expr_id, plan_node=index)
        self.derivations[node] = deriv
        self.env[expr_id] = node
        self.lazy.pop(expr_id, None)
        return node

    def report(self, kind: str, detail: str = "", column: ColumnNode | None = None) -> None:
        cols = self.unresolved.setdefault((kind, detail), [])
        if column is not None:
            cols.append(column)

    # ---- indirect dependencies --------------------------------------------------------------
    def add_dep(self, node: PlanNode, subtype: EdgeSubtype, exprs: Iterable[Expr]) -> None:
        exprs = [e for e in exprs if e is not None]
        if not exprs:
            return
        sources: dict[ColumnNode, None] = {}
        subqueries: list[int] = []
        for e in exprs:
            r = self.refs(e)
            for s in r.steps:
                sources.setdefault(s.source)
            subqueries.extend(r.subqueries)
        scope = self.scope_of[node.index]
        text = ", ".join(str(e) for e in exprs)
        dep = IndirectDependency(node.kind, subtype, text, tuple(sources))
        self.pending.setdefault(scope, []).append(dep)
        self.promote(subqueries, scope)

    def promote(self, subqueries: Iterable[int], scope: int) -> None:
        """Row-level use of subqueries (IN / EXISTS in a filter, lateral joins): their own
        dependencies filter the rows of ``scope``."""
        for sq in subqueries:
            deps = self.pending.pop(sq, None)
            if deps:
                self.pending.setdefault(scope, []).extend(deps)

    def attach(self, subqueries: Iterable[int], column: ColumnNode) -> None:
        """Value use of subqueries (scalar subquery in a projection): their dependencies affect
        ``column`` only."""
        for sq in subqueries:
            for dep in self.pending.pop(sq, ()):
                self.indirect.append(IndirectDependency(dep.operator, dep.subtype, dep.expression,
                                                        dep.sources, dep.scope or column))

    # ---- expressions ------------------------------------------------------------------------
    def refs(self, expr: Expr, aggregate: bool = False, force: EdgeSubtype | None = None) -> _Refs:
        """Every column reference of ``expr`` with the subtype of its edge: CONDITIONAL under a
        CASE WHEN / IF condition, WINDOW under a window spec, AGGREGATION under an aggregate
        function, IDENTITY when the expression is the bare reference, else TRANSFORMATION.

        Depth-first, children right to left. The walk keeps a stack of frames, each a list of
        expressions to visit in one context (in an aggregate? under which INDIRECT subtype?):
        an ordinary node's children join its frame's list (one ``extend``) and only the nodes
        that change the context (:data:`_CONTEXT`) open frames, so the subtype of a reference
        is worked out once per frame, not once per reference."""
        top = expr.children[0] if expr.kind == "Alias" and expr.children else expr
        bare = top.kind in SUBQUERY_KINDS or (top.expr_id is not None and not top.children
                                                and top.kind not in NON_REFERENCES)
        found: dict[tuple[ColumnNode, EdgeKind], EdgeSubtype] = {}
        subqueries: list[int] = []
        env = self.env
        # (expressions to visit, in an aggregate, INDIRECT subtype or None)
        frames: list[tuple[list[Expr], bool, EdgeSubtype | None]] = [([expr], aggregate, None)]
        while frames:
            todo, agg, ind = frames.pop()
            if ind is not None:
                sub = ind
            elif agg:
                sub = AGGREGATION
            elif force is not None:
                sub = force
            else:
                sub = IDENTITY if bare else TRANSFORMATION
            edge_kind = sub.kind
            direct = edge_kind is DIRECT
            while todo:
                e = todo.pop()
                children = e.children
                kind = e.kind
                context = _CONTEXT.get(kind)
                if context is None:
                    if children:
                        todo.extend(children)
                        continue
                    expr_id = e.expr_id
                    if expr_id is None or kind in NON_REFERENCES:
                        continue
                    node = env.get(expr_id)
                    if node is None:
                        node = self.ref(expr_id, e.name or "?")
                    key = (node, edge_kind)
                    prev = found.get(key)
                    if prev is None:
                        found[key] = sub
                    elif direct:
                        found[key] = compose_subtypes(prev, sub)
                    continue
                if context is _FIELD:
                    member = self._member(e)
                    if member is None:
                        todo.extend(children)
                        continue
                    for s in member:
                        if s.subtype.kind is DIRECT:
                            key, msub = (s.source, edge_kind), (compose_subtypes(sub, s.subtype) if direct else sub)
                        else:
                            key, msub = (s.source, s.subtype.kind), s.subtype
                        prev = found.get(key)
                        found[key] = msub if prev is None or key[1] is not DIRECT else compose_subtypes(prev, msub)
                    continue
                if context is _SUBQUERY:
                    if e.subquery is not None:
                        subqueries.append(e.subquery)
                        if kind in VALUE_SUBQUERIES:  # its value: the plan's output, visited next, in order
                            todo.extend(reversed(_attribute_refs(self.doc.nodes[e.subquery].output)))
                    continue  # outer attributes / join conditions are inside the subquery plan
                if not children:
                    continue
                # the context changes: the rest of this frame waits under the children's frames
                if todo:
                    frames.append((todo, agg, ind))
                if context is _AGGREGATE:  # children: the function, then FILTER (WHERE ...)
                    frames.append(([children[0]], True, ind))
                    if len(children) > 1:
                        frames.append((list(children[1:]), agg, CONDITIONAL))
                elif context is _WINDOW:
                    frames.append((list(children), agg, WINDOW))
                elif context is _PIVOT:  # PivotFirst(pivot column, value): the pivot value picks the column
                    frames.append(([children[0]], agg, CONDITIONAL))
                    if len(children) > 1:
                        frames.append((list(children[1:]), agg, ind))
                elif context is _CASE_WHEN:  # (condition, value)*, else value
                    conditions = len(children) - len(children) % 2
                    for i, c in enumerate(children):
                        frames.append(([c], agg, CONDITIONAL if i < conditions and i % 2 == 0 else ind))
                else:  # If: condition, then, else
                    frames.append(([children[0]], agg, CONDITIONAL))
                    if len(children) > 1:
                        frames.append((list(children[1:]), agg, ind))
                break
        return _Refs(tuple([_new(Step, (src, sub)) for (src, _), sub in found.items()]), tuple(subqueries))

    def _member(self, e: Expr) -> tuple[Step, ...] | None:
        """The steps feeding the struct member a field access takes, when the struct was built
        in the plan (``named_struct(...) AS s`` then ``s.amt``); None otherwise."""
        ordinal = field_ordinal(e)
        child = e.children[0] if e.children else None
        if ordinal is None or child is None or child.expr_id is None or child.children \
                or child.kind in NON_REFERENCES or not self.members:
            return None
        node = self.env.get(child.expr_id)
        members = self.members.get(node) if node is not None else None
        if members is None or ordinal >= len(members):
            return None
        return members[ordinal]

    def member_steps(self, exprs: Iterable[Expr]) -> tuple[Step, ...]:
        """The merged steps of several expressions feeding one member or output."""
        out: list[Step] = []
        for x in exprs:
            out.extend(self.refs(x).steps)
        return tuple(_merge(out))

    def record_members(self, col: ColumnNode, e: Expr) -> None:
        """Remember what feeds each member of the struct column ``col`` (built by ``e``)."""
        top = e.children[0] if e.kind == "Alias" and e.children else e
        if top.kind in STRUCT_BUILDERS or top.kind in ARRAY_BUILDERS:
            members = struct_members(top)
            if members is not None:
                self.members[col] = tuple(self.member_steps(m) for m in members)
        elif top.expr_id is not None and not top.children and self.members:
            src = self.env.get(top.expr_id)  # an alias of a struct column keeps its members
            if src is not None and src in self.members:
                self.members[col] = self.members[src]

    def derive_named(self, node: PlanNode, e: Expr, aggregate: bool = False,
                     force: EdgeSubtype | None = None) -> None:
        """A named expression of a projection-like list: a pass-through attribute, or a new
        column node for an Alias."""
        if e.kind != "Alias" and e.expr_id is not None and not e.children:
            self.ref(e.expr_id, e.name or "?")
            return
        if e.expr_id is None:
            return
        r = self.refs(e, aggregate=aggregate, force=force)
        col = self.define(e.name or "?", e.expr_id, node.index,
                          _new(Derivation, (node.kind, str(e), r.steps, e.kind, True)))
        self.attach(r.subqueries, col)
        if e.children and (e.children[0].kind in _BUILDERS or self.members):
            self.record_members(col, e)


_BUILDERS = STRUCT_BUILDERS | ARRAY_BUILDERS


# ---- datasets -------------------------------------------------------------------------------
def _table_identifier(t: Mapping[str, Any]) -> Dataset:
    parts = [p for p in (t.get("database"), t.get("table")) if p]
    return Dataset.table(t.get("catalog") or "spark_catalog", *parts)


def _catalog_table(t: Mapping[str, Any]) -> Dataset:
    return _table_identifier(t["identifier"])


def _v2(args: Mapping[str, Any]) -> Dataset | None:
    ident = args.get("identifier")
    cat = args.get("catalog")
    if isinstance(ident, Mapping) and ident.get("t") == "Identifier":
        return Dataset.table(cat["name"] if isinstance(cat, Mapping) else None,
                             *ident.get("namespace", ()), ident["name"])
    table = args.get("table")
    if isinstance(table, Mapping) and table.get("t") == "Table":
        return Dataset.table(cat["name"] if isinstance(cat, Mapping) else None, *table["name"].split("."))
    return None


def relation_dataset(p: _Pass, node: PlanNode) -> Dataset | None:
    a = node.args
    if node.kind == "LogicalRelation":
        if isinstance(a.get("catalogTable"), Mapping):
            return _catalog_table(a["catalogTable"])
        rel = a.get("relation")
        if isinstance(rel, Mapping) and rel.get("t") == "HadoopFsRelation":
            return Dataset.path(",".join(rel.get("paths", ())), rel.get("format"))
        if isinstance(rel, Mapping):
            return Dataset.inline(rel.get("class", "BaseRelation"))
        return None
    if node.kind == "HiveTableRelation":
        return _catalog_table(a["tableMeta"]) if isinstance(a.get("tableMeta"), Mapping) else None
    if node.kind in ("DataSourceV2Relation", "StreamingDataSourceV2Relation"):
        return _v2(a)
    if node.kind == "DataSourceV2ScanRelation":
        rel = node.plans.get("relation")
        return p.datasets.get(rel) if rel is not None else None
    if node.kind in ("LocalRelation", "ResolvedInlineTable"):
        return Dataset.inline(f"VALUES@{node.index}")
    if node.kind in ("LogicalRDD", "ExternalRDD"):
        return Dataset.inline(f"{node.kind}@{node.index}")
    if node.kind == "Range":
        return Dataset.inline(f"range({a.get('start')}, {a.get('end')}, {a.get('step')})")
    return None


RELATIONS = frozenset({"LogicalRelation", "HiveTableRelation", "DataSourceV2Relation",
                       "StreamingDataSourceV2Relation", "DataSourceV2ScanRelation", "LocalRelation",
                       "ResolvedInlineTable",
                       "Range", "LogicalRDD", "ExternalRDD"})


# ---- handlers -------------------------------------------------------------------------------
Handler = Callable[[_Pass, PlanNode], None]


def _relation(p: _Pass, node: PlanNode) -> None:
    ds = relation_dataset(p, node)
    if ds is None:
        p.report(node.kind, "relation without identity")
        return
    p.datasets[node.index] = ds
    env, lazy = p.env, p.lazy
    ds_name = ds.name
    for a in node.output:
        expr_id = a.expr_id
        pending = lazy.get(expr_id)
        if pending is not None and pending[0].kind == node.kind:
            continue
        prev = env.get(expr_id)
        if prev is not None:
            if prev.expr_id == expr_id:
                d = p.derivations.get(prev)
                if d is not None and d.operator == node.kind:
                    continue
            del env[expr_id]
        # defined on first reference (Pass.ref); until then the exprId means this relation's column
        lazy[expr_id] = (node, ds, a.name, ds_name)


def _project(p: _Pass, node: PlanNode) -> None:
    for e in _seq(node.exprs.get("projectList")):
        p.derive_named(node, e)


def _aggregate(p: _Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.GROUP_BY, _seq(node.exprs.get("groupingExpressions")))
    for e in _seq(node.exprs.get("aggregateExpressions")):
        p.derive_named(node, e)


def _window(p: _Pass, node: PlanNode) -> None:
    for e in _seq(node.exprs.get("windowExpressions")):
        p.derive_named(node, e)


def _filter(p: _Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.FILTER, _seq(node.exprs.get("condition")))


def _join(p: _Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.JOIN, _seq(node.exprs.get("condition")))
    right = node.exprs.get("right")  # LateralJoin: right is a LateralSubquery expression
    if isinstance(right, Expr) and right.subquery is not None:
        p.promote([right.subquery], p.scope_of[node.index])


def _sort(p: _Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.SORT, _seq(node.exprs.get("order")))


def _distinct(p: _Pass, node: PlanNode) -> None:
    keys = _seq(node.exprs.get("keys"))
    if keys:
        p.add_dep(node, EdgeSubtype.GROUP_BY, keys)
        return
    p.add_dep(node, EdgeSubtype.GROUP_BY, _attribute_refs(p.doc.nodes[node.children[0]].output))


def _set_filter(p: _Pass, node: PlanNode) -> None:
    """Intersect / Except: the left rows pass through; which survive depends on both sides."""
    dep_sources = [r for c in node.children for r in _attribute_refs(p.doc.nodes[c].output)]
    if dep_sources:
        p.add_dep(node, EdgeSubtype.FILTER, [Expr(node.kind, tuple(dep_sources),
                                                  text=f"{node.kind} ({'ALL' if node.args.get('isAll') else 'DISTINCT'})")])


def _union(p: _Pass, node: PlanNode) -> None:
    children = [p.doc.nodes[c] for c in node.children]
    for j, a in enumerate(node.output):
        sources = [p.ref(ch.output[j].expr_id, ch.output[j].name) for ch in children if j < len(ch.output)]
        p.define(a.name, a.expr_id, node.index,
                 Derivation(node.kind, ", ".join(str(s) for s in sources),
                            tuple(Step(s, EdgeSubtype.IDENTITY) for s in dict.fromkeys(sources))))


def _union_loop_ref(p: _Pass, node: PlanNode) -> None:
    """A recursive CTE's self reference: its columns are derived once the loop is resolved."""
    for j, a in enumerate(node.output):
        col = ColumnNode(a.name, expr_id=a.expr_id)
        p.env[a.expr_id] = col
        p.lazy.pop(a.expr_id, None)
        p.loop_refs.setdefault(node.args.get("loopId"), []).append((col, j))


def _union_loop(p: _Pass, node: PlanNode) -> None:
    """Recursive CTE: output column j <- anchor column j and recursion column j; the recursion
    reads the loop's output through UnionLoopRef, a cycle in the graph (the model allows it)."""
    anchor, recursion = (p.doc.nodes[c] for c in node.children[:2])
    outputs: list[ColumnNode] = []
    for j, a in enumerate(node.output):
        sources = [p.ref(ch.output[j].expr_id, ch.output[j].name) for ch in (anchor, recursion)
                   if j < len(ch.output)]
        outputs.append(p.define(a.name, a.expr_id, node.index,
                                Derivation(node.kind, ", ".join(str(s) for s in sources),
                                           tuple(Step(s, EdgeSubtype.IDENTITY) for s in dict.fromkeys(sources)))))
    for ref_col, j in p.loop_refs.pop(node.args.get("id"), []):
        if j < len(outputs):
            p.derivations[ref_col] = Derivation("UnionLoopRef", str(outputs[j]),
                                                (Step(outputs[j], EdgeSubtype.IDENTITY),))


def _expand(p: _Pass, node: PlanNode) -> None:
    projections = node.exprs.get("projections") or ()
    for j, a in enumerate(node.output):
        column = [proj[j] for proj in projections if isinstance(proj, tuple) and j < len(proj)]
        refs = [e for e in column if e.expr_id is not None and not e.children and e.kind != "Alias"]
        if column and len(refs) == len(column) and all(e.expr_id == a.expr_id for e in refs):
            p.ref(a.expr_id, a.name)
            continue
        steps: dict[Step, None] = {}
        subqueries: list[int] = []
        for e in column:
            r = p.refs(e)
            steps.update(dict.fromkeys(r.steps))
            subqueries.extend(r.subqueries)
        texts = list(dict.fromkeys(str(e) for e in column if e.kind != "Literal"))
        col = p.define(a.name, a.expr_id, node.index,
                       Derivation(node.kind, ", ".join(texts[:20]) + (", ..." if len(texts) > 20 else ""),
                                  tuple(_merge(steps))))
        p.attach(subqueries, col)


def _generate(p: _Pass, node: PlanNode) -> None:
    gen = node.exprs.get("generator")
    outs = _seq(node.exprs.get("generatorOutput"))
    if not isinstance(gen, Expr):
        p.report(node.kind, "no generator")
        return
    r = p.refs(gen, force=EdgeSubtype.TRANSFORMATION)
    steps = _generated(r.steps)
    named = [o for o in outs if o.expr_id is not None]
    per_output = _generator_steps(p, gen, len(named))
    for i, o in enumerate(named):
        mine = per_output[i] if per_output is not None else None
        own = mine if mine is not None else steps
        col = p.define(o.name or "?", o.expr_id, node.index,  # type: ignore[arg-type]
                       Derivation(node.kind, str(gen), own, expression_kind=gen.kind))
        p.attach(r.subqueries, col)
        if len(named) == 1:
            _generated_members(p, gen, col)


def _generated(steps: Iterable[Step]) -> tuple[Step, ...]:
    """A generator's output is never its input as is: IDENTITY becomes TRANSFORMATION."""
    return tuple(Step(s.source, EdgeSubtype.TRANSFORMATION if s.subtype is EdgeSubtype.IDENTITY else s.subtype)
                 for s in steps)


def _generator_steps(p: _Pass, gen: Expr, outputs: int) -> list[tuple[Step, ...] | None] | None:
    """Per output of a generator, the steps of exactly what lands in it (lineage.fields), or None."""
    groups = generator_outputs(gen, outputs)
    if groups is not None:
        return [None if g is None else _generated(p.member_steps(g)) for g in groups]
    g = generator(gen)
    if g.kind == "Inline" and g.children:  # inline of an array of structs built upstream
        child = g.children[0]
        node = p.env.get(child.expr_id) if child.expr_id is not None and not child.children else None
        members = p.members.get(node) if node is not None else None
        if members is not None and len(members) == outputs:
            return [_generated(m) for m in members]
    return None


def _generated_members(p: _Pass, gen: Expr, col: ColumnNode) -> None:
    """explode of an array of structs: the output struct keeps the members' sources."""
    g = generator(gen)
    if g.kind not in ("Explode", "PosExplode") or not g.children:
        return
    child = g.children[0]
    members = struct_members(child)
    if members is not None:
        p.members[col] = tuple(p.member_steps(m) for m in members)
    elif child.expr_id is not None and not child.children:
        node = p.env.get(child.expr_id)
        if node is not None and node in p.members:
            p.members[col] = p.members[node]


def _bin_by(p: _Pass, node: PlanNode) -> None:
    """BIN BY (RANGE s TO e BIN WIDTH w DISTRIBUTE UNIFORM (v, ...)): each row is split over the
    bins its range covers; a distributed column's value is scaled by the share of its range in
    the bin (<- the column and the range), the appended bin start / end / ratio <- the range."""
    x = node.exprs
    rng = [e for key in ("rangeStart", "rangeEnd") for e in _seq(x.get(key))]
    range_steps = [Step(s.source, TRANSFORMATION) for e in rng for s in p.refs(e).steps]
    text = ", ".join(str(e) for e in rng)
    for original, scaled in zip(_seq(x.get("distributeColumns")), _seq(x.get("scaledDistributeColumns"))):
        if scaled.expr_id is None or original.expr_id is None:
            continue
        src = p.ref(original.expr_id, original.name or "?")
        p.define(scaled.name or "?", scaled.expr_id, node.index,
                 Derivation(node.kind, f"{original} scaled by the share of [{text}] in the bin",
                            tuple(_merge([Step(src, TRANSFORMATION), *range_steps]))))
    for a in _seq(x.get("appendedAttributes")):
        if a.expr_id is not None:
            p.define(a.name or "?", a.expr_id, node.index,
                     Derivation(node.kind, f"{a.name} of the bin of [{text}]", tuple(_merge(range_steps))))


def _positional(p: _Pass, node: PlanNode, source: PlanNode, operator: str, text: str) -> None:
    for j, a in enumerate(node.output):
        if j >= len(source.output):
            break
        src = p.ref(source.output[j].expr_id, source.output[j].name)
        if src.expr_id == a.expr_id:
            continue
        col = p.define(a.name, a.expr_id, node.index, Derivation(operator, text, (Step(src, EdgeSubtype.IDENTITY),)))
        if src in p.members:
            p.members[col] = p.members[src]


def _cte_def(p: _Pass, node: PlanNode) -> None:
    cte_id = node.args.get("id")
    if cte_id is not None:
        p.cte_defs[cte_id] = node


def _cte_ref(p: _Pass, node: PlanNode) -> None:
    cte_id = node.args.get("cteId")
    d = p.cte_defs.get(cte_id)
    if d is None:
        p.report(node.kind, f"CTE {cte_id} not defined before use")
        return
    _positional(p, node, d, node.kind, f"CTE {cte_id}")


def _in_memory(p: _Pass, node: PlanNode) -> None:
    cached = node.plans.get("cachedPlan")
    if cached is None:
        p.report(node.kind, "cached plan not serialized")
        return
    _positional(p, node, p.doc.nodes[cached], node.kind, "cached")


def _view(p: _Pass, node: PlanNode) -> None:
    desc = node.args.get("desc")
    child = p.doc.nodes[node.children[0]]
    if not isinstance(desc, Mapping):
        return
    ds = _catalog_table(desc)
    temp = bool(node.args.get("isTempView"))
    if temp:
        ds = Dataset.table(None, *ds.identifier[-1:]) if ds.catalog is None else ds
    p.datasets[node.index] = ds
    for j, a in enumerate(node.output):
        src = p.ref(child.output[j].expr_id, child.output[j].name) if j < len(child.output) else None
        view_col = ColumnNode.column(ds, a.name)
        p.derivations[view_col] = Derivation("View", str(src) if src else "",
                                             (Step(src, EdgeSubtype.IDENTITY),) if src else (),
                                             expression_kind=TEMP_VIEW_COLUMN if temp else VIEW_COLUMN)
        node_ = ColumnNode(a.name, expr_id=a.expr_id, plan_node=node.index)
        p.derivations[node_] = Derivation("View", ds.name, (Step(view_col, EdgeSubtype.IDENTITY),))
        p.env[a.expr_id] = node_
        p.lazy.pop(a.expr_id, None)


def _subquery_alias(p: _Pass, node: PlanNode) -> None:
    if node.children and node.children[0] in p.datasets:
        p.datasets[node.index] = p.datasets[node.children[0]]


# ---- writes ---------------------------------------------------------------------------------
def write_target(p: _Pass, node: PlanNode) -> Dataset | None:
    a = node.args
    for key in ("catalogTable", "table", "tableDesc"):
        v = a.get(key)
        if isinstance(v, Mapping) and v.get("t") == "CatalogTable":
            return _catalog_table(v)
    for key in ("table", "logicalRelation", "name", "relation"):
        idx = node.plans.get(key)
        if idx is not None and idx in p.datasets:
            return p.datasets[idx]
    if node.kind in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        # the target is the `name` plan (a ResolvedIdentifier once analyzed): a child in some
        # Spark versions, a non-child plan field in 4.3
        idx = node.plans.get("name", node.children[0] if node.children else None)
        name = p.doc.nodes[idx] if idx is not None else None
        if name is not None and name.kind == "ResolvedIdentifier":
            return _v2(name.args)
    path = a.get("outputPath")
    if isinstance(path, Mapping):
        fmt = a.get("fileFormat", {}).get("format") if isinstance(a.get("fileFormat"), Mapping) else None
        return Dataset.path(path["path"], fmt)
    storage = a.get("storage")
    if isinstance(storage, Mapping) and storage.get("location"):
        provider = a.get("provider")
        return Dataset.path(storage["location"], provider if isinstance(provider, str) else None)
    options = a.get("options")
    if isinstance(options, Mapping) and options.get("path"):
        ds = a.get("dataSource")
        return Dataset.path(options["path"], ds.get("format") if isinstance(ds, Mapping) else None)
    return None


def _write(p: _Pass, node: PlanNode) -> None:
    target = write_target(p, node)
    query_idx = node.plans.get("query")
    if query_idx is None:
        query_idx = node.children[-1] if node.children else None
    if target is None or query_idx is None:
        p.report(node.kind, "write target or query not found")
        return
    query = p.doc.nodes[query_idx]
    names = node.args.get("outputColumnNames")
    if not isinstance(names, list) or len(names) != len(query.output):
        table_idx = node.plans.get("table")
        if table_idx is not None and len(p.doc.nodes[table_idx].output) == len(query.output):
            names = [a.name for a in p.doc.nodes[table_idx].output]
        else:
            names = [a.name for a in query.output]
    cols = tuple((name, p.ref(a.expr_id, a.name), (), "") for name, a in zip(names, query.output))
    p.writes[node.index] = _Write(target, node.kind, cols)
    # OverwriteByExpression: the condition choosing the rows replaced (a static partition spec,
    # overwrite(cond)) is on the target's own columns: no data flows from it into the written
    # rows, so it is neither an edge nor a read (no self-edge target <- target.dt)


def _identifier_only(p: _Pass, node: PlanNode) -> None:
    """ALTER VIEW's target (the view as it is): its columns are not read."""
    for a in node.output:
        if not p.known(a.expr_id):
            p.define(a.name, a.expr_id, node.index, Derivation(node.kind, "", ()))


def _create_view(p: _Pass, node: PlanNode) -> None:
    """CREATE [OR REPLACE] VIEW / ALTER VIEW ... AS: a write of the view (lineage.views)."""
    target, query_idx, names = view_definition(node, p.doc.nodes)
    if target is None or query_idx is None:
        return  # a temporary view: not a dataset; what reads it sees through it
    query = p.doc.nodes[query_idx]
    if names is None or len(names) != len(query.output):
        names = [a.name for a in query.output]
    cols = tuple((name, p.ref(a.expr_id, a.name), (), "") for name, a in zip(names, query.output))
    p.writes[node.index] = _Write(target, node.kind, cols)


def _assignments(e: Expr) -> tuple[list[tuple[Expr, Expr, Expr]], list[Expr]]:
    """(key, value, assignment) triples and conditions of a MergeAction / assignment list."""
    pairs: list[tuple[Expr, Expr, Expr]] = []
    conditions: list[Expr] = []
    for c in e.children:
        if c.kind == "Assignment" and len(c.children) == 2:
            pairs.append((c.children[0], c.children[1], c))
        else:
            conditions.append(c)
    return pairs, conditions


def _row_level(p: _Pass, node: PlanNode) -> None:
    """MERGE INTO / UPDATE / DELETE (as analyzed, before any row-level rewrite)."""
    target_idx = node.children[0] if node.children else None
    target = p.datasets.get(target_idx) if target_idx is not None else None
    if target is None:
        p.report(node.kind, "target table not found")
        return
    if node.kind == "MergeIntoTable":
        p.add_dep(node, EdgeSubtype.JOIN, _seq(node.exprs.get("mergeCondition")))
        actions = [a for key in ("matchedActions", "notMatchedActions", "notMatchedBySourceActions")
                   for a in _seq(node.exprs.get(key))]
    else:
        p.add_dep(node, EdgeSubtype.FILTER, _seq(node.exprs.get("condition")))
        actions = [Expr("UpdateAction", tuple(_seq(node.exprs.get("assignments"))))]
    per_column: dict[str, dict[Step, None]] = {}
    texts: dict[str, list[str]] = {}
    for action in actions:
        pairs, conditions = _assignments(action)
        cond_steps = [Step(s.source, EdgeSubtype.CONDITIONAL) for c in conditions for s in p.refs(c).steps]
        for key, value, assignment in pairs:
            name = key.name or "?"
            r = p.refs(value)
            per_column.setdefault(name, {}).update(dict.fromkeys(r.steps))
            per_column[name].update(dict.fromkeys(cond_steps))
            texts.setdefault(name, []).append(action.text or assignment.text or f"{action.kind}: {name}")
    cols = tuple((name, None, tuple(_merge(steps)), "; ".join(texts[name])) for name, steps in per_column.items())
    p.writes[node.index] = _Write(target, node.kind, cols)


HANDLERS: Mapping[str, Handler] = {
    **{k: (lambda p, n: None) for k in PASS_THROUGH},
    **{k: _relation for k in RELATIONS},
    "Project": _project,
    "Aggregate": _aggregate,
    "Window": _window,
    "Filter": _filter,
    "Join": _join,
    "LateralJoin": _join,
    "Sort": _sort,
    "Distinct": _distinct,
    "Deduplicate": _distinct,
    "DeduplicateWithinWatermark": _distinct,
    "Intersect": _set_filter,
    "Except": _set_filter,
    "Union": _union,
    "Expand": _expand,
    "Generate": _generate,
    "BinBy": _bin_by,
    "CTERelationDef": _cte_def,
    "CTERelationRef": _cte_ref,
    "UnionLoop": _union_loop,
    "UnionLoopRef": _union_loop_ref,
    "InMemoryRelation": _in_memory,
    "View": _view,
    "SubqueryAlias": _subquery_alias,
    "ResolvedIdentifier": lambda p, n: None,
    "ResolvedPersistentView": _identifier_only,
    "CommandResult": lambda p, n: None,
    "MergeIntoTable": _row_level,
    "UpdateTable": _row_level,
    "DeleteFromTable": _row_level,
    **{k: _write for k in WRITE_KINDS},
    **{k: _create_view for k in VIEW_KINDS},
}


# ---- the pass -------------------------------------------------------------------------------
def _seq(v: Any) -> list[Expr]:
    if v is None:
        return []
    if isinstance(v, Expr):
        return [v]
    out: list[Expr] = []
    for x in v:
        if x.__class__ is Expr:
            out.append(x)
        else:
            out.extend(_seq(x))
    return out


def _attribute_refs(attrs: Iterable[Attr]) -> list[Expr]:
    """References to a plan node's output attributes, as expressions."""
    return [Expr("AttributeReference", expr_id=a.expr_id, name=a.name) for a in attrs]


def _merge(steps: Iterable[Step]) -> list[Step]:
    best: dict[tuple[ColumnNode, EdgeKind], EdgeSubtype] = {}
    for s in steps:
        key = (s.source, s.kind)
        if key in best and s.kind is EdgeKind.DIRECT:
            best[key] = compose_subtypes(best[key], s.subtype)
        elif key not in best:
            best[key] = s.subtype
    return [Step(src, sub) for (src, _), sub in best.items()]


def _scopes(doc: PlanDocument) -> list[int]:
    """Scope of each node: ROOT_SCOPE, or the index of the subquery plan root it belongs to.
    A subquery plan root is its own scope; parents come after children in the document, so one
    reverse pass hands every other node its parent's scope."""
    scope = [ROOT_SCOPE] * len(doc.nodes)
    if not doc.subqueries:
        return scope  # no subquery plan: every node is in the root scope
    for sq in doc.subqueries:
        scope[sq] = sq
    for node in reversed(doc.nodes):
        s = scope[node.index]
        for c in node.children:
            scope[c] = s
        for idx in node.plans.values():
            scope[idx] = s
    return scope


def resolve(doc: PlanDocument) -> LineageResult:
    """Column lineage of one parsed plan document (one bottom-up pass)."""
    with gc_paused():
        return _resolve(doc)


def _resolve(doc: PlanDocument) -> LineageResult:
    p = _Pass(doc)
    p.scope_of = _scopes(doc)
    for node in doc.nodes:
        handler = HANDLERS.get(node.kind)
        if handler is None:
            _unknown(p, node)
        else:
            handler(p, node)
            if handler is _relation and node.index in p.datasets:
                continue  # every output column is pending on this relation: nothing to check
        _check_output(p, node, known=handler is not None)
    return _result(p)


def _unknown(p: _Pass, node: PlanNode) -> None:
    """Pass lineage through by exprId, else by position from the first child; report the kind."""
    p.report(node.kind, "operator not interpreted; lineage passed through by exprId / position")
    child = p.doc.nodes[node.children[0]] if node.children else None
    for j, a in enumerate(node.output):
        if p.known(a.expr_id):
            continue
        inputs: tuple[Step, ...] = ()
        if child is not None and len(child.output) == len(node.output):
            src = p.ref(child.output[j].expr_id, child.output[j].name)
            inputs = (Step(src, EdgeSubtype.TRANSFORMATION),)
        col = p.define(a.name, a.expr_id, node.index, Derivation(node.kind, "", inputs, resolved=False))
        p.report(node.kind, "operator not interpreted; lineage passed through by exprId / position", col)


def _check_output(p: _Pass, node: PlanNode, known: bool) -> None:
    if not known:
        return
    children = node.children
    if children:
        nodes = p.doc.nodes
        first = nodes[children[0]].output
        if first is node.output:
            return  # the child's output list itself (shared by the parser), already checked
        if len(children) == 2 and first + nodes[children[1]].output == node.output:
            return  # a join's: both children's outputs, already checked
    env, lazy = p.env, p.lazy
    for a in node.output:
        if a.expr_id not in env and a.expr_id not in lazy:
            col = p.define(a.name, a.expr_id, node.index, Derivation(node.kind, "", (), resolved=False))
            p.report(node.kind, f"output attribute {a.name}#{a.expr_id} not derived", col)


def _result(p: _Pass) -> LineageResult:
    doc = p.doc
    root = doc.root_node
    while root.kind == "CommandResult" and "commandLogicalPlan" in root.plans:
        root = doc.nodes[root.plans["commandLogicalPlan"]]
    for scope, deps in p.pending.items():  # root scope + any subquery never used as a value
        p.indirect.extend(deps)
    target: Dataset | None = None
    operation: str | None = None
    write = p.writes.get(root.index)
    if write is not None:
        target, operation = write.target, write.operation
        outputs: list[ColumnNode] = []
        for name, src, steps, text in write.columns:
            # plan_node marks the written column apart from the same table's column read as a source
            col = ColumnNode(name, dataset=target, plan_node=root.index)
            inputs = steps if src is None else (Step(src, EdgeSubtype.IDENTITY),)
            p.derivations[col] = Derivation(write.operation, text or (str(src) if src else ""), tuple(inputs))
            outputs.append(col)
    else:
        outputs = [p.ref(a.expr_id, a.name) for a in root.output]
    unresolved = tuple(Unresolved(kind, detail, tuple(dict.fromkeys(cols)))
                       for (kind, detail), cols in p.unresolved.items())
    return LineageResult(outputs=tuple(outputs), derivations=p.derivations, indirect=tuple(p.indirect),
                         unresolved=unresolved, target=target, operation=operation)


def lineage_of_plan_json(text: str | bytes) -> LineageResult:
    from .plan import parse

    return resolve(parse(text))



ROW_LEVEL = frozenset({"MergeIntoTable", "UpdateTable", "DeleteFromTable"})


def relations(doc: PlanDocument) -> tuple[tuple[Dataset, ...], tuple[Dataset, ...]]:
    """(read, written) datasets of a plan without resolving columns (table-level capture): one
    pass over the nodes. Views count as read (with their base tables); the table a V2 write
    appends to is written, not read; a MERGE / UPDATE / DELETE target is both."""
    p = _Pass(doc)
    write_tables = {idx for n in doc.nodes if n.kind in WRITE_KINDS
                    for key, idx in n.plans.items() if key in ("table", "logicalRelation")}
    reads: dict[Dataset, None] = {}
    writes: dict[Dataset, None] = {}
    for node in doc.nodes:
        if node.kind in RELATIONS:
            ds = relation_dataset(p, node)
            if ds is not None:
                p.datasets[node.index] = ds
                if node.index not in write_tables:
                    reads.setdefault(ds)
        elif node.kind == "View" and isinstance(node.args.get("desc"), Mapping):
            reads.setdefault(_catalog_table(node.args["desc"]))
        elif node.kind == "SubqueryAlias":
            _subquery_alias(p, node)
        elif node.kind in WRITE_KINDS:
            target = write_target(p, node)
            if target is not None:
                writes.setdefault(target)
        elif node.kind in VIEW_KINDS:
            target = view_definition(node, doc.nodes)[0]
            if target is not None:
                writes.setdefault(target)
        elif node.kind in ROW_LEVEL and node.children and node.children[0] in p.datasets:
            writes.setdefault(p.datasets[node.children[0]])
    return tuple(reads), tuple(writes)
