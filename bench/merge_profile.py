"""The bench's MERGE (bench/row_level.py) with the catalog's MERGE rule on and off, against the same change by
hand, in one process: wall time, CPU time of the driver JVM and Spark jobs of each statement.

    python bench/merge_profile.py [--rows N] [--source-rows S] [--whole] [--rounds R] [--explain]

One table of N rows (default 10,000,000) in 20 partitions, filled as bench/row_level.py fills it; the MERGE's
source ``src`` as there (1% of the rows: half existing ids of the two newest partitions, half new ids) or, with
``--source-rows``, that many rows; ``--whole`` drops the partition predicate from the ON condition (the group
is the whole table). Each round runs every mode once, in turn (the order rotating), the table restored to its
filled version before each statement (``restore_table``: the same files):

- ``probe``: the catalog's default (``MergeProbe``, wave 20: one pass over the target, the unmatched source rows
  written after it in the same commit, the files no source key can be in skipped by their footers);
- ``scan``: the catalog's rule (``MergeBroadcastJoin``) applied whatever the source's size (its limit lifted to
  Spark's broadcast threshold), the source rows no target row matches found by one scan of the target's keys
  (``MergeUnmatchedSource``, wave 18, ``spark.ushas.merge.unmatchedSource=scan``);
- ``join``: the same rule with wave 17's form of those rows (a semi join, the distinct keys, an anti join);
- ``spark``: the rule off (``spark.ushas.merge.broadcastSource=false``): Spark's full outer join;
- ``by hand``: bench/row_level.py's INSERT OVERWRITE.

CPU time is the JVM's (utime + stime from /proc, executors included in local mode): other processes' load moves
it less than wall time; ``--threads`` splits it by the JVM's threads (/proc/<pid>/task: executor tasks, JIT
compilers, GC, the rest: the driver, broadcasts, scheduler, listeners). Medians over the rounds after the first.
Prints ratios against by hand and Spark's plan.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

from row_level import TABLE, Profile, changes, fill  # noqa: E402  (bench/ is the script's dir)

PARTS = 20
#: mode -> session settings while it runs
MODES: dict[str, dict[str, str]] = {
    "probe": {"spark.ushas.merge.unmatchedSource": "probe"},
    "scan": {"spark.ushas.merge.broadcastSource.maxBytes": "10m", "spark.ushas.merge.unmatchedSource": "scan"},
    "join": {"spark.ushas.merge.broadcastSource.maxBytes": "10m", "spark.ushas.merge.unmatchedSource": "join"},
    "spark": {"spark.ushas.merge.broadcastSource": "false"},
    "by hand": {},
}


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process ``pid`` (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: thread name prefixes (as /proc shows them, at most 15 characters) -> the group they count in
THREAD_GROUPS = [("Executor task", "tasks"), ("C1 CompilerThre", "jit"), ("C2 CompilerThre", "jit"),
                 ("GC Thread", "gc"), ("G1 ", "gc"), ("VM Thread", "gc")]


def thread_seconds(pid: int) -> dict[str, float]:
    """utime + stime of the process ``pid``'s threads by group (:data:`THREAD_GROUPS`, else ``rest``)."""
    out = {"tasks": 0.0, "jit": 0.0, "gc": 0.0, "rest": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        group = next((g for prefix, g in THREAD_GROUPS if name.startswith(prefix)), "rest")
        out[group] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--source-rows", type=int, default=0, help="the source's rows (default: 1%% of --rows)")
    ap.add_argument("--whole", action="store_true", help="no partition predicate: the group is the whole table")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--explain", action="store_true", help="print each mode's physical plan once")
    ap.add_argument("--jobs", action="store_true", help="print each statement's jobs (Spark's UI on)")
    ap.add_argument("--threads", action="store_true", help="split each statement's CPU time by the JVM's threads")
    ap.add_argument("--modes", default=",".join(MODES), help="the modes to run, comma-separated (default: all)")
    args = ap.parse_args()
    from _spark import ushas_session

    root = Path(tempfile.mkdtemp(prefix="ushas-bench-merge-profile-"))
    conf = {"spark.sql.sources.partitionOverwriteMode": "dynamic", "spark.driver.memory": "3g"}
    if args.jobs:
        conf.update({"spark.ui.enabled": "true", "spark.ui.port": "0"})
    spark = ushas_session("ushas-bench-merge-profile", root, conf=conf)
    profile = Profile(spark) if args.jobs else None
    try:
        pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        tracker = spark.sparkContext.statusTracker()
        spark.sql("CREATE NAMESPACE ushas.bench")
        _, merge, by_hand = changes(PARTS, args.rows)[0]
        modes = {m: MODES[m] for m in args.modes.split(",")}
        if args.whole:  # by hand would rewrite the whole table: not timed
            merge = merge.replace(merge[merge.index(" AND t.dt IN"):merge.index(" WHEN MATCHED")], "")
            modes.pop("by hand", None)
        fill(spark, ["ushas.bench.w"], TABLE, 10_000, PARTS)  # warm-up: every mode once on a small table
        for mode, conf in modes.items():
            run(spark, conf, (by_hand if mode == "by hand" else merge).format(t="ushas.bench.w"))
        fill(spark, ["ushas.bench.a"], TABLE, args.rows, PARTS)
        if args.source_rows:
            spark.table("src").limit(args.source_rows).cache().createOrReplaceTempView("src_small")
            spark.table("src_small").count()
            merge = merge.replace("USING src s", "USING src_small s")
            by_hand = by_hand.replace("src", "src_small")
        statements = {m: (by_hand if m == "by hand" else merge).format(t="ushas.bench.a") for m in modes}
        filled = spark.sql("SELECT max(version) FROM ushas.bench.a.history").first()[0]
        source = spark.sql(f"SELECT * FROM {'src_small' if args.source_rows else 'src'}")
        print(f"== MERGE: {args.rows:,} rows, {PARTS} partitions, source {source.count():,} rows "
              f"({source._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()} bytes by Spark's estimate), "
              f"{'ON t.id = s.id (the whole table)' if args.whole else 'ON t.id = s.id AND t.dt IN (2 partitions)'}, "
              f"Spark {spark.version}, {args.rounds} rounds", flush=True)
        if args.explain:
            for mode, conf in modes.items():
                with settings(spark, conf):
                    print(f"-- {mode}\n" + spark.sql(f"EXPLAIN {statements[mode]}").first()[0], flush=True)
        took: dict[str, list[tuple[float, float, int]]] = {m: [] for m in modes}
        threads: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
        order = list(modes)
        for r in range(args.rounds):
            for mode in order[r % len(order):] + order[:r % len(order)]:
                spark.sql(f"CALL ushas.system.restore_table(table => 'bench.a', version => {filled})")
                jobs = len(tracker.getJobIdsForGroup(None) or [])
                split = thread_seconds(pid) if args.threads else {}
                cpu, t0 = cpu_seconds(pid), time.perf_counter()
                if profile is None:
                    run(spark, modes[mode], statements[mode])
                else:
                    with settings(spark, modes[mode]):
                        profile.run(f"{r}.{mode}", statements[mode])
                wall, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu
                if args.threads:
                    after = thread_seconds(pid)
                    threads[mode].append({g: after[g] - split.get(g, 0.0) for g in after})
                took[mode].append((wall, cpu, len(tracker.getJobIdsForGroup(None if profile is None
                                                                           else f"{r}.{mode}") or [])
                                   - (jobs if profile is None else 0)))
                if profile is not None:
                    print(profile.report(f"{r}.{mode}", wall), flush=True)
            print(f"  round {r + 1}: " + "; ".join(f"{m} {w:.2f} s {c:.2f} cpu-s {j} jobs"
                                                   for m, ((w, c, j),) in ((m, took[m][-1:]) for m in modes)),
                  flush=True)
        med = {m: (statistics.median(x[0] for x in v[1:] or v), statistics.median(x[1] for x in v[1:] or v),
                   statistics.median(x[2] for x in v[1:] or v)) for m, v in took.items()}
        for m, (w, c, j) in med.items():
            hand = med.get("by hand")
            spark_plan = med.get("spark")
            print(f"{m:>8}: {w:.2f} s, {c:.2f} cpu-s, {j:g} jobs"
                  + (f"; ÷ by hand {w / hand[0]:.2f}x ({c / hand[1]:.2f}x cpu)" if hand else "")
                  + (f"; ÷ Spark's plan {w / spark_plan[0]:.2f}x ({c / spark_plan[1]:.2f}x cpu)" if spark_plan else ""),
                  flush=True)
            if threads[m]:
                rounds = threads[m][1:] or threads[m]
                print(" " * 10 + "cpu-s by thread: " + ", ".join(
                    f"{g} {statistics.median(r[g] for r in rounds):.2f}" for g in rounds[0]), flush=True)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


class settings:
    """The session settings ``conf`` while the block runs."""

    def __init__(self, spark: Any, conf: dict[str, str]) -> None:
        self.spark, self.conf = spark, conf

    def __enter__(self) -> None:
        for k, v in self.conf.items():
            self.spark.conf.set(k, v)

    def __exit__(self, *exc: object) -> None:
        for k in self.conf:
            self.spark.conf.unset(k)


def run(spark: Any, conf: dict[str, str], sql: str) -> None:
    with settings(spark, conf):
        spark.sql(sql)


if __name__ == "__main__":
    main()
