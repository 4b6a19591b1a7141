"""Writes bigger than one store transaction (issue 38): what a many-partition INSERT costs.

    python bench/many_partitions.py                     # registration only: 1,000 / 12,000 / 30,000 partitions
    python bench/many_partitions.py --spark 5000 [--before]   # INSERT / INSERT OVERWRITE / CTAS of 5,000, vs Hive
    python bench/many_partitions.py --flat 1000,10000,100000   # per-partition cost of an INSERT through Spark
    python bench/many_partitions.py --commit-write 12000 --against /work/main   # the shim's commit, before/after

- **registration** (Python, the embedded store): ``Metastore.replace_partitions`` — what a Spark write's
  commit calls — of N new partitions (one file each), then of the same N replaced (an INSERT OVERWRITE),
  timed per partition. Up to ``bulk.WRITE_BULK_AT`` (5,000) it is one transaction; beyond it the chunked
  write (staged, published in one transaction, cleaned up). The peer is the same call at 1,000
  partitions: the ratio says how flat the per-partition cost stays beyond one transaction.
- **--spark N**: one ``INSERT … SELECT`` creating N partitions (five rows each, one string partition
  column) into a ushas table and into a Hive metastore table (embedded Derby, parquet datasource table)
  of the SAME Spark 4.3 application, one run each (ushas first, after one small warm-up write per side),
  then an INSERT OVERWRITE of the N on each, then a CTAS of N partitions on each; prints ushas ÷ Hive.
  ``--before`` adds a third side: a ushas table with ``option.ushas.write.forklessLocalFiles=false`` (its
  writes fork a ``chmod`` per file create, as before ``io.ushas.spark.LocalFiles``); ``--sample`` prints
  jstack samples of each statement by kind (bench/_sampler.py). Without ``--sizes`` the registration
  rows are not run.
- **--flat SIZES**: one INSERT of N partitions through Spark into a new ushas table per size (two rows a
  partition, clustered by partition: one file per partition), an INSERT OVERWRITE of them and a CTAS of N
  partitions; prints ms per partition of each and its ratio to the first size's (flat = 1.00x).
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


FORKING = "'option.ushas.write.forklessLocalFiles'='false'"  # the write as before LocalFiles (a peer)


def spark_side(root: Path, n: int, before: bool = False, sample: bool = False) -> dict[str, float]:
    """One INSERT creating ``n`` partitions, an INSERT OVERWRITE of them, a CTAS of ``n`` partitions: on
    ushas, on Hive (same application), and with ``before`` on a ushas table whose writes fork ``chmod``
    per file create as before (``ushas.write.forklessLocalFiles=false``). Seconds by "side op". ``sample``:
    also jstack samples of each statement, printed by kind (bench/_sampler.py)."""
    from _sampler import Sampler, describe, pid_of
    from _spark import ushas_session

    spark = ushas_session("many-partitions", root, hive=True)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")
    for table in ("ushas.b.warm", "default.warm"):  # the first write of an application pays its warm-up
        spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
        spark.sql(f"INSERT INTO {table} SELECT id, CAST(id % 20 AS STRING) FROM range(100)")
    source = f"SELECT id, CAST(id % {n} AS STRING) AS p FROM range({n * 5})"
    sides = {"ushas": ("ushas.b.many", ""), "hive": ("default.many", "")}
    if before:
        sides["ushas (forking chmod, before)"] = ("ushas.b.forking", f" TBLPROPERTIES ({FORKING})")
    out: dict[str, float] = {}
    sampler = Sampler(pid_of(spark)) if sample else None

    def run(side: str, op: str, sql: str) -> None:
        t0 = time.perf_counter()
        if sampler is None:
            spark.sql(sql)
            counts = None
        else:
            _, counts = sampler.during(lambda: spark.sql(sql))
        out[f"{side} {op}"] = time.perf_counter() - t0
        print(f"  {side}: {op} of {n:,} partitions {out[f'{side} {op}']:.1f} s", flush=True)
        if counts is not None:
            print(f"    jstack samples: {describe(counts)}", flush=True)

    for side, (table, props) in sides.items():
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p){props}")
        run(side, "insert", f"INSERT INTO {table} {source}")
        assert spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == n * 5
    for side, (table, _) in sides.items():
        run(side, "overwrite", f"INSERT OVERWRITE {table} {source}")
    for side, (table, props) in sides.items():
        spark.sql(f"DROP TABLE IF EXISTS {table}_ctas")
        run(side, "ctas", f"CREATE TABLE {table}_ctas USING parquet PARTITIONED BY (p){props} AS {source}")
        assert spark.sql(f"SELECT count(*) FROM {table}_ctas").collect()[0][0] == n * 5
    spark.stop()
    return out


def flat(root: Path, sizes: list[int]) -> dict[int, dict[str, float]]:
    """Seconds of one INSERT creating N partitions into a new ushas table, of an INSERT OVERWRITE of them and
    of a CTAS of N partitions, for each N: tiny data (two rows a partition, clustered by partition: one file
    per partition), the per-partition cost of each."""
    from _spark import ushas_session

    spark = ushas_session("many-partitions-flat", root)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")
    spark.sql("CREATE TABLE ushas.b.warm (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO ushas.b.warm SELECT id, CAST(id % 20 AS STRING) FROM range(100)")
    out: dict[int, dict[str, float]] = {}
    for n in sizes:
        table = f"ushas.b.flat{n}"
        source = f"SELECT id, CAST(id DIV 2 AS STRING) AS p FROM range({2 * n})"
        spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
        out[n] = {}
        for op, sql in (("insert", f"INSERT INTO {table} {source}"), ("overwrite", f"INSERT OVERWRITE {table} {source}"),
                        ("ctas", f"CREATE TABLE {table}_ctas USING parquet PARTITIONED BY (p) AS {source}")):
            t0 = time.perf_counter()
            spark.sql(sql)
            out[n][op] = time.perf_counter() - t0
            print(f"  {op} of {n:,} partitions: {out[n][op]:.1f} s, {out[n][op] / n * 1000:.2f} ms/partition",
                  flush=True)
        for t in (table, f"{table}_ctas"):
            assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == 2 * n
    spark.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,12000,30000", help="partition counts of the registration rows")
    ap.add_argument("--spark", type=int, metavar="N", help="also one Spark INSERT of N partitions, ushas vs Hive")
    ap.add_argument("--before", action="store_true",
                    help="with --spark: also a ushas table written as before (a forked chmod per file create)")
    ap.add_argument("--sample", action="store_true",
                    help="with --spark: jstack samples of each statement, by kind (where the time goes)")
    ap.add_argument("--flat", metavar="SIZES", help="only: one INSERT of each of these partition counts through "
                                                    "Spark (e.g. 1000,10000,100000), per-partition cost")
    ap.add_argument("--commit-write", type=int, metavar="N",
                    help="only the shim's commit_write of N partitions (append, then dynamic overwrite)")
    ap.add_argument("--against", metavar="TREE", help="with --commit-write: also run it on another checkout's "
                                                      "python/ (e.g. /work/main), in its own process")
    ap.add_argument("--dir", help="where the tables go (default: the temporary directory; /dev/shm: memory, "
                                  "no ext4 inode allocation, docs/benchmarks.md \"recently deleted inodes\")")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ushas-many-", dir=args.dir))
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
        if args.flat:
            sizes = [int(x) for x in args.flat.split(",")]
            flats = flat(root, sizes)
            first = sizes[0]
            print(f"| partitions | statement | s | ms/partition | ÷ at {first:,} |")
            print("|---:|---|---:|---:|---:|")
            for op in ("insert", "overwrite", "ctas"):
                base = flats[first][op] / first
                for n, times in flats.items():
                    t = times[op]
                    print(f"| {n:,} | {op} | {t:.1f} | {t / n * 1000:.2f} | {t / n / base:.2f}x |")
            return 0
        if not args.spark or args.sizes != ap.get_default("sizes"):
            sizes = [int(s) for s in args.sizes.split(",")]
            reg = registration(root, sizes)
            base_reg = reg[sizes[0]]
            print("| partitions | append µs/partition | ÷ at {0:,} | overwrite µs/partition | ÷ at {0:,} |"
                  .format(sizes[0]))
            print("|---:|---:|---:|---:|---:|")
            for n, (a, o) in reg.items():
                print(f"| {n:,} | {a:.0f} | {a / base_reg[0]:.2f}x | {o:.0f} | {o / base_reg[1]:.2f}x |")
        if args.spark:
            s = spark_side(root, args.spark, before=args.before, sample=args.sample)
            print(f"| statement ({args.spark:,} partitions) | ushas s | Hive s | ushas ÷ Hive |"
                  + (" before s | before ÷ Hive |" if args.before else ""))
            print("|---|---:|---:|---:|" + ("---:|---:|" if args.before else ""))
            for op, what in (("insert", "one INSERT … SELECT creating them"), ("overwrite", "INSERT OVERWRITE of them"),
                             ("ctas", "CTAS into a partitioned table")):
                u, h = s[f"ushas {op}"], s[f"hive {op}"]
                line = f"| {what} | {u:.1f} | {h:.1f} | {u / h:.2f}x |"
                if args.before:
                    b = s[f"ushas (forking chmod, before) {op}"]
                    line += f" {b:.1f} | {b / h:.2f}x |"
                print(line, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
