"""Handlers of :mod:`lineage.resolve` for the plan nodes that write: V1 / V2 writes, view
definitions, MERGE / UPDATE / DELETE."""
from __future__ import annotations

from .model import Derivation, EdgeSubtype, Step
from .plan import Expr, PlanNode
from .plan_datasets import write_target
from .resolve_pass import Pass, Write, merge_steps, seq
from .views import view_definition

# ---- writes ---------------------------------------------------------------------------------
def write(p: Pass, node: PlanNode) -> None:
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
    p.writes[node.index] = Write(target, node.kind, cols)
    # OverwriteByExpression: the condition choosing the rows replaced (a static partition spec,
    # overwrite(cond)) is on the target's own columns: no data flows from it into the written
    # rows, so it is neither an edge nor a read (no self-edge target <- target.dt)


def identifier_only(p: Pass, node: PlanNode) -> None:
    """ALTER VIEW's target (the view as it is): its columns are not read."""
    for a in node.output:
        if not p.known(a.expr_id):
            p.define(a.name, a.expr_id, node.index, Derivation(node.kind, "", ()))


def create_view(p: Pass, node: PlanNode) -> None:
    """CREATE [OR REPLACE] VIEW / ALTER VIEW ... AS: a write of the view (lineage.views)."""
    target, query_idx, names = view_definition(node, p.doc.nodes)
    if target is None or query_idx is None:
        return  # a temporary view: not a dataset; what reads it sees through it
    query = p.doc.nodes[query_idx]
    if names is None or len(names) != len(query.output):
        names = [a.name for a in query.output]
    cols = tuple((name, p.ref(a.expr_id, a.name), (), "") for name, a in zip(names, query.output))
    p.writes[node.index] = Write(target, node.kind, cols)


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


def delete_with_filters(p: Pass, node: PlanNode) -> None:
    """A metadata-only DELETE as the catalog plans it at analysis (``DeleteFromTableWithFilters``: the target
    table in ``plans["table"]``, the condition as V2 predicates): the same lineage as the statement's rewrite, a
    write of the target (``DeleteFromTable``, no column written) and its WHERE columns as INDIRECT FILTER."""
    table_idx = node.plans.get("table")
    target = p.datasets.get(table_idx) if table_idx is not None else None
    if target is None or table_idx is None:
        p.report(node.kind, "target table not found")
        return
    columns = {a.name.lower(): a for a in p.doc.nodes[table_idx].output}
    where: list[Expr] = []
    for predicate in node.args.get("condition") or ():
        if not isinstance(predicate, dict) or predicate.get("t") != "Predicate":
            continue
        refs = tuple(Expr("AttributeReference", expr_id=a.expr_id, name=a.name)
                     for c in predicate.get("columns") or () if (a := columns.get(str(c).lower())) is not None)
        where.append(Expr("Predicate", refs, text=str(predicate.get("sql") or "")))
    p.add_dep(node, EdgeSubtype.FILTER, where)
    p.writes[node.index] = Write(target, "DeleteFromTable", ())


def row_level(p: Pass, node: PlanNode) -> None:
    """MERGE INTO / UPDATE / DELETE (as analyzed, before any row-level rewrite)."""
    target_idx = node.children[0] if node.children else None
    target = p.datasets.get(target_idx) if target_idx is not None else None
    if target is None:
        p.report(node.kind, "target table not found")
        return
    if node.kind == "MergeIntoTable":
        p.add_dep(node, EdgeSubtype.JOIN, seq(node.exprs.get("mergeCondition")))
        actions = [a for key in ("matchedActions", "notMatchedActions", "notMatchedBySourceActions")
                   for a in seq(node.exprs.get(key))]
    else:
        p.add_dep(node, EdgeSubtype.FILTER, seq(node.exprs.get("condition")))
        actions = [Expr("UpdateAction", tuple(seq(node.exprs.get("assignments"))))]
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
    cols = tuple((name, None, tuple(merge_steps(steps)), "; ".join(texts[name])) for name, steps in per_column.items())
    p.writes[node.index] = Write(target, node.kind, cols)
