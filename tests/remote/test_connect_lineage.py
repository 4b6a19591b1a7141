"""``df.lineage()`` over Spark Connect on the classic lineage case tables (tests/lineage/test_plan_lineage.py
and test_plan_lineage_writes.py ``CASES``, imported, not copied): a client process asks the server's lineage plugin for the plan of every
case; here each is resolved and checked exactly as the classic test checks it, and compared with the
classic session's result for the same case (same trees, edges and OpenLineage export, exprIds aside)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
import sys
from pathlib import Path
from typing import Any

import pytest
from spark_servers import SparkServer, run_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lineage"))

from plan_cases import PlanCase, check, create_case_tables, leaf_name  # noqa: E402
from test_plan_lineage import CASES as QUERY_CASES  # noqa: E402
from test_plan_lineage_writes import CASES as WRITE_CASES  # noqa: E402

CASES = QUERY_CASES + WRITE_CASES

from lineage.dataframe import lineage_of_dataframe, lineage_of_sql  # noqa: E402
from lineage.model import LineageResult  # noqa: E402
from lineage.plan import parse  # noqa: E402
from lineage.resolve import resolve  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: cases that build their plan through the JVM of a classic session: they cannot run on a Connect client
JVM_ONLY = {"bin_by": "analyses its DataFrame through df._jdf while a conf is set"}
#: cases whose source is another in-query source over Connect: the client sends createDataFrame's rows
#: with the plan (a LocalRelation), where a classic session makes an RDD of them (a LogicalRDD)
IN_QUERY_SOURCE = {"df_values": ("<LogicalRDD>", "<VALUES>")}
#: cases seen through by the checkpoint() wrapper (lineage.checkpoints): the plan the server answers stops
#: at the saved rows, df.lineage() in the Connect client that called checkpoint() sees through them
CHECKPOINTS = {"df_checkpoint", "df_local_checkpoint"}


@pytest.fixture(scope="module")
def connect_plans(connect: SparkServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    out = Path(tmp_path_factory.mktemp("connect-cases")) / "plans.json"
    proc = run_client(Path(__file__).with_name("client_cases.py"), f"sc://127.0.0.1:{connect.port}", str(out),
                      cwd=out.parent, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:] + connect.tail(3000)
    return dict(json.loads(out.read_text()))


def normalized(result: LineageResult) -> dict[str, Any]:
    """Trees, edges and the OpenLineage facet with exprIds, CTE ids and in-query source ids left out."""
    def norm(text: str) -> str:
        text = re.sub(r"""(['"]expr_id['"]): \d+""", r"\1: N", re.sub(r"#\d+", "#N", text))
        text = re.sub(r"<(VALUES|LogicalRDD|ExternalRDD)@\d+>", r"<\1>", text)
        return re.sub(r"\bCTE \d+", "CTE N", text)  # a CTE's id counts the session's CTEs, as exprIds do

    return {"trees": norm(str(result)), "edges": sorted(norm(str(e.to_dict())) for e in result.edges),
            "openlineage": norm(json.dumps(result.to_dict(), sort_keys=True, default=str))}


@pytest.fixture(scope="module")
def classic(spark: Any) -> Any:
    return create_case_tables(spark)


#: the cases df.lineage() answers: a "capture" case is a write executed and captured by the listener (the
#: client records {"skip": ...} for it; tests/lineage covers it), not a plan asked for
ASKED = [c for c in CASES if c.mode != "capture"]


def test_the_client_answered_every_case(connect_plans: dict[str, dict[str, str]]) -> None:
    assert ASKED and set(connect_plans) >= {c.id for c in CASES}
    assert sorted(c.id for c in CASES if "skip" in connect_plans[c.id]) == sorted(c.id for c in CASES
                                                                                  if c.mode == "capture")


@pytest.mark.parametrize("case", ASKED, ids=[c.id for c in ASKED])
def test_connect_lineage_case(connect_plans: dict[str, dict[str, str]], classic: Any, case: PlanCase) -> None:
    got = connect_plans[case.id]
    if case.id in JVM_ONLY:  # its plan cannot be built over Connect: the client gets an error, not a plan
        assert "error" in got and "plan" not in got, "a JVM-only case now runs over Connect: drop it from JVM_ONLY"
        return
    if case.id in CHECKPOINTS and "error" in got:  # it sets a checkpoint directory through sparkContext
        assert "JVM_ATTRIBUTE_NOT_SUPPORTED" in got["error"]
        return
    assert "plan" in got, got.get("error")
    result = resolve(parse(got["plan"]))
    if case.id in CHECKPOINTS:
        # the plan alone stops at the saved rows; df.lineage() in the client that called checkpoint() does not
        leaves = {leaf_name(leaf) for c in result.outputs for leaf in result.direct_sources(c)}
        assert leaves and all(leaf.startswith("<LogicalRDD>.") for leaf in leaves), leaves
        assert got["lineage"] == "ok"
        return
    if case.id in IN_QUERY_SOURCE:
        classic_name, connect_name = IN_QUERY_SOURCE[case.id]
        direct = {c: {leaf.replace(classic_name, connect_name): kind for leaf, kind in leaves.items()}
                  for c, leaves in case.direct.items()}
        check(replace(case, direct=direct), result)
        return
    check(case, result)
    expected = (lineage_of_sql(classic, case.query) if case.mode == "sql"  # type: ignore[arg-type]
                else lineage_of_dataframe(case.query(classic)))  # type: ignore[operator]
    assert normalized(result) == normalized(expected)


def test_df_lineage_method_on_a_connect_dataframe(connect_plans: dict[str, dict[str, str]]) -> None:
    text = connect_plans["__df_lineage__"]["text"]  # as a person reads it: no expression ids (lineage.readable)
    assert not re.search(r"#\d", text), text
    assert text.startswith("x1\n+- Alias ( (x + 1) AS x1 )")
    assert "upper(y) AS uy" in text and "spark_catalog.lin.t.y" in text
    assert "FILTER Filter ( (x > 1) )" in text


def test_bad_input_gets_sparks_errors_over_connect(connect_plans: dict[str, Any]) -> None:
    assert connect_plans["__errors__"] == {"parse": "PARSE_SYNTAX_ERROR", "missing_table": "TABLE_OR_VIEW_NOT_FOUND",
                                           "bad_column": "UNRESOLVED_COLUMN.WITH_SUGGESTION"}
