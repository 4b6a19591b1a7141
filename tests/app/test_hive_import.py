"""Hive import from the shared session's live Derby metastore (through the session), and the
pieces that need no Spark (format mapping, connection checks, the CLI's errors)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument
from ushas_catalog.spark.hive_import import (HiveConnection, HiveTable, SOURCE_PROPERTY, catalog_format, import_hive,
                                       table_properties)

SRC = "app_hive_src"  # the Hive database these tests create in the shared session


def hive_table(**kw) -> HiveTable:
    base = dict(database="d", name="t", table_type="MANAGED", schema={"type": "struct", "fields": []})
    base.update(kw)
    return HiveTable(**base)


@pytest.mark.parametrize("kw, expected", [
    ({"provider": "parquet"}, "parquet"),
    ({"provider": "hive", "serde": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"}, "parquet"),
    ({"provider": "hive", "serde": "org.apache.hadoop.hive.ql.io.orc.OrcSerde"}, "orc"),
    ({"provider": "hive", "serde": "org.apache.hive.hcatalog.data.JsonSerDe"}, "json"),
    ({"provider": "hive", "serde": "org.apache.hadoop.hive.serde2.OpenCSVSerde"}, "csv"),
    ({"provider": "hive", "serde": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
      "input_format": "org.apache.hadoop.mapred.TextInputFormat"}, None),
    ({"provider": "hive", "serde": "org.apache.hadoop.hive.serde2.avro.AvroSerDe"}, None),
    ({"provider": "delta"}, None),
])
def test_catalog_format(kw: dict, expected: str | None) -> None:
    assert catalog_format(hive_table(**kw)) == expected


def test_bookkeeping_properties_are_dropped_and_the_source_recorded() -> None:
    props = table_properties(hive_table(properties={"transient_lastDdlTime": "1", "numFiles": "3", "team": "x",
                                                    "comment": "c"}))
    assert props == {"team": "x", SOURCE_PROPERTY: "hive:d.t", "ushas.import.hive_table_type": "MANAGED"}


def test_connection_checks(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="either"):
        HiveConnection().validate()
    with pytest.raises(InvalidArgument, match="not a directory"):
        HiveConnection(metastore_db=tmp_path / "nope").validate()
    with pytest.raises(InvalidArgument, match="not a Derby database"):
        HiveConnection(metastore_db=tmp_path).validate()
    with pytest.raises(InvalidArgument, match="thrift://"):
        HiveConnection(thrift="http://x:9083").validate()
    conf = HiveConnection(thrift="thrift://127.0.0.1:9083").spark_config(tmp_path)
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://127.0.0.1:9083"
    assert conf["spark.sql.catalogImplementation"] == "hive"


def test_cli_refuses_a_directory_that_is_no_metastore(tmp_path: Path, store_uri: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--uri", store_uri, "import-hive", "--metastore-db", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip().splitlines() == [f"ushas: InvalidArgument: {tmp_path} is not a Derby database "
                                        f"(pyspark's metastore_db directory)"]


@pytest.fixture(scope="module")
def hive_tables(spark, spark_dirs):
    """Hive tables of every kind the import meets, in the shared session's Derby metastore."""
    spark.sql(f"DROP DATABASE IF EXISTS {SRC} CASCADE")
    spark.sql(f"CREATE DATABASE {SRC} COMMENT 'imported by the tests'")
    spark.sql(f"CREATE TABLE {SRC}.orders (id INT, amount DOUBLE, country STRING) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET TBLPROPERTIES ('team'='sales')")
    spark.sql(f"INSERT OVERWRITE {SRC}.orders PARTITION (dt='2024-01-01') VALUES (1, 2.0, 'FR'), (2, 3.0, 'DE')")
    spark.sql(f"INSERT OVERWRITE {SRC}.orders PARTITION (dt='2024-01-02') VALUES (3, 4.0, 'FR')")
    spark.sql(f"CREATE TABLE {SRC}.customers (id INT, name STRING) USING orc")
    spark.sql(f"CREATE TABLE {SRC}.raw_text (line STRING) STORED AS TEXTFILE")
    spark.sql(f"CREATE VIEW {SRC}.fr_orders AS SELECT id, amount FROM {SRC}.orders WHERE country = 'FR'")
    yield SRC
    spark.sql(f"DROP DATABASE IF EXISTS {SRC} CASCADE")


@pytest.mark.spark
def test_import_from_the_live_session(spark, hive_tables: str, store_uri: str) -> None:
    from ushas_catalog.spark.hive_import import SparkHiveSource
    from ushas_catalog.metastore import Metastore

    m = Metastore.open(store_uri)
    try:
        ticks: list[str] = []
        plan: list[int] = []
        report = import_hive(m, SparkHiveSource(spark), "lake", databases=[SRC], tick=ticks.append,
                             on_plan=plan.append)
        assert report.databases_created == [SRC]
        assert sorted(report.tables_created) == [f"{SRC}.customers", f"{SRC}.orders"]
        assert report.views_created == [f"{SRC}.fr_orders"]
        assert report.partitions_added == 2
        assert [p.name for p in report.problems] == [f"{SRC}.raw_text"]
        assert "unsupported storage LazySimpleSerDe" in report.problems[0].reason
        assert plan == [4] and sorted(ticks) == sorted(f"{SRC}.{t}" for t in
                                                       ["orders", "customers", "raw_text", "fr_orders"])

        db = m.get_database(f"lake.{SRC}")
        assert db.comment == "imported by the tests" and db.location.endswith(f"{SRC}.db")
        orders = m.get_table(f"lake.{SRC}.orders")
        assert orders.schema.names == ["id", "amount", "country", "dt"]
        assert orders.partition_columns == ["dt"] and orders.format == "parquet" and orders.external
        assert orders.location.endswith(f"{SRC}.db/orders")
        assert orders.properties["team"] == "sales"
        assert orders.properties[SOURCE_PROPERTY] == f"hive:{SRC}.orders"
        parts = list(m.list_partitions(f"lake.{SRC}.orders"))
        assert [p.spec for p in parts] == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
        assert parts[0].location.endswith("orders/dt=2024-01-01") and parts[0].files and parts[0].bytes
        assert m.get_table(f"lake.{SRC}.customers").format == "orc"
        view = m.get_view(f"lake.{SRC}.fr_orders")
        assert "country = 'FR'" in view.sql and view.current_catalog == "lake"
        assert [f["name"] for f in view.schema.json_value()["fields"]] == ["id", "amount"]
        versions = m.get_table(f"lake.{SRC}.orders").version

        # again: nothing changes
        again = import_hive(m, SparkHiveSource(spark), "lake", databases=[SRC])
        assert again.databases_existing == [SRC] and not again.databases_created
        assert sorted(again.tables_existing) == [f"{SRC}.customers", f"{SRC}.orders"] and not again.tables_created
        assert again.views_existing == [f"{SRC}.fr_orders"]
        assert again.partitions_added == 0 and again.partitions_existing == 2
        assert m.get_table(f"lake.{SRC}.orders").version == versions

        # a new Hive partition: the next run adds just that one
        spark.sql(f"INSERT OVERWRITE {SRC}.orders PARTITION (dt='2024-01-03') VALUES (4, 1.0, 'DE')")
        third = import_hive(m, SparkHiveSource(spark), "lake", databases=[SRC])
        assert third.partitions_added == 1 and third.partitions_existing == 2
        assert len(list(m.list_partitions(f"lake.{SRC}.orders"))) == 3

        # a table changed in the catalog is listed, never overwritten
        m.drop_table(f"lake.{SRC}.customers", purge=True)
        m.create_table(f"lake.{SRC}.customers", "id INT, name STRING, extra STRING", format="orc")
        fourth = import_hive(m, SparkHiveSource(spark), "lake", databases=[SRC, "no_such_db"])
        reasons = {p.name: p.reason for p in fourth.problems}
        assert reasons[f"{SRC}.customers"].startswith("already in the catalog with a different schema")
        assert reasons["no_such_db"] == "no such database in the Hive metastore"
        assert m.get_table(f"lake.{SRC}.customers").schema.names == ["id", "name", "extra"]
        assert "not imported: 3" in fourth.summary()
    finally:
        m.close()
