"""The Ushas catalog against the Hive metastore inside pyspark, side by side in one SparkSession.

    python bench/spark_catalog.py [--quick] [--partitions N] [--cache on|off]

One local[2] session with Hive support (embedded Derby) and the ``ushas`` catalog (embedded sqlite
store, this Python process as the backend). The same statements on the same (empty, partitioned parquet)
table in ``spark_catalog`` (Hive) and in ``ushas``, the two sides alternating statement by statement:

- CREATE TABLE (median of several tables);
- ALTER TABLE ADD of N partitions (one statement; N = 10,000, 1,000 with --quick);
- SHOW PARTITIONS: the statement with its N rows collected in the JVM (median), and, for information,
  the same with the rows collected into Python (``.collect()``: adds pickling costs equal on both sides);
- planning of a one-partition SELECT (analysis + optimisation + physical planning, median);
- DROP TABLE (of the table with N partitions).

Prints each time and the ratio ushas / hive (goal: all < 1; SHOW PARTITIONS and DROP TABLE < 0.1).
``--cache off`` (the default) sets ``spark.sql.catalog.ushas.cache.enabled=false``: the uncached path.
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
INCLUDES = {
    "spark_catalog": "Hive metastore client in the driver, DataNucleus/JDBC to embedded Derby; ADD creates each "
                     "partition directory, DROP removes the partitions' metadata and the table's directory tree",
    "ushas": "shim -> Py4J callback -> this Python process -> sqlite store (one transaction per call); ADD "
             "registers partitions without directories, DROP moves the name to the dropped list (undroppable) "
             "and removes the table's directory",
}


def session(root: Path, cache: bool) -> Any:
    return ushas_session("ushas-bench", root, hive=True,
                         conf={"spark.sql.catalog.ushas.cache.enabled": str(cache).lower()})


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


def run(spark: Any, n: int, creates: int, repeats: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    ddl = "(id BIGINT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)"
    for side in SIDES:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {side}.bench")
    out["CREATE TABLE"] = alternate(lambda side, i: spark.sql(f"CREATE TABLE {side}.bench.c{i} {ddl}"), creates)
    for side in SIDES:
        for i in range(creates):
            spark.sql(f"DROP TABLE {side}.bench.c{i}")
        spark.sql(f"CREATE TABLE {side}.bench.t {ddl}")
    specs = " ".join(f"PARTITION (dt='p{i:06d}')" for i in range(n))
    out[f"ADD {n} PARTITIONS"] = alternate(lambda side, _: spark.sql(f"ALTER TABLE {side}.bench.t ADD {specs}"), 1)

    def show_jvm(side: str, _: int) -> None:
        rows = spark.sql(f"SHOW PARTITIONS {side}.bench.t")._jdf.collectAsList()
        assert rows.size() == n, (side, rows.size())

    def show_python(side: str, _: int) -> None:
        rows = spark.sql(f"SHOW PARTITIONS {side}.bench.t").collect()
        assert len(rows) == n, (side, len(rows))

    out["SHOW PARTITIONS"] = alternate(show_jvm, repeats)
    out["SHOW PARTITIONS .collect()"] = alternate(show_python, repeats)

    def plan(side: str, _: int) -> None:
        spark.sql(f"SELECT * FROM {side}.bench.t WHERE dt = 'p{n // 2:06d}'")._jdf.queryExecution().executedPlan()

    for side in SIDES:
        plan(side, 0)  # warm-up: first-use costs (class loading, connections) are not planning
    out["plan 1-partition SELECT"] = alternate(plan, repeats)
    out["DROP TABLE"] = alternate(lambda side, _: spark.sql(f"DROP TABLE {side}.bench.t"), 1)
    for side in SIDES:
        spark.sql(f"DROP NAMESPACE {side}.bench CASCADE")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 partitions instead of 10,000")
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--cache", choices=("on", "off"), default="off",
                        help="spark.sql.catalog.ushas.cache.enabled (default off: the uncached path)")
    args = parser.parse_args()
    n = args.partitions or (1_000 if args.quick else 10_000)
    creates, repeats = (3, 3) if args.quick else (5, 5)
    with tempfile.TemporaryDirectory(prefix="ushas-bench-") as tmp:
        spark = session(Path(tmp), args.cache == "on")
        try:
            # warm both sides once (first CREATE/SHOW pays JIT and connection set-up on either side)
            for cat in SIDES:
                spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.warm")
                spark.sql(f"CREATE TABLE {cat}.warm.w (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
                spark.sql(f"ALTER TABLE {cat}.warm.w ADD PARTITION (dt='a')")
                spark.sql(f"SHOW PARTITIONS {cat}.warm.w").collect()
                spark.sql(f"DROP NAMESPACE {cat}.warm CASCADE")
            times = run(spark, n, creates, repeats)
        finally:
            spark.stop()
    print(f"Spark catalog: ushas (sqlite store, cache {args.cache}) vs Hive metastore (embedded Derby), "
          f"{n} partitions, one local[2] session, sides alternating; medians of {creates} CREATE / {repeats} SHOW "
          f"and plan runs, one ADD and one DROP each")
    for side in SIDES:
        print(f"  {side}: {INCLUDES[side]}")
    print(f"{'statement':<28}{'hive s':>10}{'ushas s':>10}{'ushas/hive':>12}  goal")
    ok = True
    for key, t in times.items():
        hive, ushas = t["spark_catalog"], t["ushas"]
        ratio = ushas / hive
        if key.endswith(".collect()"):
            print(f"{key:<28}{hive:>10.4f}{ushas:>10.4f}{ratio:>12.3f}  (information: + rows pickled to Python)")
            continue
        goal = 0.1 if key in ("SHOW PARTITIONS", "DROP TABLE") else 1.0
        ok &= ratio < goal
        print(f"{key:<28}{hive:>10.4f}{ushas:>10.4f}{ratio:>12.3f}  < {goal}{'' if ratio < goal else '  MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
