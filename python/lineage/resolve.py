"""Column lineage of an analyzed Spark plan: ONE bottom-up pass over the plan document with a hash
map exprId -> column node; time linear in the number of plan nodes plus expression nodes.

The pass state and expression references are in :mod:`lineage.resolve_pass`, dataset identities
of relations and write targets in :mod:`lineage.plan_datasets`, the write handlers in
:mod:`lineage.resolve_writes`.

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

from typing import Callable, Iterable, Mapping

from . import checkpoints
from .fields import generator, generator_outputs, struct_members
from .model import ColumnNode, Dataset, Derivation, EdgeSubtype, LineageResult, Step, Unresolved
from .plan import Expr, PlanDocument, PlanNode, gc_paused
from .plan_datasets import RELATIONS, WRITE_KINDS, catalog_table, relation_dataset, subquery_alias
from .resolve_pass import ROOT_SCOPE, TRANSFORMATION, Pass, attribute_refs, merge_steps, seq
from .resolve_python import KINDS as PYTHON_FUNCTIONS
from .resolve_python import opaque_function
from .resolve_row_level import REWRITE_KINDS, merge_rows, rewritten_row_level
from .resolve_writes import create_view, delete_with_filters, identifier_only, row_level, write
from .views import TEMP_VIEW_COLUMN, VIEW_COLUMN, VIEW_KINDS

# Operators that do not change the attributes flowing through them (their output is a subset
# of their children's, same exprIds) and add no column dependency of their own.
PASS_THROUGH = frozenset({
    "WithCTE", "GlobalLimit", "LocalLimit", "Limit", "Offset", "Tail", "Sample",
    "Repartition", "RepartitionByExpression", "RebalancePartitions", "ResolvedHint",
    "OneRowRelation", "Subquery", "WithWatermark", "EventTimeWatermark",
})

# ---- handlers -------------------------------------------------------------------------------
Handler = Callable[[Pass, PlanNode], None]


def _relation(p: Pass, node: PlanNode) -> None:
    if node.kind == "LogicalRDD":
        source = checkpoints.lineage_of(tuple(a.expr_id for a in node.output))
        if source is not None:
            _checkpointed(p, node, source)
            return
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


def _checkpointed(p: Pass, node: PlanNode, source: LineageResult) -> None:
    """A checkpoint's rows: the lineage remembered when checkpoint() was called (lineage.checkpoints)."""
    for n, d in source.derivations.items():
        p.derivations.setdefault(n, d)
    scope = p.scope_of[node.index]
    for dep in source.indirect:  # the checkpointed plan's row-level dependencies hold for these rows
        if dep.scope is None:
            p.pending.setdefault(scope, []).append(dep)
        else:
            p.indirect.append(dep)
    for u in source.unresolved:
        p.unresolved.setdefault((u.kind, u.detail), []).extend(u.columns)
    for a, col in zip(node.output, source.outputs):
        text = f"saved rows of {col}"
        p.define(a.name, a.expr_id, node.index, Derivation(node.kind, text, (Step(col, EdgeSubtype.IDENTITY),)))


def _project(p: Pass, node: PlanNode) -> None:
    for e in seq(node.exprs.get("projectList")):
        p.derive_named(node, e)


def _aggregate(p: Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.GROUP_BY, seq(node.exprs.get("groupingExpressions")))
    for e in seq(node.exprs.get("aggregateExpressions")):
        p.derive_named(node, e)


def _window(p: Pass, node: PlanNode) -> None:
    for e in seq(node.exprs.get("windowExpressions")):
        p.derive_named(node, e)


def _filter(p: Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.FILTER, seq(node.exprs.get("condition")))


def _join(p: Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.JOIN, seq(node.exprs.get("condition")))
    right = node.exprs.get("right")  # LateralJoin: right is a LateralSubquery expression
    if isinstance(right, Expr) and right.subquery is not None:
        p.promote([right.subquery], p.scope_of[node.index])


def _sort(p: Pass, node: PlanNode) -> None:
    p.add_dep(node, EdgeSubtype.SORT, seq(node.exprs.get("order")))


def _distinct(p: Pass, node: PlanNode) -> None:
    keys = seq(node.exprs.get("keys"))
    if keys:
        p.add_dep(node, EdgeSubtype.GROUP_BY, keys)
        return
    p.add_dep(node, EdgeSubtype.GROUP_BY, attribute_refs(p.doc.nodes[node.children[0]].output))


def _set_filter(p: Pass, node: PlanNode) -> None:
    """Intersect / Except: the left rows pass through; which survive depends on both sides."""
    dep_sources = [r for c in node.children for r in attribute_refs(p.doc.nodes[c].output)]
    if dep_sources:
        p.add_dep(node, EdgeSubtype.FILTER, [Expr(node.kind, tuple(dep_sources),
                                                  text=f"{node.kind} ({'ALL' if node.args.get('isAll') else 'DISTINCT'})")])


def _union(p: Pass, node: PlanNode) -> None:
    children = [p.doc.nodes[c] for c in node.children]
    for j, a in enumerate(node.output):
        sources = [p.ref(ch.output[j].expr_id, ch.output[j].name) for ch in children if j < len(ch.output)]
        p.define(a.name, a.expr_id, node.index,
                 Derivation(node.kind, ", ".join(str(s) for s in sources),
                            tuple(Step(s, EdgeSubtype.IDENTITY) for s in dict.fromkeys(sources))))


def _union_loop_ref(p: Pass, node: PlanNode) -> None:
    """A recursive CTE's self reference: its columns are derived once the loop is resolved."""
    for j, a in enumerate(node.output):
        col = ColumnNode(a.name, expr_id=a.expr_id)
        p.env[a.expr_id] = col
        p.lazy.pop(a.expr_id, None)
        p.loop_refs.setdefault(node.args.get("loopId"), []).append((col, j))


def _union_loop(p: Pass, node: PlanNode) -> None:
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


def _expand(p: Pass, node: PlanNode) -> None:
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
                                  tuple(merge_steps(steps))))
        p.attach(subqueries, col)


def _generate(p: Pass, node: PlanNode) -> None:
    gen = node.exprs.get("generator")
    outs = seq(node.exprs.get("generatorOutput"))
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


def _generator_steps(p: Pass, gen: Expr, outputs: int) -> list[tuple[Step, ...] | None] | None:
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


def _generated_members(p: Pass, gen: Expr, col: ColumnNode) -> None:
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


def _bin_by(p: Pass, node: PlanNode) -> None:
    """BIN BY (RANGE s TO e BIN WIDTH w DISTRIBUTE UNIFORM (v, ...)): each row is split over the
    bins its range covers; a distributed column's value is scaled by the share of its range in
    the bin (<- the column and the range), the appended bin start / end / ratio <- the range."""
    x = node.exprs
    rng = [e for key in ("rangeStart", "rangeEnd") for e in seq(x.get(key))]
    range_steps = [Step(s.source, TRANSFORMATION) for e in rng for s in p.refs(e).steps]
    text = ", ".join(str(e) for e in rng)
    for original, scaled in zip(seq(x.get("distributeColumns")), seq(x.get("scaledDistributeColumns"))):
        if scaled.expr_id is None or original.expr_id is None:
            continue
        src = p.ref(original.expr_id, original.name or "?")
        p.define(scaled.name or "?", scaled.expr_id, node.index,
                 Derivation(node.kind, f"{original} scaled by the share of [{text}] in the bin",
                            tuple(merge_steps([Step(src, TRANSFORMATION), *range_steps]))))
    for a in seq(x.get("appendedAttributes")):
        if a.expr_id is not None:
            p.define(a.name or "?", a.expr_id, node.index,
                     Derivation(node.kind, f"{a.name} of the bin of [{text}]", tuple(merge_steps(range_steps))))


def _positional(p: Pass, node: PlanNode, source: PlanNode, operator: str, text: str) -> None:
    for j, a in enumerate(node.output):
        if j >= len(source.output):
            break
        src = p.ref(source.output[j].expr_id, source.output[j].name)
        if src.expr_id == a.expr_id:
            continue
        col = p.define(a.name, a.expr_id, node.index, Derivation(operator, text, (Step(src, EdgeSubtype.IDENTITY),)))
        if src in p.members:
            p.members[col] = p.members[src]


def _cte_def(p: Pass, node: PlanNode) -> None:
    cte_id = node.args.get("id")
    if cte_id is not None:
        p.cte_defs[cte_id] = node


def _cte_ref(p: Pass, node: PlanNode) -> None:
    cte_id = node.args.get("cteId")
    d = p.cte_defs.get(cte_id)
    if d is None:
        p.report(node.kind, f"CTE {cte_id} not defined before use")
        return
    _positional(p, node, d, node.kind, f"CTE {cte_id}")


def _in_memory(p: Pass, node: PlanNode) -> None:
    cached = node.plans.get("cachedPlan")
    if cached is None:
        p.report(node.kind, "cached plan not serialized")
        return
    _positional(p, node, p.doc.nodes[cached], node.kind, "cached")


def _view(p: Pass, node: PlanNode) -> None:
    desc = node.args.get("desc")
    child = p.doc.nodes[node.children[0]]
    if not isinstance(desc, Mapping):
        return
    ds = catalog_table(desc)
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
    "SubqueryAlias": subquery_alias,
    "ResolvedIdentifier": lambda p, n: None,
    "ResolvedPersistentView": identifier_only,
    "CommandResult": lambda p, n: None,
    "MergeIntoTable": row_level,
    "UpdateTable": row_level,
    "DeleteFromTable": row_level,
    "DeleteFromTableWithFilters": delete_with_filters,
    **{k: opaque_function for k in PYTHON_FUNCTIONS},
    **{k: write for k in WRITE_KINDS},
    **{k: create_view for k in VIEW_KINDS},
    "MergeRows": merge_rows,
    **{k: rewritten_row_level for k in REWRITE_KINDS},
}


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
    p = Pass(doc)
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


def _unknown(p: Pass, node: PlanNode) -> None:
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


def _check_output(p: Pass, node: PlanNode, known: bool) -> None:
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


def _result(p: Pass) -> LineageResult:
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
