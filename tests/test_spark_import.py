"""``import ushas_catalog.spark`` gives ``df.lineage()`` whichever is imported first, and the bridge
process the shim launches (``python -m ushas_catalog.bridge``) never loads pyspark."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYTHON = str(Path(__file__).resolve().parent.parent / "python")


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PYTHON, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_lineage_is_installed_when_pyspark_comes_later() -> None:
    assert _run("import sys, ushas_catalog.spark\n"
                "print('pyspark.sql' in sys.modules)\n"
                "from pyspark.sql import SparkSession\n"
                "from pyspark.sql.classic.dataframe import DataFrame\n"
                "print(hasattr(DataFrame, 'lineage'))") == "False\nTrue"


def test_lineage_is_installed_when_pyspark_came_first() -> None:
    assert _run("from pyspark.sql.classic.dataframe import DataFrame\n"
                "import ushas_catalog.spark\n"
                "print(hasattr(DataFrame, 'lineage'))") == "True"


def test_the_bridge_does_not_load_pyspark() -> None:
    assert _run("import sys, ushas_catalog.bridge, ushas_catalog.spark.ops\n"
                "print(sorted(m for m in sys.modules if m.startswith('pyspark')))") == "[]"
