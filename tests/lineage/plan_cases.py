"""The lineage case format shared by the table-driven plan lineage tests (test_plan_lineage.py:
queries; test_plan_lineage_writes.py: writes, MERGE / UPDATE / DELETE included;
test_plan_lineage_ushas.py: the ``ushas`` catalog) and by the tests that replay their cases
(tests/remote, tests/capture): the case type, how a result is checked, the tables the cases read.

A case: SQL text (analyzed WITHOUT executing, commands included) or a function building a
DataFrame, or a function performing a write whose analyzed plan is captured; and the expected
lineage, exact:

- ``direct``: output column name -> {leaf column: subtype code} (I identity, T transformation,
  A aggregation); every output column must be listed (``{}``: no source, e.g. a literal);
  a repeated output name gets ``~2``, ``~3``... suffixes;
- ``indirect``: dataset-wide INDIRECT dependencies as ``"SUBTYPE:leaf"``;
- ``scoped``: column-scoped INDIRECT dependencies per output column (CONDITIONAL, WINDOW, the
  filters of a scalar subquery...); columns not listed must have none;
- ``target``: for writes, the written dataset.

Leaf names drop the ``spark_catalog.`` prefix; in-query sources are ``<VALUES>``,
``<range(0, 10, 1)>``; paths under the test's temp directory start with ``{tmp}``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Union

from lineage.dataframe import lineage_of_dataframe, lineage_of_plan, lineage_of_sql
from lineage.model import EdgeKind, LineageResult

CODES = {"IDENTITY": "I", "TRANSFORMATION": "T", "AGGREGATION": "A"}

Query = Union[str, Callable[..., Any]]


@dataclass(frozen=True)
class PlanCase:
    id: str
    operator: str  # machine-readable coverage row (docs/lineage-coverage.md)
    query: Query
    direct: Mapping[str, Mapping[str, str]]
    indirect: frozenset[str] = frozenset()
    scoped: Mapping[str, frozenset[str]] = field(default_factory=dict)
    target: str | None = None
    mode: str = "sql"  # "sql" (analyzed, not executed) | "dataframe" | "capture" (write executed) | "plan" (a JVM plan)


def leaf_name(node: Any, tmp: str = "") -> str:
    name = str(node)
    if name.startswith("spark_catalog."):
        name = name[len("spark_catalog."):]
    name = re.sub(r"<(VALUES|LogicalRDD|ExternalRDD)@\d+>", r"<\1>", name)
    if tmp:
        name = name.replace("file:" + tmp, "{tmp}").replace(tmp, "{tmp}")
    return name


@dataclass(frozen=True)
class Observed:
    direct: dict[str, dict[str, str]]
    indirect: frozenset[str]
    scoped: dict[str, frozenset[str]]
    target: str | None


def observe(result: LineageResult, tmp: str = "") -> Observed:
    names: dict[Any, str] = {}
    seen: dict[str, int] = {}
    for col in result.outputs:
        n = seen.get(col.name, 0) + 1
        seen[col.name] = n
        names[col] = col.name if n == 1 else f"{col.name}~{n}"
    direct = {names[c]: {leaf_name(leaf, tmp): CODES[sub.value]
                         for leaf, sub in result.direct_sources(c).items()} for c in result.outputs}
    indirect: set[str] = set()
    scoped: dict[str, set[str]] = {}
    for e in result.edges:
        if e.kind is not EdgeKind.INDIRECT:
            continue
        label = f"{e.subtype.value}:{leaf_name(e.source, tmp)}"
        if e.target is None:
            indirect.add(label)
        else:
            scoped.setdefault(names[e.target], set()).add(label)
    return Observed(direct, frozenset(indirect), {k: frozenset(v) for k, v in scoped.items()},
                    leaf_name(result.target, tmp) if result.target else None)


def check(case: PlanCase, result: LineageResult, tmp: str = "") -> None:
    got = observe(result, tmp)
    assert got.direct == {k: dict(v) for k, v in case.direct.items()}, f"DIRECT\n{result}"
    assert got.indirect == case.indirect, f"INDIRECT (dataset-wide)\n{result}"
    assert got.scoped == {k: v for k, v in case.scoped.items() if v}, f"INDIRECT (scoped)\n{result}"
    assert got.target == case.target
    assert result.completeness == 1.0, f"incomplete: {result.unresolved}\n{result}"


def fs(*items: str) -> frozenset[str]:
    return frozenset(items)


DB = "lin"
T, U, H, P, S = "lin.t", "lin.u", "lin.h", "lin.p", "lin.sales"


def create_case_tables(spark: Any) -> Any:
    """The tables and view the cases read (also over Spark Connect: tests/remote/client_cases.py)."""
    spark.sql(f"create database if not exists {DB}")
    spark.sql(f"create table if not exists {T} (x int, y string, s struct<a:int,b:string>, arr array<int>, "
              "m map<string,int>) using parquet")
    spark.sql(f"create table if not exists {U} (k int, v double, w string) using parquet")
    spark.sql(f"create table if not exists {H} (k int, w string) stored as textfile")
    spark.sql(f"create table if not exists {P} (id int, dt string) using parquet partitioned by (dt)")
    spark.sql(f"create table if not exists {S} (region string, product string, q1 int, q2 int, amount double) "
              "using parquet")
    spark.sql("create table if not exists lin.mt (k int, v int) using parquet")
    spark.sql("create table if not exists lin.ev (s timestamp, e timestamp, v double, k string) using parquet")
    spark.sql(f"create or replace view lin.vw as select x, y from {T} where x > 0")
    return spark


def captured_write(spark: Any, case: PlanCase, tmp: Path) -> LineageResult:
    """The lineage of the write a ``capture`` case performs, from the plan a listener captured."""
    jvm = spark._jvm
    capture = jvm.io.ushas.spark.plan.PlanCapture(32)
    manager = spark._jsparkSession.listenerManager()
    manager.register(capture)
    try:
        case.query(spark, tmp)
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
        for i in reversed(range(capture.size())):
            if capture.rootName(i) not in ("AppendData",) or i == 0:
                plan = capture.plan(i)
                return lineage_of_plan(spark, plan)
        raise AssertionError("no write captured")
    finally:
        manager.unregister(capture)


def lineage_of_case(spark: Any, case: PlanCase, tmp: Path) -> LineageResult:
    """The lineage of a ``sql``, ``dataframe`` or ``capture`` case."""
    if case.mode == "sql":
        return lineage_of_sql(spark, case.query)  # type: ignore[arg-type]
    if case.mode == "dataframe":
        return lineage_of_dataframe(case.query(spark))  # type: ignore[operator]
    return captured_write(spark, case, tmp)
