"""Running Spark's own launchers (``spark-submit``, ``spark-sql``) in a subprocess with nothing but
``--conf``s: the configuration-only way in, where the shim launches the Python bridge itself.
Shared by the config-only, bridge-timeout, cache and capture tests (``tests/`` is on ``sys.path``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def spark_bin(tool: str) -> str:
    """The path of ``tool`` (``spark-submit``, ``spark-sql``) inside the installed pyspark."""
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / tool)


def conf_args(store: Path, warehouse: Path, **extra: str) -> list[str]:
    """``--conf`` arguments for the shim jar, a ``ushas`` catalog over the sqlite store ``store`` and the
    session extension (as spark-defaults.conf.example sets them); ``extra`` adds or overrides settings."""
    from ushas_catalog.spark.jar import jar_path

    conf = {"spark.jars": str(jar_path()),
            "spark.sql.catalog.ushas": "io.ushas.spark.UshasCatalog",
            "spark.sql.catalog.ushas.uri": f"sqlite:///{store}",
            "spark.sql.catalog.ushas.warehouse": str(warehouse),
            "spark.sql.catalog.ushas.create": "true",  # tests start from fresh stores
            "spark.sql.extensions": "io.ushas.spark.UshasExtensions",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2", **extra}
    return [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]


def run_spark(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a launcher command with this interpreter (the test venv) as the driver's Python and as
    the bridge the shim launches."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
