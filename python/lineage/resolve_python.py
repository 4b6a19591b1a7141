"""Handlers of :mod:`lineage.resolve` for the operators that run an opaque Python function over
whole rows: ``mapInPandas`` / ``mapInArrow`` (``MapInPandas``, ``MapInArrow``),
``groupBy(...).applyInPandas`` / ``applyInArrow`` (``FlatMapGroupsInPandas`` / ``…InArrow``) and
``groupBy(...).cogroup(...).applyInPandas`` / ``applyInArrow`` (``FlatMapCoGroupsInPandas`` /
``…InArrow``).

OpenLineage's semantics for a function it cannot see into: every output column comes from every
input column (DIRECT, TRANSFORMATION), and the grouping keys choose which rows go through the
function together (INDIRECT, GROUP_BY)."""
from __future__ import annotations

from .model import Derivation, EdgeSubtype, Step
from .plan import Expr, PlanNode
from .resolve_pass import Pass, attribute_refs, merge_steps, seq

MAP_KINDS = frozenset({"MapInPandas", "MapInArrow", "PythonMapInArrow"})
GROUPED_KINDS = frozenset({"FlatMapGroupsInPandas", "FlatMapGroupsInArrow"})
COGROUPED_KINDS = frozenset({"FlatMapCoGroupsInPandas", "FlatMapCoGroupsInArrow"})
KINDS = MAP_KINDS | GROUPED_KINDS | COGROUPED_KINDS


def opaque_function(p: Pass, node: PlanNode) -> None:
    inputs = [a for c in node.children for a in p.doc.nodes[c].output]
    steps = tuple(merge_steps(Step(p.ref(a.expr_id, a.name), EdgeSubtype.TRANSFORMATION) for a in inputs))
    function = node.exprs.get("functionExpr")
    text = (function.text or str(function)) if isinstance(function, Expr) else node.kind
    if node.kind in GROUPED_KINDS:
        p.add_dep(node, EdgeSubtype.GROUP_BY, seq(node.exprs.get("groupingAttributes")))
    elif node.kind in COGROUPED_KINDS and len(node.children) == 2:
        # each side is a projection of its grouping keys then its columns: the first keys of each
        left, right = (p.doc.nodes[c].output for c in node.children)
        lengths = (node.args.get("leftGroupingLen"), node.args.get("rightGroupingLen"))
        if all(isinstance(n, int) for n in lengths):
            keys = [*left[:lengths[0]], *right[:lengths[1]]]  # type: ignore[misc]
            p.add_dep(node, EdgeSubtype.GROUP_BY, attribute_refs(keys))
    for a in node.output:
        p.define(a.name, a.expr_id, node.index, Derivation(node.kind, text, steps))
