"""The caching catalog in the Spark driver: the same lookups with the cache on and off, in one run.

    python bench/cache.py [--quick] [--partitions N] [--rounds R]

One local[2] session, three instances of the catalog on ONE sqlite store and metastore catalog:

- ``ushas_off``   ``cache.enabled=false``: every lookup loads the table and drops Spark's cached relation
                  (so Spark lists the table's files again);
- ``ushas``       the default: a lookup of a cached table is one bridge round trip, one transaction that
                  reads the name chain and the table's version; unchanged -> Spark's relation is kept;
- ``ushas_ttl``   ``cache.check=false``: a cached table is served without asking (TTL-only, NOT coherent
                  with other processes) -- the baseline that isolates the cost of the coherence check.

On a partitioned parquet table with N partitions (2,000; 300 with --quick), each with one data file
(copied into place and registered through the Metastore API, which is quicker than a Spark write here):
``spark.table(t)`` (resolution: analysis incl. the catalog lookup and the relation), ``SHOW PARTITIONS t``
(the command runs at ``spark.sql``) and the catalog's own part of it (``loadTable`` +
``listPartitionIdentifiers`` called through Py4J), alternating the three catalogs every round, medians
over R rounds. Prints the off/on ratio (goal >= 20x for a hit), the added cost of the check
(on - ttl) and the check's own time in Python (the one transaction, no Py4J).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)

MODES = {"off": {"enabled": "false"}, "on": {}, "ttl": {"check": "false"}}
CATALOGS = {"off": "ushas_off", "on": "ushas", "ttl": "ushas_ttl"}


def session(root: Path) -> Any:
    """The default ``ushas`` catalog plus one catalog per cache mode, on the same store."""
    uri = f"sqlite:///{root / 'ushas.db'}"
    conf: dict[str, str] = {}
    for mode, options in MODES.items():
        prefix = f"spark.sql.catalog.{CATALOGS[mode]}"
        conf.update({prefix: "io.ushas.spark.UshasCatalog", f"{prefix}.uri": uri, f"{prefix}.catalog": "ushas",
                     f"{prefix}.warehouse": str(root / "warehouse")})
        conf.update({f"{prefix}.cache.{key}": value for key, value in options.items()})
    return ushas_session("ushas-bench-cache", root, conf=conf)


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.3f} ms"


def check_time(root: Path, n: int) -> float:
    """The coherence check alone, in this process: ``load_table`` with the known id and version."""
    from ushas_catalog.spark.cache import BridgeCache, Known, lookup
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.model.names import TableName
    from ushas_catalog.spark.tables import SparkCtx

    ctx = SparkCtx(f"sqlite:///{root / 'ushas.db'}", "default", "ushas", "ushas", str(root / "warehouse"))
    name = TableName("ushas", "bench", "t")
    with Metastore.open(ctx.uri) as store:
        cache = BridgeCache()
        first = lookup(store, cache, ctx, name, None, views=False)
        known = Known(first["id"], first["version"])
        times = [timed(lambda: lookup(store, cache, ctx, name, known, views=False)) for _ in range(n)]
    return statistics.median(times)


def _strings(spark: Any, items: list[str]) -> Any:
    gateway = spark.sparkContext._gateway
    out = gateway.new_array(gateway.jvm.java.lang.String, len(items))
    for i, item in enumerate(items):
        out[i] = item
    return out


def fill(spark: Any, root: Path, n: int) -> None:
    """ushas.bench.t with ``n`` partitions dt=p000000..., one small parquet file in each."""
    from ushas_catalog.metastore import Metastore

    spark.sql("CREATE NAMESPACE ushas.bench")
    spark.sql("CREATE TABLE ushas.bench.t (id BIGINT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    stage = root / "stage"
    spark.range(1).selectExpr("id", "CAST(id AS STRING) AS v").coalesce(1).write.parquet(str(stage))
    data = next(stage.glob("part-*.parquet"))
    location = root / "warehouse" / "bench.db" / "t"
    for i in range(n):
        d = location / f"dt=p{i:06d}"
        d.mkdir(parents=True)
        shutil.copy(data, d / data.name)
    with Metastore.open(f"sqlite:///{root / 'ushas.db'}") as store:
        store.add_partitions(("ushas", "bench", "t"), [{"dt": f"p{i:06d}"} for i in range(n)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="300 partitions, fewer rounds")
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    n = args.partitions or (300 if args.quick else 2000)
    rounds = args.rounds or (5 if args.quick else 8)
    with tempfile.TemporaryDirectory(prefix="ushas-bench-cache-") as tmp:
        root = Path(tmp)
        spark = session(root)
        try:
            fill(spark, root, n)
            print(f"table ushas.bench.t: {n} partitions, one parquet file each")
            for mode, catalog in CATALOGS.items():  # warm: each catalog loaded once, Spark's code paths hot
                assert spark.table(f"{catalog}.bench.t").count() == n
                assert spark.sql(f"SHOW PARTITIONS {catalog}.bench.t").count() == n
            results: dict[str, dict[str, list[float]]] = {
                "spark.table(t)": {m: [] for m in MODES}, "SHOW PARTITIONS t": {m: [] for m in MODES},
                "  its catalog calls": {m: [] for m in MODES}}
            jvm = spark._jvm
            ident = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(
                _strings(spark, ["bench"]), "t")
            no_names, no_prefix = _strings(spark, []), jvm.org.apache.spark.sql.catalyst.expressions.GenericInternalRow(0)
            plugins = {m: spark._jsparkSession.sessionState().catalogManager().catalog(c) for m, c in CATALOGS.items()}
            for _ in range(rounds):
                for mode, catalog in CATALOGS.items():
                    results["spark.table(t)"][mode].append(timed(lambda: spark.table(f"{catalog}.bench.t")))
                    results["SHOW PARTITIONS t"][mode].append(
                        timed(lambda: spark.sql(f"SHOW PARTITIONS {catalog}.bench.t")))
                    results["  its catalog calls"][mode].append(timed(
                        lambda: plugins[mode].loadTable(ident).listPartitionIdentifiers(no_names, no_prefix)))
            own = check_time(root, rounds * 5)
            status = {m: json.loads(p.cacheStatus()) for m, p in plugins.items()}
        finally:
            spark.stop()
    print(f"\nmedians of {rounds} alternating rounds (cache off | on: checked hit | ttl-only hit, no check)")
    for what, by_mode in results.items():
        off, on, ttl = (statistics.median(by_mode[m]) for m in ("off", "on", "ttl"))
        print(f"{what:20s} off {ms(off)} | on {ms(on)} | ttl-only {ms(ttl)}")
        verdict = "goal met" if off / on >= 20 else "goal NOT met"
        print(f"{'':20s} hit ratio off/on = {off / on:6.1f}x  ({verdict}: >= 20x); "
              f"coherence check adds {ms(on - ttl).strip()} (on/ttl-only = {on / ttl:.2f}x)")
    print(f"the check alone in Python (one transaction: 3 name reads + the version): {ms(own).strip()}")
    print("lookups counted by the catalogs:", {m: {k: s[k] for k in ("unchanged", "unchecked", "loaded")}
                                               for m, s in status.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
