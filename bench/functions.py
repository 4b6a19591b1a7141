"""Persistent functions and table metadata statements: the Ushas catalog against the Hive metastore inside
pyspark, in one SparkSession.

    python bench/functions.py [--quick]

One local[2] session with Hive support (embedded Derby) and the ``ushas`` catalog (embedded sqlite store,
this Python process as the backend). In ``spark_catalog.bench`` (Hive) and ``ushas.bench`` the same two
functions, a SQL function (``plus(x INT) RETURNS INT RETURN x + 1``) and a Hive class function
(``GenericUDFUpper``); the two sides alternating statement by statement, medians of:

- DESCRIBE FUNCTION of each (the rows collected in the JVM);
- function resolution: analysis of ``SELECT bench.f(...)`` (each query text new, so nothing is cached by
  text; the session catalog keeps a function it loaded once in its function registry, the ushas catalog
  asks the store on every resolution: ``loadFunction`` is one small transaction);
- CREATE FUNCTION and DROP FUNCTION;
- DESCRIBE TABLE, DESCRIBE TABLE EXTENDED and SHOW CREATE TABLE of the same partitioned table with a
  comment, properties and two partitions (``bench.t``; the ushas side through ``UshasExtensions``' DESCRIBE,
  whose detailed section comes from the store).

Prints each time and the ratio ushas / hive (goal: < 1 for DESCRIBE FUNCTION and resolution; the table
statements are information).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)

SIDES = ("spark_catalog", "ushas")
UPPER = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper"
INCLUDES = {
    "spark_catalog": "Hive metastore client in the driver, DataNucleus/JDBC to embedded Derby; a function it "
                     "resolved once is served from the session's function registry",
    "ushas": "shim -> Py4J callback -> this Python process -> sqlite store (one transaction per call, also per "
             "resolution); the statements through UshasExtensions (Spark 4.3 refuses them for V2 catalogs)",
}


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternate(fn: Callable[[str, int], Any], rounds: int) -> dict[str, float]:
    """Median time of ``fn(side, round)`` per side, the sides alternating (and which goes first too)."""
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for i in range(rounds):
        for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
            times[side].append(timed(lambda: fn(side, i)))
    return {side: statistics.median(t) for side, t in times.items()}


def run(spark: Any, repeats: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for side in SIDES:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {side}.bench")
    out["CREATE FUNCTION"] = alternate(lambda side, i: spark.sql(
        f"CREATE FUNCTION {side}.bench.c{i}(x INT) RETURNS INT RETURN x + {i}"), repeats)
    out["DROP FUNCTION"] = alternate(lambda side, i: spark.sql(f"DROP FUNCTION {side}.bench.c{i}"), repeats)
    for side in SIDES:
        spark.sql(f"CREATE FUNCTION {side}.bench.plus(x INT) RETURNS INT RETURN x + 1")
        spark.sql(f"CREATE FUNCTION {side}.bench.up AS '{UPPER}'")

    def describe(name: str) -> Callable[[str, int], None]:
        def fn(side: str, _: int) -> None:
            rows = spark.sql(f"DESCRIBE FUNCTION {side}.bench.{name}")._jdf.collectAsList()
            assert rows.size() >= 3, (side, rows.size())
        return fn

    def resolve(call: str) -> Callable[[str, int], None]:
        def fn(side: str, i: int) -> None:
            spark.sql(f"SELECT {side}.bench.{call.format(i=i)}")._jdf.queryExecution().analyzed()
        return fn

    for side in SIDES:  # warm-up: first-use costs (class loading, connections) are not what is measured
        describe("plus")(side, 0)
        describe("up")(side, 0)
        resolve("plus({i})")(side, 0)
        resolve("up('{i}')")(side, 0)
    out["DESCRIBE FUNCTION (SQL)"] = alternate(describe("plus"), repeats)
    out["DESCRIBE FUNCTION (class)"] = alternate(describe("up"), repeats)
    out["resolve SQL function"] = alternate(resolve("plus({i})"), repeats)
    out["resolve class function"] = alternate(resolve("up('{i}')"), repeats)
    out.update(tables(spark, repeats))
    for side in SIDES:
        spark.sql(f"DROP NAMESPACE {side}.bench CASCADE")
    return out


#: the table statements measured, each on ``<side>.bench.t``
TABLE_STATEMENTS = {"DESCRIBE TABLE": "DESCRIBE TABLE {t}", "DESCRIBE TABLE EXTENDED": "DESCRIBE TABLE EXTENDED {t}",
                    "SHOW CREATE TABLE": "SHOW CREATE TABLE {t}"}


def tables(spark: Any, repeats: int) -> dict[str, dict[str, float]]:
    """DESCRIBE [EXTENDED] and SHOW CREATE TABLE of one partitioned table on each side (rows collected)."""
    for side in SIDES:
        t = f"{side}.bench.t"
        spark.sql(f"CREATE TABLE {t} (id INT, v STRING COMMENT 'a value', dt STRING) USING parquet "
                  f"PARTITIONED BY (dt) COMMENT 'measured' TBLPROPERTIES ('team' = 'data')")
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt = '2024-01-01') PARTITION (dt = '2024-01-02')")

    def statement(sql: str) -> Callable[[str, int], None]:
        def fn(side: str, _: int) -> None:
            rows = spark.sql(sql.format(t=f"{side}.bench.t"))._jdf.collectAsList()
            assert rows.size() >= 1, (side, sql)
        return fn

    for side in SIDES:  # warm-up
        for sql in TABLE_STATEMENTS.values():
            statement(sql)(side, 0)
    return {key: alternate(statement(sql), repeats) for key, sql in TABLE_STATEMENTS.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeats = 7 if args.quick else 25
    with tempfile.TemporaryDirectory(prefix="ushas-bench-") as tmp:
        spark = ushas_session("ushas-bench-functions", Path(tmp), hive=True)
        try:
            times = run(spark, repeats)
        finally:
            spark.stop()
    print(f"Persistent functions and table statements: ushas (sqlite store) vs Hive metastore (embedded Derby), one local[2] session, "
          f"sides alternating; medians of {repeats} runs")
    for side in SIDES:
        print(f"  {side}: {INCLUDES[side]}")
    print(f"{'statement':<28}{'hive ms':>10}{'ushas ms':>10}{'ushas/hive':>12}  goal")
    ok = True
    for key, t in times.items():
        hive, ushas = t["spark_catalog"], t["ushas"]
        ratio = ushas / hive
        goal = 1.0 if key.startswith(("DESCRIBE FUNCTION", "resolve")) else None
        if goal is None:
            print(f"{key:<28}{hive * 1e3:>10.2f}{ushas * 1e3:>10.2f}{ratio:>12.3f}  (information)")
            continue
        ok &= ratio < goal
        print(f"{key:<28}{hive * 1e3:>10.2f}{ushas * 1e3:>10.2f}{ratio:>12.3f}  < {goal}"
              f"{'' if ratio < goal else '  MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
