"""Handler of :mod:`lineage.resolve` for MERGE / UPDATE / DELETE as Spark rewrites them for a table that
takes row-level operations (a catalog table: ``ReplaceData`` for copy-on-write, ``WriteDelta`` for
merge-on-read), so that a captured run and ``df.lineage()`` give the lineage of the statement, exactly as
:func:`lineage.resolve_writes.row_level` gives it from the statement's own analyzed plan:

- a written column is one the statement assigns (a ``SET`` value, an ``INSERT`` value): DIRECT edges
  from the columns of its value, the action's ``WHEN ... AND <cond>`` as CONDITIONAL edges scoped to it;
  a column every action copies is not written (the rewrite copies the target's rows it keeps, that is
  not lineage);
- MERGE's ON condition is INDIRECT JOIN (the rewrite's join), UPDATE's and DELETE's WHERE INDIRECT FILTER;
- Spark's own additions are no lineage: the group filter (``groupFilterCondition``, a subquery over
  the source or the condition that chooses the files to rewrite), the row id, the file column and the
  operation code.
"""
from __future__ import annotations

from .model import Derivation, EdgeSubtype, Step
from .plan import Expr, PlanNode
from .plan_datasets import REWRITE_KINDS, write_target
from .resolve_pass import Pass, Write, merge_steps, seq

__all__ = ["REWRITE_KINDS", "merge_rows", "rewritten_row_level"]

#: the instructions of a MergeRows, in the order Spark evaluates them per row
_INSTRUCTIONS = ("matchedInstructions", "notMatchedInstructions", "notMatchedBySourceInstructions")


def _is_true(e: Expr | None) -> bool:
    return e is None or (e.kind == "Literal" and str(e).lower() == "true")


def _strip_alias(e: Expr) -> Expr:
    while e.kind == "Alias" and e.children:
        e = e.children[0]
    return e


def merge_rows(p: Pass, node: PlanNode) -> None:
    """A MergeRows' outputs: each from the values every instruction gives it (the written columns are
    decided by :func:`rewritten_row_level`, which reads the instructions itself)."""
    child = p.doc.nodes[node.children[0]] if node.children else None
    for j, a in enumerate(node.output):
        steps: list[Step] = []
        for key in _INSTRUCTIONS:
            for instruction in seq(node.exprs.get(key)):
                outputs = instruction.children[1:]
                if j < len(outputs):
                    steps.extend(p.refs(outputs[j]).steps)
        text = child.kind if child is not None else node.kind
        p.define(a.name, a.expr_id, node.index, Derivation(node.kind, text, tuple(merge_steps(steps))))


def _target_ids(p: Pass, node: PlanNode) -> dict[str, int]:
    """The target's columns as the rewrite reads them: name -> exprId (the ``table`` plan's output)."""
    idx = node.plans.get("table", node.plans.get("originalTable"))
    if idx is None:
        return {}
    return {a.name.lower(): a.expr_id for a in p.doc.nodes[idx].output}


def _copies(e: Expr, column: str, target: dict[str, int]) -> bool:
    """``e`` is the target's own value of ``column`` (a row kept as it was)."""
    e = _strip_alias(e)
    return e.kind == "AttributeReference" and e.expr_id is not None and e.expr_id == target.get(column.lower())


def _find(p: Pass, index: int, kind: str) -> PlanNode | None:
    """The first node of ``kind`` down the first-child chain from ``index`` (Project / Filter above it)."""
    node: PlanNode | None = p.doc.nodes[index]
    while node is not None:
        if node.kind == kind:
            return node
        if node.kind not in ("Project", "Filter", "Sort", "RepartitionByExpression", "Repartition") \
                or not node.children:
            return None
        node = p.doc.nodes[node.children[0]]
    return None


def rewritten_row_level(p: Pass, node: PlanNode) -> None:
    target = write_target(p, node)
    if target is None or not node.children:
        p.report(node.kind, "write target or query not found")
        return
    # Spark's group filter (the files to rewrite) reads the source or the condition again: not lineage
    group = node.exprs.get("groupFilterCondition")
    if isinstance(group, Expr):
        for sq in p.refs(group).subqueries:
            p.pending.pop(sq, None)
    ids = _target_ids(p, node)
    query = p.doc.nodes[node.children[0]]
    per_column: dict[str, dict[Step, None]] = {}
    texts: dict[str, list[str]] = {}
    merge = _find(p, query.index, "MergeRows")
    if merge is not None:
        operation = "MergeIntoTable"
        names = [a.name for a in merge.output]
        for key in _INSTRUCTIONS:
            for instruction in seq(merge.exprs.get(key)):
                if not instruction.children:
                    continue
                condition, outputs = instruction.children[0], instruction.children[1:]
                if instruction.kind == "Split":  # an update moving a row: the new row is the second half
                    outputs = outputs[len(outputs) // 2:]
                cond = [] if _is_true(condition) else \
                    [Step(s.source, EdgeSubtype.CONDITIONAL) for s in p.refs(condition).steps]
                for name, value in zip(names, outputs):
                    if name.lower() not in ids or _copies(value, name, ids):
                        continue
                    per_column.setdefault(name, {}).update(dict.fromkeys(p.refs(value).steps))
                    per_column[name].update(dict.fromkeys(cond))
                    texts.setdefault(name, []).append(instruction.text or f"{instruction.kind}: {name}")
    elif query.kind == "Project":
        for e in seq(query.exprs.get("projectList")):
            name = e.name or ""
            if name.lower() not in ids:
                continue  # the operation code, the file column
            value = _strip_alias(e)
            if value.kind == "If" and len(value.children) == 3:  # UPDATE: if (cond) new else old
                value = value.children[1]
            if _copies(value, name, ids):
                continue
            per_column.setdefault(name, {}).update(dict.fromkeys(p.refs(value).steps))
            texts.setdefault(name, []).append(e.text or f"{name} = {value}")
        operation = "UpdateTable" if per_column else "DeleteFromTable"
        if per_column:  # an UPDATE's WHERE (a DELETE's is the Filter below: already a dependency)
            where = [c for c in seq(node.exprs.get("condition")) if not _is_true(c)]
            p.add_dep(node, EdgeSubtype.FILTER, where)
    else:
        p.report(node.kind, f"row-level rewrite over {query.kind} not interpreted")
        return
    cols = tuple((name, None, tuple(merge_steps(steps)), "; ".join(texts[name]))
                 for name, steps in per_column.items())
    p.writes[node.index] = Write(target, operation, cols)
