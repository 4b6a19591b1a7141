"""The plan JSON written by the shim's ``io.ushas.spark.PlanWriter`` (format ``ushas-plan``,
documented in ``docs/plan-json.md``), parsed into typed Python nodes.

Nodes and expressions arrive in post-order in flat arrays, so parsing is one linear loop with
no recursion (plans 10^4 nodes deep parse fine)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

FORMAT = "ushas-plan"
SUPPORTED_VERSIONS = frozenset({1})


class PlanFormatError(ValueError):
    pass


@dataclass(frozen=True)
class Attr:
    """An output attribute of a plan node."""

    name: str
    expr_id: int
    data_type: str


@dataclass(frozen=True, eq=False)
class Expr:
    """One expression node: its class (``kind``), children, and for named expressions the
    exprId and name; ``subquery`` is the plan-node index of a subquery expression's plan;
    ``text`` (Spark's rendering) is set on top-level expressions only."""

    kind: str
    children: tuple[Expr, ...] = ()
    expr_id: int | None = None
    name: str | None = None
    subquery: int | None = None
    text: str | None = None

    def __str__(self) -> str:
        return self.text if self.text is not None else (
            f"{self.name}#{self.expr_id}" if self.expr_id is not None else self.kind)


ExprField = Union[Expr, tuple[Expr, ...], tuple[tuple[Expr, ...], ...]]


@dataclass(frozen=True, eq=False)
class PlanNode:
    """One logical plan node. ``exprs``: its expression-typed constructor fields by name
    (``projectList``, ``condition``, ``aggregateExpressions``...); ``args``: scalar and identity
    fields (``joinType``, ``catalogTable``...); ``plans``: plan-typed fields that are not children
    (``table`` of AppendData...), as node indices."""

    index: int
    kind: str
    children: tuple[int, ...]
    output: tuple[Attr, ...]
    exprs: Mapping[str, ExprField] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)
    plans: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class PlanDocument:
    version: int
    spark_version: str
    nodes: tuple[PlanNode, ...]
    root: int

    @property
    def root_node(self) -> PlanNode:
        return self.nodes[self.root]

    def __len__(self) -> int:
        return len(self.nodes)


def parse(text: str | bytes | Mapping[str, Any]) -> PlanDocument:
    """Parses plan JSON (text, bytes or an already decoded mapping)."""
    doc: Mapping[str, Any] = json.loads(text) if isinstance(text, (str, bytes)) else text
    if doc.get("format") != FORMAT:
        raise PlanFormatError(f"not a {FORMAT} document (format={doc.get('format')!r})")
    version = doc.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise PlanFormatError(f"plan JSON version {version!r} not supported "
                              f"(supported: {sorted(SUPPORTED_VERSIONS)}); rebuild the shim jar")
    kinds: list[str] = doc["kinds"]
    exprs: list[Expr] = []
    for e in doc["exprs"]:
        exprs.append(Expr(kind=kinds[e["k"]],
                          children=tuple(exprs[c] for c in e.get("c", ())),
                          expr_id=e.get("i"), name=e.get("n"), subquery=e.get("p"), text=e.get("t")))
    nodes: list[PlanNode] = []
    for i, n in enumerate(doc["nodes"]):
        nodes.append(PlanNode(
            index=i, kind=kinds[n["k"]], children=tuple(n.get("c", ())),
            output=tuple(Attr(a[0], a[1], a[2]) for a in n.get("o", ())),
            exprs={k: _expr_field(v, exprs) for k, v in n.get("x", {}).items()},
            args=n.get("a", {}), plans=n.get("p", {})))
    return PlanDocument(version=version, spark_version=doc.get("spark", ""), nodes=tuple(nodes),
                        root=doc["root"])


def _expr_field(v: Any, exprs: list[Expr]) -> ExprField:
    if isinstance(v, int):
        return exprs[v]
    return tuple(_expr_field(x, exprs) for x in v)  # type: ignore[misc]


# ---- transport from the JVM -----------------------------------------------------------------
INLINE_LIMIT = 7000  # Py4J answers above ~8 k chars stall ~44 ms (SPARK-4.3-FACTS.md)


def fetch_json(jvm: Any, jplan: Any, inline_limit: int = INLINE_LIMIT) -> str:
    """The plan JSON of a JVM ``LogicalPlan``: small plans come back inline in the Py4J answer,
    larger ones through a private temp file the JVM writes and we read and delete (see
    docs/plan-json.md, "Transport")."""
    answer: str = jvm.io.ushas.spark.PlanWriter.export(jplan, inline_limit)
    if answer.startswith("{"):
        return answer
    try:
        with open(answer, encoding="utf-8") as f:
            return f.read()
    finally:
        try:
            os.unlink(answer)
        except FileNotFoundError:
            pass


def from_jvm(jvm: Any, jplan: Any) -> PlanDocument:
    return parse(fetch_json(jvm, jplan))
