"""The Ushas catalog against the Hive metastore inside pyspark, side by side in one SparkSession.

    python bench/spark_catalog.py [--quick] [--partitions N]

One local[2] session with Hive support (embedded Derby) and the ``ushas`` catalog (embedded sqlite
store, this Python process as the backend). The same statements on the same (empty, partitioned parquet)
table in ``spark_catalog`` (Hive) and in ``ushas``:

- CREATE TABLE (median of several tables);
- ALTER TABLE ADD of N partitions (one statement; N = 10,000, 1,000 with --quick);
- SHOW PARTITIONS (collect all N);
- planning of a one-partition SELECT (analysis + optimisation + physical planning, median);
- DROP TABLE (of the table with N partitions).

Prints each time and the ratio ushas / hive (goal: all < 1; SHOW PARTITIONS and DROP TABLE < 0.1).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))


def session(root: Path) -> Any:
    from pyspark.sql import SparkSession

    from ushas_catalog.spark import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for d in ("warehouse", "hive", "derby"):
        (root / d).mkdir()
    builder = (SparkSession.builder.master("local[2]").appName("ushas-bench")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.warehouse.dir", str(root / "hive"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={root / 'derby'}")
               .config("javax.jdo.option.ConnectionURL",
                       f"jdbc:derby:;databaseName={root / 'derby' / 'metastore_db'};create=true")
               .enableHiveSupport())
    builder = configure(builder, name="ushas", uri=f"sqlite:///{root / 'ushas.db'}",
                        warehouse=str(root / "warehouse"), lineage=False)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_side(spark: Any, catalog: str, n: int, creates: int, plans: int) -> dict[str, float]:
    db = f"{catalog}.bench"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {db}")
    ddl = "(id BIGINT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)"
    out: dict[str, float] = {}
    create_times = []
    for i in range(creates):
        create_times.append(timed(lambda: spark.sql(f"CREATE TABLE {db}.c{i} {ddl}")))
    for i in range(creates):
        spark.sql(f"DROP TABLE {db}.c{i}")
    out["CREATE TABLE"] = statistics.median(create_times)

    spark.sql(f"CREATE TABLE {db}.t {ddl}")
    specs = " ".join(f"PARTITION (dt='p{i:06d}')" for i in range(n))
    out[f"ADD {n} PARTITIONS"] = timed(lambda: spark.sql(f"ALTER TABLE {db}.t ADD {specs}"))
    shown: list[Any] = []
    out["SHOW PARTITIONS"] = timed(lambda: shown.extend(spark.sql(f"SHOW PARTITIONS {db}.t").collect()))
    assert len(shown) == n, (catalog, len(shown))

    def plan() -> None:
        spark.sql(f"SELECT * FROM {db}.t WHERE dt = 'p{n // 2:06d}'")._jdf.queryExecution().executedPlan()

    plan()  # warm-up: first-use costs (class loading, connections) are not planning
    out["plan 1-partition SELECT"] = statistics.median(timed(plan) for _ in range(plans))
    out["DROP TABLE"] = timed(lambda: spark.sql(f"DROP TABLE {db}.t"))
    spark.sql(f"DROP NAMESPACE {db} CASCADE")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 partitions instead of 10,000")
    parser.add_argument("--partitions", type=int, default=None)
    args = parser.parse_args()
    n = args.partitions or (1_000 if args.quick else 10_000)
    creates, plans = (3, 5) if args.quick else (5, 9)
    with tempfile.TemporaryDirectory(prefix="ushas-bench-") as tmp:
        spark = session(Path(tmp))
        try:
            # warm both sides once (first CREATE/SHOW pays JIT and connection set-up on either side)
            for cat in ("spark_catalog", "ushas"):
                spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.warm")
                spark.sql(f"CREATE TABLE {cat}.warm.w (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
                spark.sql(f"ALTER TABLE {cat}.warm.w ADD PARTITION (dt='a')")
                spark.sql(f"SHOW PARTITIONS {cat}.warm.w").collect()
                spark.sql(f"DROP NAMESPACE {cat}.warm CASCADE")
            hive = run_side(spark, "spark_catalog", n, creates, plans)
            ushas = run_side(spark, "ushas", n, creates, plans)
        finally:
            spark.stop()
    print(f"Spark catalog: ushas (sqlite store) vs Hive metastore (embedded Derby), {n} partitions, one session")
    print(f"{'statement':<28}{'hive s':>10}{'ushas s':>10}{'ushas/hive':>12}  goal")
    ok = True
    for key in hive:
        ratio = ushas[key] / hive[key]
        goal = 0.1 if key in ("SHOW PARTITIONS", "DROP TABLE") else 1.0
        ok &= ratio < goal
        print(f"{key:<28}{hive[key]:>10.4f}{ushas[key]:>10.4f}{ratio:>12.3f}  < {goal}{'' if ratio < goal else '  MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
