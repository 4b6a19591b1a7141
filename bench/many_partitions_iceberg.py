"""Many-partition writes, ushas (Spark 4.3) vs Iceberg 1.12 (Spark 4.1.4), issue 38's ≤ 0.8× Iceberg goal:

    python bench/many_partitions_iceberg.py [--partitions 2000 5000] [--rounds 2] [--driver-memory 3g] [--sample]

For each N: one INSERT … SELECT creating N partitions (five rows each) into a fresh table, an INSERT
OVERWRITE of that table with the same rows, and a CTAS of N partitions. Four sides, **each in a fresh
process per round** (same ``--driver-memory`` for all), alternating their order from round to round,
medians of the rounds; each runs the catalog-free control query first (bench/_iceberg.py: an Iceberg
ratio is valid only when ushas's control ÷ that side's is within 0.85–1.15×), and a file-system control
(300 small files created, renamed and deleted by the side's Python process, before and after the writes:
a round whose disk was throttled shows it there; each round's figures are printed). Every side's directory
is removed only after the last round (``--dir``: where they go, e.g. ``/dev/shm``): ext4 scans past the
inodes deleted in the last minutes when it allocates one, so files deleted between sides slowed the next
side's creates fourfold (docs/benchmarks.md, "recently deleted inodes"):

- ``ushas``: the catalog as shipped; on ``file:`` its writes create files without a forked ``chmod``
  (``io.ushas.spark.LocalFiles``);
- ``ushas-fork``: the same with ``option.ushas.write.forklessLocalFiles=false`` (a forked ``chmod`` per
  file create, as Hadoop does without its native library); ``ushas-hash`` / ``ushas-none`` (only when
  named in ``--sides``): a table with ``write.distribution-mode=hash`` (rows clustered by partition: the
  default since wave 18, as Iceberg's) / ``none`` (each task's rows written where they are, a file per
  task and partition: the default before);
  ``ushas-spark-writer`` (only when named): a table with ``option.ushas.write.taskParquetWriters=false``,
  Spark's Parquet writer set up per file (the write before wave 16's per-task set-up);
- ``iceberg``: Iceberg (the virtualenv and jars of bench/_iceberg.py; JDBC catalog on SQLite) with its
  defaults — ``write.distribution-mode=hash`` for a partitioned table — but the clustered writer
  (``write.spark.fanout.enabled=false``, bench/_iceberg.py's ``MANY_PARTITIONS``): with its default for
  an unsorted table, the fanout writer, 2,000 partitions ran out of a 3 GB heap (``--iceberg-props ''``:
  all its defaults);
- ``iceberg-localfiles``: the same with the shim's ``LocalFiles`` class as ``fs.file.impl`` (a bench-only
  jar of just that class, which needs nothing but Hadoop's ``LocalFileSystem``): no fork either.

The ratio that answers the goal is ``ushas ÷ iceberg-localfiles``: both sides create files the same way
(as on HDFS or S3, where no side forks); ``ushas ÷ iceberg`` (what a user of this machine's file system
sees) and ``ushas-fork ÷ iceberg`` (both forking) are printed beside it. ``--sample`` takes ``jstack``
samples of each side's INSERT (bench/_sampler.py). ``--sides`` runs some of the four.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

from _iceberg import (  # noqa: E402  (bench/ is the script's directory; the virtualenv imports this module too)
    MANY_PARTITIONS, control_time, fs_control_time, iceberg_session, iceberg_setup, local_files_conf, local_files_jar, run_side, source, timed)

SIDES = ("ushas", "ushas-fork", "iceberg", "iceberg-localfiles")
#: table properties of the ushas sides
USHAS_PROPS = {"ushas": "", "ushas-fork": "'option.ushas.write.forklessLocalFiles'='false'",
               "ushas-hash": "'write.distribution-mode'='hash'", "ushas-none": "'write.distribution-mode'='none'",
               "ushas-spark-writer": "'option.ushas.write.taskParquetWriters'='false'"}
STATEMENTS = (("insert", "INSERT … SELECT creating {n:,} partitions"),
              ("overwrite", "INSERT OVERWRITE of the {n:,} partitions"),
              ("ctas", "CTAS of {n:,} partitions"))


def statements(spark: Any, root: Path, ns: str, using: str, sizes: list[int], sample: bool) -> dict[str, Any]:
    """The control query (median of 3 after one warm-up), then per size the three writes; run by every side
    in its own process (``root``: its directory, ``ns``: the namespace, ``using``: ``USING … [TBLPROPERTIES
    …]``). Counts the data files the INSERT wrote."""
    from _sampler import Sampler, describe, pid_of

    out: dict[str, Any] = {"version": spark.version}
    out["control"] = control_time(spark, 3)
    out["fs_before"] = fs_control_time(root)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    for n in sizes:
        t = f"{ns}.m{n}"
        spark.sql(f"DROP TABLE IF EXISTS {t}")
        spark.sql(f"CREATE TABLE {t} (id BIGINT, p STRING) {using.replace('{by}', 'PARTITIONED BY (p)')}")
        if sample:
            secs, counts = Sampler(pid_of(spark)).during(lambda: timed(lambda: spark.sql(f"INSERT INTO {t} {source(n)}")))
            out[f"samples_{n}"] = describe(counts)
        else:
            secs = timed(lambda: spark.sql(f"INSERT INTO {t} {source(n)}"))
        out[f"insert_{n}"] = secs
        out[f"files_{n}"] = sum(1 for d, _, names in os.walk(root) if f"/m{n}/" in d + "/"
                                for name in names if name.endswith(".parquet"))
        out[f"overwrite_{n}"] = timed(lambda: spark.sql(f"INSERT OVERWRITE {t} {source(n)}"))
        spark.sql(f"DROP TABLE IF EXISTS {ns}.c{n}")
        out[f"ctas_{n}"] = timed(lambda: spark.sql(
            f"CREATE TABLE {ns}.c{n} {using.replace('{by}', 'PARTITIONED BY (p)')} AS {source(n)}"))
    out["fs_after"] = fs_control_time(root)
    spark.stop()
    return out


def side_main(spec: dict[str, Any]) -> dict[str, Any]:
    """One side in this (fresh) process: ``spec`` = side, root, sizes, sample, memory[, jars, props]."""
    root, side = Path(spec["root"]), spec["side"]
    conf = {"spark.driver.memory": spec["memory"]}
    if side.startswith("ushas"):
        from _spark import ushas_session

        props = f" TBLPROPERTIES ({USHAS_PROPS[side]})" if USHAS_PROPS[side] else ""
        spark = ushas_session(f"many-{side}", root, conf=conf)
        return statements(spark, root, "ushas.b", "USING parquet {by}" + props, spec["sizes"], spec["sample"])
    if side == "iceberg-localfiles":
        conf.update(local_files_conf(Path(spec["localfiles"])))
    spark = iceberg_session(f"many-{side}", root, spec["jars"], conf)
    jvm = spark.sparkContext._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), spark._jsc.hadoopConfiguration())
    file_system = str(fs.getClass().getName())  # LocalFiles really is what Iceberg's writes open file: with
    props = f" TBLPROPERTIES ({spec['props']})" if spec.get("props") else ""
    return {"file_system": file_system,
            **statements(spark, root, "ice.b", "USING iceberg {by}" + props, spec["sizes"], spec["sample"])}


def run(side: str, root: Path, sizes: list[int], sample: bool, memory: str, props: str,
        timeout: int) -> dict[str, Any]:
    """One side in its own process, writing under ``root`` (a fresh directory, removed by the caller only
    after every round: see :func:`main`)."""
    spec: dict[str, Any] = {"side": side, "root": str(root), "sizes": sizes, "sample": sample, "memory": memory,
                            "props": props}
    try:
        if side.startswith("ushas"):
            return run_side(side, sys.executable, [__file__, "--side", json.dumps(spec)], timeout,
                            pythonpath=str(HERE.parent / "python"))
        python, jars = iceberg_setup()
        spec["jars"] = ",".join(map(str, jars))
        if side == "iceberg-localfiles":
            spec["localfiles"] = str(local_files_jar(root))
        return run_side(side, python, [__file__, "--side", json.dumps(spec)], timeout)
    finally:
        os.sync()  # the next side starts with this one's files written back, not still in flight


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, nargs="+", help="partitions of each write (2000)")
    ap.add_argument("--quick", action="store_true", help="500 partitions")
    ap.add_argument("--rounds", type=int, default=1, help="rounds, each side in a fresh process per round")
    ap.add_argument("--sides", nargs="+", choices=[*SIDES, "ushas-hash", "ushas-none", "ushas-spark-writer"],
                    default=list(SIDES),
                    help="ushas-hash / ushas-none: a ushas table with write.distribution-mode=hash (the default, "
                         "as Iceberg's) / none (a file per task and partition); "
                         "ushas-spark-writer: Spark's Parquet writer set up per file (the write before wave 16)")
    ap.add_argument("--driver-memory", default="3g", help="every side's spark.driver.memory")
    ap.add_argument("--iceberg-props", default=MANY_PARTITIONS,
                    help="the Iceberg tables' properties ('': Iceberg's defaults; default: the clustered writer)")
    ap.add_argument("--sample", action="store_true", help="jstack samples of every side's INSERT task threads")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per side and round")
    ap.add_argument("--dir", help="where the sides' directories go (default: the temporary directory; e.g. "
                                  "/dev/shm: memory, no disk and no ext4 inode allocation)")
    ap.add_argument("--side", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        print("RESULT " + json.dumps(side_main(json.loads(args.side))), flush=True)
        return 0
    args.partitions = args.partitions or [500 if args.quick else 2000]
    got: dict[str, list[dict[str, Any]]] = {s: [] for s in args.sides}
    failed: dict[str, str] = {}
    roots: list[Path] = []
    try:
        for r in range(args.rounds):
            for side in (args.sides if r % 2 == 0 else list(reversed(args.sides))):
                if side in failed:
                    continue
                roots.append(Path(tempfile.mkdtemp(prefix=f"ushas-many-{side}-", dir=args.dir)))
                try:
                    got[side].append(run(side, roots[-1], args.partitions, args.sample, args.driver_memory,
                                         args.iceberg_props, args.timeout))
                except RuntimeError as e:
                    failed[side] = str(e)
                    print(f"  round {r + 1} {side}: {e}", flush=True)
                    continue
                print(f"  round {r + 1} {side}: " + json.dumps(got[side][-1]), flush=True)
    finally:
        # removed only now: files deleted between sides would slow the next side's creates (ext4 scans
        # past recently deleted inodes when it allocates one: docs/benchmarks.md, "recently deleted inodes")
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)

    def med(side: str, key: str) -> float | None:
        values = [x[key] for x in got.get(side, []) if key in x]
        return statistics.median(values) if values else None

    def cell(t: float | None) -> str:
        return "—" if t is None else f"{t:.1f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "—" if a is None or b is None else f"{a / b:.2f}x"

    print()
    print(f"medians of {args.rounds} round(s), each side in its own process per round, driver memory "
          f"{args.driver_memory}; Iceberg table properties: {args.iceberg_props or 'its defaults'}")
    for side, why in failed.items():
        print(f"  {side}: {why}")
    print("| operation | ushas side | s | peer side | s | ushas ÷ peer | goal |")
    print("|---|---|---:|---|---:|---:|---|")
    pairs = (("ushas", "iceberg-localfiles", "≤ 0.8x (answers the goal: both without a forked chmod)"),
             ("ushas-hash", "iceberg-localfiles", "(ushas clustering by partition, no fork)"),
             ("ushas-none", "iceberg-localfiles", "(ushas not clustering: a file per task and partition, no fork)"),
             ("ushas-spark-writer", "iceberg-localfiles", "(ushas with Spark's per-file Parquet set-up, no fork)"),
             ("ushas", "ushas-spark-writer", "(the per-task Parquet set-up against Spark's per file)"),
             ("ushas", "iceberg", "(as shipped on file: without Hadoop's native library)"),
             ("ushas-fork", "iceberg", "(both with a forked chmod per file)"))
    for mine, peer, goal in pairs:
        if not got.get(mine) or not got.get(peer):
            continue
        c = ratio(med(mine, "control"), med(peer, "control"))
        ok = c != "—" and 0.85 <= float(c[:-1]) <= 1.15
        print(f"| control query (no catalog), Spark 4.3 ÷ 4.1.4 | {mine} | {cell(med(mine, 'control'))} | {peer} | "
              f"{cell(med(peer, 'control'))} | {c} | 0.85–1.15x{'' if ok else ' — NOT met: the rows below are not valid'} |")
        for key, what in (("fs_before", "before"), ("fs_after", "after")):
            u, i = med(mine, key), med(peer, key)
            if u is not None and i is not None:
                print(f"| file-system control {what} the writes (300 files created, renamed, deleted; ms) | {mine} | "
                      f"{u * 1000:.0f} | {peer} | {i * 1000:.0f} | {ratio(u, i)} | (a side whose disk was throttled) |")
        for n in args.partitions:
            for key, what in STATEMENTS:
                u, i = med(mine, f"{key}_{n}"), med(peer, f"{key}_{n}")
                print(f"| {what.format(n=n)} | {mine} | {cell(u)} | {peer} | {cell(i)} | {ratio(u, i)} | {goal} |")
    for n in args.partitions:
        print(f"  files written by the INSERT of {n:,}: " + ", ".join(
            f"{s} {med(s, f'files_{n}'):.0f}" for s in args.sides if med(s, f"files_{n}") is not None))
        if args.sample:
            for s in args.sides:
                for i, x in enumerate(got[s]):
                    print(f"  samples {n}, {s}, round {i + 1}: {x.get(f'samples_{n}')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
