"""No Spark internal in what a person reads (issue 36): expression ids (``amount#36``) and plan node names
(``LogicalRDD@0``) are stored as Spark gave them, and every output shows the plain text instead
(``lineage.readable``). A run stored with Spark's texts, then every output scanned for ``#\\d+``: the CLI's text
and JSON, ``ushas lineage sql`` in every format, the REST API, the system tables, and a ``df.lineage()``
result's renderings, ``.edges``, ``to_dict()`` and OpenLineage facet."""
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


def test_rest_api_shows_no_expression_ids(uri: str) -> None:
    """The REST API's lineage endpoints as a client reads them (Flask's test client, no socket)."""
    from lineage.store import run_id_for
    from ushas_catalog.service.api import register_api
    from ushas_catalog.ui.app import create_app

    app = create_app(uri, "p")
    register_api(app, app.config["USHAS"])
    client = app.test_client()
    try:
        urls = ["/api/v1/lineage/datasets", "/api/v1/runs", f"/api/v1/runs/{run_id_for('app-1', 7)}",
                "/api/v1/lineage/graph?node=spark_catalog.default.daily&direction=both&depth=3",
                "/api/v1/lineage/graph?node=spark_catalog.default.daily.revenue&direction=upstream&depth=3",
                "/api/v1/lineage/tables?node=spark_catalog.default.daily&direction=both&depth=3",
                "/api/v1/lineage/impact?node=spark_catalog.default.orders.amount"]
        texts = []
        for url in urls:
            answer = client.get(url)
            assert answer.status_code == 200, (url, answer.get_data(as_text=True))
            texts.append(answer.get_data(as_text=True))
    finally:
        app.config["USHAS"].close()
    text = "\n".join(texts)
    assert "sum(amount) AS revenue" in text
    assert not INTERNALS.search(text), INTERNALS.findall(text)


def test_system_tables_show_no_expression_ids(uri: str) -> None:
    """``ushas.system.column_lineage`` and ``table_lineage`` as the bridge pages them to Spark."""
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.sql_tables.ops import rows_page

    ms = Metastore.open(uri, project="p")
    try:
        pages = {name: rows_page(ms, {"ctx": {"uri": uri, "catalog": "ushas", "spark_catalog": "ushas"},
                                      "namespace": ["system"], "name": name})
                 for name in ("column_lineage", "table_lineage", "runs", "dataset_access")}
    finally:
        ms.close()
    text = json.dumps(pages, default=str)
    assert len(pages["column_lineage"]["rows"]) == 3 and "sum(amount) AS revenue" in text  # not the in-memory one
    assert not INTERNALS.search(text), INTERNALS.findall(text)


def _spark_like_result() -> Any:
    """A result as Spark's plans give it: expression ids in every expression, an in-memory relation."""
    from lineage.model import ColumnNode, Derivation, IndirectDependency, LineageResult, Step

    x = ColumnNode.column(RDD, "x")
    amount = ColumnNode.column(ORDERS, "amount")
    a = ColumnNode.attribute("a", 3)
    b = ColumnNode.attribute("b", 9)
    amt = ColumnNode.attribute("amount", 36)
    revenue = ColumnNode.attribute("revenue", 61)
    return LineageResult(outputs=(b, revenue), derivations={
        a: Derivation("LogicalRDD", "x#3", (Step(x, EdgeSubtype.IDENTITY),), "AttributeReference"),
        b: Derivation("Project", "(a#3 * 2) AS b#9", (Step(a, EdgeSubtype.TRANSFORMATION),), "Alias"),
        amt: Derivation("Relation", "amount#36", (Step(amount, EdgeSubtype.IDENTITY),)),
        revenue: Derivation("Aggregate", "sum(amount#36) AS revenue#61", (Step(amt, EdgeSubtype.AGGREGATION),),
                            "Alias")},
        indirect=(IndirectDependency("Filter", EdgeSubtype.FILTER, "(amount#36 > 0)", (amt,)),))


def test_dataframe_lineage_renderings_show_no_internals() -> None:
    """What df.lineage() and ushas lineage sql give (a LineageResult): its renderings, its edges, its dict and
    JSON, its OpenLineage facet; the dict still round-trips."""
    from openlineage.client.serde import Serde

    from lineage.model import LineageResult

    result = _spark_like_result()
    for text in (str(result), result.tree("b"), result.to_dot(), result.to_mermaid(), result._repr_html_()):
        assert not INTERNALS.search(text), (INTERNALS.findall(text), text)
    # the data forms: no expression id in any text; an in-memory dataset keeps its plan node as its identity
    # (``{"kind": "inline", "description": "LogicalRDD@0"}``: two of them in one query stay two)
    for text in (json.dumps([e.to_dict() for e in result.edges]), result.to_json(),
                 Serde.to_json(result.to_openlineage())):
        assert not re.search(r"#\d+", text), (re.findall(r"#\d+", text), text)
    assert "(a * 2) AS b" in str(result) and "<in-memory data>.x" in str(result)
    assert {(e.target.label if e.target else "*", e.source.label, e.expression) for e in result.edges} == {
        ("b", "<in-memory data>.x", "(a * 2)"), ("revenue", "spark_catalog.default.orders.amount", "sum(amount)"),
        ("*", "spark_catalog.default.orders.amount", "(amount > 0)")}
    again = LineageResult.from_dict(json.loads(result.to_json()))
    assert again.edges == result.edges and again.to_dict() == result.to_dict()
    assert str(again) == str(result)


@pytest.mark.parametrize("fmt", ["--json", "tree", "edges", "openlineage", "dot", "mermaid"])
def test_lineage_sql_shows_no_expression_ids(fmt: str, store_uri: str, tmp_path: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"t": {"a": "int", "c": "int", "d": "int"}}))
    sql = "SELECT a + 1 AS b, sum(c) AS s FROM (SELECT a, c, d FROM t) x WHERE d > 1 GROUP BY a"
    argv = ["lineage", "sql", sql, "--schema", str(schema)]
    argv = ["--json", *argv] if fmt == "--json" else [*argv, "--format", fmt]
    assert main(["--uri", store_uri, *argv]) == 0
    out = capsys.readouterr().out
    assert "sum(c)" in out or fmt in ("dot", "mermaid")
    assert not INTERNALS.search(out), INTERNALS.findall(out)
