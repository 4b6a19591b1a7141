"""The working state of one plan resolution (:mod:`lineage.resolve`): the exprId -> column
node map, the references of one expression with their edge subtypes, INDIRECT dependencies
and their scopes, struct members."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple

from .fields import (ARRAY_BUILDERS, STRUCT_BUILDERS, STRUCT_UPDATES, field_ordinal, struct_field_names,
                     struct_members, updated_members)
from .model import (
    ColumnNode,
    Dataset,
    Derivation,
    EdgeKind,
    EdgeSubtype,
    IndirectDependency,
    Step,
    compose_subtypes,
)
from .plan import Attr, Expr, PlanDocument, PlanNode

ROOT_SCOPE = -1
IDENTITY = EdgeSubtype.IDENTITY
# tuple.__new__(NamedTupleClass, values): a model value built without the Python-level __new__
# of a NamedTuple (every field given, in order), in the few paths run for every column reference
_new = tuple.__new__

SUBQUERY_KINDS = frozenset({"ScalarSubquery", "ListQuery", "Exists", "LateralSubquery"})
NON_REFERENCES = frozenset({"NamedLambdaVariable", "Alias"})
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


class Refs(NamedTuple):
    """References found in one expression: steps (source, subtype) and subquery plan indices."""

    steps: tuple[Step, ...]
    subqueries: tuple[int, ...]


@dataclass(frozen=True)
class Write:
    target: Dataset
    operation: str
    columns: tuple[tuple[str, ColumnNode | None, tuple[Step, ...], str], ...]


@dataclass
class Pass:
    """Working state of one resolution (local to :func:`resolve`; never shared)."""

    doc: PlanDocument
    env: dict[int, ColumnNode] = field(default_factory=dict)
    derivations: dict[ColumnNode, Derivation] = field(default_factory=dict)
    indirect: list[IndirectDependency] = field(default_factory=list)
    pending: dict[int, list[IndirectDependency]] = field(default_factory=dict)
    scope_of: list[int] = field(default_factory=list)
    cte_defs: dict[int, PlanNode] = field(default_factory=dict)
    datasets: dict[int, Dataset] = field(default_factory=dict)
    writes: dict[int, Write] = field(default_factory=dict)
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
    def refs(self, expr: Expr, aggregate: bool = False, force: EdgeSubtype | None = None) -> Refs:
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
                            todo.extend(reversed(attribute_refs(self.doc.nodes[e.subquery].output)))
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
        return Refs(tuple([_new(Step, (src, sub)) for (src, _), sub in found.items()]), tuple(subqueries))

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
        return tuple(merge_steps(out))

    def record_members(self, col: ColumnNode, e: Expr, node: PlanNode | None = None) -> None:
        """Remember what feeds each member of the struct column ``col`` (built by ``e``)."""
        top = e.children[0] if e.kind == "Alias" and e.children else e
        if top.kind in STRUCT_UPDATES and node is not None:
            self.record_updated_members(col, e, node)
        elif top.kind in STRUCT_BUILDERS or top.kind in ARRAY_BUILDERS:
            members = struct_members(top)
            if members is not None:
                self.members[col] = tuple(self.member_steps(m) for m in members)
        elif top.expr_id is not None and not top.children and self.members:
            src = self.env.get(top.expr_id)  # an alias of a struct column keeps its members
            if src is not None and src in self.members:
                self.members[col] = self.members[src]

    def record_updated_members(self, col: ColumnNode, e: Expr, node: PlanNode) -> None:
        """``withField`` / ``dropFields``: a replaced or added field derives from its new value only;
        a field kept derives from that member of the base struct when the plan built it, else from
        the whole base struct (a struct column of a table is one column)."""
        data_type = next((a.data_type for a in node.output if a.expr_id == e.expr_id), None)
        names = struct_field_names(data_type)
        update = updated_members(e, names) if names is not None else None
        if update is None or names is None:
            return
        base, per_field = update
        whole = tuple(Step(s.source, TRANSFORMATION) if s.subtype is IDENTITY else s for s in self.refs(base).steps)
        kept: tuple[tuple[Step, ...], ...] | None = None
        ref = self.env.get(base.expr_id) if base.expr_id is not None and not base.children else None
        if ref is not None and ref in self.members:
            kept = self.members[ref]
        elif base.kind in STRUCT_BUILDERS:
            kept = tuple(self.member_steps(m) for m in struct_members(base) or ())
        # without drops the base's fields come first, in order (added fields are appended)
        exact = kept is not None and all(op.kind != "DropField" for op in base_ops(e)) and len(kept) <= len(names)
        members = []
        for i, values in enumerate(per_field):
            if values is not None:
                members.append(self.member_steps(values))
            elif exact and kept is not None and i < len(kept):
                members.append(kept[i])
            else:
                members.append(whole)
        self.members[col] = tuple(members)

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
        if e.children and (e.children[0].kind in BUILDERS or self.members):
            self.record_members(col, e, node)


BUILDERS = STRUCT_BUILDERS | ARRAY_BUILDERS | STRUCT_UPDATES


def base_ops(e: Expr) -> tuple[Expr, ...]:
    """The operations of an ``UpdateFields`` (under its alias)."""
    top = e.children[0] if e.kind == "Alias" and e.children else e
    return top.children[1:]



def seq(v: Any) -> list[Expr]:
    if v is None:
        return []
    if isinstance(v, Expr):
        return [v]
    out: list[Expr] = []
    for x in v:
        if x.__class__ is Expr:
            out.append(x)
        else:
            out.extend(seq(x))
    return out


def attribute_refs(attrs: Iterable[Attr]) -> list[Expr]:
    """References to a plan node's output attributes, as expressions."""
    return [Expr("AttributeReference", expr_id=a.expr_id, name=a.name) for a in attrs]


def merge_steps(steps: Iterable[Step]) -> list[Step]:
    best: dict[tuple[ColumnNode, EdgeKind], EdgeSubtype] = {}
    for s in steps:
        key = (s.source, s.kind)
        if key in best and s.kind is EdgeKind.DIRECT:
            best[key] = compose_subtypes(best[key], s.subtype)
        elif key not in best:
            best[key] = s.subtype
    return [Step(src, sub) for (src, _), sub in best.items()]
