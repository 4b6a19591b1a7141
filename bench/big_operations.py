"""Operations of any size: dropping a table of many partitions and a database of many tables,
ushas against the Hive metastore (Spark's built-in Hive 2.3 client on an embedded Derby metastore).

    python bench/big_operations.py [--quick] [--partitions N] [--tables N]
                                   [--hive-partitions N] [--hive-tables N]

ushas: a table of N partitions (1,000,000; 100,000 with --quick) registered with one
``add_partitions`` call, then ``DROP TABLE`` through Spark SQL (one transaction: the table is
hidden, its name free, undroppable until purge) and the purge of its metadata (``purge_table``:
chunks of 10,000 keys); a database of N tables (100,000; 10,000 with --quick), then
``DROP NAMESPACE … CASCADE`` through Spark SQL and the purge of the database.

Hive: the same shapes at smaller sizes (5,000 partitions and 500 tables; 1,000 / 100 with --quick),
because creating them through the Hive metastore is itself slow (one JDO round trip per partition
and per table); partitions added with ``ALTER TABLE … ADD PARTITION`` of 500 specs per statement,
then ``DROP TABLE … PURGE`` and ``DROP DATABASE … CASCADE`` (which delete the partition / table
rows, as ushas's purge does). Hive users report 10–12 hours to drop 1.5 M partitions; at these
sizes the ratio is per partition / per table, as measured in this run (HMS time grows at least
linearly: the comparison favours Hive).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))  # else: the tree PYTHONPATH names

from _spark import ushas_session  # noqa: E402

from ushas_catalog.metastore import Metastore  # noqa: E402
from ushas_catalog.model.names import TableName  # noqa: E402
from ushas_catalog.model.schema import parse_schema  # noqa: E402


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _ushas_tables(ms: Metastore, database: str, count: int) -> None:
    schema = parse_schema("id long, dt string")
    dn = TableName.parse(f"{database}.x")
    for lo in range(0, count, 200):
        def fn(tr, lo: int = lo) -> None:  # type: ignore[no-untyped-def]
            db, _ = ms.resolver.relation(tr, dn)
            for i in range(lo, min(count, lo + 200)):
                ms._create_in(tr, TableName(dn.catalog, dn.database, f"t{i}"), db, schema, ["dt"], "parquet",
                              None, None, None, None, False)
        ms.db.run(fn)
    ms.merge_index()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--partitions", type=int)
    ap.add_argument("--tables", type=int)
    ap.add_argument("--hive-partitions", type=int)
    ap.add_argument("--hive-tables", type=int)
    args = ap.parse_args()
    n_parts = args.partitions or (100_000 if args.quick else 1_000_000)
    n_tables = args.tables or (10_000 if args.quick else 100_000)
    h_parts = args.hive_partitions or (1_000 if args.quick else 5_000)
    h_tables = args.hive_tables or (100 if args.quick else 500)

    root = Path(tempfile.mkdtemp(prefix="ushas-bench-big-"))
    spark = ushas_session("ushas-bench-big", root, hive=True)
    ms = Metastore.open(f"sqlite:///{root / 'ushas.db'}")
    results: dict[str, dict[str, float]] = {}
    try:
        print(f"== drop a table of many partitions (ushas {n_parts:,}, Hive {h_parts:,})")
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.bench")
        spark.sql("CREATE TABLE ushas.bench.big (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
        specs = [{"dt": f"{i:07d}"} for i in range(n_parts)]
        add = _timed(lambda: ms.add_partitions("ushas.bench.big", specs))
        drop = _timed(lambda: spark.sql("DROP TABLE ushas.bench.big"))
        purge = _timed(lambda: ms.purge_table("ushas.bench.big"))
        print(f"  ushas: add_partitions {add:8.2f} s (one call), DROP TABLE {drop:8.3f} s, purge {purge:8.2f} s")

        spark.sql("CREATE DATABASE IF NOT EXISTS hb")
        spark.sql("CREATE TABLE spark_catalog.hb.big (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
        t0 = time.perf_counter()
        for lo in range(0, h_parts, 500):
            parts = " ".join(f"PARTITION (dt='{i:07d}')" for i in range(lo, min(h_parts, lo + 500)))
            spark.sql(f"ALTER TABLE spark_catalog.hb.big ADD {parts}")
        h_add = time.perf_counter() - t0
        h_drop = _timed(lambda: spark.sql("DROP TABLE spark_catalog.hb.big PURGE"))
        print(f"  hive:  ADD PARTITION {h_add:8.2f} s, DROP TABLE … PURGE {h_drop:8.2f} s")
        u_per = (drop + purge) / n_parts
        h_per = h_drop / h_parts
        print(f"  per partition: ushas drop+purge {u_per * 1e6:8.2f} µs, hive drop {h_per * 1e6:8.2f} µs: "
              f"ushas ÷ hive = {u_per / h_per:.4f}; the drop alone (what makes the table go): "
              f"{drop:.3f} s for {n_parts:,} vs {h_drop:.2f} s for {h_parts:,}")
        print(f"  per partition, adding: ushas {add / n_parts * 1e6:8.2f} µs, hive {h_add / h_parts * 1e6:8.2f} µs: "
              f"ushas ÷ hive = {(add / n_parts) / (h_add / h_parts):.4f}")
        results["partitions"] = {"drop": drop, "purge": purge, "hive_drop": h_drop, "ratio": u_per / h_per}

        print(f"== drop a database of many tables (ushas {n_tables:,}, Hive {h_tables:,})")
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.many")
        make = _timed(lambda: _ushas_tables(ms, "ushas.many", n_tables))
        drop = _timed(lambda: spark.sql("DROP NAMESPACE ushas.many CASCADE"))
        purge = _timed(lambda: ms.purge_database("ushas.many"))
        print(f"  ushas: create {make:8.2f} s, DROP NAMESPACE … CASCADE {drop:8.3f} s, purge {purge:8.2f} s")
        spark.sql("CREATE DATABASE hmany")
        t0 = time.perf_counter()
        for i in range(h_tables):
            spark.sql(f"CREATE TABLE spark_catalog.hmany.t{i} (id BIGINT, dt STRING) USING parquet "
                      f"PARTITIONED BY (dt)")
        h_make = time.perf_counter() - t0
        h_drop = _timed(lambda: spark.sql("DROP DATABASE hmany CASCADE"))
        print(f"  hive:  create {h_make:8.2f} s, DROP DATABASE … CASCADE {h_drop:8.2f} s")
        u_per = (drop + purge) / n_tables
        h_per = h_drop / h_tables
        print(f"  per table: ushas drop+purge {u_per * 1e3:8.3f} ms, hive drop {h_per * 1e3:8.3f} ms: "
              f"ushas ÷ hive = {u_per / h_per:.4f}; the drop alone: {drop:.3f} s for {n_tables:,} tables vs "
              f"{h_drop:.2f} s for {h_tables:,}")
        results["tables"] = {"drop": drop, "purge": purge, "hive_drop": h_drop, "ratio": u_per / h_per}
    finally:
        ms.close()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
