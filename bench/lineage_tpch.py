"""All-column lineage of the 22 TPC-H queries: ours vs sqlglot, measured in the same run.

    python bench/lineage_tpch.py [--rounds N] [--no-spark]

- ours (plan): ``df.lineage()`` on the analyzed plan of ``spark.sql(q)`` - the JVM walker, the
  transport to Python and the resolution (Spark's own parsing and analysis happen in
  ``spark.sql``; they are reported separately, as "spark.sql");
- ours (sql): ``lineage.sql.sql_lineage`` - lineage from the SQL text (sqlglot parsing and
  qualification, then one scope walk), DIRECT and INDIRECT;
- sqlglot: ``sqlglot.lineage.lineage(None, q, schema)`` - every output column in one call (its
  fastest form: one qualification, a shared cache across columns), DIRECT only; the ratios are
  taken against it;
- sqlglot-per-col: ``sqlglot.lineage.lineage(column, q, schema)`` once per output column (the
  usual way before sqlglot 30: each call parses and qualifies again), shown for reference.

Each figure is the median over ``--rounds`` rounds after one warm-up round. The ratios are
sqlglot's time over ours; the goal for the plan path is >= 10x.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
TPCH = ROOT / "tests" / "lineage" / "tpch"
CATALOG, DATABASE = "spark_catalog", "tpch"
GOAL = 10.0


@dataclass(frozen=True)
class Timing:
    query: str
    seconds: float


def load() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    tables = json.loads((TPCH / "schema.json").read_text())
    queries = {p.stem: p.read_text() for p in sorted((TPCH / "queries").glob("q*.sql"))}
    return tables, queries


def measure(queries: dict[str, str], run: Callable[[str], Any], rounds: int) -> dict[str, float]:
    """Median seconds per query over ``rounds`` rounds, after a warm-up round."""
    for sql in queries.values():
        run(sql)
    samples: dict[str, list[float]] = {name: [] for name in queries}
    for _ in range(rounds):
        for name, sql in queries.items():
            start = time.perf_counter()
            run(sql)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def output_names(sql: str, schema: dict[str, Any]) -> list[str]:
    """The output column names sqlglot gives the query (for one ``lineage()`` call per column)."""
    from sqlglot.lineage import lineage as sqlglot_lineage

    return list(sqlglot_lineage(None, sql, schema=schema, dialect="spark", catalog=CATALOG, db=DATABASE))


def start_spark(tables: dict[str, dict[str, str]], workdir: Path) -> Any:
    from pyspark.sql import SparkSession

    from ushas_catalog.jar import jar_path

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("ushas-bench-lineage-tpch")
             .config("spark.jars", str(jar_path()))
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", str(workdir / "warehouse"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    for table, columns in tables.items():
        cols = ", ".join(f"{c} {t}" for c, t in columns.items())
        spark.sql(f"CREATE TABLE IF NOT EXISTS {DATABASE}.{table} ({cols}) USING parquet")
    spark.catalog.setCurrentDatabase(DATABASE)
    return spark


def report(columns: dict[str, dict[str, float]], baseline: str) -> None:
    names = list(next(iter(columns.values())))
    header = ["query"] + [f"{c} ms" for c in columns] + [f"{baseline}/{c}" for c in columns if c != baseline]
    rows = []
    for name in names + ["total"]:
        values = {c: (sum(t.values()) if name == "total" else t[name]) for c, t in columns.items()}
        row = [name] + [f"{v * 1000:.2f}" for v in values.values()]
        row += [f"{values[baseline] / values[c]:.1f}x" for c in columns if c != baseline]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (median), default 5")
    parser.add_argument("--no-spark", action="store_true", help="only the SQL-text producers")
    args = parser.parse_args(argv)

    from sqlglot.lineage import lineage as sqlglot_lineage

    from lineage.sql import sql_lineage

    tables, queries = load()
    schema = {CATALOG: {DATABASE: tables}}
    columns: dict[str, dict[str, float]] = {}
    columns["sqlglot"] = measure(queries, lambda q: sqlglot_lineage(
        None, q, schema=schema, dialect="spark", catalog=CATALOG, db=DATABASE), args.rounds)
    columns["sqlglot-per-col"] = measure(queries, lambda q: [sqlglot_lineage(
        c, q, schema=schema, dialect="spark", catalog=CATALOG, db=DATABASE) for c in output_names(q, schema)],
        args.rounds)
    columns["ours-sql"] = measure(queries, lambda q: sql_lineage(
        q, schema, catalog=CATALOG, database=DATABASE), args.rounds)
    plan_status = "skipped (--no-spark)"
    if not args.no_spark:
        try:
            from lineage.dataframe import lineage_of_dataframe as lineage_of
        except ImportError as exc:
            lineage_of = None
            plan_status = f"not available: {exc}"
        if lineage_of is not None:
            with tempfile.TemporaryDirectory(prefix="ushas-bench-") as tmp:
                spark = start_spark(tables, Path(tmp))
                try:
                    frames = {name: spark.sql(sql) for name, sql in queries.items()}
                    by_sql = {sql: frames[name] for name, sql in queries.items()}
                    columns["spark.sql"] = measure(queries, lambda q: spark.sql(q), args.rounds)
                    columns["ours-plan"] = measure(queries, lambda q: lineage_of(by_sql[q]), args.rounds)
                    plan_status = "measured"
                finally:
                    spark.stop()

    print(f"All-column lineage of the 22 TPC-H queries, median of {args.rounds} rounds (ms per query)")
    print(f"ours-plan: {plan_status}")
    report(columns, "sqlglot")
    if "ours-plan" in columns:
        ratio = sum(columns["sqlglot"].values()) / sum(columns["ours-plan"].values())
        verdict = "meets" if ratio >= GOAL else "MISSES"
        print(f"\nplan lineage vs sqlglot.lineage: {ratio:.1f}x faster in total ({verdict} the {GOAL:.0f}x goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
