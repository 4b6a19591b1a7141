"""Reads use the catalog's partitions (issue: the catalog owns the data path): Spark's file scan reads
exactly the partitions the catalog selects, at their recorded locations, never the table root."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality

pytestmark = pytest.mark.spark


def _plan(spark: Any, sql: str) -> str:
    return spark.sql(sql)._jdf.queryExecution().executedPlan().toString()


def _count(spark: Any, sql: str) -> int:
    return spark.sql(sql).collect()[0][0]


def test_scan_reads_through_the_catalog_index(spark: Any, db: str) -> None:
    t = f"ushas.{db}.orders"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, amount DOUBLE, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 1.0, 'a'), (2, 2.0, 'b'), (3, 3.0, 'b')")
    plan = _plan(spark, f"SELECT id FROM {t} WHERE dt = 'b' AND id > 2")
    assert "UshasFileIndex" in plan and "InMemoryFileIndex" not in plan
    assert "PartitionFilters: [isnotnull(dt" in plan
    assert "PushedFilters: [IsNotNull(id), GreaterThan(id,2)]" in plan   # data filters still pushed down
    assert "ReadSchema: struct<id:bigint>" in plan                       # column pruning
    assert "Batched: true" in plan                                       # vectorized reads
    assert spark.sql(f"SELECT id FROM {t} WHERE dt = 'b' AND id > 2").collect()[0][0] == 3
    paths = [r[0] for r in spark.sql(f"SELECT DISTINCT _metadata.file_path FROM {t} WHERE dt = 'b'").collect()]
    assert paths and all("/dt=b/" in p for p in paths)


def test_a_partition_at_any_location_is_read(spark: Any, db: str, tmp_path: Path) -> None:
    t = f"ushas.{db}.events"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    elsewhere = tmp_path / "elsewhere" / "day1"
    spark.range(5).write.parquet(str(elsewhere))
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='x') LOCATION '{elsewhere}'")
    assert _count(spark, f"SELECT count(*) FROM {t} WHERE dt = 'x'") == 5
    assert _count(spark, f"SELECT count(*) FROM {t}") == 6
    rows = spark.sql(f"SELECT dt, count(*) AS n FROM {t} GROUP BY dt")
    assert_df_equality(rows, spark.createDataFrame([("a", 1), ("x", 5)], "dt string, n bigint"),
                       ignore_row_order=True, ignore_nullable=True)


def test_a_dropped_partition_of_an_external_table_is_never_read(spark: Any, db: str, tmp_path: Path) -> None:
    root = tmp_path / "ext"
    spark.createDataFrame([(1, "a"), (2, "a"), (3, "b")], "id bigint, dt string") \
        .write.partitionBy("dt").parquet(str(root))
    t = f"ushas.{db}.ext"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt) LOCATION '{root}'")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='a') PARTITION (dt='b')")
    assert _count(spark, f"SELECT count(*) FROM {t}") == 3
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt='a')")
    assert (root / "dt=a").is_dir()  # an external table's files are kept ...
    assert _count(spark, f"SELECT count(*) FROM {t}") == 1  # ... and never read again
    assert _count(spark, f"SELECT count(*) FROM {t} WHERE dt = 'a'") == 0


def test_an_unregistered_partition_directory_is_not_read(spark: Any, db: str, tmp_path: Path) -> None:
    """Data under the table location that the catalog does not know (no partition registered)."""
    root = tmp_path / "ext2"
    spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, dt string").write.partitionBy("dt").parquet(str(root))
    t = f"ushas.{db}.ext2"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt) LOCATION '{root}'")
    assert _count(spark, f"SELECT count(*) FROM {t}") == 0  # no partition registered yet
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='b')")
    assert _count(spark, f"SELECT count(*) FROM {t}") == 1


def _foreign_file(spark: Any, tmp_path: Path, directory: str) -> None:
    """A parquet file of 10 rows dropped into ``directory`` by something that is not a catalog write
    (a crashed job's leftovers, a copy by hand)."""
    src = tmp_path / ("foreign-" + uuid.uuid4().hex[:6])
    spark.range(100, 110).coalesce(1).write.parquet(str(src))
    part = next(p for p in src.iterdir() if p.name.endswith(".parquet"))
    target = Path(directory.removeprefix("file:"))
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(part, target / ("part-99999-foreign-" + uuid.uuid4().hex + ".parquet"))


def _location(spark: Any, table: str) -> str:
    return spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0][1]


def test_files_no_write_registered_are_not_read(spark: Any, db: str, tmp_path: Path) -> None:
    """A foreign file in a written partition's directory, and in an unpartitioned table's."""
    t = f"ushas.{db}.w"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'a')")
    _foreign_file(spark, tmp_path, _location(spark, t) + "/dt=a")
    assert _count(spark, f"SELECT count(*) FROM {t}") == 2
    u = f"ushas.{db}.u"
    spark.sql(f"CREATE TABLE {u} (id BIGINT) USING parquet")
    spark.sql(f"INSERT INTO {u} VALUES (1)")
    _foreign_file(spark, tmp_path, _location(spark, u))
    assert _count(spark, f"SELECT count(*) FROM {u}") == 1


def test_a_table_changed_by_another_process_is_read_fresh(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    from ushas_catalog.model.partitions import Partition

    t = f"ushas.{db}.fresh"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    assert _count(spark, f"SELECT count(*) FROM {t}") == 1
    day = tmp_path / "other" / "day"
    spark.range(3).write.parquet(str(day))
    ms.add_partitions(f"ushas.{db}.fresh", [Partition({"dt": "z"}, location=f"file:{day}")])  # another writer
    assert _count(spark, f"SELECT count(*) FROM {t}") == 4
    ms.drop_partitions(f"ushas.{db}.fresh", [{"dt": "z"}])
    assert _count(spark, f"SELECT count(*) FROM {t}") == 1


def test_dynamic_partition_pruning_through_the_catalog(spark: Any, db: str) -> None:
    fact, dim = f"ushas.{db}.sales", f"ushas.{db}.days"
    spark.sql(f"CREATE TABLE {fact} (id BIGINT, amount BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {fact} SELECT id, id * 10, concat('d', CAST(id % 5 AS STRING)) FROM range(50)")
    spark.sql(f"CREATE TABLE {dim} (dt STRING, kind STRING) USING parquet")
    spark.sql(f"INSERT INTO {dim} VALUES ('d1', 'holiday'), ('d3', 'holiday'), ('d2', 'work')")
    q = (f"SELECT s.dt, sum(s.amount) AS total FROM {fact} s JOIN {dim} d ON s.dt = d.dt "
         f"WHERE d.kind = 'holiday' GROUP BY s.dt")
    with_conf = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "true",
                 "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly": "false"}
    old = {k: spark.conf.get(k) for k in with_conf}
    try:
        for k, v in with_conf.items():
            spark.conf.set(k, v)
        df = spark.sql(q)
        df.collect()
        assert "dynamicpruning" in df._jdf.queryExecution().executedPlan().toString().lower()
        expected = spark.createDataFrame([("d1", sum(i * 10 for i in range(50) if i % 5 == 1)),
                                          ("d3", sum(i * 10 for i in range(50) if i % 5 == 3))],
                                         "dt string, total bigint")
        assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
        # the catalog was asked for the join's partitions only (UshasScanRule, set by the session
        # extension): the scan's listing before Spark's own dynamic filter already holds just them
        for aqe in ("true", "false"):
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
            df = spark.sql(q)
            df.collect()
            (metrics,) = _scan_metrics(df._jdf.queryExecution().executedPlan(), fact.split(".")[-1])
            assert metrics["numPartitions"] == 2, (aqe, metrics)
            assert metrics["staticFilesNum"] == metrics["numFiles"], (aqe, metrics)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
        for k, v in old.items():
            spark.conf.set(k, v)


def _scan_metrics(plan: Any, table: str) -> list[dict[str, int]]:
    """The driver metrics of the file scans of ``table`` in an executed plan (adaptive or not)."""
    out: list[dict[str, int]] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "FileSourceScanExec" and node.tableIdentifier().get().table() == table:
            m = node.metrics()
            out.append({k: m.apply(k).value() for k in ("numFiles", "staticFilesNum", "numPartitions")
                        if m.contains(k)})
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
        elif "QueryStageExec" in name:
            walk(node.plan())
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(plan)
    return out


def test_imported_hive_table_reads_hives_counts(spark: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    """A Hive table whose second partition lives at its own location reads Hive's counts."""
    from ushas_catalog.spark.hive_import import SparkHiveSource, import_hive
    from ushas_catalog.metastore import Metastore

    src = "hive_dp_" + uuid.uuid4().hex[:6]
    spark.sql(f"CREATE DATABASE {src}")
    try:
        spark.sql(f"CREATE TABLE {src}.t (id INT) PARTITIONED BY (d STRING) STORED AS PARQUET")
        spark.sql(f"INSERT OVERWRITE {src}.t PARTITION (d='d1') SELECT id FROM range(3)")
        own = tmp_path / "own_d2"
        spark.range(5).selectExpr("CAST(id AS INT) AS id").write.parquet(str(own))
        spark.sql(f"ALTER TABLE {src}.t ADD PARTITION (d='d2') LOCATION '{own}'")
        hive = {r[0]: r[1] for r in spark.sql(f"SELECT d, count(*) FROM {src}.t GROUP BY d").collect()}
        assert hive == {"d1": 3, "d2": 5}
        m = Metastore.open(f"sqlite:///{spark_dirs['store']}", project="default")
        try:
            report = import_hive(m, SparkHiveSource(spark), "ushas", databases=[src])
            assert report.partitions_added == 2
        finally:
            m.close()
        ours = {r[0]: r[1] for r in spark.sql(f"SELECT d, count(*) FROM ushas.{src}.t GROUP BY d").collect()}
        assert ours == hive
    finally:
        spark.sql(f"DROP TABLE IF EXISTS ushas.{src}.t")
        spark.sql(f"DROP NAMESPACE IF EXISTS ushas.{src} CASCADE")
        spark.sql(f"DROP DATABASE IF EXISTS {src} CASCADE")
