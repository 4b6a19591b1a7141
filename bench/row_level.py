"""DELETE / UPDATE / MERGE INTO against the same change done by hand, and against Apache Iceberg, in one run.

    python bench/row_level.py [--quick] [--rows N] [--partitions P] [--rounds R] [--profile] [--no-iceberg]
                              [--only TEXT]

Two identical partitioned parquet tables (filled by 5 appends: several files per partition) of the ``ushas``
catalog (N rows, default 1,000,000; 100,000 with --quick; P partitions ``dt``, default 20): on ``a`` each
change is the row-level statement (docs/row-level.md), on ``b`` the same change written by hand the way it
is done without them: an ``INSERT OVERWRITE`` (dynamic partition overwrite) of the affected partitions with
their new rows computed by a query. The changes, in order, each timed on both tables (alternating which
goes first), results checked equal (count and sums of the columns and of the rows' hashes):

- MERGE of 1% of the rows (updates of existing ids and as many new ids) into the two newest partitions
  (``ON t.id = s.id AND t.dt IN (…)``, the usual upsert of a late batch);
- DELETE of one whole partition (metadata-only here), twice: by hand as the other rows, an overwrite of the
  affected partition with its new rows computed by a query (none), written ``INSERT INTO t REPLACE WHERE dt = …
  SELECT …`` (Spark's overwrite by a condition: with the bench's dynamic partition overwrite an ``INSERT
  OVERWRITE`` of no rows, even ``PARTITION (dt = …)``, replaces no partition), and by hand as ``ALTER TABLE DROP
  PARTITION`` (the cheapest way by hand: no query, no write). One such statement takes
  10-30 ms, which one run cannot time against the machine's noise: each round times :data:`REPEATS` of them
  per side, the two sides interleaved (statement k of each side on partition d(1 + k mod (P - 1)) of its
  table, which goes first alternating with k; both tables restored to the version before the row, untimed, each
  time the partitions run out), takes each side's median, then restores the tables (and after the first of the
  two deletes d000, untimed, so that the rows after it see the tables as before). Every statement's time is
  kept: the summary prints each side's median and spread over all rounds and the median of the per-repetition
  ratios. ``--profile`` runs the first of the two once, on d000;
- DELETE of 10 ids, each in another partition (a GDPR request; by hand: INSERT OVERWRITE of the
  partitions holding them);
- DELETE of scattered rows (``id % 100 = 7``, every partition);
- UPDATE of 1% of the rows (``id % 100 = 3``, every partition);
- the same two with ``id % 101``: append k holds the ids ≡ k (mod 5), so the rows of ``id % 100 = c`` are
  all in one file of five (the statement rewrites a fifth of the files, the overwrite all of them), those
  of ``id % 101 = c`` in every file (both rewrite everything).

Before the timed changes, every change runs once, untimed, on small copies of the tables (10,000 rows):
the first MERGE of a JVM otherwise pays its code's loading and compiling, whichever side goes first. And every
timed statement (both sides', Iceberg's, the control's) starts once the JVM has stopped compiling (:func:`settle`):
a new JVM compiles a statement's code during it and for a second or more after it, which the statement timed next
would otherwise pay for.

``--rounds R`` (default 3; 1 with --quick) runs the sequence R times and prints the medians. With Iceberg
(the default; ``--no-iceberg`` skips it) every round runs each side in a fresh process of its own, the two
alternating which goes first, under the same settings (local[2], a 3 GB driver, 2 shuffle partitions, AQE
on, no UI): ushas (Spark 4.3) fills its two tables and times the changes on both; Iceberg 1.12 (Spark
4.1.4 in its own virtualenv, bench/_iceberg.py; JDBC catalog on SQLite; copy-on-write) fills its table
with the same data and appends and times the row-level statements. Each process times the catalog-free
control query (3 times before its statements, 3 times after: the median): ushas ÷ Iceberg means something
only when the control's ratio (medians over the rounds) is within 0.85–1.15x; the control-normalized
ratio (ushas ÷ Iceberg divided by the control's ratio) is printed too, labelled as such. Each round's
table checksum is compared across the two catalogs. With ``--no-iceberg`` or ``--profile`` the rounds
run in this process, both tables restored to their filled version before each round (``restore_table``:
the same files).

``--profile`` prints each ushas statement's Spark jobs (tasks, executor seconds) and its driver time.
``--only TEXT`` runs only the changes whose name contains TEXT (e.g. ``--only "one partition"``), Iceberg's too.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

from _iceberg import CONTROL, cause, iceberg_session, iceberg_setup  # noqa: E402  (bench/ is the script's dir)

#: the appends that fill each table (each partition gets a file per append at least)
APPENDS = 5
#: changes timed over several statements per round (partitions d000, d001, …): the median per side is the round's
REPEATS = {"DELETE one partition": 30, "DELETE one partition vs DROP PARTITION": 30}
#: Iceberg's table properties: copy-on-write, and no shuffle before its writes (as ushas's tables: TABLE)
ICEBERG_PROPERTIES = ", ".join(f"'{k}' = '{v}'" for k, v in {
    "format-version": "2", "write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write", "write.distribution-mode": "none", "write.delete.distribution-mode": "none",
    "write.update.distribution-mode": "none", "write.merge.distribution-mode": "none"}.items())


#: :func:`settle`: the JVM's JIT is idle when it compiled less than this (ms) in a step (s); it waits at most this (s)
JIT_IDLE_MS, JIT_STEP_S, JIT_MOST_S = 5, 0.2, 10.0


def settle(spark: Any) -> float:
    """Waits until the session's JVM has stopped compiling (its JIT compilers' time grew by under
    :data:`JIT_IDLE_MS` in a step of :data:`JIT_STEP_S`; :data:`JIT_MOST_S` at most); answers the seconds waited.
    In a new JVM a statement's code is compiled while it runs and for a second or more after it (the compiler
    threads' CPU, on this bench's two cores, is as much as its tasks'): without the wait the next statement
    timed would pay for the compiling of the one before it, whichever side that was."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
    t0 = time.perf_counter()
    before = bean.getTotalCompilationTime()
    while time.perf_counter() - t0 < JIT_MOST_S:
        time.sleep(JIT_STEP_S)
        now = bean.getTotalCompilationTime()
        if now - before < JIT_IDLE_MS:
            break
        before = now
    return time.perf_counter() - t0


def timed(spark: Any, fn: Callable[[], Any]) -> float:
    """Seconds ``fn()`` (a statement of ``spark``) took, timed once the JVM is done compiling (:func:`settle`)."""
    settle(spark)
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class Profile:
    """With ``--profile``: the Spark jobs each statement ran (from the UI's REST API: tasks, executor
    seconds) and the rest of its time (the driver: planning, file listing, the catalog's commit)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"

    def run(self, group: str, sql: str) -> float:
        self.spark.sparkContext.setJobGroup(group, group)
        took = timed(self.spark, lambda: self.spark.sql(sql))
        self.spark.sparkContext.setJobGroup("other", "other")
        return took

    def report(self, group: str, wall: float) -> str:
        with urllib.request.urlopen(f"{self.url}/jobs", timeout=30) as answer:
            jobs = [j for j in json.load(answer) if j.get("jobGroup") == group]
        parts, busy = [], 0.0
        for j in sorted(jobs, key=lambda j: j["jobId"]):
            s = (_when(j.get("completionTime")) - _when(j["submissionTime"]))
            busy += s
            stages = []
            for sid in sorted(j["stageIds"]):
                with urllib.request.urlopen(f"{self.url}/stages/{sid}", timeout=30) as answer:
                    stages += [f"{st['numTasks']} tasks {st.get('executorRunTime', 0) / 1000:.1f} cpu-s"
                               for st in json.load(answer) if st.get("status") == "COMPLETE"]
            parts.append(f"job {s:.2f} s [{', '.join(stages)}]")
        return f"    {group}: {wall:.2f} s = jobs {busy:.2f} ({'; '.join(parts) or '-'}) + driver {wall - busy:.2f}"


def _when(stamp: str | None) -> float:
    from datetime import datetime

    return datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() if stamp else 0.0


def changes(partitions: int, rows: int) -> list[tuple[str, str, str]]:
    """(name, row-level statement on {t}, the same change by hand on {t}); ``src``: the MERGE's rows; ``{d}``:
    the partition of the changes of :data:`REPEATS` (d000 when run once)."""
    last = [f"d{p:03d}" for p in (partitions - 2, partitions - 1)]
    inlist = ", ".join(f"'{d}'" for d in last)
    gdpr = ", ".join(str(rows * k // 10 + 11) for k in range(10))  # one id in each of 10 partitions
    return [
        ("MERGE 1% into 2 partitions",
         f"MERGE INTO {{t}} t USING src s ON t.id = s.id AND t.dt IN ({inlist}) "
         f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
         f"INSERT OVERWRITE {{t}} SELECT id, v, dt FROM (SELECT t.* FROM {{t}} t LEFT ANTI JOIN src s ON t.id = s.id "
         f"WHERE t.dt IN ({inlist}) UNION ALL SELECT * FROM src)"),
        ("DELETE one partition",
         "DELETE FROM {t} WHERE dt = '{d}'",
         "INSERT INTO {t} REPLACE WHERE dt = '{d}' SELECT * FROM {t} WHERE dt = '{d}' AND NOT (dt = '{d}')"),
        ("DELETE one partition vs DROP PARTITION",
         "DELETE FROM {t} WHERE dt = '{d}'",
         "ALTER TABLE {t} DROP PARTITION (dt = '{d}')"),
        ("DELETE 10 ids (GDPR)",
         f"DELETE FROM {{t}} WHERE id IN ({gdpr})",
         f"INSERT OVERWRITE {{t}} SELECT id, v, dt FROM {{t}} "
         f"WHERE dt IN (SELECT DISTINCT dt FROM {{t}} WHERE id IN ({gdpr})) AND id NOT IN ({gdpr})"),
        ("DELETE scattered rows",
         "DELETE FROM {t} WHERE id % 100 = 7",
         "INSERT OVERWRITE {t} SELECT id, v, dt FROM {t} WHERE NOT (id % 100 = 7)"),
        ("UPDATE 1%",
         "UPDATE {t} SET v = v + 1 WHERE id % 100 = 3",
         "INSERT OVERWRITE {t} SELECT id, CASE WHEN id % 100 = 3 THEN v + 1 ELSE v END, dt FROM {t}"),
        ("DELETE rows of every file",
         "DELETE FROM {t} WHERE id % 101 = 7",
         "INSERT OVERWRITE {t} SELECT id, v, dt FROM {t} WHERE NOT (id % 101 = 7)"),
        ("UPDATE 1% in every file",
         "UPDATE {t} SET v = v + 1 WHERE id % 101 = 3",
         "INSERT OVERWRITE {t} SELECT id, CASE WHEN id % 101 = 3 THEN v + 1 ELSE v END, dt FROM {t}"),
    ]


def fill(spark: Any, tables: list[str], create: str, rows: int, parts: int) -> None:
    """The tables (``create``: CREATE TABLE … with ``{t}``) filled by :data:`APPENDS` appends, and the MERGE's
    source ``src``: 1% of the rows, half existing ids of the two newest partitions, half new ids."""
    data = spark.range(rows).selectExpr("CAST(id AS INT) AS id", "CAST(id * 7 % 1000 AS BIGINT) AS v",
                                        f"format_string('d%03d', CAST(id * {parts} / {rows} AS INT)) AS dt")
    for t in tables:
        spark.sql(create.format(t=t))
        for k in range(APPENDS):  # several appends: every partition has several files, as tables do
            data.where(f"id % {APPENDS} = {k}").writeTo(t).append()
    n = max(rows // 100, 2)
    first = rows - rows * 2 // parts
    spark.range(n).selectExpr(
        f"CAST(CASE WHEN id % 2 = 0 THEN {first} + id ELSE {rows} + id END AS INT) AS id",
        "CAST(-1 AS BIGINT) AS v",
        f"CASE WHEN id % 2 = 0 THEN format_string('d%03d', CAST(({first} + id) * {parts} / {rows} AS INT)) "
        f"ELSE 'd{parts - 1:03d}' END AS dt").cache().createOrReplaceTempView("src")
    spark.table("src").count()


#: rows of the untimed warm-up copies
WARM_ROWS = 10_000


def warm_up(spark: Any, create: str, tables: dict[str, str], parts: int) -> None:
    """Every change once, untimed, on small copies ``{name}_warm`` of the tables (``tables``: the table ->
    ``statement`` or ``by_hand``, which of the two it runs), so that no timed statement is its JVM's first of
    its kind. Run before :func:`fill` of the timed tables (it makes its own ``src``, which that replaces)."""
    fill(spark, [f"{t}_warm" for t in tables], create, WARM_ROWS, parts)
    for name, statement, by_hand in changes(parts, WARM_ROWS):
        # d000 for each change, but a second change of REPEATS another partition (the first deleted d000)
        d = repeat_partition(0, parts) if name in REPEATS and name != next(iter(REPEATS)) else "d000"
        for t, which in tables.items():
            spark.sql((statement if which == "statement" else by_hand).format(t=f"{t}_warm", d=d))
    # the warm-up's MERGE source (2 kB) is under the catalog's broadcast limit, the timed one (2 MB) over it: run
    # the MERGE once more with the catalog's rule off, so that Spark's plan is warm too (another catalog ignores it)
    _, merge, by_hand = changes(parts, WARM_ROWS)[0]
    spark.conf.set("spark.ushas.merge.broadcastSource", "false")
    try:
        for t, which in tables.items():
            spark.sql((merge if which == "statement" else by_hand).format(t=f"{t}_warm", d="d000"))
    finally:
        spark.conf.unset("spark.ushas.merge.broadcastSource")


def checksum(spark: Any, table: str) -> list[int]:
    """count, sum of id, of v and of the rows' hashes: equal tables have equal checksums (one scan each)."""
    return [int(x or 0) for x in spark.sql(f"SELECT count(*), sum(id), sum(v), sum(hash(id, v, dt)) "
                                           f"FROM {table}").first()]


def control(spark: Any, runs: int = 3) -> list[float]:
    """The control query's times (timed before and after a side's statements: the median of both is its)."""
    spark.sql(CONTROL).collect()  # warm the code paths once
    return [timed(spark, lambda: spark.sql(CONTROL).collect()) for _ in range(runs)]


# ---- ushas (Spark 4.3): the statements and the changes by hand, interleaved ------------------------------
#: the session settings both sides share (the Iceberg side's, bench/_iceberg.py: a 3 GB driver)
SAME = {"spark.driver.memory": "3g"}
#: ushas's tables: no shuffle before a write, like the Iceberg side's (since wave 18 a write's default is
#: ``hash``; the by-hand INSERT OVERWRITE would otherwise shuffle where the row-level statement does not)
TABLE = ("CREATE TABLE {t} (id INT, v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt) "
         "TBLPROPERTIES ('write.distribution-mode' = 'none')")


def ushas_side(args: argparse.Namespace, rows: int, parts: int, first: int = 0) -> dict[str, Any]:
    """``args.rounds`` rounds in this process (numbered from ``first``: the round decides which table goes
    first), both tables restored to their filled version between rounds."""
    from _spark import ushas_session

    root = Path(tempfile.mkdtemp(prefix="ushas-bench-rowlevel-"))
    conf = {"spark.sql.sources.partitionOverwriteMode": "dynamic", **SAME}
    if args.profile:
        conf.update({"spark.ui.enabled": "true", "spark.ui.port": "0"})
    spark = ushas_session("ushas-bench-row-level", root, conf=conf)
    profile = Profile(spark) if args.profile else None
    try:
        spark.sql("CREATE NAMESPACE ushas.bench")
        warm_up(spark, TABLE, {"ushas.bench.a": "statement", "ushas.bench.b": "by_hand"}, parts)
        fill(spark, ["ushas.bench.a", "ushas.bench.b"], TABLE, rows, parts)
        filled = {t: spark.sql(f"SELECT max(version) FROM ushas.bench.{t}.history").first()[0] for t in "ab"}
        before = control(spark)
        files = sum(1 for f in (root / "warehouse" / "bench.db").glob("[ab]/**/*")
                    if f.is_file() and not f.name.startswith((".", "_")))
        if first == 0:
            print(f"== ushas: row-level statements vs INSERT OVERWRITE by hand: {rows:,} rows, {parts} partitions, "
                  f"parquet, local[2], Spark {spark.version}, {files // 2} files per table, {args.rounds} round(s)",
                  flush=True)
        took: dict[str, dict[str, list[float]]] = {}
        reps: dict[str, dict[str, list[float]]] = {}
        sums: list[list[int]] = []
        for r in range(first, first + args.rounds):
            if r > first:
                for t in "ab":
                    spark.sql(f"CALL ushas.system.restore_table(table => 'bench.{t}', version => {filled[t]})")
            for i, (name, statement, by_hand) in enumerate(changes(parts, rows)):
                if args.only and args.only.lower() not in name.lower():
                    continue
                runs = [("a", statement), ("b", by_hand)]
                if (i + r) % 2:
                    runs.reverse()
                if name in REPEATS and profile is not None and name != next(iter(REPEATS)):
                    continue  # --profile: one DELETE of d000 (the first of them), not one per way by hand
                if name in REPEATS and profile is None:
                    for t, ts in repeated(spark, runs, REPEATS[name], parts, name == next(iter(REPEATS))).items():
                        took.setdefault(name, {}).setdefault(t, []).append(statistics.median(ts))
                        reps.setdefault(name, {}).setdefault(t, []).extend(ts)
                for t, sql in runs if name not in REPEATS or profile is not None else ():
                    text = sql.format(t=f"ushas.bench.{t}", d="d000")
                    s = timed(spark, lambda: spark.sql(text)) if profile is None else profile.run(f"{r}.{i}{t}", text)
                    took.setdefault(name, {}).setdefault(t, []).append(s)
                same = checksum(spark, "ushas.bench.a") == checksum(spark, "ushas.bench.b")
                a, b = took[name]["a"][-1], took[name]["b"][-1]
                print(f"  round {r + 1} {name:<28} row-level {a:6.3f} s  by hand {b:6.3f} s  {a / b:5.2f}x"
                      + ("" if same else "  RESULTS DIFFER"), flush=True)
                if profile is not None:
                    for t in "ab":
                        print(profile.report(f"{r}.{i}{t}", took[name][t][-1]), flush=True)
            sums.append(checksum(spark, "ushas.bench.a"))
        return {"version": spark.version, "took": took, "reps": reps, "sums": sums,
                "control": statistics.median(before + control(spark))}
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def repeat_partition(k: int, parts: int) -> str:
    """The partition of repetition ``k`` of a change of :data:`REPEATS`: d001 … d(P-1), then again (d000 is the one
    the first of them leaves deleted)."""
    return f"d{1 + k % (parts - 1):03d}"


def repeated(spark: Any, runs: list[tuple[str, str]], n: int, parts: int, then_d000: bool) -> dict[str, list[float]]:
    """A change of :data:`REPEATS` on ``ushas.bench.{a,b}``: ``n`` statements per side, interleaved: repetition k
    runs each side's statement on partition :func:`repeat_partition` of its table (``runs``: (table, statement) in
    the round's order, swapped every repetition); both tables restored to their version before, untimed, whenever
    the partitions run out; at the end restored again and, with ``then_d000``, the d000 statement run, untimed (the
    state the rows after it expect). Answers each side's times, in repetition order."""
    before = {t: spark.sql(f"SELECT max(version) FROM ushas.bench.{t}.history").first()[0] for t, _ in runs}

    def restore() -> None:
        for t, _ in runs:
            spark.sql(f"CALL ushas.system.restore_table(table => 'bench.{t}', version => {before[t]})")

    times: dict[str, list[float]] = {t: [] for t, _ in runs}
    for k in range(n):
        if k and k % (parts - 1) == 0:
            restore()
        for t, sql in runs if k % 2 == 0 else runs[::-1]:
            text = sql.format(t=f"ushas.bench.{t}", d=repeat_partition(k, parts))
            times[t].append(timed(spark, lambda: spark.sql(text)))
    restore()
    for t, sql in runs if then_d000 else ():
        spark.sql(sql.format(t=f"ushas.bench.{t}", d="d000"))
    return times


def spread(name: str, reps: dict[str, list[float]]) -> str:
    """One line on a change of :data:`REPEATS` over all rounds: each side's median and 10th-90th percentiles (ms), and
    the per-repetition ratios (row-level ÷ by hand of the same repetition k: the two ran back to back)."""
    a, b = reps["a"], reps["b"]
    ratios = sorted(x / y for x, y in zip(a, b))

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    def side(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1000:.1f} ms (p10-p90 {pct(xs, 0.1) * 1000:.1f}-{pct(xs, 0.9) * 1000:.1f})"

    return (f"  {name}: {len(a)} statements per side, interleaved: row-level {side(a)}, by hand {side(b)}; "
            f"median ÷ median {statistics.median(a) / statistics.median(b):.2f}x; per-repetition ratio median "
            f"{statistics.median(ratios):.2f}x (quartiles {pct(ratios, 0.25):.2f}-{pct(ratios, 0.75):.2f}x, "
            f"{sum(r <= 1 for r in ratios)} of {len(ratios)} ≤ 1x)")


# ---- Iceberg (Spark 4.1.4, its own virtualenv): the same statements ------------------------------------
def iceberg_side(root: Path, jars: str, rows: int, parts: int, rounds: int, only: str | None = None) -> dict[str, Any]:
    """Run by the virtualenv's python (``--side iceberg``); imports nothing of ushas."""
    spark = iceberg_session("iceberg-bench-row-level", root, jars, conf=SAME)
    create = ("CREATE TABLE {t} (id INT, v BIGINT, dt STRING) USING iceberg "
              f"PARTITIONED BY (dt) TBLPROPERTIES ({ICEBERG_PROPERTIES})")
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
        warm_up(spark, create, {"ice.bench.a": "statement"}, parts)
        fill(spark, ["ice.bench.a"], create, rows, parts)
        filled = spark.sql("SELECT snapshot_id FROM ice.bench.a.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0]
        before = control(spark)
        took: dict[str, list[float]] = {}
        sums = []
        for r in range(rounds):
            if r:
                spark.sql(f"CALL ice.system.rollback_to_snapshot('bench.a', {filled})")
            for name, statement, _ in changes(parts, rows):
                if only and only.lower() not in name.lower():
                    continue
                if name not in REPEATS:
                    took.setdefault(name, []).append(timed(spark, lambda: spark.sql(statement.format(t="ice.bench.a"))))
                    continue
                # as ushas's (repeated): the same partitions, their median; rolled back (then d000 again, untimed, after the first)
                snap = spark.sql("SELECT snapshot_id FROM ice.bench.a.snapshots ORDER BY committed_at DESC "
                                 "LIMIT 1").first()[0]
                times = [timed(spark, lambda: spark.sql(statement.format(t="ice.bench.a", d=repeat_partition(k, parts))))
                         for k in range(min(REPEATS[name], parts - 1))]
                spark.sql(f"CALL ice.system.rollback_to_snapshot('bench.a', {snap})")
                if name == next(iter(REPEATS)):
                    spark.sql(statement.format(t="ice.bench.a", d="d000"))
                took.setdefault(name, []).append(statistics.median(times))
            sums.append(checksum(spark, "ice.bench.a"))
        return {"version": spark.version, "took": took, "sums": sums,
                "control": statistics.median(before + control(spark))}
    finally:
        spark.stop()


def own_process(side: str, python: Path, jars: str, rows: int, parts: int, first: int,
                only: str | None = None) -> dict[str, Any]:
    """One round of ``side`` (``ushas`` / ``iceberg``) in a fresh process (a new JVM); its progress lines
    are echoed."""
    root = Path(tempfile.mkdtemp(prefix=f"{side}-bench-rowlevel-"))
    env = dict(os.environ) if side == "ushas" else {k: v for k, v in os.environ.items()
                                                    if k not in ("PYTHONPATH", "SPARK_HOME")}
    try:
        out = subprocess.run([str(python), __file__, "--side", side, str(root), jars, "--rows", str(rows),
                              "--partitions", str(parts), "--rounds", "1", "--first-round", str(first)]
                             + (["--only", only] if only else []),
                             capture_output=True, text=True, timeout=3600, env=env)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
        print(line, flush=True)
    raise RuntimeError(f"the {side} side failed: " + cause(out.stderr))


def fresh_rounds(rows: int, parts: int, rounds: int, only: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each round: ushas and Iceberg each in a fresh process, alternating which goes first; the rounds'
    results joined (``control``: each round's, a list)."""
    python, jar_paths = iceberg_setup()
    jars = ",".join(map(str, jar_paths))
    mine: dict[str, Any] = {"took": {}, "reps": {}, "sums": [], "control": []}
    ice: dict[str, Any] = {"took": {}, "sums": [], "control": []}
    for r in range(rounds):
        for side in ("ushas", "iceberg") if r % 2 == 0 else ("iceberg", "ushas"):
            got = own_process(side, Path(sys.executable) if side == "ushas" else python, jars, rows, parts, r, only)
            into = mine if side == "ushas" else ice
            into["version"] = got["version"]
            into["sums"] += got["sums"]
            into["control"].append(got["control"])
            for name, times in got.get("reps", {}).items():
                for t, ts in times.items():
                    into["reps"].setdefault(name, {}).setdefault(t, []).extend(ts)
            for name, took in got["took"].items():
                if side == "ushas":
                    for t, times in took.items():
                        into["took"].setdefault(name, {}).setdefault(t, []).extend(times)
                else:
                    into["took"].setdefault(name, []).extend(took)
            print(f"  round {r + 1} {side} (own process, Spark {got['version']}): control {got['control']:.2f} s"
                  + ("" if side == "ushas" else ", " + ", ".join(f"{n} {t[-1]:.2f} s" for n, t in got["took"].items())),
                  flush=True)
    return mine, ice


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--profile", action="store_true",
                    help="print each ushas statement's Spark jobs (tasks, executor seconds) and its driver time")
    ap.add_argument("--no-iceberg", action="store_true", help="skip the Iceberg side")
    ap.add_argument("--only", metavar="TEXT", help="only the changes whose name contains TEXT (case-insensitive)")
    ap.add_argument("--side", nargs=3, metavar=("SIDE", "ROOT", "JARS"), help=argparse.SUPPRESS)
    ap.add_argument("--first-round", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    parts = args.partitions
    if args.side:
        side, root, jars = args.side
        got = (ushas_side(args, rows, parts, args.first_round) if side == "ushas"
               else iceberg_side(Path(root), jars, rows, parts, args.rounds, args.only))
        print("RESULT " + json.dumps(got))
        return
    ice: dict[str, Any] | None = None
    reason = "--no-iceberg"
    if args.no_iceberg or args.profile:
        mine = ushas_side(args, rows, parts)
        mine["control"] = [mine["control"]]
        if args.profile and not args.no_iceberg:
            reason = "--profile (in one process)"
    else:
        print(f"== ushas (Spark 4.3) and Iceberg 1.12 (Spark 4.1.4, own virtualenv), {rows:,} rows, {parts} "
              f"partitions, {args.rounds} round(s), each side in a fresh process per round", flush=True)
        try:
            mine, ice = fresh_rounds(rows, parts, args.rounds, args.only)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"Iceberg side not run ({e}): the ushas side alone, in this process", flush=True)
            reason = str(e)
            mine = ushas_side(args, rows, parts)
            mine["control"] = [mine["control"]]
    print()
    ratio = None if ice is None else statistics.median(mine["control"]) / statistics.median(ice["control"])
    print(f"{rows:,} rows, {parts} partitions, medians of {args.rounds} round(s); ushas on Spark {mine['version']}"
          + ("" if ice is None else f", Iceberg 1.12 on Spark {ice['version']}"))
    print("| change | row-level s | by hand s | row-level ÷ by hand (goal ≤ 1x) | Iceberg s | ushas ÷ Iceberg "
          "(goal ≤ 1.2x) | ushas ÷ Iceberg ÷ control ratio (control-normalized) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, sides in mine["took"].items():
        a, b = statistics.median(sides["a"]), statistics.median(sides["b"])
        i = None if ice is None else statistics.median(ice["took"][name])
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.2f}x | {'—' if i is None else f'{i:.3f}'} | "
              f"{'—' if i is None else f'{a / i:.2f}x'} | "
              f"{'—' if i is None or ratio is None else f'{a / i / ratio:.2f}x'} |")
    for name, times in mine.get("reps", {}).items():
        print(spread(name, times))
    if ice is None or ratio is None:
        print(f"Iceberg: not run ({reason})")
        return
    print(f"control query (no catalog), per round: Spark {mine['version']} "
          f"{', '.join(f'{c:.2f}' for c in mine['control'])} s, Spark {ice['version']} "
          f"{', '.join(f'{c:.2f}' for c in ice['control'])} s; medians {statistics.median(mine['control']):.2f} / "
          f"{statistics.median(ice['control']):.2f} s: {ratio:.2f}x"
          + ("  (within 0.85-1.15x: the Iceberg ratios are valid)" if 0.85 <= ratio <= 1.15 else
             "  OUTSIDE 0.85-1.15x: the Iceberg ratios are not valid; only the control-normalized column, "
             "labelled as such, compares the catalogs"))
    print("table checksums (count, sums of id, v and the rows' hashes) per round, ushas vs Iceberg: "
          + ("equal" if mine["sums"] == ice["sums"] else f"DIFFER: ushas {mine['sums']}, Iceberg {ice['sums']}"))


if __name__ == "__main__":
    main()
