"""No Spark internal in what a person reads (issue 36): expression ids (``amount#36``) and plan node names
(``LogicalRDD@0``) are stored as Spark gave them, and every output shows the plain text instead
(``lineage.readable``). A run stored with Spark's texts, then every output scanned for ``#\\d+``."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest

from lineage.graphs import column_graph, table_graph
from lineage.model import Dataset, EdgeSubtype
from lineage.query import LineageQueries
from lineage.readable import readable
from lineage.store import CapturedRun, LineageStore
from ushas_catalog.cli import main

from .pipeline import T1, col, edge, run

INTERNALS = re.compile(r"#\d+|LogicalRDD@|ExternalRDD@|VALUES@")
DAILY = Dataset.table("spark_catalog", "default", "daily")
ORDERS = Dataset.table("spark_catalog", "default", "orders")
RDD = Dataset.inline("LogicalRDD@0")


@pytest.mark.parametrize("spark, shown", [
    ("sum(amount#36) AS revenue#61", "sum(amount) AS revenue"),
    ("dt#37", "dt"),
    ("count(1)#45L", "count(1)"),
    ("CASE WHEN (x#3 > 1) THEN y#4L ELSE null END", "CASE WHEN (x > 1) THEN y ELSE null END"),
    ("concat(a#1, '#2 stays')", "concat(a, '#2 stays')"),  # a string literal is as written
    ("`odd#name`#5", "`odd#name`"),
    ("<LogicalRDD@0>.x", "<in-memory data>.x"),
    ("<VALUES@12>.a", "<VALUES>.a"),
    ("no ids here", "no ids here"),
])
def test_readable(spark: str, shown: str) -> None:
    assert readable(spark) == shown


@pytest.fixture
def uri(store_uri: str) -> str:
    store = LineageStore.open(store_uri, "p")
    store.record(CapturedRun(
        run(7, T1, sql="INSERT INTO daily SELECT dt, sum(amount) AS revenue FROM orders GROUP BY dt"),
        reads=(ORDERS, RDD), writes=(DAILY,),
        edges=(edge(col(DAILY, "revenue"), col(ORDERS, "amount"), EdgeSubtype.AGGREGATION,
                    "sum(amount#36) AS revenue#61"),
               edge(col(DAILY, "dt"), col(ORDERS, "dt"), EdgeSubtype.IDENTITY, "dt#37"),
               edge(col(DAILY, "segment"), col(RDD, "segment"), EdgeSubtype.IDENTITY, "segment#12"),
               edge(None, col(ORDERS, "dt"), EdgeSubtype.GROUP_BY, "dt#37"))))
    store.close()
    return store_uri


@pytest.mark.parametrize("argv", [
    ["lineage", "upstream", "spark_catalog.default.daily", "--explain"],
    ["lineage", "upstream", "spark_catalog.default.daily", "--explain", "--flat"],
    ["--json", "lineage", "upstream", "spark_catalog.default.daily.revenue", "--explain"],
    ["lineage", "downstream", "spark_catalog.default.orders", "--explain"],
    ["--json", "lineage", "impact", "spark_catalog.default.orders.amount", "--explain"],
    ["lineage", "run", "{run}"],
    ["--json", "lineage", "run", "{run}"],
    ["lineage", "export", "--openlineage"],
])
def test_cli_outputs_show_no_expression_ids(capsys: pytest.CaptureFixture[str], uri: str, argv: list[str]) -> None:
    from lineage.store import run_id_for

    argv = [a.format(run=run_id_for("app-1", 7)) for a in argv]
    assert main(["--uri", uri, "--project", "p", *argv]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    assert not INTERNALS.search(out), INTERNALS.findall(out)
    if "run" in argv and "--json" not in argv:
        assert "sum(amount) AS revenue" in out


def test_rest_graphs_show_no_expression_ids(uri: str) -> None:
    store = LineageStore.open(uri, "p")
    try:
        q = LineageQueries(store)
        answers: list[Any] = [column_graph(q, "spark_catalog.default.daily", "both", 3),
                              table_graph(q, "spark_catalog.default.daily", "both", 3),
                              q.answer_json(q.upstream("spark_catalog.default.daily"), explain=True)]
    finally:
        store.close()
    text = json.dumps(answers)
    assert "sum(amount) AS revenue" in text
    assert not INTERNALS.search(text), INTERNALS.findall(text)


def test_dataframe_lineage_renderings_show_no_internals() -> None:
    """What df.lineage() and ushas lineage sql print (a LineageResult's renderings)."""
    from lineage.model import ColumnNode, Derivation, LineageResult, Step

    x = ColumnNode.column(RDD, "x")
    a = ColumnNode.attribute("a", 3)
    b = ColumnNode.attribute("b", 9)
    result = LineageResult(outputs=(b,), derivations={
        a: Derivation("LogicalRDD", "x#3", (Step(x, EdgeSubtype.IDENTITY),), "AttributeReference"),
        b: Derivation("Project", "(a#3 * 2) AS b#9", (Step(a, EdgeSubtype.TRANSFORMATION),), "Alias")})
    for text in (str(result), result.tree("b"), result.to_dot(), result.to_mermaid(), result._repr_html_()):
        assert not INTERNALS.search(text), (INTERNALS.findall(text), text)
    assert "(a * 2) AS b" in str(result) and "<in-memory data>.x" in str(result)
