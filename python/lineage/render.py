"""Renderings of a :class:`~lineage.model.LineageResult`: the indented text tree, composed
expressions, Graphviz dot, Mermaid, HTML and the OpenLineage ``columnLineage`` facet."""
from __future__ import annotations

import html
import re
from typing import Any, Mapping, Protocol

from .kinds import EdgeKind, EdgeSubtype
from .readable import readable

#: a :class:`lineage.model.ColumnNode` (this module sits below the model: it names no model type)
ColumnNode = Any


class LineageResult(Protocol):
    """What a rendering reads of a :class:`lineage.model.LineageResult`."""

    @property
    def outputs(self) -> tuple[Any, ...]: ...
    @property
    def derivations(self) -> Mapping[Any, Any]: ...
    @property
    def indirect(self) -> tuple[Any, ...]: ...
    @property
    def unresolved(self) -> tuple[Any, ...]: ...
    @property
    def target(self) -> Any: ...
    @property
    def operation(self) -> str | None: ...
    @property
    def completeness(self) -> float: ...
    @property
    def edges(self) -> tuple[Any, ...]: ...
    def memo(self, name: str) -> dict[Any, Any]: ...
    def nodes(self) -> list[Any]: ...
    def composed_expression(self, node: Any, limit: int = 2000) -> str: ...
    def direct_sources(self, column: Any) -> dict[Any, EdgeSubtype]: ...
    def scoped_indirect(self, col: Any) -> set[tuple[EdgeSubtype, Any, str]]: ...

INDENT = "   "
_ALIAS_TAIL = re.compile(r" AS [^ ]+#\d+$")


# ---- text tree ------------------------------------------------------------------------------
def column_tree(result: LineageResult, column: ColumnNode) -> str:
    """One indented tree::

        c#2
        +- Alias ( substring(cast((a#0 + 1) as string), 0, 1) AS c#2 )
           +- a#0
              +- Alias ( 1 AS a#0 )

    A node already expanded earlier in the same tree is printed once more with ``(see above)``
    so the tree stays linear in the size of the graph."""
    lines: list[str] = [str(column)]
    expanded: set[ColumnNode] = set()
    # (node, depth, suffix); depth 0 is the root whose line is already written
    stack: list[tuple[ColumnNode, int, str]] = [(column, 0, "")]
    first = True
    while stack:
        node, depth, suffix = stack.pop()
        if not first:
            pad = INDENT * (2 * depth - 1)
            if node in expanded and node in result.derivations:
                lines.append(f"{pad}+- {node}{suffix} (see above)")
                continue
            lines.append(f"{pad}+- {node}{suffix}")
        first = False
        deriv = result.derivations.get(node)
        if deriv is None:
            continue
        expanded.add(node)
        flag = "" if deriv.resolved else " [unresolved]"
        lines.append(f"{INDENT * (2 * depth)}+- {deriv.label} ( {deriv.expression} ){flag}")
        for step in reversed(deriv.inputs):
            mark = f" [{step.kind.value} {step.subtype.value}]" if step.kind is EdgeKind.INDIRECT else ""
            stack.append((step.source, depth + 1, mark))
    return "\n".join(lines)


def text(result: LineageResult) -> str:
    parts = [column_tree(result, c) for c in result.outputs]
    if result.target is not None:
        parts.insert(0, f"{result.operation or 'write'} -> {result.target}")
    wide = [d for d in result.indirect if d.scope is None]
    if wide:
        lines = ["indirect (whole output)"]
        for dep in wide:
            lines.append(f"+- {dep.subtype.value} {dep.operator} ( {dep.expression} )")
            lines.extend(f"{INDENT}+- {src}" for src in dep.sources)
        parts.append("\n".join(lines))
    if result.unresolved or result.completeness < 1.0:
        kinds = ", ".join(sorted({u.kind for u in result.unresolved})) or "-"
        parts.append(f"completeness: {result.completeness:.2f} (unresolved: {kinds})")
    return "\n\n".join(parts)


# ---- composed expressions -------------------------------------------------------------------
def _body(expression: str) -> str:
    return _ALIAS_TAIL.sub("", expression)


def composed_expression(result: LineageResult, node: ColumnNode, limit: int) -> str:
    """Expression of ``node`` with computed (Alias) inputs substituted recursively, iteratively
    and memoized; a node whose composed text would exceed ``limit`` keeps its references."""
    memo: dict[ColumnNode, str] = result.memo("composed")
    top = result.derivations.get(node)
    if top is not None and top.expression_kind is None and all(s.source.is_dataset_column for s in top.inputs):
        return str(node)  # a relation's attribute: the identity of the dataset column
    if node in memo:
        return memo[node]
    stack: list[tuple[ColumnNode, bool]] = [(node, False)]
    visiting: set[ColumnNode] = set()
    while stack:
        current, ready = stack.pop()
        if current in memo or (not ready and current in visiting):
            continue
        deriv = result.derivations.get(current)
        if deriv is None:
            memo[current] = str(current)
            continue
        subs = [s.source for s in deriv.inputs
                if s.kind is EdgeKind.DIRECT and _substitutable(result, s.source)]
        if not ready:
            visiting.add(current)
            stack.append((current, True))
            stack.extend((s, False) for s in subs if s not in memo and s not in visiting)
            continue
        expr = _body(deriv.expression)
        for s in subs:
            inner = memo.get(s)
            if inner is None or inner == str(s):
                continue
            wrapped = inner.startswith("(") and inner.endswith(")")
            candidate = expr.replace(str(s), f"({inner})" if " " in inner and not wrapped else inner)
            if len(candidate) <= limit:
                expr = candidate
        memo[current] = expr
    return memo[node]


def _substitutable(result: LineageResult, node: ColumnNode) -> bool:
    deriv = result.derivations.get(node)
    return deriv is not None and deriv.expression_kind == "Alias"


# ---- graphs ---------------------------------------------------------------------------------
def _ids(result: LineageResult) -> dict[ColumnNode, str]:
    return {n: f"n{i}" for i, n in enumerate(result.nodes())}


def _dot_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(result: LineageResult) -> str:
    ids = _ids(result)
    lines = ["digraph lineage {", "  rankdir=RL;", '  node [shape=box, fontname="monospace"];']
    outputs = set(result.outputs)
    for node, nid in ids.items():
        attrs = [f'label="{_dot_escape(str(node))}"']
        if node.is_dataset_column:
            attrs.append("style=filled, fillcolor=lightblue")
        elif node in outputs:
            attrs.append("style=bold")
        lines.append(f"  {nid} [{', '.join(attrs)}];")
    for node, deriv in result.derivations.items():
        for s in deriv.inputs:
            style = "solid" if s.kind is EdgeKind.DIRECT else "dashed"
            lines.append(f'  {ids[node]} -> {ids[s.source]} [label="{s.subtype.value}", style={style}];')
    for i, dep in enumerate(result.indirect):
        dep_id = f"d{i}"
        lines.append(f'  {dep_id} [shape=note, label="{_dot_escape(dep.subtype.value + " " + dep.expression)}"];')
        if dep.scope is not None:
            lines.append(f"  {ids[dep.scope]} -> {dep_id} [style=dashed];")
        for s in dep.sources:
            lines.append(f"  {dep_id} -> {ids[s]} [style=dashed];")
    lines.append("}")
    return "\n".join(lines)


def _mermaid_escape(s: str) -> str:
    return s.replace('"', "#quot;")


def to_mermaid(result: LineageResult) -> str:
    ids = _ids(result)
    lines = ["flowchart RL"]
    for node, nid in ids.items():
        lines.append(f'  {nid}["{_mermaid_escape(str(node))}"]')
    for node, deriv in result.derivations.items():
        for s in deriv.inputs:
            arrow = "-->" if s.kind is EdgeKind.DIRECT else "-.->"
            lines.append(f"  {ids[node]} {arrow}|{s.subtype.value}| {ids[s.source]}")
    for i, dep in enumerate(result.indirect):
        dep_id = f"d{i}"
        lines.append(f'  {dep_id}{{{{"{_mermaid_escape(dep.subtype.value + " " + dep.expression)}"}}}}')
        if dep.scope is not None:
            lines.append(f"  {ids[dep.scope]} -.-> {dep_id}")
        for s in dep.sources:
            lines.append(f"  {dep_id} -.-> {ids[s]}")
    return "\n".join(lines)


def to_html(result: LineageResult) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(str(e.target) if e.target else '(all columns)')}</td>"
        f"<td>{html.escape(str(e.source))}</td><td>{e.kind.value}</td><td>{e.subtype.value}</td>"
        f"<td><code>{html.escape(e.expression)}</code></td></tr>"
        for e in result.edges)
    return (f"<div class='ushas-lineage'><pre>{html.escape(str(result))}</pre>"
            f"<p>completeness: {result.completeness:.2f}</p>"
            "<table><thead><tr><th>target</th><th>source</th><th>kind</th><th>subtype</th>"
            f"<th>expression</th></tr></thead><tbody>{rows}</tbody></table></div>")


# ---- OpenLineage ----------------------------------------------------------------------------
def to_openlineage(result: LineageResult) -> Any:
    from openlineage.client.generated.column_lineage_dataset import (
        ColumnLineageDatasetFacet,
        Fields,
        InputField,
        Transformation,
    )

    def input_field(leaf: ColumnNode, transformations: list[Any]) -> Any:
        assert leaf.dataset is not None
        namespace, name = leaf.dataset.openlineage_name()
        return InputField(namespace=namespace, name=name, field=leaf.name, transformations=transformations)

    fields: dict[str, Any] = {}
    for col in result.outputs:
        per_leaf: dict[ColumnNode, list[Any]] = {}
        expr = readable(result.composed_expression(col))
        for leaf, sub in sorted(result.direct_sources(col).items(), key=lambda kv: str(kv[0])):
            per_leaf.setdefault(leaf, []).append(
                Transformation(type=EdgeKind.DIRECT.value, subtype=sub.value, description=expr,
                               masking=False))
        for sub, leaf, dep_expr in sorted(result.scoped_indirect(col),
                                          key=lambda t: (t[0].value, str(t[1]), t[2])):
            per_leaf.setdefault(leaf, []).append(
                Transformation(type=EdgeKind.INDIRECT.value, subtype=sub.value, description=readable(dep_expr),
                               masking=False))
        inputs = [input_field(leaf, ts) for leaf, ts in per_leaf.items()]
        if col.name in fields:
            fields[col.name].inputFields.extend(inputs)
        else:
            fields[col.name] = Fields(inputFields=inputs)
    wide: dict[ColumnNode, list[Any]] = {}
    for edge in result.edges:
        if edge.target is None and edge.kind is EdgeKind.INDIRECT:
            wide.setdefault(edge.source, []).append(
                Transformation(type=EdgeKind.INDIRECT.value, subtype=edge.subtype.value,
                               description=edge.expression, masking=False))
    dataset = [input_field(leaf, ts) for leaf, ts in wide.items()]
    return ColumnLineageDatasetFacet(fields=fields, dataset=dataset)


__all__ = ["column_tree", "text", "composed_expression", "to_dot", "to_mermaid", "to_html",
           "to_openlineage", "EdgeSubtype"]
