"""Scaling of Spark plan lineage: generated analyzed plans of ~10^2, 10^3 and 10^4 nodes (plan
nodes + expression nodes) in three shapes — wide projections, deep nesting, 50-way unions — and,
for each, the time per node of every stage, measured in the same run:

    walk       JVM: PlanWriter serializing the analyzed plan (PlanWriter.walkNanos, wall)
    transport  one PlanWriter.exportPlan Py4J round trip (inline, TCP_NODELAY) minus the walk (wall)
    parse      lineage.plan.parse (JSON -> typed nodes; CPU time of this process)
    resolve    lineage.resolve.resolve (one pass) + every output column's leaves (CPU time)

Each stage's figure is its fastest of ``--repeat`` repetitions (shared machines: noise only adds).

The per-node figures must stay flat across sizes (linear time). Run:

    python bench/lineage_scaling.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

SIZES = (100, 1_000, 10_000)


@dataclass(frozen=True)
class Measure:
    shape: str
    target: int
    nodes: int
    walk: float
    transport: float
    parse: float
    resolve: float

    @property
    def total(self) -> float:
        return self.walk + self.transport + self.parse + self.resolve


def wide(spark: Any, n: int) -> Any:
    """One projection of n/4 expressions ((id + i) * 2 AS c_i: 4 expression nodes each)."""
    cols = max(1, n // 4)
    return spark.range(1).selectExpr(*[f"(id + {i}) * 2 as c{i}" for i in range(cols)])


def deep(spark: Any, n: int) -> Any:
    """n/4 nested projections of (a + 1) AS a (1 plan node + 3 expression nodes each)."""
    df = spark.range(1).selectExpr("id as a")
    for _ in range(max(1, n // 4)):
        df = df.selectExpr("a + 1 as a")
    return df


def unions(spark: Any, n: int) -> Any:
    """A 50-way union; each branch a chain of projections sized to reach ~n nodes."""
    per_branch = max(1, n // 50 // 4)
    branches = []
    for b in range(50):
        df = spark.range(1).selectExpr(f"id + {b} as a")
        for _ in range(per_branch - 1):
            df = df.selectExpr("a * 2 as a")
        branches.append(df)
    out = branches[0]
    for other in branches[1:]:
        out = out.union(other)
    return out


SHAPES: dict[str, Callable[[Any, int], Any]] = {"wide": wide, "deep": deep, "union50": unions}


def measure(spark: Any, shape: str, target: int, repeat: int) -> Measure:
    from lineage.plan import fetch_json, parse
    from lineage.resolve import resolve

    jvm = spark._jvm
    df = SHAPES[shape](spark, target)
    jplan = df._jdf.queryExecution().analyzed()
    writer = jvm.io.ushas.spark.PlanWriter
    fetch_json(jvm, jplan)  # warm-up (JIT, first temp file)
    walks, transports, parses, resolves = [], [], [], []
    nodes = 0
    for _ in range(repeat):
        walk = writer.walkNanos(jplan) / 1e9
        t0 = time.perf_counter()
        text = fetch_json(jvm, jplan)
        t1 = time.perf_counter()
        c0 = time.process_time()
        doc = parse(text)
        c1 = time.process_time()
        result = resolve(doc)
        for col in result.outputs:
            result.direct_sources(col)
        c2 = time.process_time()
        raw = json.loads(text)
        nodes = len(raw["nodes"]) + len(raw["exprs"])  # plan nodes + expression nodes
        walks.append(walk)
        transports.append(max(0.0, (t1 - t0) - walk))
        parses.append(c1 - c0)
        resolves.append(c2 - c1)
    # each stage's fastest repetition: the machines are shared, and noise only ever adds time
    return Measure(shape, target, nodes, min(walks), min(transports), min(parses), min(resolves))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from pyspark.sql import SparkSession

    from ushas_catalog.spark.jar import jar_path

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[1]").appName("lineage-scaling")
             .config("spark.jars", str(jar_path())).config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions", "-Xss64m").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{'shape':8} {'target':>7} {'nodes':>7} | µs/node: {'walk':>6} {'transp':>6} {'parse':>6} "
          f"{'resolve':>7} {'total':>6} | total ms | vs smallest")
    for shape in SHAPES:
        base = None
        for size in sizes:
            m = measure(spark, shape, size, args.repeat)
            per = m.total / m.nodes * 1e6
            base = base or per
            print(f"{m.shape:8} {m.target:>7} {m.nodes:>7} | {'':8} {m.walk / m.nodes * 1e6:6.2f} "
                  f"{m.transport / m.nodes * 1e6:6.2f} {m.parse / m.nodes * 1e6:6.2f} "
                  f"{m.resolve / m.nodes * 1e6:7.2f} {per:6.2f} | {m.total * 1e3:8.1f} | {per / base:5.2f}x")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
