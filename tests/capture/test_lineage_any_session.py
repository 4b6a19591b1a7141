"""``df.lineage()`` in a PySpark session nobody configured (no ``spark.jars``, no catalog): the
shim jar is loaded into the running driver JVM, once, with one WARNING line; no restart.

Runs in a subprocess (the shared ``spark`` fixture is configured with the jar), bounded in time."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')
         .config('spark.ui.showConsoleProgress', 'false').getOrCreate())
assert 'ushas' not in spark.conf.get('spark.jars', ''), 'the session must not be configured'
import ushas_catalog.spark  # noqa: F401  (installs df.lineage)
path = sys.argv[1]
spark.range(3).selectExpr('id', 'id * 10 as amount', "'x' as tag").write.mode('overwrite').parquet(path)
df = spark.read.parquet(path).where('tag = "x"').selectExpr('id', 'amount * 2 as doubled')
first = df.lineage()
second = spark.range(5).selectExpr('id + 1 as n').lineage()
print('RESULT ' + json.dumps({
    'first': sorted([e.target.name if e.target else '*', e.source.dataset.name if e.source.dataset else None,
                     e.source.name, e.subtype.value] for e in first.edges),
    'second': sorted([e.target.name if e.target else '*', e.source.name, e.subtype.value]
                     for e in second.edges),
}))
"""


def test_lineage_in_an_unconfigured_session(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(data)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    got = json.loads(line[len("RESULT "):])
    uri = f"file:{data}"
    assert got["first"] == sorted([
        ["id", uri, "id", "IDENTITY"],
        ["doubled", uri, "amount", "TRANSFORMATION"],
        ["*", uri, "tag", "FILTER"],
    ]), got["first"]
    assert got["second"] == [["n", "id", "TRANSFORMATION"]], got["second"]
    said = [x for x in proc.stderr.splitlines() if "shim jar was not on the Spark driver's classpath" in x]
    assert len(said) == 1, proc.stderr[-4000:]
