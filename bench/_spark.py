"""The Spark session the catalog benchmarks start (a helper module, not a benchmark: bench/run
skips files whose name starts with "_"): local[2], no UI, 2 shuffle partitions, the ``ushas``
catalog on ``sqlite:///ROOT/ushas.db`` with its warehouse under ``ROOT/warehouse`` and no lineage
listener from the configuration; with ``hive=True`` also Spark's Hive support on an embedded Derby
metastore under ``ROOT/derby`` (warehouse ``ROOT/hive``), the peer the benchmarks compare with."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Mapping


def ushas_session(app: str, root: Path, *, hive: bool = False, conf: Mapping[str, str] | None = None) -> Any:
    """A started session (log level ERROR); ``conf``: more Spark settings. Creates the
    directories it names under ``root``."""
    from pyspark.sql import SparkSession

    from ushas_catalog.spark import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for d in ("warehouse", "hive", "derby") if hive else ("warehouse",):
        (root / d).mkdir(exist_ok=True)
    builder = (SparkSession.builder.master("local[2]").appName(app)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    if hive:
        builder = (builder.config("spark.sql.warehouse.dir", str(root / "hive"))
                   .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={root / 'derby'}")
                   .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                           f"jdbc:derby:;databaseName={root / 'derby' / 'metastore_db'};create=true")
                   .enableHiveSupport())
    builder = configure(builder, name="ushas", uri=f"sqlite:///{root / 'ushas.db'}",
                        warehouse=str(root / "warehouse"), lineage=False)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
