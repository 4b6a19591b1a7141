"""Writes bigger than one store transaction (issue 38): what a many-partition INSERT costs.

    python bench/many_partitions.py                     # registration only: 1,000 / 12,000 / 30,000 partitions
    python bench/many_partitions.py --spark 12000       # also one INSERT of 12,000 partitions, ushas vs Hive

- **registration** (Python, the embedded store): ``Metastore.replace_partitions`` — what a Spark write's
  commit calls — of N new partitions (one file each), then of the same N replaced (an INSERT OVERWRITE),
  timed per partition. Up to ``bulk.WRITE_BULK_AT`` (5,000) it is one transaction; beyond it the chunked
  write (staged, published in one transaction, cleaned up). The peer is the same call at 1,000
  partitions: the ratio says how flat the per-partition cost stays beyond one transaction.
- **--spark N**: one ``INSERT … SELECT`` creating N partitions (five rows each, one string partition
  column) into a ushas table and into a Hive metastore table (embedded Derby, parquet datasource table)
  of the SAME Spark 4.3 application, one run each (ushas first), then an INSERT OVERWRITE of the N on
  each; prints ushas ÷ Hive.

Times are seconds on the shared machine; only the ratios of one run compare.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))


def registration(root: Path, sizes: list[int]) -> dict[int, tuple[float, float]]:
    """µs per partition of an append of N new partitions and of an overwrite of the same N."""
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.model.data_files import DataFile
    from ushas_catalog.model.partitions import Partition

    out: dict[int, tuple[float, float]] = {}
    for n in sizes:
        ms = Metastore.open(f"sqlite:///{root}/reg-{n}.db", project="bench", user="bench")
        ms.create_catalog("c")
        ms.create_database("c.d", location="/wh")
        ms.create_table("c.d.t", "id long, p string", partition_by=["p"], location="/wh/t")

        def puts(tag: str) -> list[Partition]:
            return [Partition(values={"p": str(i)}, data_files=[DataFile(f"file:/wh/t/p={i}/{tag}-00000.parquet",
                                                                          1000, 1)], files=1, bytes=1000, rows=5)
                    for i in range(n)]

        items = puts("a")
        t0 = time.perf_counter()
        ms.replace_partitions("c.d.t", [], items, operation="APPEND", write_id=f"append-{n}")
        append = time.perf_counter() - t0
        items = puts("b")
        t0 = time.perf_counter()
        ms.replace_partitions("c.d.t", [], items, operation="OVERWRITE PARTITIONS",  # what a dynamic overwrite
                              write_id=f"overwrite-{n}")                            # commits: all replaced
        overwrite = time.perf_counter() - t0
        assert len(ms.list_partition_keys("c.d.t")[1]) == n
        ms.close()
        out[n] = (append / n * 1e6, overwrite / n * 1e6)
    return out


def spark_side(root: Path, n: int) -> dict[str, float]:
    from _spark import ushas_session

    spark = ushas_session("many-partitions", root, hive=True)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")
    source = f"SELECT id, CAST(id % {n} AS STRING) AS p FROM range({n * 5})"
    out: dict[str, float] = {}
    for side, table in (("ushas", "ushas.b.many"), ("hive", "default.many")):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
        t0 = time.perf_counter()
        spark.sql(f"INSERT INTO {table} {source}")
        out[f"{side} insert"] = time.perf_counter() - t0
        print(f"  {side}: INSERT of {n:,} partitions {out[f'{side} insert']:.1f} s", flush=True)
        assert spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == n * 5
    for side, table in (("ushas", "ushas.b.many"), ("hive", "default.many")):
        t0 = time.perf_counter()
        spark.sql(f"INSERT OVERWRITE {table} {source}")
        out[f"{side} overwrite"] = time.perf_counter() - t0
        print(f"  {side}: INSERT OVERWRITE of {n:,} partitions {out[f'{side} overwrite']:.1f} s", flush=True)
    spark.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,12000,30000", help="partition counts of the registration rows")
    ap.add_argument("--spark", type=int, metavar="N", help="also one Spark INSERT of N partitions, ushas vs Hive")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ushas-many-"))
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        reg = registration(root, sizes)
        base = reg[sizes[0]]
        print("| partitions | append µs/partition | ÷ at {0:,} | overwrite µs/partition | ÷ at {0:,} |".format(sizes[0]))
        print("|---:|---:|---:|---:|---:|")
        for n, (a, o) in reg.items():
            print(f"| {n:,} | {a:.0f} | {a / base[0]:.2f}x | {o:.0f} | {o / base[1]:.2f}x |")
        if args.spark:
            s = spark_side(root, args.spark)
            print(f"| one INSERT creating {args.spark:,} partitions | ushas {s['ushas insert']:.1f} s | Hive "
                  f"{s['hive insert']:.1f} s | {s['ushas insert'] / s['hive insert']:.2f}x |")
            print(f"| INSERT OVERWRITE of the {args.spark:,} | ushas {s['ushas overwrite']:.1f} s | Hive "
                  f"{s['hive overwrite']:.1f} s | {s['ushas overwrite'] / s['hive overwrite']:.2f}x |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
