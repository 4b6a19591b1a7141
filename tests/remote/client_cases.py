"""A Spark Connect client in its own process: the plan JSON of every case of the classic lineage case
tables (tests/lineage/test_plan_lineage.py and test_plan_lineage_writes.py ``CASES``), analysed by the
server's lineage plugin, into one JSON file {case id: {"plan": text} | {"error": text} | {"skip": reason}}; and ``df.lineage()`` itself on one
DataFrame and on the checkpoint cases ({"plan", "lineage": "ok" | why not}: the client's checkpoint()
remembers what it saved, lineage.connect). The test (tests/remote/test_connect_lineage.py) resolves and checks each case.

    python client_cases.py sc://127.0.0.1:PORT OUT.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lineage"))

from plan_cases import PlanCase, check, create_case_tables  # noqa: E402
from test_plan_lineage import CASES as QUERY_CASES  # noqa: E402  (the classic case tables themselves)
from test_plan_lineage_writes import CASES as WRITE_CASES  # noqa: E402

CASES = QUERY_CASES + WRITE_CASES


def main(url: str, out: str) -> None:
    from pyspark.sql import SparkSession

    from lineage.connect import dataframe_plan_json, sql_plan_json

    spark: Any = SparkSession.builder.remote(url).appName("lineage-cases").getOrCreate()
    create_case_tables(spark)
    plans: dict[str, dict[str, str]] = {}
    for case in CASES:
        if case.mode == "capture":
            plans[case.id] = {"skip": "a write executed and captured by the listener, not df.lineage()"}
            continue
        try:
            if case.mode == "sql":
                plans[case.id] = {"plan": sql_plan_json(spark, case.query)}  # type: ignore[arg-type]
            else:
                df = case.query(spark)  # type: ignore[operator]
                plans[case.id] = {"plan": dataframe_plan_json(df)}
                if case.operator.startswith("Checkpoint"):  # here, where checkpoint() was called
                    plans[case.id]["lineage"] = checked(case, df)
        except Exception as exc:  # noqa: BLE001 - reported per case
            plans[case.id] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    df = spark.table("lin.t").where("x > 1").selectExpr("x + 1 as x1", "upper(y) as uy")
    plans["__df_lineage__"] = {"text": str(df.lineage())}  # type: ignore[attr-defined]
    plans["__errors__"] = {"parse": condition(lambda: sql_plan_json(spark, "selec x frm lin.t")),
                           "missing_table": condition(lambda: spark.table("lin.no_such_table").lineage()),
                           "bad_column": condition(lambda: spark.table("lin.t").select("nope").lineage())}
    Path(out).write_text(json.dumps(plans))
    spark.stop()


def checked(case: PlanCase, df: Any) -> str:
    """``df.lineage()`` in this client checked as the classic case table checks it: "ok" or why not."""
    try:
        check(case, df.lineage())
    except AssertionError as exc:
        return f"AssertionError: {exc}"[:2000]
    return "ok"


def condition(fn: Any) -> str | None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - Spark's error condition is what the test checks
        get = getattr(exc, "getCondition", None)
        return str(get() if get is not None else type(exc).__name__)
    return None


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
