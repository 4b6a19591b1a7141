"""Where the time of a metadata-only DELETE of one partition goes, next to the by-hand DROP PARTITION: a profile.

    python bench/delete_profile.py [--statements N] [--partitions P] [--rules K]

One Spark 4.3 session (``bench/_spark.py``: local[2], the ``ushas`` catalog on SQLite), three tables of ``P``
(200) one-row partitions ``dt``. ``N`` (195) statements alternate, each on the next partition of its own table:
``DELETE FROM a WHERE dt = '…'`` (the catalog's one-call statement, ``io.ushas.spark.DeleteWhereExec``),
the same DELETE on ``b`` with ``spark.ushas.delete.metadataOnlyAtAnalysis=false`` (Spark's own path: the row-level plan, then
``OptimizeMetadataOnlyDeleteFromTable`` and ``deleteWhere``) and ``ALTER TABLE c DROP PARTITION (dt = '…')``
(the bench's cheapest by-hand side). Per side: the wall time of ``spark.sql(…)``, the bridge calls counted at the
Python end (``bridge.handle``) with their time in Python, the store's transactions (``Database.run``), the time of Spark's query planning phases (``QueryPlanningTracker``:
a command runs in the analysis phase) and of its rule executors (``RuleExecutor``'s metrics, reset before each
statement); then the ``K`` (12) rules that cost a side most. Prints medians. No lock needed for a short run.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)

SIDES = {
    "DELETE (one call)": ("a", "DELETE FROM ushas.p.a WHERE dt = '{d}'", "true"),
    "DELETE (Spark's path)": ("b", "DELETE FROM ushas.p.b WHERE dt = '{d}'", "false"),
    "DROP PARTITION (by hand)": ("c", "ALTER TABLE ushas.p.c DROP PARTITION (dt = '{d}')", "true"),
}


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:6.2f}" if xs else "     —"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--statements", type=int, default=195)
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--rules", type=int, default=12)
    args = ap.parse_args()
    from ushas_catalog.kv.base import Database
    from ushas_catalog.spark import bridge

    calls: list[tuple[str, float]] = []
    transactions: list[str] = []
    run = Database.run

    def counted_run(db: Database, fn: Any) -> Any:
        transactions.append(type(db).__name__)
        return run(db, fn)

    Database.run = counted_run  # type: ignore[method-assign]  # every transaction of the store (not joined ones)
    real = bridge.handle

    def handle(op: str, payload: str) -> str:
        t0 = time.perf_counter()
        out = real(op, payload)
        calls.append((op, time.perf_counter() - t0))
        return out

    bridge.handle = handle  # Backend.call looks it up at every call
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-delete-profile-"))
    try:
        spark = ushas_session("ushas-bench-delete-profile", root)
        jvm = spark.sparkContext._jvm
        executor = jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
        spark.sql("CREATE NAMESPACE ushas.p")
        for t, _, _ in SIDES.values():
            spark.sql(f"CREATE TABLE ushas.p.{t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
            spark.sql(f"INSERT INTO ushas.p.{t} SELECT CAST(id AS INT), format_string('d%03d', id) "
                      f"FROM range({args.partitions})")
        wall: dict[str, list[float]] = collections.defaultdict(list)
        python: dict[str, list[float]] = collections.defaultdict(list)
        ops: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        op_time: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
        txs: dict[str, list[int]] = collections.defaultdict(list)
        phases: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
        rules_total: dict[str, list[float]] = collections.defaultdict(list)
        per_rule: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        names = list(SIDES)
        warmup = 3 * len(names)
        for i in range(min(args.statements + warmup, args.partitions * len(names))):
            side = names[i % len(names)]
            _, sql, one_call = SIDES[side]
            text = sql.format(d=f"d{i // len(names):03d}")
            spark.conf.set("spark.ushas.delete.metadataOnlyAtAnalysis", one_call)
            executor.resetMetrics()
            calls.clear()
            transactions.clear()
            t0 = time.perf_counter()
            df = spark.sql(text)
            took = time.perf_counter() - t0
            if i < warmup:
                continue
            wall[side].append(took)
            python[side].append(sum(t for _, t in calls))
            txs[side].append(len(transactions))
            ops[side].update(op for op, _ in calls)
            for op, t in calls:
                op_time[(side, op)].append(t)
            tracker = df._jdf.queryExecution().tracker().phases()
            for phase in ("parsing", "analysis", "optimization", "planning"):
                got = tracker.get(phase)
                phases[(side, phase)].append(0.0 if got.isEmpty() else got.get().durationMs() / 1000)
            rules_total[side].append(executor.getCurrentMetrics().time() / 1e9)
            for line in executor.dumpTimeSpent().splitlines():
                m = re.match(r"\s*(\S+)\s+(\d+)\s*/\s*(\d+)", line)
                if m:
                    per_rule[side][m.group(1).rsplit(".", 1)[-1]] += int(m.group(3))
        n = {side: len(wall[side]) for side in names}
        print(f"{args.partitions} one-row partitions per table, {sum(n.values())} statements alternating, "
              f"load {os.getloadavg()[0]:.1f}; medians in ms")
        print("| | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        print("| wall time of `spark.sql(…)` | " + " | ".join(_ms(wall[s]) for s in names) + " |")
        print("| bridge calls | " + " | ".join(
            ", ".join(f"{op} x{c / n[s]:.1f} ({_ms(op_time[(s, op)]).strip()})" for op, c in ops[s].items())
            for s in names) + " |")
        print("| their time in Python | " + " | ".join(_ms(python[s]) for s in names) + " |")
        print("| the store's transactions (mean) | " + " | ".join(f"{statistics.mean(txs[s]):.1f}" for s in names)
              + " |")
        for phase in ("parsing", "analysis", "optimization", "planning"):
            print(f"| phase {phase} | " + " | ".join(_ms(phases[(s, phase)]) for s in names) + " |")
        print("| rule executors, all rules | " + " | ".join(_ms(rules_total[s]) for s in names) + " |")
        for s in names:
            top = ", ".join(f"{r} {t / n[s] / 1e6:.2f}" for r, t in per_rule[s].most_common(args.rules))
            print(f"  {s}: rules by mean ms per statement (total time): {top}")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
