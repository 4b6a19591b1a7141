"""``ushas import-hive --thrift``: against a real Hive metastore service (pyspark's Hive 2.3
``HiveMetaStore`` in a subprocess, see ``hive_service.py``). Hive tables are created through the
service by a Spark subprocess; the CLI runs as a subprocess (one SparkSession per process).
Also the quick refusals: a malformed URI and a service that does not answer."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument, StoreUnavailable
from ushas_catalog.spark.hive_import import SOURCE_PROPERTY, HiveConnection
from ushas_catalog.progress import BAR_WIDTH

from .cli_run import run_cli
from .hive_service import MetastoreService, free_port, java_binary, pyspark_jars, start_metastore

POPULATE = r"""
import sys
from pyspark.sql import SparkSession

uri, warehouse = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[1]").appName("hive-thrift-populate")
         .config("spark.ui.enabled", "false").config("spark.hadoop.hive.metastore.uris", uri)
         .config("spark.sql.warehouse.dir", warehouse).enableHiveSupport().getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for stmt in sys.argv[3:]:
    spark.sql(stmt)
spark.stop()
"""


def test_thrift_uris_are_checked() -> None:
    assert HiveConnection(thrift="thrift://a:9083, thrift://b.example:9084").endpoints() == [
        ("a", 9083), ("b.example", 9084)]
    for bad in ("http://x:9083", "thrift://x", "thrift://:9083", "thrift://x:port", "thrift://x:9083/db"):
        with pytest.raises(InvalidArgument, match="thrift://host:port"):
            HiveConnection(thrift=bad).validate()


def test_a_service_that_does_not_answer_is_one_line_before_spark(store_uri: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
        HiveConnection(thrift=f"thrift://127.0.0.1:{port}").check_reachable(timeout=2)
    rc = main(["--uri", store_uri, "import-hive", "--thrift", f"thrift://127.0.0.1:{port}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"ushas: StoreUnavailable: the Hive metastore service does not answer (127.0.0.1:{port}")


@pytest.fixture(scope="module")
def metastore_service(tmp_path_factory: pytest.TempPathFactory):
    if java_binary() is None:
        pytest.skip("no java on PATH / JAVA_HOME: the Hive metastore service cannot start")
    if not list(pyspark_jars().glob("hive-metastore-*.jar")):
        pytest.skip(f"pyspark's jars ({pyspark_jars()}) lack hive-metastore: no HiveMetaStore service class")
    service = start_metastore(tmp_path_factory.mktemp("hms"))
    yield service
    service.stop()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env.pop("USHAS_URI", None)
    return env


def populate(service: MetastoreService, cwd: Path, *statements: str) -> None:
    done = subprocess.run([sys.executable, "-c", POPULATE, service.uri, str(service.warehouse), *statements],
                          cwd=cwd, env=_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n--- metastore log ---\n{service.log_tail()}"


def import_hive(store_uri: str, service: MetastoreService, cwd: Path) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", store_uri, "--json", "import-hive",
                           "--thrift", service.uri, "--catalog", "thr"],
                          cwd=cwd, env=_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n--- metastore log ---\n{service.log_tail()}"
    return json.loads(done.stdout), done.stderr


@pytest.mark.slow
def test_import_from_a_metastore_service(metastore_service: MetastoreService, tmp_path: Path) -> None:
    from ushas_catalog.metastore import Metastore

    service = metastore_service
    populate(service, tmp_path,
             "CREATE DATABASE sales COMMENT 'through thrift' WITH DBPROPERTIES ('team'='sales')",
             "CREATE TABLE sales.orders (id INT, amount DOUBLE) PARTITIONED BY (dt STRING, country STRING) "
             "STORED AS PARQUET TBLPROPERTIES ('quality'='gold')",
             "INSERT OVERWRITE sales.orders PARTITION (dt='2024-01-01', country='FR') VALUES (1, 2.0), (2, 3.0)",
             "INSERT OVERWRITE sales.orders PARTITION (dt='2024-01-01', country='DE') VALUES (3, 4.0)",
             "INSERT OVERWRITE sales.orders PARTITION (dt='2024-01-02', country='FR') VALUES (4, 5.0)",
             "CREATE TABLE sales.customers (id INT, name STRING) USING orc",
             "CREATE TABLE sales.events (id INT, payload STRING) STORED AS TEXTFILE",
             "CREATE VIEW sales.big_orders AS SELECT id, amount FROM sales.orders WHERE amount > 2")
    store = f"sqlite:///{tmp_path / 'ushas.db'}"

    first, stderr = import_hive(store, service, tmp_path)
    assert "\r" not in stderr  # --json and not a terminal: no progress line
    assert "log4j profile" not in stderr and "WARN Utils" not in stderr  # the import's Spark logs errors only
    assert first["databases"] == {"created": ["default", "sales"], "existing": []}
    assert sorted(first["tables"]["created"]) == ["sales.customers", "sales.orders"]
    assert first["views"]["created"] == ["sales.big_orders"]
    assert first["partitions"] == {"added": 3, "existing": 0}
    assert [p["name"] for p in first["problems"]] == ["sales.events"]
    assert "unsupported storage LazySimpleSerDe" in first["problems"][0]["reason"]

    m = Metastore.open(store)
    try:
        db = m.get_database("thr.sales")
        assert db.comment == "through thrift" and db.properties.get("team") == "sales"
        assert db.location.rstrip("/").endswith("sales.db")
        orders = m.get_table("thr.sales.orders")
        assert orders.schema.names == ["id", "amount", "dt", "country"]
        assert orders.partition_columns == ["dt", "country"] and orders.format == "parquet" and orders.external
        assert orders.location.rstrip("/").endswith("sales.db/orders")
        assert orders.properties["quality"] == "gold"
        assert orders.properties[SOURCE_PROPERTY] == "hive:sales.orders"
        parts = list(m.list_partitions("thr.sales.orders"))
        assert [p.spec for p in parts] == [{"dt": "2024-01-01", "country": "DE"}, {"dt": "2024-01-01", "country": "FR"},
                                           {"dt": "2024-01-02", "country": "FR"}]
        assert parts[1].location.endswith("orders/dt=2024-01-01/country=FR") and parts[1].files == 1
        assert m.get_table("thr.sales.customers").format == "orc"
        view = m.get_view("thr.sales.big_orders")
        assert "amount > 2" in view.sql and view.current_catalog == "thr"
        versions = {"customers": m.get_table("thr.sales.customers").version}
    finally:
        m.close()

    # again, with one more Hive partition, stderr a terminal: a progress bar, then the summary;
    # only that partition is added, nothing else changes
    populate(service, tmp_path, "INSERT OVERWRITE sales.orders PARTITION (dt='2024-01-03', country='DE') "
                                "VALUES (5, 6.0)")
    rc, out, err = run_cli(["--uri", store, "import-hive", "--thrift", service.uri, "--catalog", "thr"], tty=True,
                           cwd=tmp_path, timeout=900, env=_env())
    assert rc == 0, f"{err[-3000:]}\n--- metastore log ---\n{service.log_tail()}"
    drawn = [state.rstrip() for state in err.replace("\n", "\r").split("\r")]
    assert "importing Hive tables  [" + "#" * BAR_WIDTH + "]  4/4" in drawn  # sales: 3 tables and a view
    assert out.splitlines()[:5] == ["imported into catalog 'thr':",
                                    "  databases   0 created, 2 already there",
                                    "  tables      0 created, 2 already there",
                                    "  views       0 created, 1 already there",
                                    "  partitions  1 added, 3 already there"]
    assert "    sales.events: unsupported storage LazySimpleSerDe" in out
    m = Metastore.open(store)
    try:
        assert len(list(m.list_partitions("thr.sales.orders"))) == 4
        assert m.get_table("thr.sales.customers").version == versions["customers"]
    finally:
        m.close()
