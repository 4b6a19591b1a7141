"""The pieces of the SQL walk (:mod:`lineage.sql`): a write's target, a reference with its edge
subtype, a scope's outputs and row-level dependencies, the expression renderer, and expression
helpers."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from .model import ColumnNode, Dataset, EdgeKind, EdgeSubtype, Step, compose_subtypes

@dataclass(frozen=True)
class SqlWrite:
    target: Dataset
    columns: tuple[str, ...] | None  # None: CTAS, named after the query's outputs
    static: frozenset[str]  # statically given partition columns (not fed by the query)
    operation: str


@dataclass(frozen=True)
class Ref:
    node: ColumnNode
    subtype: EdgeSubtype


@dataclass
class ScopeInfo:
    outputs: list[ColumnNode] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    # row-level dependencies of this scope: (operator, subtype, expression, sources)
    deps: list[tuple[str, EdgeSubtype, str, tuple[ColumnNode, ...]]] = field(default_factory=list)


class RefGenerator:
    """Renders expressions with ``name#id`` for intermediate columns (as Spark prints attributes)."""

    def __init__(self, dialect: Dialect) -> None:
        base = dialect.generator_class

        def column_sql(gen: Any, expression: exp.Column) -> str:
            name = gen.ushas_names.get(id(expression))
            return name if name is not None else base.column_sql(gen, expression)

        def select_sql(gen: Any, expression: exp.Select) -> str:
            if gen.ushas_root is not expression:
                return "<subquery>"  # a nested query is its own scope, with its own lineage
            return base.select_sql(gen, expression)

        cls = type("UshasLineageGenerator", (base,), {"column_sql": column_sql, "select_sql": select_sql})
        self._generator = cls(dialect=dialect, normalize_functions="lower", pretty=False)
        self._generator.ushas_names = {}
        self._generator.ushas_root = None

    def render(self, expression: exp.Expr, names: dict[int, str]) -> str:
        self._generator.ushas_names = names
        self._generator.ushas_root = expression
        try:
            return self._generator.generate(expression, copy=False)
        finally:
            self._generator.ushas_names = {}



# ---- helpers --------------------------------------------------------------------------------
def then_subtype(path: EdgeSubtype, step: EdgeSubtype) -> EdgeSubtype:
    """Subtype after following ``step`` on a path of subtype ``path``: DIRECT subtypes compose,
    an INDIRECT context (a condition, a window key) stays what it is."""
    if path.kind is EdgeKind.INDIRECT:
        return path
    if step.kind is EdgeKind.INDIRECT:
        return step
    return compose_subtypes(path, step)


def conditional(path: EdgeSubtype) -> EdgeSubtype:
    return EdgeSubtype.CONDITIONAL if path.kind is EdgeKind.DIRECT else path


def steps_of(refs: Iterable[Ref]) -> tuple[Step, ...]:
    """One DIRECT step per source (the dominant subtype), one INDIRECT step per (source, subtype)."""
    direct: dict[ColumnNode, EdgeSubtype] = {}
    indirect: dict[tuple[ColumnNode, EdgeSubtype], None] = {}
    for ref in refs:
        if ref.subtype.kind is EdgeKind.DIRECT:
            prev = direct.get(ref.node)
            direct[ref.node] = ref.subtype if prev is None else compose_subtypes(prev, ref.subtype)
        else:
            indirect[(ref.node, ref.subtype)] = None
    return tuple(Step(n, s) for n, s in direct.items()) + tuple(Step(n, s) for n, s in indirect)


def children_of(value: Any) -> list[exp.Expr]:
    if value is None:
        return []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, exp.Expr)]
    return [value] if isinstance(value, exp.Expr) else []


def has_aggregate(expression: exp.Expr) -> bool:
    """An aggregate function outside windows and nested queries (the projection aggregates)."""
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.AggFunc):
            return True
        if isinstance(node, (exp.Window, exp.Select, exp.SetOperation)):
            continue
        stack.extend(node.iter_expressions())
    return False


def values_query(values: exp.Values) -> exp.Select:
    """``VALUES (…), (…)`` as ``SELECT * FROM VALUES (…), (…) AS values(col1, …)`` (Spark's
    names for an inline table's columns)."""
    width = len(values.expressions[0].expressions) if values.expressions else 0
    inline = values.copy()
    inline.set("alias", exp.TableAlias(this=exp.to_identifier("values"),
                                       columns=[exp.to_identifier(f"col{i + 1}") for i in range(width)]))
    return exp.select("*").from_(inline)


def spark_name(expression: exp.Expr, dialect: Dialect) -> str:
    """Spark's kind of name for an unnamed projection: lower-case functions, every binary
    operator in parentheses (``(a + 1)``, ``sum(b)``)."""
    copy = expression.copy()
    for node in list(copy.walk()):
        if isinstance(node, exp.Binary) and not isinstance(node.parent, exp.Paren):
            node.replace(exp.Paren(this=node.copy()))
    if isinstance(copy, exp.Binary):
        copy = exp.Paren(this=copy)
    return copy.sql(dialect=dialect, normalize_functions="lower")


def columns_in_scope(expression: exp.Expr) -> Iterator[exp.Column]:
    """Columns of ``expression`` outside its nested queries."""
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Column):
            yield node
            continue
        if isinstance(node, (exp.Select, exp.SetOperation)):
            continue
        stack.extend(node.iter_expressions())
