"""MSCK REPAIR TABLE [ADD|DROP|SYNC PARTITIONS] and ALTER TABLE ... RECOVER PARTITIONS on ushas tables
(the session extension io.ushas.spark.UshasExtensions), Spark's own MSCK on spark_catalog tables, and
the configuration-only path (spark-sql with --conf only)."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = pytest.mark.spark

EXTENSIONS = "io.ushas.spark.UshasExtensions"


def write(spark: Any, path: Path, rows: dict[str, int]) -> None:
    """Parquet files partitioned by ``dt`` under ``path``: ``rows[dt]`` rows of each value."""
    data = [(i, dt) for dt, n in rows.items() for i in range(n)]
    spark.createDataFrame(data, "id BIGINT, dt STRING").write.mode("append").partitionBy("dt").parquet(str(path))


def partitions(spark: Any, table: str) -> list[str]:
    return [r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect()]


def metrics(df: Any) -> dict[str, int]:
    """What the repair reported: the SQL metrics of its physical plan."""
    m = df._jdf.queryExecution().commandExecuted().commandPhysicalPlan().metrics()
    return {k: m.apply(k).value() for k in ("numListedDirectories", "numAddedPartitions", "numDroppedPartitions",
                                            "numInvalidDirectories")}


def external(spark: Any, db: str, path: Path, name: str = "t", ddl: str = "id BIGINT, dt STRING",
             by: str = "dt") -> str:
    table = f"ushas.{db}.{name}"
    spark.sql(f"CREATE TABLE {table} ({ddl}) USING parquet PARTITIONED BY ({by}) LOCATION '{path}'")
    return table


def test_msck_registers_existing_data(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    data = tmp_path / "events"
    write(spark, data, {"a": 2, "b": 3, "c": 1})
    table = external(spark, db, data)
    assert partitions(spark, table) == []
    assert spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == 0  # reads follow the catalog
    version = ms.get_table(("ushas", db, "t")).version
    df = spark.sql(f"MSCK REPAIR TABLE {table}")
    assert df.collect() == []  # like Spark's own MSCK
    assert metrics(df) == {"numListedDirectories": 3, "numAddedPartitions": 3, "numDroppedPartitions": 0,
                           "numInvalidDirectories": 0}
    assert partitions(spark, table) == ["dt=a", "dt=b", "dt=c"]
    counts = {r.dt: r.n for r in spark.sql(f"SELECT dt, count(*) AS n FROM {table} GROUP BY dt").collect()}
    assert counts == {"a": 2, "b": 3, "c": 1}
    assert ms.get_partition(("ushas", db, "t"), {"dt": "b"}).location == f"file:{data}/dt=b"
    assert ms.get_table(("ushas", db, "t")).version > version  # other sessions' caches see the change
    assert metrics(spark.sql(f"MSCK REPAIR TABLE {table}"))["numAddedPartitions"] == 0  # nothing new


def test_add_drop_sync(spark: Any, db: str, tmp_path: Path) -> None:
    data = tmp_path / "events"
    write(spark, data, {"a": 1, "b": 1, "c": 1})
    table = external(spark, db, data)
    spark.sql(f"MSCK REPAIR TABLE {table}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    spark.sql(f"ALTER TABLE {table} ADD PARTITION (dt='x') LOCATION '{elsewhere}'")  # exists: kept by DROP
    spark.sql(f"ALTER TABLE {table} ADD PARTITION (dt='y') LOCATION '{tmp_path / 'never'}'")  # gone: dropped
    shutil.rmtree(data / "dt=b")
    write(spark, data, {"d": 1})
    spark.sql(f"MSCK REPAIR TABLE {table} ADD PARTITIONS")  # adds d, keeps b and y
    assert partitions(spark, table) == ["dt=a", "dt=b", "dt=c", "dt=d", "dt=x", "dt=y"]
    df = spark.sql(f"MSCK REPAIR TABLE {table} DROP PARTITIONS")  # drops b and y, adds nothing
    assert metrics(df)["numDroppedPartitions"] == 2 and metrics(df)["numAddedPartitions"] == 0
    assert partitions(spark, table) == ["dt=a", "dt=c", "dt=d", "dt=x"]
    shutil.rmtree(data / "dt=c")
    write(spark, data, {"e": 2})
    spark.sql(f"MSCK REPAIR TABLE {table} SYNC PARTITIONS")
    assert partitions(spark, table) == ["dt=a", "dt=d", "dt=e", "dt=x"]
    assert spark.sql(f"SELECT count(*) FROM {table} WHERE dt = 'e'").collect()[0][0] == 2


def test_recover_partitions(spark: Any, db: str, tmp_path: Path) -> None:
    data = tmp_path / "events"
    write(spark, data, {"2024-01-01": 1, "2024-01-02": 2})
    table = external(spark, db, data, ddl="id BIGINT, dt DATE")
    spark.sql(f"ALTER TABLE {table} RECOVER PARTITIONS")
    assert partitions(spark, table) == ["dt=2024-01-01", "dt=2024-01-02"]
    assert spark.sql(f"SELECT count(*) FROM {table} WHERE dt = DATE'2024-01-02'").collect()[0][0] == 2


def test_a_bad_directory_value_is_reported_not_fatal(spark: Any, db: str, tmp_path: Path) -> None:
    data = tmp_path / "events"
    spark.createDataFrame([(1, 1), (2, 20)], "id BIGINT, n INT").write.partitionBy("n").parquet(str(data))
    (data / "n=abc").mkdir()
    (data / "n=%7Bx").mkdir()
    (data / "_temporary").mkdir()
    (data / ".staging").mkdir()
    table = external(spark, db, data, ddl="id BIGINT, n INT", by="n")
    df = spark.sql(f"MSCK REPAIR TABLE {table}")
    assert metrics(df) == {"numListedDirectories": 4, "numAddedPartitions": 2, "numDroppedPartitions": 0,
                           "numInvalidDirectories": 2}
    assert partitions(spark, table) == ["n=1", "n=20"]
    assert sorted(r.n for r in spark.sql(f"SELECT n FROM {table}").collect()) == [1, 20]


def test_unpartitioned_table_is_refused(spark: Any, db: str, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.flat (id BIGINT) USING parquet LOCATION '{tmp_path / 'flat'}'")
    with pytest.raises(Exception, match="not partitioned"):
        spark.sql(f"MSCK REPAIR TABLE ushas.{db}.flat")


def test_session_catalog_tables_keep_sparks_own_msck(spark: Any, tmp_path: Path) -> None:
    assert EXTENSIONS in spark.conf.get("spark.sql.extensions")
    data = tmp_path / "v1"
    write(spark, data, {"a": 1, "b": 1})
    name = "spark_catalog.default.repair_v1_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE TABLE {name} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt) LOCATION '{data}'")
    try:
        spark.sql(f"MSCK REPAIR TABLE {name}")  # Spark's RepairTableCommand on the Hive metastore
        assert partitions(spark, name) == ["dt=a", "dt=b"]
        plan = spark.sql(f"EXPLAIN MSCK REPAIR TABLE {name}").collect()[0][0]
        assert "RepairTableCommand" in plan and "UshasRepairTable" not in plan
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.slow
def test_config_only_spark_sql(spark: Any, db: str, ms: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    data = tmp_path / "events"
    write(spark, data, {"a": 1, "b": 2})
    table = external(spark, db, data)
    assert f"spark.sql.extensions={EXTENSIONS}" in conf_args(spark_dirs["store"], spark_dirs["warehouse"])
    proc = run_spark([spark_bin("spark-sql"), "--master", "local[1]",
                      *conf_args(spark_dirs["store"], spark_dirs["warehouse"]),  # sets the extension
                      "-e", f"MSCK REPAIR TABLE {table}; SHOW PARTITIONS {table};"], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.split() == ["dt=a", "dt=b"]
    assert [p.spec["dt"] for p in ms.list_partitions(("ushas", db, "t"))] == ["a", "b"]
    assert partitions(spark, table) == ["dt=a", "dt=b"]  # this session sees the other's registration


def test_configure_sets_the_extension_next_to_others(tmp_path: Path) -> None:
    from ushas_catalog.spark import configure

    class Builder:
        def __init__(self) -> None:
            self._options = {"spark.sql.extensions": "com.example.Other"}

        def config(self, key: str, value: str) -> "Builder":
            self._options[key] = value
            return self

        def getOrCreate(self) -> None:
            raise AssertionError("not started here")

    b = configure(Builder(), uri=f"sqlite:///{tmp_path / 'u.db'}")
    assert b._options["spark.sql.extensions"] == f"com.example.Other,{EXTENSIONS}"
    assert configure(b, uri=f"sqlite:///{tmp_path / 'u.db'}")._options["spark.sql.extensions"] == \
        f"com.example.Other,{EXTENSIONS}"  # once
