"""Apache Iceberg as the benchmarks' peer (a helper module, not a benchmark: bench/run skips files whose
name starts with "_"): Iceberg 1.12's Spark 4.1 runtime on pyspark 4.1.4, in its own virtualenv under
``~/.cache/ushas-bench`` (jars from Maven Central; bench only), JDBC catalog on SQLite. No Iceberg build
runs on Spark 4.3 (docs/row-level.md), so a catalog-free control query (:data:`CONTROL`) is timed on both
Spark builds: an Iceberg ratio means something only when the control's is within ±15%.

:func:`iceberg_session` imports nothing but pyspark: it runs inside that virtualenv."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

CACHE = Path.home() / ".cache" / "ushas-bench"
ICEBERG_VENV = CACHE / "iceberg-spark41"
MAVEN = "https://repo1.maven.org/maven2"
ICEBERG_JARS = {
    "iceberg-spark-runtime-4.1_2.13-1.12.0.jar":
        f"{MAVEN}/org/apache/iceberg/iceberg-spark-runtime-4.1_2.13/1.12.0/iceberg-spark-runtime-4.1_2.13-1.12.0.jar",
    "sqlite-jdbc-3.46.1.3.jar": f"{MAVEN}/org/xerial/sqlite-jdbc/3.46.1.3/sqlite-jdbc-3.46.1.3.jar",
}
#: the catalog-free control query, timed on both Spark builds
CONTROL = "SELECT count(DISTINCT id % 100000), sum(id * 3 % 7) FROM range(0, 20000000, 1, 4)"
#: the table properties of an Iceberg table the many-partition writes go into: Iceberg's defaults (hash
#: distribution) but the clustered writer (each task's rows sorted by partition, one open file at a time).
#: With its default for an unsorted table, the fanout writer (one open Parquet writer per partition of a
#: task, and AQE makes the tiny write one task), an INSERT of 2,000 partitions ran out of a 3 GB heap
#: (docs/benchmarks.md)
MANY_PARTITIONS = "'write.spark.fanout.enabled'='false'"


def iceberg_setup() -> tuple[Path, list[Path]]:
    """The virtualenv's python and the jars; raises RuntimeError(reason) when they cannot be had."""
    CACHE.mkdir(parents=True, exist_ok=True)
    python = ICEBERG_VENV / "bin" / "python"
    probe = [str(python), "-c", "import pyspark; assert pyspark.__version__ == '4.1.4'"]
    if not python.exists() or subprocess.run(probe, capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "venv", str(ICEBERG_VENV)], check=True, capture_output=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "pyspark==4.1.4"], capture_output=True,
                              text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError("pip install pyspark==4.1.4: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    jars = []
    for name, url in ICEBERG_JARS.items():
        path = CACHE / name
        if not path.exists() or path.stat().st_size == 0:
            got = subprocess.run(["curl", "-sSfL", "-o", str(path), url], capture_output=True, text=True, timeout=900)
            if got.returncode != 0:
                path.unlink(missing_ok=True)
                raise RuntimeError(f"download of {url} refused: {got.stderr.strip()[:200]}")
        jars.append(path)
    return python, jars


def iceberg_session(app: str, root: Path, jars: str, conf: dict[str, str] | None = None) -> Any:
    """A local[2] session (as bench/_spark.py's) with Iceberg's extensions and the catalog ``ice`` (JDBC on
    ``ROOT/iceberg.db``, warehouse ``ROOT/iceberg-warehouse``), a 3 GB driver; ``jars``: comma-separated."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[2]").appName(app).config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.jars", jars).config("spark.driver.memory", "3g")
               .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
               .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
               .config("spark.sql.catalog.ice.type", "jdbc")
               .config("spark.sql.catalog.ice.uri", f"jdbc:sqlite:{root}/iceberg.db")
               .config("spark.sql.catalog.ice.jdbc.schema-version", "V1")
               .config("spark.sql.catalog.ice.warehouse", f"file:{root}/iceberg-warehouse"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def cause(stderr: str) -> str:
    """The line of a failed process's output that says why (an exception's own line, not a stack frame)."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip() and not x.startswith(("\t", " "))]
    named = [x for x in lines if "Exception" in x or "Error" in x]
    return ((named or lines or ["?"])[-1])[:300]


def timed(fn: Callable[[], Any]) -> float:
    """Seconds ``fn()`` took."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def control_time(spark: Any, runs: int) -> float:
    """The catalog-free :data:`CONTROL` query's median of ``runs`` timed runs after one untimed run (either Spark
    build: the Iceberg ratios of a run are valid when the two sides' control times are within ±15%)."""
    spark.sql(CONTROL).collect()
    return statistics.median(timed(lambda: spark.sql(CONTROL).collect()) for _ in range(runs))


def fs_control_time(root: Path, files: int = 300, runs: int = 3) -> float:
    """A fixed small file-system workload timed in the calling side's own process (no Spark): ``files``
    files of 1 KiB created, renamed and deleted in a fresh directory under ``root``; the median of ``runs``.
    Two sides' figures differ when the disk (or the page cache's write-back) is throttled in one side's
    round and not the other's: a round whose writes slowed for that reason shows it here, next to the CPU
    control (:func:`control_time`)."""
    import shutil
    import time

    payload = b"x" * 1024
    times = []
    for r in range(runs):
        d = Path(root) / f"_fs_control_{r}"
        d.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        for i in range(files):
            with open(d / f"f{i}", "wb") as f:
                f.write(payload)
        for i in range(files):
            os.rename(d / f"f{i}", d / f"g{i}")
        for i in range(files):
            os.remove(d / f"g{i}")
        times.append(time.perf_counter() - start)
        shutil.rmtree(d, ignore_errors=True)
    return statistics.median(times)


def source(n: int) -> str:
    """The many-partition writes' query: small data, ``n`` partitions of five rows each."""
    return f"SELECT id, CAST(id % {n} AS STRING) AS p FROM range({n * 5})"


def run_side(label: str, python: Path | str, args: list[str], timeout: int,
             pythonpath: str | None = None) -> dict[str, Any]:
    """What ``python ARGS`` (a bench script's side ``label`` in its own process) printed after ``RESULT`` (JSON);
    RuntimeError naming the cause when it printed none. The process gets no ``SPARK_HOME`` and the
    ``PYTHONPATH`` given (none: what the virtualenv's pyspark needs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([str(python), *args], capture_output=True, text=True, timeout=timeout, env=env)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    raise RuntimeError(f"{label} failed: " + cause(out.stderr))


#: the class that creates ``file:`` files without a forked ``chmod`` (the shim's, docs/benchmarks.md)
LOCAL_FILES = "io.ushas.spark.LocalFiles"


def local_files_jar(dest: Path) -> Path:
    """A jar holding only the shim's :data:`LOCAL_FILES` classes (they need nothing but Hadoop's
    ``LocalFileSystem``), for an Iceberg session's classpath (bench only): ``dest/ushas-localfiles.jar``."""
    from ushas_catalog.spark.jar import jar_path

    prefix = LOCAL_FILES.replace(".", "/")
    out = dest / "ushas-localfiles.jar"
    with zipfile.ZipFile(jar_path()) as shim, zipfile.ZipFile(out, "w") as mine:
        names = [n for n in shim.namelist() if n == prefix + ".class" or n.startswith(prefix + "$")]
        if not names:
            raise RuntimeError(f"the shim's jar has no {LOCAL_FILES}")
        for name in names:
            mine.writestr(name, shim.read(name))
    return out


def local_files_conf(jar: Path) -> dict[str, str]:
    """The Spark settings that make a session (the driver and its local executors) open ``file:`` with
    :data:`LOCAL_FILES`, loaded from ``jar`` on the driver's class path."""
    return {"spark.driver.extraClassPath": str(jar), "spark.hadoop.fs.file.impl": LOCAL_FILES}
