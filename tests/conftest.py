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


#: test modules (relative to tests/) whose tests taking ``store_uri`` run on both engines, ``[sqlite]``
#: and ``[postgresql]``: the metastore suite, bulk operations, fenced writes, concurrent writers, the
#: cache's version checks and restores
ON_POSTGRESQL = frozenset({
    "metastore/test_metastore.py", "metastore/test_bulk.py", "metastore/test_write_fence.py",
    "metastore/test_concurrency.py", "metastore/test_objects.py", "metastore/test_partition_keys.py",
    "metastore/test_one_transaction.py", "metastore/test_value_limits.py", "metastore/test_cache.py",
    "metastore/test_restore.py", "faults/test_kill_writers.py",
})


#: the JVM options of every Spark JVM the tests start in a subprocess (spark-submit, spark-sql, PySpark
#: drivers, the Thrift and Connect servers, the CLI's Spark commands): they live seconds, and C2's compiling
#: costs them more than it gains (a spark-sql start + 4 statements: ~34 s of CPU, ~21 s with C1 alone, on
#: this 2-core machine: docs/benchmarks.md, "The test suite's time"). The shared session (fixture ``spark``,
#: thousands of statements over the whole run) keeps the JVM's defaults.
SHORT_JVM_OPTS = "-XX:TieredStopAtLevel=1"


def pytest_configure(config: pytest.Config) -> None:
    """Subprocess Spark JVMs get :data:`SHORT_JVM_OPTS` (``SPARK_SUBMIT_OPTS``, read by Spark's launcher for
    the driver JVM), unless the environment already sets JIT options."""
    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if "TieredStopAtLevel" not in opts:
        os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} {SHORT_JVM_OPTS}".strip()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = Path(metafunc.module.__file__).resolve().relative_to(Path(__file__).resolve().parent).as_posix()
    if "engine" in metafunc.fixturenames and module in ON_POSTGRESQL:
        metafunc.parametrize("engine", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)],
                             indirect=True)


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The engine of ``store_uri``: sqlite, or both in the modules of :data:`ON_POSTGRESQL`."""
    return getattr(request, "param", "sqlite")


@pytest.fixture
def store_uri(engine: str, tmp_path: Path, request: pytest.FixtureRequest):
    """A fresh store for one test: a SQLite file, or a fresh schema on the session's PostgreSQL."""
    if engine == "sqlite":
        yield f"sqlite:///{tmp_path / 'ushas.db'}"
        return
    server = request.getfixturevalue("postgres")
    uri = server.fresh_uri()
    yield uri
    server.drop_schema(uri)


@pytest.fixture(scope="session")
def postgres():
    """ONE throw-away PostgreSQL server for the whole test session (tests/pg_server.py), started by
    the first test that needs it; each test takes a fresh store from it (``postgres.fresh_uri()``).
    Missing PostgreSQL binaries fail the test (no skip)."""
    from pg_server import start_server

    server = start_server()
    yield server
    server.cleanup()


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
    from ushas_catalog.spark import configure  # the catalog + listener helper: no session without them
    from ushas_catalog.spark.options import CATALOG_CLASS, LISTENER_CLASS

    builder = configure(builder, name="ushas", uri=f"sqlite:///{spark_dirs['store']}",
                        warehouse=str(spark_dirs["warehouse"]), lineage=True)
    submit_opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = submit_opts.replace(SHORT_JVM_OPTS, "").strip()  # the JVM's defaults
    try:
        session = builder.getOrCreate()
    finally:
        os.environ["SPARK_SUBMIT_OPTS"] = submit_opts
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
