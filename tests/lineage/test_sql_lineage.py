"""SQL lineage without Spark (``lineage.sql``): table-driven cases, SQL in, expected edges out.

Each case names the ``operator`` (the SQL construct / Spark operator) it proves; the coverage doc
(``docs/lineage-coverage.md``, ``tests/lineage/gen_coverage.py``) is generated from this table.

Expected edges are written compactly:

- ``direct``: output column -> {leaf column: DIRECT subtype} (every output column listed, in order);
- ``indirect``: the INDIRECT leaf edges, ``"* SUBTYPE leaf"`` for a dependency of the whole output,
  ``"col SUBTYPE leaf"`` for one scoped to an output column.
"""
from __future__ import annotations

import re

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lineage.model import ColumnNode, Dataset, EdgeKind, LineageResult
from lineage.sql import sql_lineage
from lineage.sql_schema import MappingSchema, MetastoreSchema, spark_type_sql, struct_columns
from ushas_catalog.errors import InvalidArgument, NoSuchTable, NotFound

#: whose lineage these cases test (read by gen_coverage.py): the SQL-text producer
PRODUCER = "sqlglot"

SCHEMA: dict[str, dict[str, str]] = {
    "t": {"a": "int", "b": "int", "c": "string", "s": "struct<x:int,y:string>", "arr": "array<int>"},
    "u": {"a": "int", "k": "int", "v": "string"},
    "w": {"p": "int", "q": "string", "dt": "string"},
    "sales.orders": {"id": "bigint", "cust": "bigint", "amount": "decimal(10,2)", "day": "date"},
}


@dataclass(frozen=True)
class SqlCase:
    id: str
    operator: str
    sql: str
    direct: dict[str, dict[str, str]]
    indirect: frozenset[str] = field(default_factory=frozenset)
    target: str | None = None  # for writes: the target dataset


def case(id: str, operator: str, sql: str, direct: dict[str, dict[str, str]],
         indirect: tuple[str, ...] = (), target: str | None = None) -> SqlCase:
    return SqlCase(id, operator, sql, direct, frozenset(indirect), target)


I, T, A = "IDENTITY", "TRANSFORMATION", "AGGREGATION"  # noqa: E741 - I, T, A: the edge kinds, short for the table below

CASES: list[SqlCase] = [
    # ---- projections ----------------------------------------------------------------------
    case("column", "Project", "select a from t", {"a": {"t.a": I}}),
    case("alias", "Alias", "select a as x from t", {"x": {"t.a": I}}),
    case("arithmetic", "Project", "select a + b as x from t", {"x": {"t.a": T, "t.b": T}}),
    case("function", "Project", "select upper(c) as x, length(c) + a as y from t",
         {"x": {"t.c": T}, "y": {"t.c": T, "t.a": T}}),
    case("cast", "Project", "select cast(a as string) as x from t", {"x": {"t.a": T}}),
    case("literal", "Project", "select 1 as one, 'x' as s from t", {"one": {}, "s": {}}),
    case("unnamed-projection", "Project", "select a + 1, sum(b) from t group by a",
         {"(a + 1)": {"t.a": T}, "sum(b)": {"t.b": A}}, ("* GROUP_BY t.a",)),
    case("star", "Project", "select * from u", {"a": {"u.a": I}, "k": {"u.k": I}, "v": {"u.v": I}}),
    case("qualified-star", "Project", "select u.*, t.a as ta from t join u on t.a = u.a",
         {"a": {"u.a": I}, "k": {"u.k": I}, "v": {"u.v": I}, "ta": {"t.a": I}},
         ("* JOIN t.a", "* JOIN u.a")),
    case("same-column-twice", "Project", "select a, a as a2 from t", {"a": {"t.a": I}, "a2": {"t.a": I}}),
    case("struct-field", "Struct field access", "select s.x, t.s.y from t",
         {"x": {"t.s": T}, "y": {"t.s": T}}),
    case("lambda", "Higher-order function", "select transform(arr, e -> e + a) as y from t",
         {"y": {"t.arr": T, "t.a": T}}),
    case("conditional-case", "CaseWhen", "select case when a > 0 then b else c end as x from t",
         {"x": {"t.b": T, "t.c": T}}, ("x CONDITIONAL t.a",)),
    case("conditional-simple-case", "CaseWhen", "select case a when 1 then 'one' else c end as x from t",
         {"x": {"t.c": T}}, ("x CONDITIONAL t.a",)),
    case("conditional-if", "If", "select if(a > b, a, 0) as x from t",
         {"x": {"t.a": T}}, ("x CONDITIONAL t.a", "x CONDITIONAL t.b")),
    case("coalesce", "Project", "select coalesce(a, b) as x from t", {"x": {"t.a": T, "t.b": T}}),
    # ---- filters, joins -------------------------------------------------------------------
    case("where", "Filter", "select a from t where b > 1 and c like 'x%'",
         {"a": {"t.a": I}}, ("* FILTER t.b", "* FILTER t.c")),
    case("inner-join", "Join", "select t.a, u.v from t join u on t.a = u.a and u.k > 0",
         {"a": {"t.a": I}, "v": {"u.v": I}}, ("* JOIN t.a", "* JOIN u.a", "* JOIN u.k")),
    case("left-join", "Join", "select t.b, u.v from t left join u on t.a = u.a",
         {"b": {"t.b": I}, "v": {"u.v": I}}, ("* JOIN t.a", "* JOIN u.a")),
    case("full-join", "Join", "select t.b, u.k from t full outer join u on t.a = u.a",
         {"b": {"t.b": I}, "k": {"u.k": I}}, ("* JOIN t.a", "* JOIN u.a")),
    case("cross-join", "Join", "select t.b, u.k from t cross join u", {"b": {"t.b": I}, "k": {"u.k": I}}),
    case("comma-join", "Join", "select t.b, u.k from t, u where t.a = u.a",
         {"b": {"t.b": I}, "k": {"u.k": I}}, ("* FILTER t.a", "* FILTER u.a")),
    case("self-join", "Join", "select x.a, y.b from t x join t y on x.a = y.b",
         {"a": {"t.a": I}, "b": {"t.b": I}}, ("* JOIN t.a", "* JOIN t.b")),
    case("join-using", "Join (USING)", "select a, k from t join u using (a)",
         {"a": {"t.a": I}, "k": {"u.k": I}}, ("* JOIN t.a", "* JOIN u.a")),
    case("join-using-right", "Join (USING)", "select a from t right join u using (a)",
         {"a": {"u.a": I}}, ("* JOIN t.a", "* JOIN u.a")),
    case("join-using-full", "Join (USING)", "select a from t full join u using (a)",
         {"a": {"t.a": T, "u.a": T}}, ("* JOIN t.a", "* JOIN u.a")),
    case("natural-join", "Join (NATURAL)", "select a, b, k from t natural join u",
         {"a": {"t.a": I}, "b": {"t.b": I}, "k": {"u.k": I}}, ("* JOIN t.a", "* JOIN u.a")),
    case("left-semi-join", "Join", "select t.b from t left semi join u on t.a = u.a",
         {"b": {"t.b": I}}, ("* JOIN t.a", "* JOIN u.a")),
    case("left-anti-join", "Join", "select t.b from t left anti join u on t.a = u.a",
         {"b": {"t.b": I}}, ("* JOIN t.a", "* JOIN u.a")),
    # ---- aggregation, sorting, windows ----------------------------------------------------
    case("group-by", "Aggregate", "select a, sum(b) as total, max(b) - min(b) as spread from t group by a",
         {"a": {"t.a": I}, "total": {"t.b": A}, "spread": {"t.b": A}}, ("* GROUP_BY t.a",)),
    case("global-aggregate", "Aggregate", "select count(*) as n, avg(b) as m from t",
         {"n": {}, "m": {"t.b": A}}),
    case("count-distinct", "Aggregate", "select count(distinct b) as n from t group by a",
         {"n": {"t.b": A}}, ("* GROUP_BY t.a",)),
    case("group-by-ordinal", "Aggregate", "select a, sum(b) as total from t group by 1",
         {"a": {"t.a": I}, "total": {"t.b": A}}, ("* GROUP_BY t.a",)),
    case("group-by-expression", "Aggregate", "select upper(c) as uc, count(*) as n from t group by upper(c)",
         {"uc": {"t.c": T}, "n": {}}, ("* GROUP_BY t.c",)),
    case("having", "Filter (HAVING)", "select a, sum(b) as total from t group by a having sum(b) > 10",
         {"a": {"t.a": I}, "total": {"t.b": A}}, ("* GROUP_BY t.a", "* FILTER t.b")),
    case("rollup", "Aggregate (ROLLUP)", "select a, c, sum(b) as total from t group by rollup(a, c)",
         {"a": {"t.a": I}, "c": {"t.c": I}, "total": {"t.b": A}}, ("* GROUP_BY t.a", "* GROUP_BY t.c")),
    case("cube", "Aggregate (CUBE)", "select a, c, count(*) as n from t group by cube(a, c)",
         {"a": {"t.a": I}, "c": {"t.c": I}, "n": {}}, ("* GROUP_BY t.a", "* GROUP_BY t.c")),
    case("grouping-sets", "Aggregate (GROUPING SETS)",
         "select a, c, sum(b) as total from t group by grouping sets ((a), (c))",
         {"a": {"t.a": I}, "c": {"t.c": I}, "total": {"t.b": A}}, ("* GROUP_BY t.a", "* GROUP_BY t.c")),
    case("aggregate-filter", "Aggregate (FILTER)", "select count(*) filter (where b > 0) as n from t",
         {"n": {}}, ("n FILTER t.b",)),
    case("aggregate-of-case", "Aggregate", "select sum(case when c = 'x' then b else 0 end) as sx from t",
         {"sx": {"t.b": A}}, ("sx CONDITIONAL t.c",)),
    case("aggregate-arithmetic", "Aggregate", "select sum(a) / count(b) as ratio from t",
         {"ratio": {"t.a": A, "t.b": A}}),
    case("order-by", "Sort", "select a from t order by b desc, c",
         {"a": {"t.a": I}}, ("* SORT t.b", "* SORT t.c")),
    case("order-by-alias", "Sort", "select a, sum(b) as total from t group by a order by total desc",
         {"a": {"t.a": I}, "total": {"t.b": A}}, ("* GROUP_BY t.a", "* SORT t.b")),
    case("sort-by", "Sort (SORT BY)", "select a from t sort by b", {"a": {"t.a": I}}, ("* SORT t.b",)),
    case("distribute-by", "RepartitionByExpression", "select a from t distribute by b", {"a": {"t.a": I}}),
    case("limit", "Limit", "select a from t limit 10", {"a": {"t.a": I}}),
    case("limit-offset", "Offset", "select a from t order by a limit 10 offset 5",
         {"a": {"t.a": I}}, ("* SORT t.a",)),
    case("distinct", "Distinct", "select distinct a, c from t", {"a": {"t.a": I}, "c": {"t.c": I}}),
    case("window-rank", "Window", "select a, row_number() over (partition by c order by b) as rn from t",
         {"a": {"t.a": I}, "rn": {}}, ("rn WINDOW t.c", "rn WINDOW t.b")),
    case("window-aggregate", "Window", "select sum(b) over (partition by a) as running from t",
         {"running": {"t.b": A}}, ("running WINDOW t.a",)),
    case("window-lag", "Window", "select lag(b, 1) over (order by a) as prev from t",
         {"prev": {"t.b": T}}, ("prev WINDOW t.a",)),
    # ---- nesting ------------------------------------------------------------------------------
    case("derived-table", "SubqueryAlias", "select x * 2 as y from (select a + 1 as x from t) d",
         {"y": {"t.a": T}}),
    case("derived-table-filter", "SubqueryAlias",
         "select d.b from (select a, b from t where c = 'x') d where d.a > 1",
         {"b": {"t.b": I}}, ("* FILTER t.c", "* FILTER t.a")),
    case("derived-aggregate", "SubqueryAlias",
         "select max(total) as top from (select a, sum(b) as total from t group by a) d",
         {"top": {"t.b": A}}, ("* GROUP_BY t.a",)),
    case("cte", "CTE", "with x as (select a, b * 2 as b2 from t) select b2 from x where a > 0",
         {"b2": {"t.b": T}}, ("* FILTER t.a",)),
    case("cte-reused", "CTE", "with x as (select a, b from t) select x1.a, x2.b from x x1 join x x2 on x1.a = x2.b",
         {"a": {"t.a": I}, "b": {"t.b": I}}, ("* JOIN t.a", "* JOIN t.b")),
    case("cte-chain", "CTE", "with x as (select a from t), y as (select a * 2 as a2 from x) select a2 from y",
         {"a2": {"t.a": T}}),
    case("union-all", "Union", "select a, c from t union all select k, v from u",
         {"a": {"t.a": I, "u.k": I}, "c": {"t.c": I, "u.v": I}}),
    case("union-distinct", "Union", "select a from t union select a from u", {"a": {"t.a": I, "u.a": I}}),
    case("union-three-way", "Union", "select a from t union all select k from u union all select p from w",
         {"a": {"t.a": I, "u.k": I, "w.p": I}}),
    case("union-order-by", "Union", "select a from t union all select k from u order by a",
         {"a": {"t.a": I, "u.k": I}}, ("* SORT t.a", "* SORT u.k")),
    case("intersect", "Intersect", "select a from t intersect select k from u",
         {"a": {"t.a": I}}, ("* FILTER u.k",)),
    case("except", "Except", "select a from t except select k from u",
         {"a": {"t.a": I}}, ("* FILTER u.k",)),
    case("recursive-cte", "CTE (recursive)",
         "with recursive r(n) as (select a from t union all select n + 1 from r where n < 10) select n from r",
         {"n": {"t.a": T}}, ("* FILTER t.a",)),
    case("pivot", "Pivot", "select * from (select a, b, c from t) pivot (sum(b) for c in ('x' as x, 'y' as y))",
         {"a": {"t.a": I}, "x": {"t.b": A}, "y": {"t.b": A}},
         ("* GROUP_BY t.a", "x CONDITIONAL t.c", "y CONDITIONAL t.c")),
    case("pivot-two-aggregates", "Pivot",
         "select * from (select a, b, c from t) pivot (sum(b) as s, count(a) as n for c in ('x' as x))",
         {"x_s": {"t.b": A}, "x_n": {"t.a": A}}, ("x_s CONDITIONAL t.c", "x_n CONDITIONAL t.c")),
    case("unpivot", "Unpivot", "select * from u unpivot (val for name in (a, k))",
         {"v": {"u.v": I}, "name": {}, "val": {"u.a": I, "u.k": I}}),
    case("unpivot-multi", "Unpivot", "select name, x1, x2 from u unpivot ((x1, x2) for name in ((a, k) as ak, (k, a) as ka))",
         {"name": {}, "x1": {"u.a": I, "u.k": I}, "x2": {"u.k": I, "u.a": I}}),
    # ---- subqueries ---------------------------------------------------------------------------
    case("scalar-subquery-select", "ScalarSubquery",
         "select a, (select max(k) from u where u.v = 'x') as mk from t",
         {"a": {"t.a": I}, "mk": {"u.k": A}}, ("mk FILTER u.v",)),
    case("correlated-scalar-subquery", "ScalarSubquery",
         "select a, (select count(*) from u where u.a = t.a) as n from t",
         {"a": {"t.a": I}, "n": {}}, ("n FILTER u.a", "n FILTER t.a")),
    case("in-subquery", "InSubquery", "select b from t where a in (select k from u where v = 'x')",
         {"b": {"t.b": I}}, ("* FILTER t.a", "* FILTER u.k", "* FILTER u.v")),
    case("not-in-subquery", "InSubquery", "select b from t where a not in (select k from u)",
         {"b": {"t.b": I}}, ("* FILTER t.a", "* FILTER u.k")),
    case("exists", "Exists", "select b from t where exists (select 1 from u where u.a = t.a)",
         {"b": {"t.b": I}}, ("* FILTER u.a", "* FILTER t.a")),
    case("not-exists", "Exists", "select b from t where not exists (select * from u where u.a = t.a and u.k > 1)",
         {"b": {"t.b": I}}, ("* FILTER u.a", "* FILTER t.a", "* FILTER u.k")),
    case("scalar-subquery-where", "ScalarSubquery", "select b from t where a > (select avg(k) from u)",
         {"b": {"t.b": I}}, ("* FILTER t.a", "* FILTER u.k")),
    # ---- generators and in-query sources ------------------------------------------------------
    case("lateral-view", "Generate", "select a, e from t lateral view explode(arr) x as e",
         {"a": {"t.a": I}, "e": {"t.arr": T}}),
    case("lateral-view-posexplode", "Generate", "select pos, e from t lateral view posexplode(arr) x as pos, e",
         {"pos": {"t.arr": T}, "e": {"t.arr": T}}),
    case("explode-in-select", "Generate", "select explode(arr) as e from t", {"e": {"t.arr": T}}),
    case("values", "LocalRelation", "select p + 1 as p1, q from values (1, 'x'), (2, 'y') as v(p, q)",
         {"p1": {"<VALUES>.p": T}, "q": {"<VALUES>.q": I}}),
    case("range", "Range", "select id * 2 as d from range(10)", {"d": {"<range(10)>.id": T}}),
    # ---- names --------------------------------------------------------------------------------
    case("two-part-name", "Relation", "select cust, sum(amount) as total from sales.orders group by cust",
         {"cust": {"sales.orders.cust": I}, "total": {"sales.orders.amount": A}},
         ("* GROUP_BY sales.orders.cust",)),
    case("case-insensitive", "Relation", "SELECT A AS X FROM T WHERE B > 0",
         {"x": {"t.a": I}}, ("* FILTER t.b",)),
    # ---- writes -------------------------------------------------------------------------------
    case("insert-select", "InsertIntoStatement", "insert into w select a, c, 'd' from t",
         {"p": {"t.a": I}, "q": {"t.c": I}, "dt": {}}, target="w"),
    case("insert-column-list", "InsertIntoStatement", "insert into w (q, p, dt) select c, a, c from t where b > 0",
         {"q": {"t.c": I}, "p": {"t.a": I}, "dt": {"t.c": I}}, ("* FILTER t.b",), target="w"),
    case("insert-static-partition", "InsertIntoStatement",
         "insert overwrite table w partition (dt = '2024-01-01') select a, upper(c) from t",
         {"p": {"t.a": I}, "q": {"t.c": T}}, target="w"),
    case("insert-values", "InsertIntoStatement", "insert into w values (1, 'x', 'd'), (2, 'y', 'e')",
         {"p": {"<VALUES>.col1": I}, "q": {"<VALUES>.col2": I}, "dt": {"<VALUES>.col3": I}}, target="w"),
    case("ctas", "CreateTableAsSelect", "create table z as select a, b + 1 as b1 from t",
         {"a": {"t.a": I}, "b1": {"t.b": T}}, target="z"),
    case("create-view", "CreateViewCommand", "create view vz as select a, count(*) as n from t group by a",
         {"a": {"t.a": I}, "n": {}}, ("* GROUP_BY t.a",), target="vz"),
]


def observed(result: LineageResult) -> tuple[dict[str, dict[str, str]], frozenset[str]]:
    direct = {col.name: {str(leaf): sub.value for leaf, sub in result.direct_sources(col).items()}
              for col in result.outputs}
    indirect = frozenset(f"{e.target.name if e.target else '*'} {e.subtype.value} {e.source}"
                         for e in result.edges if e.kind is EdgeKind.INDIRECT)
    return direct, indirect


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_sql_lineage_case(c: SqlCase) -> None:
    result = sql_lineage(c.sql, SCHEMA)
    direct, indirect = observed(result)
    assert list(direct) == list(c.direct), "output columns (in order)"
    assert direct == c.direct
    assert indirect == c.indirect
    assert result.completeness == 1.0
    assert result.producer == "sqlglot"
    if c.target is None:
        assert result.target is None
    else:
        assert result.target is not None and result.target.name == c.target
        assert all(col.dataset == result.target for col in result.outputs)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


# ---- result shape -----------------------------------------------------------------------------
def test_tree_and_composed_expression() -> None:
    result = sql_lineage("select * from (select substr(a + 1, 0, 1) as c, a + 3 as d from "
                         "(select 1 as a, 2 as b))", {})
    tree = result.tree("c")
    lines = tree.splitlines()
    assert lines[0] == "c"  # the tree a person reads: no expression ids (issue 36)
    assert lines[1].startswith("+- Alias ( substring(") and lines[1].endswith(" AS c )")
    assert lines[2].lstrip() == "+- a"
    assert "Alias ( 1 AS a )" in lines[3]
    assert result.direct_sources("c") == {}  # a literal: no dataset column
    edges = sql_lineage("select x * 2 as y from (select a + 1 as x from t) d", SCHEMA).edges
    assert len(edges) == 1
    assert edges[0].expression == "(a + 1) * 2"  # composed, as a person reads it: no expression ids


def test_indirect_kept_once_per_clause() -> None:
    result = sql_lineage("select a, b, c from t where a > 0 and b > 0", SCHEMA)
    assert len(result.indirect) == 1
    (dep,) = result.indirect
    assert dep.scope is None and dep.operator == "Filter"
    assert "a#" in dep.expression and "b#" in dep.expression
    expanded = result.expand_indirect()
    assert {(e.target.name, str(e.source)) for e in expanded} == {
        (col, src) for col in "abc" for src in ("t.a", "t.b")}


def test_scalar_subquery_dependency_is_scoped_to_its_projection() -> None:
    result = sql_lineage("select a, (select max(k) from u where v = 'x') as mk from t", SCHEMA)
    (dep,) = result.indirect
    assert dep.scope is not None and dep.scope.name == "mk"
    assert result.indirect_sources("a") == set()


def test_round_trip_and_exports() -> None:
    result = sql_lineage("select a, sum(b) as total from t where c = 'x' group by a", SCHEMA)
    again = LineageResult.from_dict(json.loads(result.to_json()))
    assert again.edges == result.edges
    facet = result.to_openlineage()
    fields = facet.fields
    assert set(fields) == {"a", "total"}
    total = fields["total"].inputFields
    assert [(f.name, f.field) for f in total] == [("t", "b")]
    assert total[0].transformations[0].subtype == "AGGREGATION"
    assert "digraph" in result.to_dot() and "flowchart" in result.to_mermaid()


def test_catalog_defaults_qualify_names() -> None:
    schema = {"spark_catalog": {"db": {"t": {"a": "int"}}}}
    result = sql_lineage("select a from t", schema, catalog="spark_catalog", database="db")
    (leaf,) = result.direct_sources("a")
    assert leaf == ColumnNode.column(Dataset.table("spark_catalog", "db", "t"), "a")
    # the same table by its three-part name, and a flat schema qualified by the defaults
    assert sql_lineage("select a from spark_catalog.db.t", schema).direct_sources("a") == result.direct_sources("a")
    flat = sql_lineage("select a from t", {"t": {"a": "int"}}, catalog="c", database="d")
    assert str(next(iter(flat.direct_sources("a")))) == "c.d.t.a"


def test_other_dialect() -> None:
    result = sql_lineage('select "a"::text as x, b from t where c ilike \'x%\'', SCHEMA, dialect="postgres")
    direct, indirect = observed(result)
    assert direct == {"x": {"t.a": T}, "b": {"t.b": I}}
    assert indirect == {"* FILTER t.c"}


# ---- schemas ----------------------------------------------------------------------------------
def test_schema_shapes() -> None:
    struct = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "attrs", "type": {"type": "map", "keyType": "string", "valueType": "integer",
                                   "valueContainsNull": True}, "nullable": True, "metadata": {}},
        {"name": "pt", "type": {"type": "struct", "fields": [
            {"name": "x", "type": "double", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
    ]}
    assert struct_columns(struct) == {"id": "bigint", "tags": "array<string>", "attrs": "map<string,int>",
                                      "pt": "struct<x:double>"}
    assert struct_columns(json.dumps(struct)) == struct_columns(struct)
    assert spark_type_sql("decimal(10,2)") == "decimal(10,2)"
    shapes = MappingSchema.of({"Cat": {"DB": {"T1": {"A": "int"}}}, "db.t2": struct, "t3": {"z": "int"}})
    assert shapes.columns(("cat", "db", "t1")) == {"a": "int"}
    assert shapes.columns(("db", "t2"))["id"] == "bigint"
    assert shapes.columns(("t3",)) == {"z": "int"}
    result = sql_lineage("select pt.x, tags[0] as t0 from db.t2", shapes)
    assert observed(result)[0] == {"x": {"db.t2.pt": T}, "t0": {"db.t2.tags": T}}


def test_schema_file(tmp_path: Path) -> None:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    assert MappingSchema.load(path).columns(("sales", "orders")) == SCHEMA["sales.orders"]
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(InvalidArgument, match="not JSON"):
        MappingSchema.load(tmp_path / "bad.json")
    with pytest.raises(InvalidArgument, match="cannot read"):
        MappingSchema.load(tmp_path / "missing.json")
    with pytest.raises(InvalidArgument, match="expected a mapping"):
        MappingSchema.of({"t": ["a", "b"]})


class _FakeMetastore:
    """The metastore's ``get_table`` contract as the SQL lineage uses it."""

    def __init__(self, tables: dict[str, dict]) -> None:
        self.tables = tables

    def get_table(self, name: tuple[str, ...]) -> dict:
        key = ".".join(name)
        if key not in self.tables:
            raise NoSuchTable(f"no table {key}")
        return {"schema": self.tables[key]}


def test_metastore_schema_source() -> None:
    struct = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    source = MetastoreSchema(_FakeMetastore({"ushas.sales.orders": struct}))
    assert source.columns(("ushas", "sales", "orders")) == {"id": "bigint"}
    assert source.columns(("ushas", "sales", "missing")) is None
    assert source.columns(("sales", "orders")) is None  # only three-part names
    result = sql_lineage("select id from ushas.sales.orders", source)
    assert [str(k) for k in result.direct_sources("id")] == ["ushas.sales.orders.id"]
    assert issubclass(NoSuchTable, NotFound)


@dataclass(frozen=True)
class _StructLike:
    """Like ``ushas_catalog.model.schema.StructType``: gives its Spark JSON through ``json_value()``."""

    value: dict

    def json_value(self) -> dict:
        return self.value


@dataclass(frozen=True)
class _TableInfoLike:
    schema: _StructLike


def test_metastore_table_info_objects() -> None:
    struct = {"type": "struct", "fields": [{"name": "Amount", "type": "decimal(10,2)", "nullable": True,
                                            "metadata": {}}]}

    class Store:
        def get_table(self, name: tuple[str, ...]) -> _TableInfoLike:
            if name != ("ushas", "sales", "orders"):
                raise NoSuchTable(".".join(name))
            return _TableInfoLike(_StructLike(struct))

    assert MetastoreSchema(Store()).columns(("ushas", "sales", "orders")) == {"amount": "decimal(10,2)"}
    result = sql_lineage("select sum(amount) as total from ushas.sales.orders", MetastoreSchema(Store()))
    assert observed(result)[0] == {"total": {"ushas.sales.orders.amount": A}}
    with pytest.raises(NoSuchTable, match="ushas.sales.other"):
        sql_lineage("select * from ushas.sales.other", MetastoreSchema(Store()))


# ---- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sql, error, message", [
    ("select from where", InvalidArgument, "cannot parse SQL"),
    ("select a from t; select b from t", InvalidArgument, "one SQL statement"),
    ("   ", InvalidArgument, "no SQL statement"),
    ("select a from nope", NoSuchTable, "nope"),
    ("select zz from t", InvalidArgument, "zz"),
    ("drop table t", InvalidArgument, "no column lineage"),
    ("insert into w select a from t", InvalidArgument, "expects 3"),
    ("insert into w (p, nope) select a, b from t", InvalidArgument, "nope"),
    ("insert into nope select a from t", NoSuchTable, "nope"),
], ids=["unparsable", "two-statements", "empty", "unknown-table", "unknown-column", "drop", "insert-arity",
        "insert-unknown-column", "insert-unknown-target"])
def test_errors(sql: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        sql_lineage(sql, SCHEMA)


def test_unknown_dialect() -> None:
    with pytest.raises(InvalidArgument, match="dialect"):
        sql_lineage("select a from t", SCHEMA, dialect="no-such-dialect")


# ---- CLI: ushas lineage sql -----------------------------------------------------------------
@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def _ushas(argv: list[str], store_uri: str) -> int:
    from ushas_catalog.cli import main

    return main(["--uri", store_uri, *argv])


def test_cli_tree(schema_file: Path, store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _ushas(["lineage", "sql", "select a, sum(b) as total from t where c = 'x' group by a",
                 "--schema", str(schema_file)], store_uri)
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("a\n")
    assert "\ntotal\n" in out and "+- Alias ( sum(b) AS total )" in out
    assert "FILTER Filter ( WHERE c = 'x' )" in out and "GROUP_BY Aggregate ( GROUP BY a )" in out
    assert not re.search(r"#\d", out)


def test_cli_json_edges_and_stdin(schema_file: Path, store_uri: str, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("select upper(v) as uv from u where k > 1"))
    rc = _ushas(["--json", "lineage", "sql", "-", "--schema", str(schema_file)], store_uri)
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["producer"] == "sqlglot" and data["completeness"] == 1.0
    edges = {(e["target"]["name"] if e["target"] else "*", e["source"]["name"], e["subtype"]) for e in data["edges"]}
    assert edges == {("uv", "v", "TRANSFORMATION"), ("*", "k", "FILTER")}
    assert LineageResult.from_dict(data).edges == sql_lineage(
        "select upper(v) as uv from u where k > 1", SCHEMA).edges

    rc = _ushas(["lineage", "sql", "select upper(v) as uv from u", "--schema", str(schema_file),
                 "--format", "edges"], store_uri)
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert lines[0].split() == ["TARGET", "SOURCE", "KIND", "SUBTYPE", "EXPRESSION"]
    assert lines[1].split()[:4] == [lines[1].split()[0], "u.v", "DIRECT", "TRANSFORMATION"]


def test_cli_formats(schema_file: Path, store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    sql = "select a as x from t"
    assert _ushas(["lineage", "sql", sql, "--schema", str(schema_file), "--format", "openlineage"], store_uri) == 0
    facet = json.loads(capsys.readouterr().out)
    assert facet["fields"]["x"]["inputFields"][0]["field"] == "a"
    assert _ushas(["lineage", "sql", sql, "--schema", str(schema_file), "--format", "dot"], store_uri) == 0
    assert capsys.readouterr().out.startswith("digraph")
    assert _ushas(["lineage", "sql", 'select "a" as x from t', "--schema", str(schema_file),
                   "--dialect", "postgres", "--format", "mermaid"], store_uri) == 0
    assert capsys.readouterr().out.startswith("flowchart")


@pytest.mark.parametrize("argv, rc, message", [
    (["select a from nope"], 1, "NoSuchTable: table or view not found: nope"),
    (["select from"], 2, "InvalidArgument: cannot parse SQL"),
    (["select a from t", "--dialect", "klingon"], 2, "InvalidArgument: unknown SQL dialect"),
    (["select a from t", "--schema", "/nonexistent/schema.json"], 2, "InvalidArgument: cannot read schema file"),
], ids=["unknown-table", "unparsable", "unknown-dialect", "missing-schema-file"])
def test_cli_errors(argv: list[str], rc: int, message: str, schema_file: Path, store_uri: str,
                    capsys: pytest.CaptureFixture[str]) -> None:
    if "--schema" not in argv:
        argv = [*argv, "--schema", str(schema_file)]
    assert _ushas(["lineage", "sql", *argv], store_uri) == rc
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_cli_requires_a_subcommand(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _ushas(["lineage"], store_uri)
    assert exit_info.value.code == 2


def test_cli_three_part_names_from_the_metastore(store_uri: str, schema_file: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from ushas_catalog.metastore import Metastore

    metastore = Metastore.open(store_uri, project="default")
    try:
        metastore.create_catalog("ushas")
        metastore.create_database("ushas.sales")
        metastore.create_table("ushas.sales.orders", "id BIGINT, amount DECIMAL(10,2), tags ARRAY<STRING>")
    finally:
        metastore.close()
    sql = ("select o.id, sum(o.amount) as total, max(u.v) as mv from ushas.sales.orders o "
           "join u on u.k = o.id where size(o.tags) > 0 group by o.id")
    rc = _ushas(["--json", "lineage", "sql", sql, "--schema", str(schema_file)], store_uri)
    result = LineageResult.from_dict(json.loads(capsys.readouterr().out))
    assert rc == 0
    direct, indirect = observed(result)
    assert direct == {"id": {"ushas.sales.orders.id": I}, "total": {"ushas.sales.orders.amount": A},
                      "mv": {"u.v": A}}
    assert indirect == {"* JOIN u.k", "* JOIN ushas.sales.orders.id", "* FILTER ushas.sales.orders.tags",
                        "* GROUP_BY ushas.sales.orders.id"}
    assert _ushas(["lineage", "sql", "select * from ushas.sales.nope"], store_uri) == 1
    assert "NoSuchTable: table or view not found: ushas.sales.nope" in capsys.readouterr().err
