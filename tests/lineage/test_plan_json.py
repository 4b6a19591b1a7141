"""The plan JSON the walker (io.ushas.spark.PlanWriter / plan.PlanJson) sends to Python: large plans
through a temp file, answers awaited by polling, escaping, the shared attributes and output lists of
format version 2, and the output-list shortcut checked against Spark on every case's plan.
"""
from __future__ import annotations

from typing import Any

import pytest
from plan_cases import T, create_case_tables
from test_plan_lineage import CASES as QUERY_CASES
from test_plan_lineage_writes import CASES as WRITE_CASES

from lineage.dataframe import lineage_of_dataframe

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def lin(spark: Any) -> Any:
    return create_case_tables(spark)


def test_large_plan_goes_through_a_temp_file(lin: Any) -> None:
    """Plans above the inline limit travel through a temp file, which is deleted after reading."""
    import glob
    import tempfile

    from lineage.plan import INLINE_LIMIT, fetch_json

    df = lin.range(1).selectExpr(*[f"id + {i} as c{i}" for i in range(300)])
    before = set(glob.glob(f"{tempfile.gettempdir()}/ushas-plan-*.json"))
    text = fetch_json(lin._jvm, df._jdf.queryExecution().analyzed())
    assert len(text) > INLINE_LIMIT and text.startswith("{")
    assert set(glob.glob(f"{tempfile.gettempdir()}/ushas-plan-*.json")) == before
    assert len(lineage_of_dataframe(df).outputs) == 300


@pytest.mark.parametrize("spin", [0.0, 0.002, 5.0])
@pytest.mark.parametrize("columns", [1, 3000])
def test_answers_awaited_by_polling_arrive_whole(lin: Any, monkeypatch: Any, spin: float, columns: int) -> None:
    """The calling thread polls for PlanWriter's answer before blocking (lineage.plan._SpinningReader):
    small and large answers (3,000 columns: ~200 kB, several TCP segments, longer than the peek
    buffer) arrive whole, with no poll, a short one or a long one; the connection stays usable for
    every other Py4J call, and nothing else is ever polled for."""
    from lineage import plan

    monkeypatch.setattr(plan, "SPIN_SECONDS", spin)
    df = lin.range(1).selectExpr(*[f"id + {i} as c{i}" for i in range(columns)])
    expected = df._jdf.queryExecution().analyzed()
    text = plan.fetch_dataset_json(df._jdf)
    assert text == lin._jvm.io.ushas.spark.PlanWriter.toJson(expected)  # the same JSON, however read
    assert len(lineage_of_dataframe(df).outputs) == columns
    reader = lin._jvm._gateway_client.get_thread_connection().stream
    assert isinstance(reader, plan._SpinningReader) and not reader.armed
    assert lin.range(7).count() == 7 and lin.sql("select 'ok'").first()[0] == "ok"


def test_plan_json_escapes_names_and_texts(lin: Any) -> None:
    """Names and expression texts with quotes, backslashes and control characters survive the
    walker's JSON (its fast path copies strings that need no escaping in one piece)."""
    weird = 'q"uo\\te\tand\nnew é'
    df = lin.sql("select 1 as a").selectExpr(f"a + 1 as `{weird}`", "'x\"\\\\y' as lit")
    result = lineage_of_dataframe(df)
    assert [c.name for c in result.outputs] == [weird, "lit"]
    assert result.derivations[result.outputs[0]].expression.endswith(f"AS {weird}#{result.outputs[0].expr_id}")


def test_plan_json_v2_shares_attributes_and_output_lists(lin: Any) -> None:
    """Format version 2: each distinct attribute and output list is written once; a node whose
    output is its child's (Filter, Sort...) shares the child's parsed tuple."""
    from lineage.plan import fetch_dataset_json, parse

    df = lin.sql(f"select x, y from {T} where x > 1 order by y")
    text = fetch_dataset_json(df._jdf)
    doc = parse(text)
    assert doc.version == 2
    raw = __import__("json").loads(text)
    assert len(raw["attrs"]) == len({tuple(a) for a in raw["attrs"]})
    assert len(raw["outputs"]) == len({tuple(o) for o in raw["outputs"]})
    by_kind = {n.kind: n for n in doc.nodes}
    sort, filt = by_kind["Sort"], by_kind["Filter"]
    assert sort.output is doc.nodes[sort.children[0]].output
    assert filt.output is doc.nodes[filt.children[0]].output
    assert [a.name for a in sort.output] == ["x", "y"]


def shortcut_matches_spark(spark: Any, plans: list[Any]) -> int:
    """Asserts PlanJson's output-list shortcut (a Filter, Sort, SubqueryAlias... takes its
    child's output instead of asking Spark, which recomputes it down the plan) writes exactly
    the JSON that asking Spark for every node's output writes; returns how many nodes took it."""
    import json

    writer = spark._jvm.io.ushas.spark.plan.PlanJson
    took = 0
    for plan in plans:
        text = writer.write(plan)
        assert text == writer.writeAskingSpark(plan)
        doc = json.loads(text)
        took += sum(doc["kinds"][n["k"]] in CHILD_OUTPUT for n in doc["nodes"])
    return took


#: the plan classes PlanJson.CHILD_OUTPUT names
CHILD_OUTPUT = {"Filter", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail", "Sample", "Distinct",
                "Deduplicate", "DeduplicateWithinWatermark", "Repartition", "RepartitionByExpression",
                "RebalancePartitions", "ResolvedHint", "Subquery", "SubqueryAlias", "WithCTE"}


def test_output_shortcut_writes_what_spark_says(lin: Any) -> None:
    from lineage.dataframe import analyze_sql

    plans = [analyze_sql(lin, c.query) if c.mode == "sql" else c.query(lin)._jdf.queryExecution().analyzed()
             for c in QUERY_CASES + WRITE_CASES if c.mode != "capture"]
    assert shortcut_matches_spark(lin, plans) > len(plans)
