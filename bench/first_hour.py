"""The first hour of a team on the catalog, side by side with its peers (issue 38), in one command:

    python bench/first_hour.py [--quick] [--partitions N] [--big-partitions N] [--no-iceberg]
    python bench/first_hour.py --everyday [--rounds 3]   # only the control and the everyday rows vs Iceberg

- **Hive**: the Hive metastore on an embedded Derby, in the SAME Spark 4.3 application as ushas
  (``spark_catalog`` with Hive support, parquet datasource tables: what ``CREATE TABLE … USING
  parquet`` makes), the two sides interleaved (alternating which goes first).
- **first query of a fresh application**: one process per side (a new JVM each), one partition of the
  big table.
- **Iceberg** 1.12 (its Spark 4.1 runtime, JDBC catalog on SQLite) in its own pyspark 4.1.4 virtualenv
  under ``~/.cache/ushas-bench`` (jars from Maven Central; bench only), with a 3 GB driver (at 1 GB,
  Spark's default, its write of 500 partitions ran out of heap; its many-partition tables use the
  clustered writer, ``_iceberg.MANY_PARTITIONS``: its fanout writer ran out of 3 GB at 2,000). A
  catalog-free control query runs on both Spark builds and its ratio is printed: Iceberg ratios mean
  something only when it is within ±15%. When the virtualenv or a jar cannot be had, its rows print
  ``unavailable: <reason>``.

- ``--everyday``: only the control query and the everyday statements (DROP TABLE, a 1-row INSERT, a
  small-table count), ushas and Iceberg each in its own fresh process (no Hive, no many-partition writes
  before them), the two alternating for ``--rounds`` rounds, medians of all rounds: the control of both
  sides is then measured minutes apart at most, on the same load. Each DROP TABLE is followed by one on
  ``nul``, a catalog that does nothing (``bench/_nullcatalog.py``), on the same Spark build: Spark's own
  cost of the statement on each side, and each side's DROP TABLE above it.

Every row prints ushas's time, the peer's, the ratio ushas ÷ peer and the issue's goal for it. Times
are seconds on the shared machine; only the ratios of one run compare.
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
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(HERE.parent / "python"))  # else: the tree PYTHONPATH names (before/after pairs)
sys.path.insert(0, str(HERE))

from _iceberg import MANY_PARTITIONS, control_time, iceberg_session, iceberg_setup, run_side  # noqa: E402  (bench/ dir)
from _iceberg import source as _source  # noqa: E402  (small data, n partitions: five rows each)
from _iceberg import timed as _timed  # noqa: E402


class Rows:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float | None, float | None, str, str, str]] = []

    def add(self, what: str, ushas: float | None, peer: float | None, peer_name: str, goal: str,
            note: str = "") -> None:
        self.rows.append((what, ushas, peer, peer_name, goal, note))
        print(f"  {what}: ushas {_s(ushas)}, {peer_name} {_s(peer)} -> {_ratio(ushas, peer)} (goal {goal}) {note}",
              flush=True)

    def table(self) -> str:
        out = ["| operation | ushas s | peer | peer s | ushas ÷ peer | goal |", "|---|---:|---|---:|---:|---|"]
        for what, u, p, name, goal, note in self.rows:
            out.append(f"| {what} | {_s(u)} | {name} | {_s(p) if note == '' else note} | {_ratio(u, p)} | {goal} |")
        return "\n".join(out)


def _s(t: float | None) -> str:
    return "—" if t is None else (f"{t * 1000:.0f} ms" if t < 1 else f"{t:.1f}")


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


# ---- the Spark 4.3 application: ushas and Hive interleaved -------------------------------------------
def same_application(root: Path, n: int, big: int, repeats: int, commits: int, rows: Rows) -> dict[str, float]:
    from _spark import ushas_session

    spark = ushas_session("first-hour", root, hive=True)
    mine: dict[str, float] = {}
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")
    sides = {"ushas": "ushas.b", "hive": "default"}

    def fresh(side: str, name: str) -> str:
        table = f"{sides[side]}.{name}"
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
        return table

    mine["control"] = control_time(spark, 3)  # warms both sides' code paths once first

    times: dict[str, list[float]] = {"ushas": [], "hive": []}
    for r in range(repeats):
        for side in (("ushas", "hive") if r % 2 == 0 else ("hive", "ushas")):
            table = fresh(side, f"many{r}")
            times[side].append(_timed(lambda: spark.sql(f"INSERT INTO {table} {_source(n)}")))
    u, h = statistics.median(times["ushas"]), statistics.median(times["hive"])
    mine["insert_many"] = u
    rows.add(f"one INSERT … SELECT creating {n:,} partitions, interleaved, median of {repeats}", u, h, "Hive",
             "≤ 0.5x")

    over = {}
    for side in ("hive", "ushas"):
        over[side] = _timed(lambda: spark.sql(f"INSERT OVERWRITE {sides[side]}.many0 {_source(n)}"))
    rows.add(f"INSERT OVERWRITE of the {n:,} partitions", over["ushas"], over["hive"], "Hive", "≤ 0.5x")

    ctas = {}
    for side in ("ushas", "hive"):
        spark.sql(f"DROP TABLE IF EXISTS {sides[side]}.ctas")
        ctas[side] = _timed(lambda: spark.sql(
            f"CREATE TABLE {sides[side]}.ctas USING parquet PARTITIONED BY (p) AS {_source(n)}"))
    rows.add(f"CTAS into a table of {n:,} partitions", ctas["ushas"], ctas["hive"], "Hive", "≤ 0.5x")

    big_t = {}
    for side in ("ushas", "hive"):
        table = fresh(side, "big")
        big_t[side] = _timed(lambda: spark.sql(f"INSERT INTO {table} {_source(big)}"))
    mine["insert_big"] = big_t["ushas"]
    rows.add(f"one INSERT … SELECT creating {big:,} partitions, one run each", big_t["ushas"], big_t["hive"],
             "Hive", "≤ 0.5x")

    warm: dict[str, list[float]] = {"ushas": [], "hive": []}
    for i in range(6):
        for side in (("ushas", "hive") if i % 2 == 0 else ("hive", "ushas")):
            q = f"SELECT count(*) FROM {sides[side]}.big WHERE p = '{(i * 37) % big}'"
            warm[side].append(_timed(lambda: spark.sql(q).collect()))
    rows.add(f"warm one-partition query of {big:,}, interleaved", statistics.median(warm["ushas"][1:]),
             statistics.median(warm["hive"][1:]), "Hive", "≤ 1x")
    mine["plan"] = planning(spark, sides, big, rows)

    # everyday statements (their Iceberg rows come from the Iceberg process)
    mine.update(everyday(spark, lambda name: fresh("ushas", name), commits))
    jvm = spark.sparkContext._jvm
    spark.stop()
    try:  # the embedded Derby lets go of the metastore: the first-query process opens it
        jvm.java.sql.DriverManager.getConnection("jdbc:derby:;shutdown=true")
    except Exception:  # noqa: BLE001 - Derby answers a clean shutdown with an SQLException (XJ015)
        pass
    return mine


def planning(spark: Any, sides: dict[str, str], big: int, rows: Rows) -> float:
    """Planning a one-partition query of the big table (analysis, optimisation, physical planning with the
    partition pruning: ``queryExecution().executedPlan()``, nothing run), the sides interleaved, median of 6
    after one warm-up each; returns ushas's median (its Iceberg row: the Iceberg side's ``plan``)."""
    plans: dict[str, list[float]] = {"ushas": [], "hive": []}
    for i in range(PLAN_ROUNDS):
        for side in (("ushas", "hive") if i % 2 == 0 else ("hive", "ushas")):
            took = plan_once(spark, f"{sides[side]}.big", i, big)
            if i:
                plans[side].append(took)
    u = statistics.median(plans["ushas"])
    rows.add(f"planning one partition of {big:,}, interleaved", u, statistics.median(plans["hive"]), "Hive", "≤ 1x")
    return u


#: rounds of :func:`plan_once` per table; the first is a warm-up, the median of the others counts
PLAN_ROUNDS = 7


def plan_once(spark: Any, table: str, i: int, big: int) -> float:
    """Seconds to plan (not run) round ``i``'s one-partition query of ``table`` (``big`` partitions); the
    same query shape on every side (ushas, Hive, Iceberg)."""
    q = f"SELECT * FROM {table} WHERE p = '{(i * 53) % big}'"
    return _timed(lambda: spark.sql(q)._jdf.queryExecution().executedPlan())


def everyday(spark: Any, fresh: Callable[[str], str], commits: int, floor: bool = False) -> dict[str, float]:
    """The everyday statements, timed the way the Iceberg script times them (medians): a warm
    one-partition count of a small table (9), a 1-row INSERT (``commits``), DROP TABLE (5); with ``floor``,
    each DROP TABLE is followed by one on ``nul`` (``_nullcatalog``: Spark's own cost of the statement)."""
    out: dict[str, float] = {}
    small = fresh("small")
    spark.sql(f"INSERT INTO {small} SELECT id, CAST(id % 4 AS STRING) FROM range(100)")
    spark.sql(f"SELECT count(*) FROM {small} WHERE p = '1'").collect()
    out["count"] = statistics.median(_timed(lambda: spark.sql(f"SELECT count(*) FROM {small} WHERE p = '1'").collect())
                                     for _ in range(9))
    one = fresh("one")
    spark.sql(f"INSERT INTO {one} VALUES (0, 'a')")
    out["insert_one"] = statistics.median(_timed(lambda: spark.sql(f"INSERT INTO {one} VALUES (1, 'a')"))
                                          for _ in range(commits))
    drops = []
    floors = []
    for i in range(5):
        table = fresh(f"drop{i}")
        spark.sql(f"INSERT INTO {table} VALUES (1, 'a')")
        drops.append(_timed(lambda: spark.sql(f"DROP TABLE {table}")))
        if floor:
            floors.append(_timed(lambda: spark.sql(f"DROP TABLE nul.b.drop{i}")))
    out["drop"] = statistics.median(drops)
    if floor:
        out["drop_nul"] = statistics.median(floors)
    return out


def everyday_side(root: Path, commits: int) -> dict[str, float]:
    """Run in its own process (``--everyday-side ROOT COMMITS``): a fresh ushas application (no Hive),
    the control query, then the everyday statements."""
    from _spark import ushas_session

    from _nullcatalog import NUL_CATALOG, null_catalog_jar

    spark = ushas_session("everyday", root, conf={"spark.driver.memory": "3g",  # as the Iceberg side's
                                                  "spark.jars": str(null_catalog_jar()), **NUL_CATALOG})
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")

    def fresh(name: str) -> str:
        spark.sql(f"DROP TABLE IF EXISTS ushas.b.{name}")
        spark.sql(f"CREATE TABLE ushas.b.{name} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
        return f"ushas.b.{name}"

    out = {"control": control_time(spark, 5)}
    out.update(everyday(spark, fresh, commits, floor=True))
    spark.stop()
    return out


def iceberg_everyday_side(root: Path, jars: str, commits: int) -> dict[str, float]:
    """Run by the virtualenv's python (``--iceberg-everyday-side``; imports nothing of ushas): the control
    query and the everyday statements with the ``nul`` floor, as :func:`everyday_side` on ushas's side."""
    from _nullcatalog import NUL_CATALOG, null_catalog_jar  # compiled against this virtualenv's Spark

    spark = iceberg_session("iceberg", root, f"{jars},{null_catalog_jar()}", conf=NUL_CATALOG)

    def fresh(name: str) -> str:
        spark.sql(f"DROP TABLE IF EXISTS ice.b.{name}")
        spark.sql(f"CREATE TABLE ice.b.{name} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p)")
        return f"ice.b.{name}"

    out = {"control": control_time(spark, 5)}
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.b")
    out.update(everyday(spark, fresh, commits, floor=True))
    spark.stop()
    return out


# ---- the first query of a fresh application: one process per side ------------------------------------
def first_query(side: str, root: Path, big: int) -> float:
    """Run in its own process (``--first-query SIDE ROOT``): start the application, time its first query."""
    from _spark import ushas_session

    t0 = time.perf_counter()
    spark = ushas_session("first-query", root, hive=(side == "hive"))
    table = "ushas.b.big" if side == "ushas" else "default.big"
    spark.sql(f"SELECT count(*) FROM {table} WHERE p = '{big // 2}'").collect()
    elapsed = time.perf_counter() - t0
    spark.stop()
    return elapsed


def _own_process(args: list[str], timeout: int) -> Any:
    """What a run of this script in its own process printed after ``RESULT`` (JSON)."""
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "PYTHONPATH": str(HERE.parent / "python")})
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{args[0]} failed: {out.stderr[-2000:]}")


# ---- Iceberg 1.12 on Spark 4.1.4, its own virtualenv --------------------------------------------------
def iceberg_side(root: Path, jars: str, n: int, big: int, commits: int) -> dict[str, float]:
    """Run by the virtualenv's python (``--iceberg-side``; imports nothing of ushas): the control query, the
    INSERTs of ``n`` and ``big`` partitions (0: none), planning one partition of the big table, the everyday
    statements, as ushas's side times them."""
    spark = iceberg_session("iceberg", root, jars)

    def fresh(name: str, props: str = "") -> str:
        spark.sql(f"DROP TABLE IF EXISTS ice.b.{name}")
        spark.sql(f"CREATE TABLE ice.b.{name} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p){props}")
        return f"ice.b.{name}"

    out = {"control": control_time(spark, 3 if n else 5)}
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.b")
    for key, k in (("insert_many", n), ("insert_big", big)):
        if k:
            t = fresh(key, f" TBLPROPERTIES ({MANY_PARTITIONS})")  # its defaults run out of heap at 2,000
            out[key] = _timed(lambda: spark.sql(f"INSERT INTO {t} {_source(k)}"))
    if big:  # planning one partition of the big table, as ushas's planning() times it (round 0: warm-up)
        plans = [plan_once(spark, "ice.b.insert_big", i, big) for i in range(PLAN_ROUNDS)]
        out["plan"] = statistics.median(plans[1:])
    out.update(everyday(spark, fresh, commits))
    spark.stop()
    return out


def iceberg(root: Path, n: int, big: int, commits: int) -> dict[str, float]:
    python, jars = iceberg_setup()
    return run_side("the Iceberg side", python, [__file__, "--iceberg-side", str(root), ",".join(map(str, jars)),
                                                 str(n), str(big), str(commits)], 7200)


def control_verdict(ratio: float) -> str:
    """Whether the Iceberg ratios of a run mean something: the control within ±15%."""
    return "valid" if 0.85 <= ratio <= 1.15 else "NOT valid: the control is outside ±15%"


def everyday_main(commits: int, rounds: int) -> int:
    """``--everyday``: ushas and Iceberg each in a fresh process, alternating, ``rounds`` rounds; medians."""
    rows = Rows()
    got: dict[str, list[dict[str, float]]] = {"ushas": [], "iceberg": []}
    try:
        iceberg_setup()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"Iceberg unavailable: {e}")
        return 1
    for r in range(rounds):
        for side in (("ushas", "iceberg") if r % 2 == 0 else ("iceberg", "ushas")):
            root = Path(tempfile.mkdtemp(prefix="ushas-everyday-"))
            try:
                if side == "ushas":
                    got[side].append(dict(_own_process(["--everyday-side", str(root), str(commits)], 900)))
                else:
                    python, jars = iceberg_setup()
                    got[side].append(run_side("the Iceberg side", python, [
                        __file__, "--iceberg-everyday-side", str(root), ",".join(map(str, jars)), str(commits)], 900))
            finally:
                shutil.rmtree(root, ignore_errors=True)
            print(f"  round {r + 1} {side}: " + ", ".join(f"{k} {_s(v)}" for k, v in got[side][-1].items()),
                  flush=True)

    def med(side: str, key: str) -> float:
        return statistics.median(x[key] for x in got[side])

    control = med("ushas", "control") / med("iceberg", "control")
    rows.add("control query (no catalog), Spark 4.3 ÷ Spark 4.1.4", med("ushas", "control"),
             med("iceberg", "control"), "Spark 4.1.4", "0.85–1.15x")
    rows.add("DROP TABLE", med("ushas", "drop"), med("iceberg", "drop"), "Iceberg", "≤ 1x")
    rows.add("DROP TABLE on `nul`, a catalog that does nothing: Spark 4.3's own cost ÷ Spark 4.1.4's",
             med("ushas", "drop_nul"), med("iceberg", "drop_nul"), "Spark 4.1.4", "(the floor)")
    rows.add("DROP TABLE above that floor (the catalog's own part, medians of per-round differences)",
             statistics.median(x["drop"] - x["drop_nul"] for x in got["ushas"]),
             statistics.median(x["drop"] - x["drop_nul"] for x in got["iceberg"]), "Iceberg", "≤ 1x")
    rows.add("small table: warm one-partition count", med("ushas", "count"), med("iceberg", "count"), "Iceberg",
             "≤ 1x")
    rows.add(f"1-row INSERT commit (median of {commits})", med("ushas", "insert_one"), med("iceberg", "insert_one"),
             "Iceberg", "≤ 1x")
    print()
    print(f"medians of {rounds} rounds, each side in its own process per round; "
          f"control {control:.2f}x: Iceberg ratios {control_verdict(control)}")
    print(rows.table())
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="500 and 1,000 partitions, 10 one-row commits")
    ap.add_argument("--partitions", type=int, help="partitions of the interleaved INSERT (2,000)")
    ap.add_argument("--big-partitions", type=int, help="partitions of the one-run INSERT (5,000)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-iceberg", action="store_true", help="skip the Iceberg side")
    ap.add_argument("--everyday", action="store_true",
                    help="only the control query and the everyday statements, ushas and Iceberg alternating")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --everyday (each: one process per side)")
    ap.add_argument("--first-query", nargs=3, metavar=("SIDE", "ROOT", "PARTITIONS"), help=argparse.SUPPRESS)
    ap.add_argument("--everyday-side", nargs=2, metavar=("ROOT", "COMMITS"), help=argparse.SUPPRESS)
    ap.add_argument("--iceberg-side", nargs=5, metavar=("ROOT", "JARS", "N", "BIG", "COMMITS"), help=argparse.SUPPRESS)
    ap.add_argument("--iceberg-everyday-side", nargs=3, metavar=("ROOT", "JARS", "COMMITS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.iceberg_everyday_side:
        root, jars, commits = args.iceberg_everyday_side
        print("RESULT " + json.dumps(iceberg_everyday_side(Path(root), jars, int(commits))))
        return 0
    if args.iceberg_side:
        root, jars, *sizes = args.iceberg_side
        print("RESULT " + json.dumps(iceberg_side(Path(root), jars, *map(int, sizes))))
        return 0
    if args.first_query:
        side, root, big = args.first_query
        print(f"RESULT {first_query(side, Path(root), int(big))}")
        return 0
    if args.everyday_side:
        print("RESULT " + json.dumps(everyday_side(Path(args.everyday_side[0]), int(args.everyday_side[1]))))
        return 0
    if args.everyday:
        return everyday_main(10 if args.quick else 30, args.rounds)
    n = args.partitions or (500 if args.quick else 2000)
    big = args.big_partitions or (1000 if args.quick else 5000)
    commits = 10 if args.quick else 30
    root = Path(tempfile.mkdtemp(prefix="ushas-first-hour-"))
    rows = Rows()
    try:
        print(f"== Spark 4.3, ushas and the Hive metastore (Derby) in one application, under {root}", flush=True)
        mine = same_application(root, n, big, args.repeats, commits, rows)
        print("== first query of a fresh application, one process per side", flush=True)
        firsts = {side: float(_own_process(["--first-query", side, str(root), str(big)], 900))
                  for side in ("ushas", "hive")}
        rows.add(f"first query of a fresh application, one partition of {big:,}, own process each",
                 firsts["ushas"], firsts["hive"], "Hive", "≤ 1x")
        print("== Iceberg 1.12, Spark 4.1.4 (own virtualenv)", flush=True)
        try:
            if args.no_iceberg:
                raise RuntimeError("--no-iceberg")
            ice = iceberg(root, n, big, commits)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            reason = f"unavailable: {e}"
            rows.add("control query (no catalog), Spark 4.3 ÷ Spark 4.1.4", mine["control"], None, "Spark 4.1.4",
                     "0.85–1.15x", reason)
            rows.add(f"one INSERT … SELECT creating {big:,} partitions", mine["insert_big"], None, "Iceberg", "≤ 0.8x",
                     reason)
            rows.add(f"planning one partition of {big:,}", mine["plan"], None, "Iceberg", "≤ 1x", reason)
            rows.add("DROP TABLE", mine["drop"], None, "Iceberg", "≤ 1x", reason)
            rows.add("small table: warm one-partition count", mine["count"], None, "Iceberg", "≤ 1x", reason)
            rows.add(f"1-row INSERT commit (median of {commits})", mine["insert_one"], None, "Iceberg", "≤ 1x", reason)
        else:
            rows.add("control query (no catalog), Spark 4.3 ÷ Spark 4.1.4", mine["control"], ice["control"],
                     "Spark 4.1.4", "0.85–1.15x")
            rows.add(f"one INSERT … SELECT creating {n:,} partitions", mine["insert_many"], ice["insert_many"],
                     "Iceberg", "≤ 0.8x")
            rows.add(f"one INSERT … SELECT creating {big:,} partitions", mine["insert_big"], ice["insert_big"],
                     "Iceberg", "≤ 0.8x")
            rows.add(f"planning one partition of {big:,}", mine["plan"], ice["plan"], "Iceberg", "≤ 1x")
            rows.add("DROP TABLE", mine["drop"], ice["drop"], "Iceberg", "≤ 1x")
            rows.add("small table: warm one-partition count", mine["count"], ice["count"], "Iceberg", "≤ 1x")
            rows.add(f"1-row INSERT commit (median of {commits})", mine["insert_one"], ice["insert_one"], "Iceberg",
                     "≤ 1x")
            control = mine["control"] / ice["control"]
            print(f"  control {control:.2f}x: Iceberg ratios {control_verdict(control)}")
        print()
        print(rows.table())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
