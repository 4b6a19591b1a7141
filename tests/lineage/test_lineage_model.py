"""The lineage model, renderings, plan parsing and resolver behaviour on hand-written plan JSON
(no Spark): unknown operators, dangling references, completeness, serialization round trips."""
from __future__ import annotations

import json
from typing import Any

import pytest

from lineage.model import (
    ColumnNode,
    Dataset,
    Derivation,
    EdgeKind,
    EdgeSubtype,
    IndirectDependency,
    LineageResult,
    Step,
    iter_steps,
)
from lineage.plan import PlanFormatError, parse
from lineage.resolve import resolve

ISSUE_TREE_C = """c
+- Alias ( substring(cast((a + 1) as string), 0, 1) AS c )
   +- a
      +- Alias ( 1 AS a )"""  # as a person wrote it: no expression ids (issue 36)


def _issue_result() -> LineageResult:
    a, c, d = ColumnNode.attribute("a", 0), ColumnNode.attribute("c", 2), ColumnNode.attribute("d", 3)
    return LineageResult(outputs=(c, d), derivations={
        a: Derivation("Project", "1 AS a#0", (), "Alias"),
        c: Derivation("Project", "substring(cast((a#0 + 1) as string), 0, 1) AS c#2",
                      (Step(a, EdgeSubtype.TRANSFORMATION),), "Alias"),
        d: Derivation("Project", "(a#0 + 3) AS d#3", (Step(a, EdgeSubtype.TRANSFORMATION),), "Alias"),
    })


def _table_result() -> LineageResult:
    t = Dataset.table("spark_catalog", "db", "t")
    tx, ty = ColumnNode.column(t, "x"), ColumnNode.column(t, "y")
    x, y = ColumnNode.attribute("x", 1), ColumnNode.attribute("y", 2)
    s, c = ColumnNode.attribute("s", 5), ColumnNode.attribute("c", 6)
    return LineageResult(
        outputs=(s, c),
        derivations={
            x: Derivation("LogicalRelation", "spark_catalog.db.t", (Step(tx, EdgeSubtype.IDENTITY),)),
            y: Derivation("LogicalRelation", "spark_catalog.db.t", (Step(ty, EdgeSubtype.IDENTITY),)),
            s: Derivation("Aggregate", "sum(x#1) AS s#5", (Step(x, EdgeSubtype.AGGREGATION),), "Alias"),
            c: Derivation("Project", "CASE WHEN (y#2 > 0) THEN x#1 END AS c#6",
                          (Step(x, EdgeSubtype.TRANSFORMATION), Step(y, EdgeSubtype.CONDITIONAL)), "Alias"),
        },
        indirect=(IndirectDependency("Filter", EdgeSubtype.FILTER, "(y#2 > 1)", (y,)),
                  IndirectDependency("Aggregate", EdgeSubtype.GROUP_BY, "y#2", (y,))))


def test_issue_tree_exact() -> None:
    text = str(_issue_result())
    assert text.split("\n\n")[0] == ISSUE_TREE_C
    assert text.split("\n\n")[1] == """d
+- Alias ( (a + 3) AS d )
   +- a
      +- Alias ( 1 AS a )"""


def test_leaves_and_subtypes() -> None:
    r = _table_result()
    t = Dataset.table("spark_catalog", "db", "t")
    assert r.direct_sources("s") == {ColumnNode.column(t, "x"): EdgeSubtype.AGGREGATION}
    assert r.direct_sources("c") == {ColumnNode.column(t, "x"): EdgeSubtype.TRANSFORMATION}
    assert r.indirect_sources() == {(EdgeSubtype.FILTER, ColumnNode.column(t, "y")),
                                    (EdgeSubtype.GROUP_BY, ColumnNode.column(t, "y"))}
    assert (EdgeSubtype.CONDITIONAL, ColumnNode.column(t, "y")) in r.indirect_sources("c")
    assert (EdgeSubtype.CONDITIONAL, ColumnNode.column(t, "y")) not in r.indirect_sources("s")
    assert r.completeness == 1.0


def test_indirect_stored_once_expanded_on_request() -> None:
    r = _table_result()
    wide = [e for e in r.edges if e.target is None]
    assert len(wide) == 2  # one per (operator, leaf), not per output column
    expanded = [e for e in r.expand_indirect() if e.subtype is EdgeSubtype.FILTER]
    assert {str(e.target) for e in expanded} == {"s#5", "c#6"}


def test_round_trip_dict_and_json() -> None:
    r = _table_result()
    again = LineageResult.from_dict(json.loads(r.to_json()))
    assert again.to_dict() == r.to_dict()
    assert again.edges == r.edges
    for node in r.nodes():
        assert ColumnNode.from_dict(node.to_dict()) == node
        hash(node)


def test_steps_are_the_compact_graph() -> None:
    steps = list(iter_steps(_table_result()))
    assert len(steps) == 5
    assert {s.kind for s in steps} == {EdgeKind.DIRECT, EdgeKind.INDIRECT}


def test_openlineage_facet() -> None:
    from openlineage.client.generated.column_lineage_dataset import ColumnLineageDatasetFacet

    facet = _table_result().to_openlineage()
    assert isinstance(facet, ColumnLineageDatasetFacet)
    s = facet.fields["s"].inputFields
    assert [(f.namespace, f.name, f.field) for f in s] == [("spark_catalog", "db.t", "x")]
    assert s[0].transformations[0].type == "DIRECT" and s[0].transformations[0].subtype == "AGGREGATION"
    c_subtypes = {(t.type, t.subtype) for f in facet.fields["c"].inputFields for t in f.transformations}
    assert c_subtypes == {("DIRECT", "TRANSFORMATION"), ("INDIRECT", "CONDITIONAL")}
    assert {t.subtype for f in facet.dataset for t in f.transformations} == {"FILTER", "GROUP_BY"}


def test_dot_mermaid_html() -> None:
    r = _table_result()
    dot = r.to_dot()
    assert dot.startswith("digraph lineage {") and "style=dashed" in dot and "AGGREGATION" in dot
    mer = r.to_mermaid()
    assert mer.startswith("flowchart RL") and "-.->|CONDITIONAL|" in mer
    html = r._repr_html_()
    assert "<table>" in html and "spark_catalog.db.t.x" in html and "&gt;" in html


@pytest.mark.parametrize("spelled, one", [
    ("file:///tmp/x/", "file:/tmp/x"),
    ("file:/tmp/x", "file:/tmp/x"),
    ("file:///tmp/x", "file:/tmp/x"),
    ("s3a://bucket/dir/", "s3a://bucket/dir"),
    ("s3a://bucket/", "s3a://bucket/"),
    ("hdfs://nn:8020/a/b", "hdfs://nn:8020/a/b"),
    ("/tmp/x//", "/tmp/x"),
    ("/", "/"),
    ("file:/", "file:/"),
    ("file:///a/,file:///b", "file:/a,file:/b"),
])
def test_path_dataset_one_spelling(spelled: str, one: str) -> None:
    assert Dataset.path(spelled).uri == one
    assert Dataset.path(spelled) == Dataset.path(one)


def test_path_dataset_openlineage_naming() -> None:
    assert Dataset.path("s3a://bucket/dir/x", "parquet").openlineage_name() == ("s3a://bucket", "/dir/x")
    assert Dataset.path("file:/tmp/out", "json").openlineage_name() == ("file", "/tmp/out")
    assert Dataset.inline("range(0, 10, 1)").name == "<range(0, 10, 1)>"


# ---- resolver on hand-written plan documents ----------------------------------------------
def _doc(kinds: list[str], exprs: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> str:
    return json.dumps({"format": "ushas-plan", "version": 1, "spark": "test", "kinds": kinds,
                       "exprs": exprs, "nodes": nodes, "root": len(nodes) - 1})


RANGE_THEN_UNKNOWN = _doc(
    ["Range", "FlatMapGroupsInR", "Project", "AttributeReference", "Add", "Literal", "Alias"],
    [{"k": 3, "i": 1, "n": "z"}, {"k": 5}, {"k": 4, "c": [0, 1]}, {"k": 6, "c": [2], "i": 2, "n": "w",
                                                                   "t": "(z#1 + 1) AS w#2"}],
    [{"k": 0, "c": [], "o": [["id", 0, "bigint"]], "a": {"start": 0, "end": 3, "step": 1}},
     {"k": 1, "c": [0], "o": [["z", 1, "bigint"]]},
     {"k": 2, "c": [1], "o": [["w", 2, "bigint"]], "x": {"projectList": [3]}}])


def test_unknown_operator_passes_through_and_is_reported() -> None:
    r = resolve(parse(RANGE_THEN_UNKNOWN))
    assert [u.kind for u in r.unresolved] == ["FlatMapGroupsInR"]
    assert r.completeness == 0.0  # w's path crosses an uninterpreted operator
    assert {str(k) for k in r.direct_sources("w")} == {"<range(0, 3, 1)>.id"}  # still passed through
    assert "[unresolved]" in str(r) and "completeness: 0.00 (unresolved: FlatMapGroupsInR)" in str(r)


def test_dangling_reference_is_reported() -> None:
    text = _doc(["Project", "AttributeReference", "Alias"],
                [{"k": 1, "i": 9, "n": "q"}, {"k": 2, "c": [0], "i": 10, "n": "r", "t": "q#9 AS r#10"}],
                [{"k": 0, "c": [], "o": [["r", 10, "int"]], "x": {"projectList": [1]}}])
    r = resolve(parse(text))
    assert [u.kind for u in r.unresolved] == ["UnresolvedReference"]
    assert r.completeness == 0.0


def test_version_is_checked() -> None:
    bad = json.loads(RANGE_THEN_UNKNOWN)
    bad["version"] = 99
    with pytest.raises(PlanFormatError, match="version 99"):
        parse(json.dumps(bad))
    with pytest.raises(PlanFormatError):
        parse(json.dumps({"format": "other"}))


def test_deep_plan_without_recursion() -> None:
    """A 5 000-deep chain of projections parses and resolves (no recursion anywhere)."""
    n = 5000
    kinds = ["Range", "Project", "AttributeReference", "Literal", "Add", "Alias"]
    exprs: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = [{"k": 0, "c": [], "o": [["a", 0, "bigint"]], "a": {"start": 0, "end": 1, "step": 1}}]
    for i in range(1, n + 1):
        base = len(exprs)
        exprs += [{"k": 2, "i": i - 1, "n": "a"}, {"k": 3}, {"k": 4, "c": [base, base + 1]},
                  {"k": 5, "c": [base + 2], "i": i, "n": "a", "t": f"(a#{i - 1} + 1) AS a#{i}"}]
        nodes.append({"k": 1, "c": [i - 1], "o": [["a", i, "bigint"]], "x": {"projectList": [base + 3]}})
    r = resolve(parse(_doc(kinds, exprs, nodes)))
    assert {str(k): v for k, v in r.direct_sources("a").items()} == {"<range(0, 1, 1)>.a": EdgeSubtype.TRANSFORMATION}
    assert len(r.tree("a").splitlines()) == 2 * n + 3
    assert len(r.edges) == 1
