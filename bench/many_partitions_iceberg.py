"""Many-partition writes, ushas (Spark 4.3) vs Iceberg 1.12 (Spark 4.1.4), issue 38's ≤ 0.8× Iceberg goal:

    python bench/many_partitions_iceberg.py [--partitions 2000 5000] [--sample]

For each N: one INSERT … SELECT creating N partitions (five rows each) into a fresh table, an INSERT
OVERWRITE of that table with the same rows, and a CTAS of N partitions; ushas also runs the INSERT with
``option.ushas.write.forklessLocalFiles=false`` (the write without the local-file-system fix, i.e. what a
file system where creates cost no forked ``chmod`` cannot gain). The Iceberg side runs in the virtualenv
and with the jars of ``bench/first_hour.py`` (same JDBC-on-SQLite catalog, 3 GB driver). Both sides run
the catalog-free control query of first_hour.py: the Iceberg ratios are valid only when the control
ratio is within 0.85–1.15×. ``--sample`` takes ``jstack`` samples of the INSERT's task threads on both
sides (bench/_sampler.py) and prints how many were in a forked ``chmod``.
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
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

from _iceberg import CONTROL, iceberg_setup  # noqa: E402  (bench/ is the script's directory)


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _source(n: int) -> str:
    return f"SELECT id, CAST(id % {n} AS STRING) AS p FROM range({n * 5})"


def ushas_side(root: Path, sizes: list[int], sample: bool) -> dict[str, Any]:
    from _sampler import Sampler, describe, pid_of
    from _spark import ushas_session

    spark = ushas_session("many-partitions-iceberg", root)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.b")
    out: dict[str, Any] = {}
    spark.sql(CONTROL).collect()
    out["control"] = statistics.median(_timed(lambda: spark.sql(CONTROL).collect()) for _ in range(3))
    for n in sizes:
        def fresh(name: str, props: str = "") -> str:
            spark.sql(f"DROP TABLE IF EXISTS ushas.b.{name}")
            spark.sql(f"CREATE TABLE ushas.b.{name} (id BIGINT, p STRING) USING parquet PARTITIONED BY (p) {props}")
            return f"ushas.b.{name}"

        t = fresh(f"m{n}")
        if sample:
            secs, counts = Sampler(pid_of(spark)).during(lambda: _timed(lambda: spark.sql(f"INSERT INTO {t} {_source(n)}")))
            out[f"samples_{n}"] = describe(counts)
        else:
            secs = _timed(lambda: spark.sql(f"INSERT INTO {t} {_source(n)}"))
        out[f"insert_{n}"] = secs
        out[f"overwrite_{n}"] = _timed(lambda: spark.sql(f"INSERT OVERWRITE {t} {_source(n)}"))
        spark.sql(f"DROP TABLE IF EXISTS ushas.b.c{n}")
        out[f"ctas_{n}"] = _timed(lambda: spark.sql(
            f"CREATE TABLE ushas.b.c{n} USING parquet PARTITIONED BY (p) AS {_source(n)}"))
        f = fresh(f"f{n}", "TBLPROPERTIES ('option.ushas.write.forklessLocalFiles'='false')")
        out[f"insert_fork_{n}"] = _timed(lambda: spark.sql(f"INSERT INTO {f} {_source(n)}"))
        print(f"  ushas {n}: " + json.dumps({k: v for k, v in out.items() if k.endswith(str(n))}), flush=True)
    spark.stop()
    return out


ICEBERG_SCRIPT = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[5])
from pyspark.sql import SparkSession
from _sampler import Sampler, describe, pid_of
root, jars, sizes, sample, _, control = (sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(",")],
                                         sys.argv[4] == "1", sys.argv[5], sys.argv[6])
spark = (SparkSession.builder.master("local[2]").appName("iceberg").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.jars", jars).config("spark.driver.memory", "3g")
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.type", "jdbc")
         .config("spark.sql.catalog.ice.uri", f"jdbc:sqlite:{root}/iceberg.db")
         .config("spark.sql.catalog.ice.jdbc.schema-version", "V1")
         .config("spark.sql.catalog.ice.warehouse", f"file:{root}/iceberg-warehouse").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
def timed(f):
    t0 = time.perf_counter(); f(); return time.perf_counter() - t0
def src(k):
    return f"SELECT id, CAST(id % {k} AS STRING) AS p FROM range({k * 5})"
out = {}
spark.sql(control).collect()
out["control"] = statistics.median(timed(lambda: spark.sql(control).collect()) for _ in range(3))
spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.b")
for n in sizes:
    t = f"ice.b.m{n}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p)")
    if sample:
        secs, counts = Sampler(pid_of(spark)).during(lambda: timed(lambda: spark.sql(f"INSERT INTO {t} {src(n)}")))
        out[f"samples_{n}"] = describe(counts)
    else:
        secs = timed(lambda: spark.sql(f"INSERT INTO {t} {src(n)}"))
    out[f"insert_{n}"] = secs
    out[f"overwrite_{n}"] = timed(lambda: spark.sql(f"INSERT OVERWRITE {t} {src(n)}"))
    spark.sql(f"DROP TABLE IF EXISTS ice.b.c{n}")
    out[f"ctas_{n}"] = timed(lambda: spark.sql(f"CREATE TABLE ice.b.c{n} USING iceberg PARTITIONED BY (p) AS {src(n)}"))
    print("  iceberg %d: %s" % (n, json.dumps({k: v for k, v in out.items() if k.endswith(str(n))})), flush=True)
print("RESULT " + json.dumps(out))
"""


def _failure(stderr: str) -> str:
    """Why the Iceberg process failed: its last exception line (not a stack frame) and the Caused-by lines."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip() and not x.startswith(("\t", " "))]
    named = [x for x in lines if "Exception" in x or "Error" in x]
    return " | ".join(named[-3:] or lines[-1:] or ["?"])[:1000]


def iceberg_side(root: Path, sizes: list[int], sample: bool) -> dict[str, Any]:
    python, jars = iceberg_setup()
    script = root / "iceberg_many.py"
    script.write_text(ICEBERG_SCRIPT)
    out = subprocess.run([str(python), str(script), str(root), ",".join(map(str, jars)), ",".join(map(str, sizes)),
                          "1" if sample else "0", str(HERE), CONTROL], capture_output=True, text=True, timeout=3600,
                         env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")})
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    raise RuntimeError("the Iceberg side failed: " + _failure(out.stderr))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, nargs="+", default=[2000])
    ap.add_argument("--sample", action="store_true", help="jstack samples of both sides' INSERT task threads")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ushas-many-iceberg-"))
    try:
        print("== ushas, Spark 4.3", flush=True)
        mine = ushas_side(root, args.partitions, args.sample)
        print(f"  ushas control {mine['control']:.2f} s", flush=True)
        print("== Iceberg 1.12, Spark 4.1.4", flush=True)
        ice = iceberg_side(root, args.partitions, args.sample)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ratio = mine["control"] / ice["control"]
    valid = 0.85 <= ratio <= 1.15
    print()
    print("| operation | ushas s | Iceberg s | ushas ÷ Iceberg | goal |")
    print("|---|---:|---:|---:|---|")
    print(f"| control query (no catalog), Spark 4.3 ÷ 4.1.4 | {mine['control']:.2f} | {ice['control']:.2f} | "
          f"{ratio:.2f}x | 0.85–1.15x{'' if valid else ' — NOT met: the ratios below are not valid'} |")
    for n in args.partitions:
        for key, what in (("insert", f"INSERT … SELECT creating {n:,} partitions"),
                          ("overwrite", f"INSERT OVERWRITE of the {n:,} partitions"),
                          ("ctas", f"CTAS of {n:,} partitions")):
            u, i = mine[f"{key}_{n}"], ice[f"{key}_{n}"]
            print(f"| {what} | {u:.1f} | {i:.1f} | {u / i:.2f}x | ≤ 0.8x |")
        u, i = mine[f"insert_fork_{n}"], ice[f"insert_{n}"]
        print(f"| INSERT of {n:,} partitions, ushas with forklessLocalFiles=false | {u:.1f} | {i:.1f} | "
              f"{u / i:.2f}x | (no local-fs fix) |")
        if args.sample:
            print(f"  samples {n}: ushas {mine.get(f'samples_{n}')}")
            print(f"  samples {n}: Iceberg {ice.get(f'samples_{n}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
