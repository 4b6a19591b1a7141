"""Column lineage as a tree a person reads: each hop on its own line under the column it leads from, with
its edge kind (``[IDENTITY]``, ``[AGGREGATION]``, ``[FILTER]`` ...), as ``ushas demo`` and
``ushas lineage upstream / downstream / impact`` print it::

    ushas.shop.report.revenue
    └── file:/tmp/exports/daily.total  [AGGREGATION]
        └── ushas.shop.enriched.amount  [AGGREGATION]
            └── ushas.shop.orders.amount  [IDENTITY]

A dataset-wide hop (a FILTER or JOIN condition affects every column of its target) continues with the
hops of that dataset's columns, each saying which column it leaves from (``(from ….amount)``; upstream:
``(into …)``), since the walk went on from the whole dataset. A column met again is printed once more with ``(see above)`` instead of its subtree again, so a graph
with shared sources stays linear in its edges; a cycle back to a column on the path says ``(cycle)``."""
from __future__ import annotations

from typing import Any, Iterable, Mapping


def tree_lines(edges: Iterable[Mapping[str, Any]], roots: Iterable[str], *, upstream: bool,
               expressions: Mapping[tuple[str, str, str], str] | None = None, indent: str = "",
               datasets: Iterable[str] = ()) -> list[str]:
    """The lines of the trees below ``roots``. ``edges``: ``{"target", "source", "subtype"}`` mappings (an
    answer's ``edges``); ``upstream``: children are an edge's sources (else its targets);
    ``expressions``: (target, source, subtype) -> the expression text shown after the hop; ``datasets``: the
    names of the datasets in the answer (a node that is one is a dataset-wide node)."""
    children: dict[str, list[tuple[str, str, str, str]]] = {}
    for e in edges:
        target, source, subtype = str(e["target"]), str(e["source"]), str(e["subtype"])
        parent, child = (target, source) if upstream else (source, target)
        children.setdefault(parent, []).append((child, subtype, target, source))
    lines: list[str] = []
    shown: set[str] = set()
    whole = set(datasets)

    def kids_of(node: str, root: bool) -> list[tuple[str, str, str, str, str]]:
        kids = [(child, subtype, target, source, "") for child, subtype, target, source in children.get(node, [])]
        if node in whole and not root:  # the walk went on from every column of a dataset-wide node
            for parent in sorted(p for p in children if p.startswith(node + ".")):
                kids += [(child, subtype, target, source, parent)
                         for child, subtype, target, source in children[parent]]
        return sorted(set(kids))

    def walk(node: str, prefix: str, path: frozenset[str], root: bool = False) -> None:
        kids = kids_of(node, root)
        for i, (child, subtype, target, source, via) in enumerate(kids):
            last = i == len(kids) - 1
            text = f"{prefix}{'└── ' if last else '├── '}{child}  [{subtype}]"
            if via:
                text += f"  ({'into' if upstream else 'from'} {via})"
            expression = (expressions or {}).get((target, source, subtype))
            if expression:
                text += f"  {expression}"
            if child in path:
                lines.append(text + "  (cycle)")
            elif child in shown and kids_of(child, False):
                lines.append(text + "  (see above)")
            else:
                lines.append(text)
                shown.add(child)
                walk(child, prefix + ("    " if last else "│   "), path | {child})

    for root in roots:
        lines.append(f"{indent}{root}")
        shown.add(root)
        walk(root, indent, frozenset({root}), root=True)
    return lines


__all__ = ["tree_lines"]
