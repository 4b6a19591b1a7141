"""Shared fixtures. ONE SparkSession for the whole test session (fixture ``spark``);
tests that need Spark take it, never build their own."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

#: skipped tests fail the run unless they are the FoundationDB engine's or USHAS_ALLOW_SKIPS names them
pytest_plugins = ["skip_policy"]


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
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.warehouse.dir", str(spark_dirs["hive_warehouse"]))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={spark_dirs['derby']}")
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={spark_dirs['derby'] / 'metastore_db'};create=true")
        .enableHiveSupport()
    )
    from ushas_catalog.spark import configure  # the catalog + listener helper: no session without them
    from ushas_catalog.spark.options import CATALOG_CLASS, LISTENER_CLASS

    builder = configure(builder, name="ushas", uri=f"sqlite:///{spark_dirs['store']}",
                        warehouse=str(spark_dirs["warehouse"]), lineage=True)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    check_configured(session, CATALOG_CLASS, LISTENER_CLASS)
    yield session
    session.stop()


def check_configured(session: Any, catalog_class: str, listener_class: str) -> None:
    """The shared session has the ``ushas`` catalog (answering) and the lineage listener, or the run
    stops here: a session without them would turn every catalog test into a failure far from the cause."""
    conf = session.conf
    catalog = conf.get("spark.sql.catalog.ushas", None)
    listeners = [c.strip() for c in (conf.get("spark.sql.queryExecutionListeners", None) or "").split(",")]
    if catalog != catalog_class or listener_class not in listeners:
        session.stop()
        pytest.fail(f"the shared Spark session lacks the ushas catalog or the lineage listener: "
                    f"spark.sql.catalog.ushas={catalog!r}, spark.sql.queryExecutionListeners={listeners!r}",
                    pytrace=False)
    # the catalog plugin initializes (its bridge answers) without running a query the listener would see
    session._jsparkSession.sessionState().catalogManager().catalog("ushas")
