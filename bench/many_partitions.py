"""Writes bigger than one store transaction (issue 38): what a many-partition INSERT costs.

    python bench/many_partitions.py                     # registration only: 1,000 / 12,000 / 30,000 partitions
    python bench/many_partitions.py --spark 12000       # also one INSERT of 12,000 partitions, ushas vs Hive
    python bench/many_partitions.py --commit-write 12000 --against /work/main   # the shim's commit, before/after

- **registration** (Python, the embedded store): ``Metastore.replace_partitions`` — what a Spark write's
  commit calls — of N new partitions (one file each), then of the same N replaced (an INSERT OVERWRITE),
  timed per partition. Up to ``bulk.WRITE_BULK_AT`` (5,000) it is one transaction; beyond it the chunked
  write (staged, published in one transaction, cleaned up). The peer is the same call at 1,000
  partitions: the ratio says how flat the per-partition cost stays beyond one transaction.
- **--spark N**: one ``INSERT … SELECT`` creating N partitions (five rows each, one string partition
  column) into a ushas table and into a Hive metastore table (embedded Derby, parquet datasource table)
  of the SAME Spark 4.3 application, one run each (ushas first), then an INSERT OVERWRITE of the N on
  each; prints ushas ÷ Hive.
- **--commit-write N**: the shim's ``commit_write`` request of an INSERT of N new partitions, then of a
  dynamic INSERT OVERWRITE of them (what the JVM sends; no Spark), on this tree and, with ``--against``,
  on another checkout (before / after a change), each in its own process.

Times are seconds on the shared machine; only the ratios of one run compare.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if not os.environ.get("USHAS_BENCH_CHILD"):  # a child runs the tree its PYTHONPATH names
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


def commit_write(root: Path, n: int) -> dict[str, str]:
    """The shim's ``commit_write`` request of a Spark INSERT of ``n`` new partitions (one file each), then
    of a dynamic INSERT OVERWRITE of the same ``n``, through ``ushas_catalog.spark.bridge.handle`` (what
    the JVM calls): seconds, or the error class. Run in its own process per tree (``--commit-write-only``)."""
    import json
    import uuid

    from ushas_catalog.metastore import Metastore
    from ushas_catalog.spark.bridge import handle

    uri = f"sqlite:///{root}/cw-{uuid.uuid4().hex[:6]}.db"
    warehouse = f"file:{root}/warehouse"
    ms = Metastore.open(uri)
    ms.create_catalog("main")
    ms.create_database("main.db")
    ms.create_table("main.db.t", "id INT, dt STRING", partition_by=["dt"])
    location = f"{warehouse}/db.db/t"  # where the Spark catalog puts a managed table
    ms.close()
    ctx = {"project": "default", "catalog": "main", "spark_catalog": "bench", "branch": "main", "uri": uri,
           "warehouse": warehouse}
    out: dict[str, str] = {}
    for mode, tag, base in (("append", "a", 1), ("dynamic", "b", 2)):
        written = [{"path": f"dt=p{i:05d}", "files": [{"path": f"{location}/dt=p{i:05d}/{tag}-0.parquet", "size": 100,
                                                      "mtime": 1}], "existing": []} for i in range(n)]
        request = {"ctx": ctx, "deadline_ms": int(time.time() * 1000) + 600_000, "namespace": ["db"], "name": "t",
                   "location": location, "mode": mode, "filters": [], "written": written, "rows": n,
                   "write_id": str(uuid.uuid4()), "base_version": base}
        t0 = time.perf_counter()
        answer = handle("commit_write", json.dumps(request))
        if answer.startswith("@"):
            with open(answer[1:], encoding="utf-8") as f:
                answer = f.read()
        got = json.loads(answer)
        out[mode] = (f"{time.perf_counter() - t0:.1f} s" if "error" not in got
                     else f"failed: {got['error'].get('type')} ({time.perf_counter() - t0:.1f} s)")
        if "error" in got:
            break
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
    ap.add_argument("--commit-write", type=int, metavar="N",
                    help="only the shim's commit_write of N partitions (append, then dynamic overwrite)")
    ap.add_argument("--against", metavar="TREE", help="with --commit-write: also run it on another checkout's "
                                                      "python/ (e.g. /work/main), in its own process")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ushas-many-"))
    if args.commit_write:
        import json
        import subprocess

        if os.environ.get("USHAS_BENCH_CHILD"):
            import ushas_catalog

            got = commit_write(root, args.commit_write)
            got["code"] = str(Path(ushas_catalog.__file__).parent.parent)
            print("RESULT " + json.dumps(got))
            shutil.rmtree(root, ignore_errors=True)
            return 0
        trees = {"this tree": HERE.parent} | ({"--against": Path(args.against)} if args.against else {})
        for label, tree in trees.items():
            run = subprocess.run([sys.executable, __file__, "--commit-write", str(args.commit_write)],
                                 capture_output=True, text=True, timeout=1800,
                                 env={**os.environ, "PYTHONPATH": str(tree / "python"), "USHAS_BENCH_CHILD": "1"})
            line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
            got = json.loads(line[7:]) if line else {"error": run.stderr.strip().splitlines()[-1:]}
            print(f"commit_write of {args.commit_write:,} partitions, {label} ({tree}): {got}", flush=True)
        shutil.rmtree(root, ignore_errors=True)
        return 0
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
