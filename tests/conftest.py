"""Shared fixtures. ONE SparkSession for the whole test session (fixture ``spark``);
tests that need Spark take it, never build their own."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


@pytest.fixture
def store_uri(tmp_path: Path) -> str:
    """A fresh embedded store for one test."""
    return f"sqlite:///{tmp_path / 'ushas.db'}"


@pytest.fixture(scope="session")
def spark_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("spark")
    dirs = {"root": root, "warehouse": root / "warehouse", "hive_warehouse": root / "hive-warehouse",
            "derby": root / "derby", "store": root / "ushas.db"}
    for key in ("warehouse", "hive_warehouse", "derby"):
        dirs[key].mkdir()
    return dirs


@pytest.fixture(scope="session")
def spark(spark_dirs: dict[str, Path]):
    """local[2] with Hive support (embedded Derby, as the peer and for Hive-table tests),
    the shim jar, the ``ushas`` catalog on a session-wide sqlite store and the lineage listener."""
    from pyspark.sql import SparkSession

    from ushas_catalog.spark.jar import jar_path, test_jar_path

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("ushas-tests")
        .config("spark.jars", f"{jar_path()},{test_jar_path()}")  # + the test-only classes (src/test/java)
        .config("spark.ui.enabled", "false")
        # the tests define catalogs per user at run time (tests/user_catalogs.py): the deployer's opt-in
        .config("spark.ushas.session.catalogs", "allow")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.warehouse.dir", str(spark_dirs["hive_warehouse"]))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={spark_dirs['derby']}")
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={spark_dirs['derby'] / 'metastore_db'};create=true")
        .enableHiveSupport()
    )
    try:
        from ushas_catalog.spark import configure  # the catalog + listener helper (issue 3)
    except ImportError:
        configure = None
    if configure is not None:
        builder = configure(builder, name="ushas", uri=f"sqlite:///{spark_dirs['store']}",
                            warehouse=str(spark_dirs["warehouse"]))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
