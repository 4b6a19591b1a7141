"""The data path: planning reads of a many-partition table on a filesystem with object-store latency.

    python bench/data_path.py [--quick] [--partitions N] [--data-partitions N] [--latency-ms MS]
                              [--repeats N] [--once-over S] [--pruning-sizes 1000,10000,...]
                              [--cache on|off] [--skip spark,repair,pruning]

One table of N partitions ``dt=YYYY-MM-DD/hr=H`` (N = 100,000; 2,000 with --quick), a few hundred
of which hold small parquet files; the others are empty directories (each costs a listing the same
way a partition with files does; generating 100,000 files would only make the set-up slow). The tree
is read through ``slowfs://``, bench/java/LatencyFileSystem.java (benchmark-only, compiled here): the
local disk charging S3's latency, 10 ms by default, per LIST page of 1,000 entries, per HEAD
(getFileStatus / exists) and per GET (open), and counting those calls. One local[2] session with
Hive support, the same data seen three ways:

- ``ushas``: a table of the ushas catalog whose partitions are registered with their locations
  through the Metastore API (``add_partitions`` in batches);
- ``hive``: a table in the Hive metastore (embedded Derby), partitions registered by
  ``MSCK REPAIR TABLE``, ``spark.sql.hive.manageFilesourcePartitions=true``: metastore-side pruning,
  then only the selected partitions' directories are listed (the best Hive can do);
- ``root listing``: ``spark.read.parquet('slowfs://…/tree')`` with partition discovery: every
  directory of the table listed, today's path for paths and for tables that do not track partitions.

Measured, sides alternating, a fresh DataFrame each time, every plan cold
(``spark.sql.hive.filesourcePartitionFileCacheSize=0``: the first query of an application):
1. planning (``queryExecution().executedPlan()``) and then running, of a one-partition query, a
   query selecting 1% of the partitions, and a join whose dimension side selects three days
   (dynamic partition pruning: the plan is checked for it); FileSystem calls of each phase; ratios
   ushas vs root listing (goal >= 100x faster planning at 100,000 partitions) and ushas vs Hive
   (goal <= 0.5x);
2. registering the existing tree: Hive's ``MSCK REPAIR TABLE`` vs ``ushas repair`` (goal <= 0.1x;
   skipped with a message while the command does not exist);
3. without Spark: the catalog's partition pruning at 10^3..10^6 partitions (10^5 with --quick), in
   µs per selected partition (goal: flat).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))  # else: the tree PYTHONPATH names

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)

from ushas_catalog.metastore import Metastore  # noqa: E402
from ushas_catalog.model.partitions import Partition  # noqa: E402

BENCH = Path(__file__).resolve().parent
JAVA_SOURCE = BENCH / "java" / "LatencyFileSystem.java"
FS_CLASS = "io.ushas.bench.LatencyFileSystem"
DAY0 = dt.date(2000, 1, 1)
HOURS = 24
SCHEMA = "id BIGINT, v STRING, dt DATE, hr INT"
ROWS_PER_DATA_PARTITION = 200
SIDES = ("ushas", "hive", "root listing")
S3_MODEL = ("slowfs = local disk + {ms} ms per LIST page (1,000 entries), per HEAD (getFileStatus / exists) "
            "and per GET (open; bytes free): S3 charges 10-50 ms per LIST and HEAD request. Spark lists many "
            "directories with a parallel job: 2 task slots here (local[2])")


# --- the latency filesystem ----------------------------------------------------------------------

def latency_jar() -> Path:
    """bench/java/LatencyFileSystem.java compiled against pyspark's jars, cached by source hash."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    key = hashlib.sha256(JAVA_SOURCE.read_bytes() + pyspark.__version__.encode()).hexdigest()[:12]
    out = Path(tempfile.gettempdir()) / f"ushas-bench-latencyfs-{key}"
    jar = out / "latencyfs.jar"
    if jar.exists():
        return jar
    classes = Path(tempfile.mkdtemp(prefix="latencyfs-"))
    try:
        subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", f"{jars}/*", str(JAVA_SOURCE)],
                       check=True)
        out.mkdir(parents=True, exist_ok=True)
        tmp_jar = out / f"latencyfs.{os.getpid()}.jar"
        subprocess.run(["jar", "cf", str(tmp_jar), "-C", str(classes), "."], check=True)
        tmp_jar.replace(jar)
    finally:
        shutil.rmtree(classes, ignore_errors=True)
    return jar


@dataclass(frozen=True)
class FsCalls:
    lists: int = 0
    heads: int = 0
    gets: int = 0

    def __str__(self) -> str:
        return f"{self.lists}/{self.heads}/{self.gets}"


class SlowFs:
    """The JVM side of LatencyFileSystem: its latency and call counters (static, one per JVM)."""

    def __init__(self, spark: Any, latency_ms: int) -> None:
        self.cls = getattr(spark._jvm, FS_CLASS)
        self.latency_ms = latency_ms
        self.cls.setLatencyMs(latency_ms)

    @contextlib.contextmanager
    def free(self) -> Iterator[None]:
        """No latency inside (set-up, and both sides of the repair comparison)."""
        self.cls.setLatencyMs(0)
        try:
            yield
        finally:
            self.cls.setLatencyMs(self.latency_ms)

    def reset(self) -> None:
        self.cls.reset()

    def calls(self) -> FsCalls:
        lists, heads, gets, _slept = (int(x) for x in str(self.cls.counts()).split())
        return FsCalls(lists, heads, gets)


# --- the table ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tree:
    """N partitions (dt, hr): partition i is day DAY0 + i // 24, hour i % 24; ``data`` holds files."""

    root: Path
    n: int
    data: tuple[int, ...]

    @staticmethod
    def values(i: int) -> tuple[dt.date, int]:
        return DAY0 + dt.timedelta(days=i // HOURS), i % HOURS

    @classmethod
    def dirname(cls, i: int) -> str:
        day, hr = cls.values(i)
        return f"dt={day.isoformat()}/hr={hr}"

    @property
    def days(self) -> int:
        return (self.n + HOURS - 1) // HOURS


def make_tree(spark: Any, root: Path, n: int, data_partitions: int) -> Tree:
    """Small parquet files in ``data_partitions`` partitions spread evenly, empty directories elsewhere."""
    data = tuple(sorted({i * n // data_partitions for i in range(data_partitions)}))
    tree = Tree(root, n, data)
    rows = spark.createDataFrame([Tree.values(i) for i in data], "dt DATE, hr INT")
    (rows.crossJoin(spark.range(ROWS_PER_DATA_PARTITION)).selectExpr("id", "cast(id as string) v", "dt", "hr")
     .repartition("dt", "hr").write.partitionBy("dt", "hr").mode("overwrite").parquet(f"file://{root}"))
    (root / "_SUCCESS").unlink(missing_ok=True)
    for i in range(n):
        (root / Tree.dirname(i)).mkdir(parents=True, exist_ok=True)
    return tree


def register_ushas(ms: Metastore, name: str, tree: Tree, batch: int = 5000) -> float:
    """The tree's partitions into the ushas table ``name``, at their slowfs locations; seconds taken."""
    t0 = time.perf_counter()
    for start in range(0, tree.n, batch):
        parts = []
        for i in range(start, min(start + batch, tree.n)):
            day, hr = Tree.values(i)
            parts.append(Partition(values={"dt": day, "hr": hr}, location=f"slowfs://{tree.root}/{Tree.dirname(i)}"))
        ms.add_partitions(name, parts)
    return time.perf_counter() - t0


# --- the three queries ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    name: str
    sql: Callable[[str, int], str]  # (table, repeat) -> SQL
    selects: Callable[[Tree], int]  # how many partitions it selects


def queries(tree: Tree) -> list[Query]:
    def one(table: str, r: int) -> str:
        day, hr = Tree.values(tree.data[(len(tree.data) * (2 * r + 1)) // 7 % len(tree.data)])
        return f"SELECT count(*), sum(id) FROM {table} WHERE dt = DATE'{day}' AND hr = {hr}"

    span = max(1, round(tree.n / 100 / HOURS))  # days: 1% of the partitions (at least one day)

    def pct(table: str, r: int) -> str:
        first = DAY0 + dt.timedelta(days=(tree.days // 3 + r * span) % max(1, tree.days - span))
        return (f"SELECT count(*), sum(id) FROM {table} "
                f"WHERE dt BETWEEN DATE'{first}' AND DATE'{first + dt.timedelta(days=span - 1)}'")

    def dpp(table: str, r: int) -> str:
        return (f"SELECT count(*), sum(f.id) FROM {table} f JOIN dim d ON f.dt = d.dt "
                f"WHERE d.label = 'pick{r % 3}'")

    return [Query("one partition", one, lambda t: 1),
            Query(f"1% ({span} days)", pct, lambda t: min(t.n, span * HOURS)),
            Query("DPP join (3 days)", dpp, lambda t: 3 * HOURS)]


def make_dim(spark: Any, tree: Tree, path: Path) -> None:
    """The dimension table ``dim`` (on the plain local filesystem): one row per day, labels
    pick0..pick2 on three days with data each, 'other' elsewhere."""
    days_with_data = sorted({Tree.values(i)[0] for i in tree.data})
    picks: dict[dt.date, str] = {}
    for k in range(3):
        for day in days_with_data[k::3][:3]:
            picks[day] = f"pick{k}"
    rows = [(DAY0 + dt.timedelta(days=d), picks.get(DAY0 + dt.timedelta(days=d), "other")) for d in range(tree.days)]
    spark.createDataFrame(rows, "dt DATE, label STRING").coalesce(1).write.mode("overwrite").parquet(f"file://{path}")
    spark.read.parquet(f"file://{path}").createOrReplaceTempView("dim")


@dataclass
class Sample:
    plan_s: float
    run_s: float
    plan_calls: FsCalls
    run_calls: FsCalls
    rows: list[Any]
    dpp: bool


def measure(spark: Any, fs: SlowFs, side: str, sql: str, tree: Tree, tables: dict[str, str]) -> Sample:
    """Plan (from the table lookup or the path's listing on) and then run one fresh query."""
    fs.reset()
    t0 = time.perf_counter()
    if side == "root listing":
        spark.read.schema(SCHEMA).parquet(f"slowfs://{tree.root}").createOrReplaceTempView("root_listing")
    df = spark.sql(sql.replace("{T}", tables[side]))
    plan = df._jdf.queryExecution().executedPlan()
    t1 = time.perf_counter()
    plan_calls = fs.calls()
    fs.reset()
    rows = [tuple(str(r.get(i)) for i in range(r.size())) for r in df._jdf.collectAsList()]  # reuses the plan
    t2 = time.perf_counter()
    return Sample(t1 - t0, t2 - t1, plan_calls, fs.calls(), rows, "dynamicpruning" in plan.toString().lower())


def run_queries(spark: Any, fs: SlowFs, tree: Tree, tables: dict[str, str], repeats: int,
                once_over_s: float) -> dict[str, dict[str, list[Sample]]]:
    """Each query ``repeats`` times per side, sides alternating (and which goes first); a side whose
    first run took more than ``once_over_s`` seconds is not repeated."""
    out: dict[str, dict[str, list[Sample]]] = {}
    disagreements: list[str] = []
    for q in queries(tree):
        samples: dict[str, list[Sample]] = {side: [] for side in SIDES}
        for r in range(repeats):
            order = SIDES[r % len(SIDES):] + SIDES[:r % len(SIDES)]
            results = {}
            for side in order:
                if samples[side] and samples[side][0].plan_s + samples[side][0].run_s > once_over_s:
                    continue
                s = measure(spark, fs, side, q.sql("{T}", r), tree, tables)
                print(f"  ({q.name}, {side}, run {r + 1}: plan {s.plan_s:.2f} s, run {s.run_s:.2f} s)",
                      file=sys.stderr, flush=True)
                samples[side].append(s)
                results[side] = s.rows
            if len({tuple(v) for v in results.values()}) > 1:
                print(f"  !! {q.name}, repeat {r}: the sides returned different rows: {results}")
                disagreements.append(q.name)
        out[q.name] = samples
    print("rows: " + (f"the sides DIFFERED in {len(disagreements)} runs (above)" if disagreements
                      else "every side returned the same rows in every run"))
    return out


def report_queries(results: dict[str, dict[str, list[Sample]]], tree: Tree) -> None:
    print(f"{'query':<20}{'side':<14}{'plan s':>9}{'run s':>9}  {'FS calls plan':>14}  {'run':>10}  DPP")
    print(f"{'':<20}{'':<14}{'(median)':>9}{'':>9}  {'LIST/HEAD/GET':>14}  {'':>10}")
    qs = {q.name: q for q in queries(tree)}
    for name, samples in results.items():
        for side in SIDES:
            ss = samples[side]
            if not ss:
                continue
            plan = statistics.median(s.plan_s for s in ss)
            run = statistics.median(s.run_s for s in ss)
            dpp = ("yes" if all(s.dpp for s in ss) else "NO") if "DPP" in name else ""
            runs = f"  ({len(ss)} run{'s' if len(ss) > 1 else ''})" if len(ss) < max(map(len, samples.values())) else ""
            print(f"{name if side == SIDES[0] else '':<20}{side:<14}{plan:>9.3f}{run:>9.3f}  "
                  f"{str(ss[-1].plan_calls):>14}  {str(ss[-1].run_calls):>10}  {dpp}{runs}")
        p = {side: statistics.median(s.plan_s for s in samples[side]) for side in SIDES}
        pr = {side: statistics.median(s.plan_s + s.run_s for s in samples[side]) for side in SIDES}
        root_ratio = p["root listing"] / p["ushas"]
        hive_ratio = p["ushas"] / p["hive"]
        print(f"{'':<20}planning: root listing ÷ ushas = {root_ratio:,.1f}x (goal >= 100x at 100,000 partitions"
              f"{'' if root_ratio >= 100 else ', not met'}); ushas ÷ hive = {hive_ratio:.2f} (goal <= 0.5"
              f"{'' if hive_ratio <= 0.5 else ', not met'})")
        print(f"{'':<20}plan + run: root listing ÷ ushas = {pr['root listing'] / pr['ushas']:,.1f}x; "
              f"ushas ÷ hive = {pr['ushas'] / pr['hive']:.2f}; the query selects {qs[name].selects(tree)} partitions")
        if samples["ushas"][-1].plan_calls.lists >= tree.n:
            print(f"{'':<20}(ushas listed every directory of the table: its reads still go through the "
                  f"table-root listing)")


# --- repair ---------------------------------------------------------------------------------------

def ushas_repair_cli(spark: Any, uri: str, table: str) -> float | str:
    """Seconds of ``ushas repair TABLE`` (in this process, as the CLI runs it), or why it was skipped."""
    from ushas_catalog.cli import build_parser, main as cli_main

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    if "repair" not in commands:
        return "skipped: this build's CLI has no `ushas repair` command yet"
    err = io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(["--uri", uri, "repair", table])
    except SystemExit as exc:  # argparse refusing the arguments
        rc = exc.code if isinstance(exc.code, int) else 2
    took = time.perf_counter() - t0
    if rc != 0:
        return f"skipped: `ushas repair {table}` exited {rc}: {err.getvalue().strip()[-300:]}"
    return took


def ushas_repair_sql(spark: Any, uri: str, table: str) -> float | str:
    """Seconds of ``MSCK REPAIR TABLE`` on a ushas table (the session extension), or why it was skipped."""
    t0 = time.perf_counter()
    try:
        spark.sql(f"MSCK REPAIR TABLE {table}")
    except Exception as exc:  # noqa: BLE001  (Spark's refusal while the extension is missing)
        return f"skipped: Spark refused it: {str(exc).strip().splitlines()[0][:200]}"
    return time.perf_counter() - t0


USHAS_REPAIRS = (("ushas repair TABLE (CLI, in-process)", "ushas.bench.r", ushas_repair_cli),
                 ("MSCK REPAIR TABLE on ushas (SQL)", "ushas.bench.r2", ushas_repair_sql))


def run_repair(spark: Any, fs: SlowFs, ms: Metastore, uri: str, tree: Tree) -> None:
    """Hive's MSCK on the table the queries use (latency off: the sides list the same local tree),
    then the ushas forms, each on its own table at the same directory (file://)."""
    print(f"repair {tree.n:,} partition directories (no latency: every side lists the same local tree)")
    with fs.free():
        fs.reset()
        t0 = time.perf_counter()
        spark.sql("MSCK REPAIR TABLE spark_catalog.bench.t")
        hive_s = time.perf_counter() - t0
        calls = fs.calls()
        hive_n = spark.sql("SHOW PARTITIONS spark_catalog.bench.t")._jdf.count()
        print(f"  hive MSCK REPAIR TABLE: {hive_s:8.2f} s, {hive_n:,} partitions registered, FS calls "
              f"LIST/HEAD/GET {calls}")
        for label, table, repair in USHAS_REPAIRS:
            spark.sql(f"CREATE TABLE {table} ({SCHEMA}) USING parquet PARTITIONED BY (dt, hr) "
                      f"LOCATION 'file://{tree.root}'")
            took = repair(spark, uri, table)
            if isinstance(took, str):
                print(f"  {label}: {took}")
                continue
            n = sum(1 for _ in ms.list_partitions(table))
            ratio = took / hive_s
            print(f"  {label}: {took:8.2f} s, {n:,} partitions registered: ÷ hive = {ratio:.3f} (goal <= 0.1"
                  f"{'' if ratio <= 0.1 else ', not met'}){'' if n == hive_n else '  !! partition counts differ'}")


# --- catalog pruning without Spark ----------------------------------------------------------------

def find_pruner() -> tuple[str, Callable[[Metastore, str, dict[str, Any]], int]]:
    """The catalog's pruning entry point, as the shim calls it for a scan:
    ``spark_reads.list_files(ms, request)`` with the partition filter (key ranges over the ordered
    partition keys, then the residual filter). Returns (label, fn(ms, table, filters) -> number of
    partitions selected)."""
    from ushas_catalog.spark.reads import list_files

    def prune(ms: Metastore, name: str, filters: dict[str, Any]) -> int:
        catalog, database, table = name.split(".")
        request = {"ctx": {"uri": "-", "project": ms.project, "catalog": catalog, "spark_catalog": catalog,
                           "warehouse": "/unused"},
                   "namespace": [database], "name": table, "filter": filters}
        return len(list_files(ms, request)["rows"])

    return "ushas_catalog.spark.reads.list_files (the scan's bridge op)", prune


def pruning_filters(n: int, r: int) -> dict[str, dict[str, Any]]:
    days = (n + HOURS - 1) // HOURS
    day = DAY0 + dt.timedelta(days=(days * (2 * r + 1) // 7) % max(1, days - 1))
    span = max(1, round(n / 100 / HOURS))
    first = DAY0 + dt.timedelta(days=(days // 3 + r * span) % max(1, days - span))
    return {
        "one partition": {"op": "and", "children": [{"op": "eq", "column": "dt", "value": day.isoformat()},
                                                    {"op": "eq", "column": "hr", "value": 7}]},
        "one day (24)": {"op": "eq", "column": "dt", "value": day.isoformat()},
        "1%": {"op": "and", "children": [
            {"op": "ge", "column": "dt", "value": first.isoformat()},
            {"op": "le", "column": "dt", "value": (first + dt.timedelta(days=span - 1)).isoformat()}]},
    }


def run_pruning(tmp: Path, sizes: list[int], repeats: int) -> None:
    label, prune = find_pruner()
    ms = Metastore.open(f"sqlite:///{tmp / 'pruning.db'}", project="bench", user="bench")
    ms.create_catalog("main")
    ms.create_database("main.db")
    per: dict[str, dict[int, float]] = {}
    print(f"catalog pruning without Spark (sqlite store), measured: {label}")
    print(f"{'partitions':>12}{'query':>16}{'selected':>10}{'ms':>10}{'µs/selected':>13}")
    for n in sizes:
        name = f"main.db.p{n}"
        ms.create_table(name, SCHEMA, partition_by=["dt", "hr"])
        for start in range(0, n, 10_000):
            ms.add_partitions(name, [{"dt": Tree.values(i)[0], "hr": Tree.values(i)[1]}
                                     for i in range(start, min(start + 10_000, n))])
        for f in pruning_filters(n, repeats).values():  # warm-up (filters not timed below)
            prune(ms, name, f)
        for qname in pruning_filters(n, 0):
            times, selected = [], 0
            for r in range(repeats):
                f = pruning_filters(n, r)[qname]
                t0 = time.perf_counter()
                selected = prune(ms, name, f)
                times.append(time.perf_counter() - t0)
            t = statistics.median(times)
            per.setdefault(qname, {})[n] = t * 1e6 / max(1, selected)
            print(f"{n:>12,}{qname:>16}{selected:>10,}{t * 1e3:>10.3f}{t * 1e6 / max(1, selected):>13.1f}")
        ms.drop_table(name)
        ms.purge_table(name)
    lo, hi = sizes[0], sizes[-1]
    for qname, by_n in per.items():
        print(f"  {qname}: µs per selected partition at {hi:,} ÷ at {lo:,} = {by_n[hi] / by_n[lo]:.2f} "
              f"(goal: flat, ~1)")
    ms.close()


# --- main -----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2,000 partitions, pruning up to 10^5")
    ap.add_argument("--partitions", type=int, help="partitions of the table (default 100,000; 2,000 quick)")
    ap.add_argument("--data-partitions", type=int, help="partitions with files (default 300; 100 quick)")
    ap.add_argument("--latency-ms", type=int, default=10, help="slowfs latency per request (default 10)")
    ap.add_argument("--repeats", type=int, help="runs of each query per side (default 3; 2 quick)")
    ap.add_argument("--pruning-sizes", help="comma-separated table sizes for the pruning part "
                                            "(default 1000,10000,100000,1000000; quick up to 100000)")
    ap.add_argument("--once-over", type=float, default=60.0, metavar="S",
                    help="a query side whose first run takes longer than S seconds is not repeated (default 60)")
    ap.add_argument("--cache", choices=("on", "off"), default="off",
                    help="spark.sql.catalog.ushas.cache.enabled (default off: the uncached path)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: spark, repair, pruning")
    args = ap.parse_args(argv)
    n = args.partitions or (2_000 if args.quick else 100_000)
    data_n = min(n, args.data_partitions or (100 if args.quick else 300))
    repeats = args.repeats or (2 if args.quick else 3)
    sizes = ([int(s) for s in args.pruning_sizes.split(",")] if args.pruning_sizes
             else [1_000, 10_000, 100_000] + ([] if args.quick else [1_000_000]))
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    with tempfile.TemporaryDirectory(prefix="ushas-bench-data-") as tmp_name:
        tmp = Path(tmp_name)
        if "spark" not in skip:
            spark_part(tmp, n, data_n, args.latency_ms, repeats, args.once_over, args.cache == "on",
                       repair="repair" not in skip)
        if "pruning" not in skip:
            print()
            run_pruning(tmp, sizes, repeats=5)
    return 0


def spark_part(tmp: Path, n: int, data_n: int, latency_ms: int, repeats: int, once_over_s: float,
               cache: bool, repair: bool) -> None:
    jar = latency_jar()
    spark = ushas_session("ushas-bench-data-path", tmp, hive=True, conf={
        "spark.jars": str(jar),
        "spark.hadoop.fs.slowfs.impl": FS_CLASS,
        "spark.sql.hive.manageFilesourcePartitions": "true",
        "spark.sql.hive.filesourcePartitionFileCacheSize": "0",
        "spark.sql.catalog.ushas.cache.enabled": str(cache).lower(),
    })
    uri = f"sqlite:///{tmp / 'ushas.db'}"
    ms = Metastore.open(uri, project="default", user="bench")
    try:
        fs = SlowFs(spark, latency_ms)
        with fs.free():
            t0 = time.perf_counter()
            tree = make_tree(spark, tmp / "tree", n, data_n)
            make_dim(spark, tree, tmp / "dim")
            gen_s = time.perf_counter() - t0
            for side in ("spark_catalog", "ushas"):
                spark.sql(f"CREATE NAMESPACE {side}.bench")
                spark.sql(f"CREATE TABLE {side}.bench.t ({SCHEMA}) USING parquet PARTITIONED BY (dt, hr) "
                          f"LOCATION 'slowfs://{tree.root}'")
            ushas_s = register_ushas(ms, "ushas.bench.t", tree)
        print(f"data path: {n:,} partitions (dt x hr), {len(tree.data)} with {ROWS_PER_DATA_PARTITION} rows each "
              f"(the others empty directories), tree made in {gen_s:.1f} s")
        print("  " + S3_MODEL.format(ms=latency_ms))
        print(f"  ushas: table of the ushas catalog (cache {'on' if cache else 'off'}), partitions registered "
              f"with locations by Metastore.add_partitions ({ushas_s:.1f} s)")
        print("  hive: Hive metastore on Derby, manageFilesourcePartitions=true, partitions by MSCK REPAIR TABLE")
        print("  root listing: spark.read.parquet('slowfs://.../tree') with partition discovery (today's path)")
        print()
        if repair:
            run_repair(spark, fs, ms, uri, tree)
        else:
            with fs.free():
                spark.sql("MSCK REPAIR TABLE spark_catalog.bench.t")
        tables = {"ushas": "ushas.bench.t", "hive": "spark_catalog.bench.t", "root listing": "root_listing"}
        with fs.free():  # warm-up: class loading and JIT are not planning
            for side in SIDES:
                measure(spark, fs, side, queries(tree)[0].sql("{T}", 0), tree, tables)
        print()
        print(f"plan and run, medians of {repeats} fresh queries per side (one when its first took over "
              f"{once_over_s:.0f} s), sides alternating; FS calls of the last run")
        results = run_queries(spark, fs, tree, tables, repeats, once_over_s)
        report_queries(results, tree)
    finally:
        ms.close()
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
