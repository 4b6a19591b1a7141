"""``nul``: a V2 catalog that does nothing (``bench/java/NullCatalog.java``), compiled against the running
interpreter's pyspark (Spark 4.3 here, 4.1.4 in the Iceberg virtualenv) and cached by source and version: a
statement on it costs what Spark itself costs, the floor any catalog's work adds to. A helper module (bench/run
skips files whose name starts with "_"); it imports nothing but pyspark."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the Spark conf that adds it as catalog ``nul`` (with :func:`null_catalog_jar` on ``spark.jars``)
NUL_CATALOG = {"spark.sql.catalog.nul": "io.ushas.bench.NullCatalog"}


def null_catalog_jar() -> Path:
    """bench/java/NullCatalog.java compiled against pyspark's jars, cached by source hash."""
    import pyspark

    source = HERE / "java" / "NullCatalog.java"
    jars = Path(pyspark.__file__).parent / "jars"
    key = hashlib.sha256(source.read_bytes() + pyspark.__version__.encode()).hexdigest()[:12]
    jar = Path(tempfile.gettempdir()) / f"ushas-bench-nullcatalog-{key}" / "nullcatalog.jar"
    if jar.exists():
        return jar
    classes = Path(tempfile.mkdtemp(prefix="nullcatalog-"))
    try:
        subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", f"{jars}/*", str(source)], check=True)
        jar.parent.mkdir(parents=True, exist_ok=True)
        tmp = jar.parent / f"nullcatalog.{os.getpid()}.jar"
        subprocess.run(["jar", "cf", str(tmp), "-C", str(classes), "."], check=True)
        tmp.replace(jar)
    finally:
        shutil.rmtree(classes, ignore_errors=True)
    return jar
