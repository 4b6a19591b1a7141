"""Metadata and system tables read with Spark SQL vs the same data through the CLI's JSON, measured
in one run (docs/benchmarks.md):

    partitions   ``SELECT * FROM ushas.sales.orders.partitions WHERE dt >= X`` (1% of N partitions)
                 vs ``ushas partitions ushas.sales.orders --json`` filtered by the caller (the CLI
                 narrows by a prefix only), and the full table both ways (SQL: count and sum).
    lineage      ``SELECT * FROM ushas.system.column_lineage WHERE target_table = T`` (1% of N edges)
                 vs ``ushas lineage upstream T --depth 1 --json`` (the CLI's one-hop edges into T).

SQL reads end in ``collect()`` (rows as Python objects: Spark's own row transfer to Python is a good
part of the time), the lineage read also in ``toArrow()``. Times are wall seconds of the fastest of
``--repeat`` runs (the CLI's include its process start, which is what a caller of
``ushas ... --json`` pays); ratio = SQL / CLI, goal <= 1. Run:

    python bench/sql_tables.py [--quick] [--partitions 1000000] [--edges 1000000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGETS = 100


def best(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def cli(uri: str, *args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, *args, "--json"],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def build_partitions(ms: Any, n: int) -> None:
    ms.add_partitions("ushas.sales.orders", [{"dt": f"p{i:07d}"} for i in range(n)])


def build_edges(ms: Any, n: int) -> None:
    """n column edges: runs of 1000 edges, each writing one of TARGETS tables from one source."""
    from lineage.model import ColumnNode, Dataset, Edge, EdgeKind, EdgeSubtype
    from lineage.store import CapturedRun, LineageStore, Run, RunStatus

    store = LineageStore(ms.db, ms.project, layout=ms.layout)
    src = Dataset.table("ushas", "sales", "source")
    per_run = 1000
    t0 = 1_700_000_000_000
    for r in range(max(1, n // per_run)):
        target = Dataset.table("ushas", "sales", f"t_{r % TARGETS}")
        edges = tuple(Edge(ColumnNode(f"c{i}", target), ColumnNode(f"s{i}", src), EdgeKind.DIRECT,
                           EdgeSubtype.TRANSFORMATION, f"upper(s{i})") for i in range(per_run))
        run = Run(uuid.uuid4(), "bench", "bench", r, "bench", t0 + r * 1000, t0 + r * 1000 + 500,
                  RunStatus.COMPLETE)
        store.record(CapturedRun(run, (src,), (target,), edges))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="10^5 partitions and edges")
    p.add_argument("--partitions", type=int)
    p.add_argument("--edges", type=int)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", choices=("partitions", "lineage"), help="measure one of the two")
    p.add_argument("--root", type=Path, help="the store's directory: built there the first time, reused after")
    args = p.parse_args()
    size = 100_000 if args.quick else 1_000_000
    args.partitions = args.partitions or size
    args.edges = args.edges or size
    from _spark import ushas_session

    from ushas_catalog.metastore import Metastore

    root = args.root or Path(tempfile.mkdtemp(prefix="ushas-bench-sql-tables-"))
    root.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{root / 'ushas.db'}"
    built = (root / "ushas.db").exists()
    spark = ushas_session("bench-sql-tables", root)
    ms = Metastore.open(uri, project="default")
    if built:
        print(f"reusing the store in {root}", flush=True)
    else:
        spark.sql("CREATE NAMESPACE ushas.sales")
        spark.sql("CREATE TABLE ushas.sales.orders (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
        t = time.perf_counter()
        build_partitions(ms, args.partitions)
        print(f"built {args.partitions} partitions in {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        build_edges(ms, args.edges)
        print(f"built {args.edges} column edges in {time.perf_counter() - t:.1f} s in {root}", flush=True)

    cut = f"p{args.partitions - args.partitions // 100:07d}"
    selected = args.partitions - int(cut[1:])
    rows: list[tuple[str, float, float, int]] = []

    if args.only != "lineage":
        measure_partitions(spark, uri, args, cut, selected, rows)
    if args.only != "partitions":
        measure_lineage(spark, uri, args, rows)
    print(f"\n{'read':<52} {'SQL s':>8} {'CLI s':>8} {'ratio':>6}")
    for name, s, c, _ in rows:
        print(f"{name:<52} {s:8.2f} {c:8.2f} {s / c:6.2f}")
    spark.stop()
    return 0


def measure_partitions(spark: Any, uri: str, args: Any, cut: str, selected: int, rows: list[Any]) -> None:
    query = f"SELECT * FROM ushas.sales.orders.partitions WHERE dt >= '{cut}'"
    sql_t, got = best(args.repeat, lambda: spark.sql(query).collect())
    assert len(got) == selected, (len(got), selected)
    cli_t, parts = best(args.repeat, lambda: [x for x in cli(uri, "partitions", "ushas.sales.orders")
                                              if x["spec"]["dt"] >= cut])
    assert len(parts) == selected
    rows.append((f"partitions, dt >= cut ({selected} of {args.partitions})", sql_t, cli_t, selected))

    sql_t, got = best(1, lambda: spark.sql(
        "SELECT count(*) AS n, max(dt) AS m, sum(files) AS f FROM ushas.sales.orders.partitions").first())
    assert got.n == args.partitions
    cli_t, parts = best(1, lambda: cli(uri, "partitions", "ushas.sales.orders"))
    rows.append((f"partitions, all {args.partitions}", sql_t, cli_t, len(parts)))


def measure_lineage(spark: Any, uri: str, args: Any, rows: list[Any]) -> None:
    target = "ushas.sales.t_7"
    query = f"SELECT * FROM ushas.system.column_lineage WHERE target_table = '{target}'"
    sql_t, got = best(args.repeat, lambda: spark.sql(query).collect())
    arrow_t, table = best(args.repeat, lambda: spark.sql(query).toArrow())
    cli_t, answer = best(args.repeat, lambda: cli(uri, "lineage", "upstream", target, "--depth", "1"))
    rows.append((f"column_lineage, target_table = t ({len(got)} of {args.edges})", sql_t, cli_t, len(got)))
    rows.append(("  the same, SQL read with toArrow()", arrow_t, cli_t, table.num_rows))
    assert len(got) == 1000 * len(range(7, max(1, args.edges // 1000), TARGETS)), len(got)
    assert len(answer["columns"]) == 1000, len(answer["columns"])


if __name__ == "__main__":
    sys.exit(main())
