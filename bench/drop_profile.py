"""Where the time of a DROP TABLE goes, inside Spark (issue 38): a profile, not a goal.

    python bench/drop_profile.py [--rounds R] [--lineage] [--calls N]

One Spark 4.3 session (``bench/_spark.py``: local[2], the ``ushas`` catalog on SQLite; ``--lineage``: with the
lineage listener) drops ``R`` one-row tables exactly as ``bench/first_hour.py --everyday`` does, alternating with
the same statement on a table of the in-memory ``spark_catalog`` (Spark's V1 path, which deletes the files) and
on ``nul``, a V2 catalog that does nothing (``bench/java/NullCatalog.java``, compiled here): Spark's own cost of
a V2 DROP TABLE, the floor any catalog's work adds to. Every bridge call is timed at the Python end (``bridge.handle``); the shim's
two catalog calls are also timed one by one from Python (``tableExists``, ``dropTable`` through Py4J) next to an
empty Py4J call, then ``N`` (1,000) of each alternating (the bridge round trip's own cost); one DROP TABLE's
transactions are counted as the bridge runs them (keys read, keys written, ranges cleared); with ``--lineage`` the listener's
``lineage.event`` calls are counted too (it hands every execution to Python, a DROP TABLE too). Prints medians. No lock needed for a short run.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(HERE.parent / "python"))  # else: the tree PYTHONPATH names (before / after runs)
sys.path.insert(0, str(HERE))

from _nullcatalog import NUL_CATALOG, null_catalog_jar  # noqa: E402  (bench/ is the script's directory)
from _spark import ushas_session  # noqa: E402


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.2f} ms (min {min(xs) * 1000:.2f})" if xs else "—"


def count_transaction(ms: Any, fn: Callable[[], Any]) -> dict[str, int]:
    """Reads and writes of the transactions ``fn`` runs on the metastore ``ms`` (its KV transactions wrapped)."""
    counts: collections.Counter[str] = collections.Counter()
    db = ms.db
    real = db.create_transaction

    def create() -> Any:
        tr = real()
        counts["transactions"] += 1
        for name in ("get", "set", "clear", "clear_range", "get_range", "add"):
            orig = getattr(tr, name, None)
            if orig is None:
                continue

            def wrapped(*a: Any, _o: Any = orig, _n: str = name, **k: Any) -> Any:
                counts[_n] += 1
                return _o(*a, **k)

            setattr(tr, name, wrapped)
        return tr

    db.create_transaction = create
    try:
        fn()
    finally:
        del db.create_transaction
    return dict(counts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--lineage", action="store_true", help="with the lineage listener")
    ap.add_argument("--calls", type=int, default=1000,
                    help="tableExists calls through Py4J (and as many empty Py4J calls), alternating, at the end")
    args = ap.parse_args()
    from ushas_catalog.spark import bridge

    calls: list[tuple[str, float]] = []
    lineage_events: list[float] = []  # every lineage.event (the listener's, asynchronous), all statements
    statements = [0]
    real = bridge.handle

    def handle(op: str, payload: str) -> str:
        t0 = time.perf_counter()
        out = real(op, payload)
        calls.append((op, time.perf_counter() - t0))
        if op == "lineage.event":
            lineage_events.append(time.perf_counter() - t0)
        return out

    bridge.handle = handle  # Backend.call looks it up at every call
    from ushas_catalog.kv.sqlite import SqliteTransaction

    commits: list[float] = []
    real_commit = SqliteTransaction.commit

    def commit(self: Any) -> None:  # the store's commits (a drop's: its write and fsync)
        t0 = time.perf_counter()
        real_commit(self)
        commits.append(time.perf_counter() - t0)

    SqliteTransaction.commit = commit  # type: ignore[method-assign]
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-drop-profile-"))
    conf = {"spark.jars": str(null_catalog_jar()), **NUL_CATALOG}
    if args.lineage:
        conf["spark.sql.queryExecutionListeners"] = "io.ushas.spark.UshasLineageListener"
    try:
        spark = ushas_session("ushas-bench-drop-profile", root, conf=conf)
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")
        jvm = spark.sparkContext._jvm
        catalog = spark._jsparkSession.sessionState().catalogManager().catalog("ushas")
        wall: dict[str, list[float]] = collections.defaultdict(list)
        per_op: dict[str, list[float]] = collections.defaultdict(list)
        ops_per_drop: list[int] = []

        def make(table: str, using: str) -> None:
            statements[0] += 3
            spark.sql(f"DROP TABLE IF EXISTS {table}")
            spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING {using} PARTITIONED BY (p)")
            spark.sql(f"INSERT INTO {table} VALUES (1, 'a')")

        warmup = 3
        for r in range(args.rounds + warmup):
            sides = [("ushas", f"ushas.b.d{r}"), ("spark", f"spark_catalog.default.d{r}"), ("nul", f"nul.b.d{r}")]
            for side, table in sides[r % 3:] + sides[:r % 3]:
                # every side's DROP follows a CREATE and a one-row INSERT (their background work included)
                make(f"spark_catalog.default.n{r}" if side == "nul" else table, "parquet")
                calls.clear()
                commits.clear()
                t0 = time.perf_counter()
                spark.sql(f"DROP TABLE {table}")
                took = time.perf_counter() - t0
                statements[0] += 2
                made = [(op, t) for op, t in calls if op != "lineage.event"]  # the listener's, asynchronous
                if side == "nul":
                    spark.sql(f"DROP TABLE spark_catalog.default.n{r}")
                if r < warmup:
                    continue
                wall[side].append(took)
                t0 = time.perf_counter()
                parent, _, leaf = table.rpartition(".")
                spark.sql(f"DROP TABLE IF EXISTS {parent}.missing_{leaf}")
                wall[f"{side}, IF EXISTS of a missing table"].append(time.perf_counter() - t0)
                if side == "ushas":
                    ops_per_drop.append(len(made))
                    for op, t in made:
                        per_op[op].append(t)
                    per_op["  of which the store's commits"].append(sum(commits))
            if r >= warmup:  # the shim's two calls one by one, from Python through Py4J
                make(f"ushas.b.e{r}", "parquet")
                ns = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
                ns[0] = "b"
                ident = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(ns, f"e{r}")
                t0 = time.perf_counter()
                jvm.java.lang.System.nanoTime()
                wall["an empty Py4J call"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                catalog.tableExists(ident)
                wall["tableExists through Py4J"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                catalog.dropTable(ident)
                wall["dropTable through Py4J"].append(time.perf_counter() - t0)

        # one bridge round trip, many times: tableExists (Python -> JVM -> the bridge -> Python and back) next to
        # an empty Py4J call (Python -> JVM and back): the difference is the bridge call's own cost
        make("ushas.b.calls", "parquet")
        ns = spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
        ns[0] = "b"
        ident = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(ns, "calls")
        for _ in range(args.calls):
            t0 = time.perf_counter()
            jvm.java.lang.System.nanoTime()
            t1 = time.perf_counter()
            catalog.tableExists(ident)
            wall["many: an empty Py4J call"].append(t1 - t0)
            wall["many: tableExists through Py4J"].append(time.perf_counter() - t1)
        print(f"DROP TABLE of a one-row table, {args.rounds} rounds (medians), lineage "
              f"{'on' if args.lineage else 'off'}:")
        for side in ("ushas", "spark", "nul", "ushas, IF EXISTS of a missing table", "spark, IF EXISTS of a missing table",
                     "nul, IF EXISTS of a missing table",
                     "an empty Py4J call", "tableExists through Py4J", "dropTable through Py4J",
                     "many: an empty Py4J call", "many: tableExists through Py4J"):
            print(f"  {side:38s} {_ms(wall[side])}")
        print(f"  bridge calls per ushas DROP TABLE: {statistics.median(ops_per_drop) if ops_per_drop else 0}")
        for op, ts in per_op.items():
            print(f"    {op:24s} x{len(ts) / max(1, len(ops_per_drop)):.1f}  {_ms(ts)} in Python")

        if args.lineage:  # the listener hands every execution to Python, a DROP TABLE too
            print(f"  lineage.event calls (the listener's worker thread, after each statement): "
                  f"{len(lineage_events)} for ~{statements[0]} statements, {_ms(lineage_events)} in Python each")
        from ushas_catalog.spark.registry import REGISTRY

        ms = REGISTRY.get(f"sqlite:///{root / 'ushas.db'}", "default").metastore
        make("ushas.b.counted", "parquet")
        counts = count_transaction(ms, lambda: spark.sql("DROP TABLE ushas.b.counted"))
        print(f"  one DROP TABLE's transactions and KV calls (through Spark, as the bridge runs it): {counts}")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
