"""The Ushas catalog end to end through the shared SparkSession (catalog ``ushas``, sqlite store)."""
from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality

pytestmark = pytest.mark.spark


def rows(spark: Any, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def partitions(spark: Any, table: str) -> list[str]:
    return [r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect()]


# ---- namespaces ----------------------------------------------------------------------------------
def test_namespaces(spark: Any, cat: str, ms: Any, tmp_path: Path) -> None:
    name = "ns_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE {cat}.{name} COMMENT 'sales data' LOCATION '{tmp_path}/loc' "
              f"WITH DBPROPERTIES ('team'='a')")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.{name}")
    assert (name,) in rows(spark, f"SHOW NAMESPACES IN {cat}")
    info = dict(rows(spark, f"DESCRIBE NAMESPACE EXTENDED {cat}.{name}"))
    assert info["Comment"] == "sales data"
    assert info["Location"] == f"file:{tmp_path}/loc"
    assert "(team,a)" in info["Properties"]
    spark.sql(f"ALTER NAMESPACE {cat}.{name} SET DBPROPERTIES ('team'='b', 'x'='1')")
    db = ms.get_database(("ushas", name))
    assert db.properties == {"team": "b", "x": "1"} and db.comment == "sales data"
    spark.sql(f"USE {cat}.{name}")
    spark.sql("CREATE TABLE t (id INT) USING parquet")
    assert [r for r in rows(spark, "SHOW TABLES") if not r[2]] == [(name, "t", False)]  # temporary views apart
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="SCHEMA_NOT_EMPTY"):
        spark.sql(f"DROP NAMESPACE {cat}.{name}")
    with pytest.raises(AnalysisException, match="SCHEMA_ALREADY_EXISTS"):
        spark.sql(f"CREATE NAMESPACE {cat}.{name}")
    spark.sql("USE spark_catalog.default")
    spark.sql(f"DROP NAMESPACE {cat}.{name} CASCADE")
    assert not ms.database_exists(("ushas", name))
    with pytest.raises(AnalysisException, match="SCHEMA_NOT_FOUND"):
        spark.sql(f"DESCRIBE NAMESPACE {cat}.{name}")


def test_multi_level_namespace_refused(spark: Any, cat: str) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="one namespace level"):
        spark.sql("CREATE NAMESPACE ushas.a.b")


# ---- tables: DDL ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["parquet", "orc", "json", "csv"])
def test_formats_create_insert_read(spark: Any, cat: str, db: str, fmt: str) -> None:
    t = f"{cat}.{db}.f_{fmt}"
    spark.sql(f"CREATE TABLE {t} (id INT, name STRING, dt STRING) USING {fmt} PARTITIONED BY (dt) "
              f"COMMENT 'c' TBLPROPERTIES ('owner_team'='x')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', '2024-01-01'), (2, 'b', '2024-01-02')")
    expected = spark.createDataFrame([(1, "a", "2024-01-01"), (2, "b", "2024-01-02")],
                                     "id int, name string, dt string")
    assert_df_equality(spark.table(t), expected, ignore_row_order=True, ignore_nullable=True)
    assert partitions(spark, t) == ["dt=2024-01-01", "dt=2024-01-02"]


def test_describe_show_create_properties(spark: Any, cat: str, db: str) -> None:
    t = f"{cat}.{db}.d"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt) COMMENT 'hello' "
              f"TBLPROPERTIES ('k'='v')")
    desc = dict((r[0], r[1]) for r in spark.sql(f"DESCRIBE EXTENDED {t}").collect())
    assert desc["Provider"] == "parquet" and desc["Type"] == "MANAGED" and desc["Comment"] == "hello"
    assert desc["Location"].endswith(f"/{db}.db/d")
    ddl = spark.sql(f"SHOW CREATE TABLE {t}").collect()[0][0]
    assert "USING parquet" in ddl and "PARTITIONED BY (dt)" in ddl and "'k' = 'v'" in ddl
    assert ("k", "v") in rows(spark, f"SHOW TBLPROPERTIES {t}")


def test_alter_table(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.a"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING) USING parquet")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x')")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN extra BIGINT COMMENT 'more'")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN v COMMENT 'the value'")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('a'='1', 'b'='2')")
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('a')")
    info = ms.get_table(("ushas", db, "a"))
    assert [(f.name, f.data_type.ddl()) for f in info.schema.fields] == [("id", "BIGINT"), ("v", "STRING"),
                                                                          ("extra", "BIGINT")]
    assert info.schema.field("v").comment == "the value"
    stats = {"numFiles": "1", "numRows": "1"}  # an unpartitioned table's write stats (and totalSize)
    assert {k: v for k, v in info.properties.items() if k != "totalSize"} == {"b": "2", **stats}
    spark.sql(f"ALTER TABLE {t} DROP COLUMN extra")
    spark.sql(f"ALTER TABLE {t} RENAME TO {db}.a2")
    assert rows(spark, f"SELECT id, v FROM {cat}.{db}.a2") == [(1, "x")]
    assert not ms.table_exists(("ushas", db, "a"))


def test_ctas_and_replace(spark: Any, cat: str, db: str) -> None:
    src = spark.createDataFrame([(1, "a", "p1"), (2, "b", "p2")], "id int, v string, dt string")
    src.createOrReplaceTempView("ctas_src")
    spark.sql(f"CREATE TABLE {cat}.{db}.c USING parquet PARTITIONED BY (dt) AS SELECT * FROM ctas_src")
    assert_df_equality(spark.table(f"{cat}.{db}.c"), src, ignore_row_order=True, ignore_nullable=True)
    assert partitions(spark, f"{cat}.{db}.c") == ["dt=p1", "dt=p2"]
    spark.sql(f"CREATE OR REPLACE TABLE {cat}.{db}.c USING orc AS SELECT 7 AS id, 'z' AS w")
    assert rows(spark, f"SELECT * FROM {cat}.{db}.c") == [(7, "z")]


# ---- writes & partitions ------------------------------------------------------------------------------
def test_insert_forms_register_partitions(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.w"
    name = ("ushas", db, "w")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    parts = {p.spec["dt"]: p for p in ms.list_partitions(name)}
    assert sorted(parts) == ["a", "b"]
    assert parts["a"].files == 1 and parts["a"].bytes > 0
    assert parts["a"].location.endswith(f"/{db}.db/w/dt=a")
    files_on_disk = [f for f in os.listdir(parts["a"].location.removeprefix("file:")) if f.endswith(".parquet")]
    assert len(files_on_disk) == parts["a"].files

    spark.sql(f"INSERT INTO {t} VALUES (3, 'a')")  # append: the partition's totals grow, one record
    parts = {p.spec["dt"]: p for p in ms.list_partitions(name)}
    assert parts["a"].files == 2 and len(parts) == 2

    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt='a') SELECT 4")  # static partition overwrite
    assert rows(spark, f"SELECT id, dt FROM {t} ORDER BY id") == [(2, "b"), (4, "a")]
    parts = {p.spec["dt"]: p for p in ms.list_partitions(name)}
    assert sorted(parts) == ["a", "b"] and parts["a"].files == 1

    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (5, 'b'), (6, 'c')")  # dynamic: b replaced, c added, a kept
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    assert rows(spark, f"SELECT id, dt FROM {t} ORDER BY id") == [(4, "a"), (5, "b"), (6, "c")]
    assert partitions(spark, t) == ["dt=a", "dt=b", "dt=c"]

    spark.sql(f"INSERT OVERWRITE {t} VALUES (7, 'd')")  # whole table, static mode
    assert rows(spark, f"SELECT id, dt FROM {t}") == [(7, "d")]
    assert partitions(spark, t) == ["dt=d"]
    assert [p.spec for p in ms.list_partitions(name)] == [{"dt": "d"}]


def test_dataframe_writes(spark: Any, cat: str, db: str, ms: Any) -> None:
    from pyspark.sql.functions import col

    t = f"{cat}.{db}.df"
    schema = "id int, dt string"
    spark.createDataFrame([(1, "a")], schema).write.partitionBy("dt").saveAsTable(t)  # create
    spark.createDataFrame([(2, "b")], schema).write.mode("append").saveAsTable(t)
    spark.createDataFrame([(3, "a")], schema).write.insertInto(t)
    assert rows(spark, f"SELECT id, dt FROM {t} ORDER BY id") == [(1, "a"), (2, "b"), (3, "a")]
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:  # DataFrame dynamic overwrite (V2 OverwritePartitionsDynamic): partition a replaced, b kept
        spark.createDataFrame([(4, "a")], schema).write.mode("overwrite").insertInto(t)
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    assert rows(spark, f"SELECT id, dt FROM {t} ORDER BY id") == [(2, "b"), (4, "a")]
    assert sorted(p.spec["dt"] for p in ms.list_partitions(("ushas", db, "df"))) == ["a", "b"]
    spark.createDataFrame([(5, "c")], schema).write.mode("overwrite").insertInto(t)  # static: whole table
    assert rows(spark, f"SELECT id, dt FROM {t}") == [(5, "c")]
    assert [p.spec for p in ms.list_partitions(("ushas", db, "df"))] == [{"dt": "c"}]

    spark.createDataFrame([(9, "z")], schema).writeTo(f"{cat}.{db}.v2").partitionedBy(col("dt")).create()
    assert rows(spark, f"SELECT id, dt FROM {cat}.{db}.v2") == [(9, "z")]
    assert partitions(spark, f"{cat}.{db}.v2") == ["dt=z"]


def test_partition_pruning_and_pushdown(spark: Any, cat: str, db: str) -> None:
    t = f"{cat}.{db}.p"
    spark.sql(f"CREATE TABLE {t} (id INT, dt DATE) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, DATE'2024-01-01'), (2, DATE'2024-01-02'), (3, DATE'2024-01-03')")
    df = spark.sql(f"SELECT id FROM {t} WHERE dt = DATE'2024-01-02' AND id > 0")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "PartitionFilters: [isnotnull(dt" in plan and "(dt#" in plan and "= 2024-01-02)" in plan
    assert "PushedFilters: [IsNotNull(id), GreaterThan(id,0)]" in plan
    assert [r.id for r in df.collect()] == [2]
    files = {r[0] for r in spark.sql(f"SELECT DISTINCT input_file_name() FROM {t} "
                                     f"WHERE dt = DATE'2024-01-02'").collect()}
    assert len(files) == 1 and "/dt=2024-01-02/" in next(iter(files))
    # the scan itself read one partition's files
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        q = spark.sql(f"SELECT id FROM {t} WHERE dt = DATE'2024-01-02'")
        q.collect()
        scan = q._jdf.queryExecution().executedPlan().collectLeaves().head()
        assert scan.metrics().apply("numFiles").value() == 1
        assert scan.metrics().apply("numPartitions").value() == 1
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "true")


def test_partition_ddl(spark: Any, cat: str, db: str, ms: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    t = f"{cat}.{db}.pd"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING, h INT) USING parquet PARTITIONED BY (dt, h)")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='a', h=1) PARTITION (dt='a', h=2)")
    # a partition outside its table: governed (the remote catalog's), it needs a declared location
    custom = f"custom_{db}"
    ms.create_location(custom, f"file:{tmp_path}/custom")
    try:
        spark.sql(f"ALTER TABLE {t} ADD IF NOT EXISTS PARTITION (dt='a', h=1) PARTITION (dt='b', h=1) "
                  f"LOCATION '{tmp_path}/custom'")
    finally:
        ms.drop_location(custom)
    assert partitions(spark, t) == ["dt=a/h=1", "dt=a/h=2", "dt=b/h=1"]
    assert partitions(spark, f"{t} PARTITION (dt='a')") == ["dt=a/h=1", "dt=a/h=2"]
    assert partitions(spark, f"{t} PARTITION (h=1)") == ["dt=a/h=1", "dt=b/h=1"]
    assert ms.get_partition(("ushas", db, "pd"), {"dt": "b", "h": 1}).location == f"file:{tmp_path}/custom"
    with pytest.raises(AnalysisException, match="PARTITIONS_ALREADY_EXIST"):
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='a', h=1)")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt='a', h=2)")
    spark.sql(f"ALTER TABLE {t} DROP IF EXISTS PARTITION (dt='zz', h=9)")
    with pytest.raises(AnalysisException, match="PARTITIONS_NOT_FOUND"):
        spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt='zz', h=9)")
    assert partitions(spark, t) == ["dt=a/h=1", "dt=b/h=1"]
    # the partition's Location, then the table's (# Storage Information), as the session catalog shows them
    described = [(r[0], r[1]) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {t} PARTITION (dt='b', h=1)").collect()]
    assert ("Location", f"file:{tmp_path}/custom") in described


def test_truncate(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.tr"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"TRUNCATE TABLE {t} PARTITION (dt='a')")
    assert rows(spark, f"SELECT id FROM {t}") == [(2,)]
    assert ms.get_partition(("ushas", db, "tr"), {"dt": "a"}).files == 0
    spark.sql(f"TRUNCATE TABLE {t}")
    assert rows(spark, f"SELECT count(*) FROM {t}") == [(0,)]
    assert partitions(spark, t) == ["dt=a", "dt=b"]
    u = f"{cat}.{db}.tu"
    spark.sql(f"CREATE TABLE {u} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {u} VALUES (1)")
    spark.sql(f"TRUNCATE TABLE {u}")
    assert rows(spark, f"SELECT count(*) FROM {u}") == [(0,)]


# ---- drop ---------------------------------------------------------------------------------------------
def test_drop_managed_external_purge(spark: Any, cat: str, db: str, ms: Any, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.m (id INT) USING parquet")
    spark.sql(f"INSERT INTO {cat}.{db}.m VALUES (1)")
    managed = Path(ms.get_table(("ushas", db, "m")).location.removeprefix("file:"))
    assert managed.is_dir()
    spark.sql(f"DROP TABLE {cat}.{db}.m")
    assert not ms.table_exists(("ushas", db, "m"))
    assert [d.name for d in ms.list_dropped_tables(("ushas", db))] == [f"ushas.{db}.m"]  # undrop until purge
    assert managed.is_dir()  # with its data: deleted at purge
    spark.sql(f"CREATE TABLE {cat}.{db}.p (id INT) USING parquet")
    spark.sql(f"INSERT INTO {cat}.{db}.p VALUES (1)")
    purged = Path(ms.get_table(("ushas", db, "p")).location.removeprefix("file:"))
    spark.sql(f"DROP TABLE {cat}.{db}.p PURGE")
    assert not purged.exists()

    spark.sql(f"CREATE TABLE {cat}.{db}.e (id INT) USING json LOCATION '{tmp_path}/ext'")
    spark.sql(f"INSERT INTO {cat}.{db}.e VALUES (1)")
    assert dict((r[0], r[1]) for r in spark.sql(f"DESCRIBE EXTENDED {cat}.{db}.e").collect())["Type"] == "EXTERNAL"
    spark.sql(f"DROP TABLE {cat}.{db}.e")
    assert any(f.endswith(".json") for f in os.listdir(tmp_path / "ext"))  # external data kept

    spark.sql(f"CREATE TABLE {cat}.{db}.g (id INT) USING parquet")
    spark.sql(f"DROP TABLE {cat}.{db}.g PURGE")
    assert f"ushas.{db}.g" not in [d.name for d in ms.list_dropped_tables(("ushas", db))]


def test_drop_table_is_one_bridge_call_with_sparks_outcomes(spark: Any, cat: str, db: str, ms: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """DROP TABLE is planned as the shim's DropTableExec: one bridge call (Python runs Spark's tableExists,
    dropTable / viewExists in it), with the outcomes of Spark's own DropTableExec."""
    from pyspark.errors import AnalysisException

    from ushas_catalog.spark import bridge

    calls: list[str] = []
    real = bridge.handle

    def counting(op: str, payload: str) -> str:
        if op != "lineage.event":  # the lineage listener's, after each statement, asynchronously
            calls.append(op)
        return real(op, payload)

    monkeypatch.setattr(bridge, "handle", counting)  # Backend.call looks it up at every call
    t = f"{cat}.{db}.one"
    spark.sql(f"CREATE TABLE {t} (id INT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    spark.sql(f"CACHE TABLE {t}")
    assert "UshasDropTable" in spark.sql(f"EXPLAIN DROP TABLE {t}").collect()[0][0]
    calls.clear()
    spark.sql(f"DROP TABLE {t}")
    assert calls == ["drop_table_statement"]
    assert not ms.table_exists(("ushas", db, "one"))
    assert f"ushas.{db}.one" in [d.name for d in ms.list_dropped_tables(("ushas", db))]  # UNDROP until purge
    spark.sql(f"CREATE TABLE {t} (id INT, p STRING) USING parquet PARTITIONED BY (p)")
    assert not spark.catalog.isCached(t)  # the dropped table's cached data went with it
    assert spark.sql(f"SELECT * FROM {t}").collect() == []
    spark.sql(f"DROP TABLE {t}")

    calls.clear()
    spark.sql(f"DROP TABLE IF EXISTS {t}")  # missing: nothing, in one call too
    assert calls == ["drop_table_statement"]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"DROP TABLE {t}")
    spark.sql(f"CREATE VIEW {cat}.{db}.v AS SELECT 1 AS x")
    for sql in (f"DROP TABLE {cat}.{db}.v", f"DROP TABLE IF EXISTS {cat}.{db}.v"):  # a view: Spark 4.3 refuses both
        with pytest.raises(AnalysisException, match="WRONG_COMMAND_FOR_OBJECT_TYPE"):
            spark.sql(sql)
    assert ms.view_exists(("ushas", db, "v"))


# ---- views ------------------------------------------------------------------------------------------------
def test_views_share_the_table_namespace(spark: Any, cat: str, db: str, ms: Any) -> None:
    from pyspark.errors import AnalysisException

    spark.sql(f"CREATE TABLE {cat}.{db}.base (id INT) USING parquet")
    spark.sql(f"INSERT INTO {cat}.{db}.base VALUES (1), (2)")
    spark.sql(f"CREATE VIEW {cat}.{db}.v AS SELECT id * 10 AS x FROM {cat}.{db}.base")
    assert rows(spark, f"SELECT x FROM {cat}.{db}.v ORDER BY x") == [(10,), (20,)]
    spark.sql(f"ALTER VIEW {cat}.{db}.v AS SELECT id AS x FROM {cat}.{db}.base WHERE id = 1")
    assert rows(spark, f"SELECT x FROM {cat}.{db}.v") == [(1,)]
    spark.sql(f"CREATE OR REPLACE VIEW {cat}.{db}.v AS SELECT 5 AS x")
    assert rows(spark, f"SELECT * FROM {cat}.{db}.v") == [(5,)]
    assert ms.get_view(("ushas", db, "v")).sql == "SELECT 5 AS x"
    # SHOW VIEWS also lists the session's temporary views (isTemporary), as the session catalog does
    assert [r.viewName for r in spark.sql(f"SHOW VIEWS IN {cat}.{db}").collect() if not r.isTemporary] == ["v"]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE VIEW {cat}.{db}.base AS SELECT 1")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {cat}.{db}.v (id INT)")
    spark.sql(f"ALTER VIEW {cat}.{db}.v RENAME TO {db}.v2")
    assert f"VIEW {cat}" in spark.sql(f"SHOW CREATE TABLE {cat}.{db}.v2").collect()[0][0]
    spark.sql(f"DROP VIEW {cat}.{db}.v2")
    assert spark.sql(f"SHOW VIEWS IN {cat}.{db}").where("NOT isTemporary").count() == 0


# ---- the metastore and Spark see the same metadata at once ----------------------------------------------
def test_metastore_and_spark_see_each_other(spark: Any, cat: str, db: str, ms: Any) -> None:
    ms.create_table(("ushas", db, "from_api"), schema="id INT, dt STRING", partition_by=["dt"],
                    format="parquet", location=None)
    ms.add_partitions(("ushas", db, "from_api"), [{"dt": "x"}])
    assert (db, "from_api", False) in rows(spark, f"SHOW TABLES IN {cat}.{db}")
    assert partitions(spark, f"{cat}.{db}.from_api") == ["dt=x"]
    spark.sql(f"CREATE TABLE {cat}.{db}.from_spark (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"ALTER TABLE {cat}.{db}.from_spark ADD PARTITION (dt='y')")
    info = ms.get_table(("ushas", db, "from_spark"))
    assert info.partition_columns == ["dt"] and info.format == "parquet"
    assert [p.spec for p in ms.list_partitions(("ushas", db, "from_spark"))] == [{"dt": "y"}]


def test_cli_sees_spark_metadata(spark: Any, cat: str, db: str, spark_dirs: dict[str, Path],
                                 request: pytest.FixtureRequest) -> None:
    import json
    import subprocess
    import sys

    store = ["--uri", f"sqlite:///{spark_dirs['store']}"]
    if cat != "ushas":  # remote mode: the CLI asks the same service, with the same token
        remote = request.getfixturevalue("remote_service")
        store = ["--uri", remote.url, "--token", remote.token]

    spark.sql(f"CREATE TABLE {cat}.{db}.cli (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {cat}.{db}.cli VALUES (1, 'q')")
    proc = subprocess.run([sys.executable, "-m", "ushas_catalog", *store, "--json", "partitions", f"ushas.{db}.cli"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (partition,) = json.loads(proc.stdout)  # the one partition the INSERT added, as Spark stored it
    assert (partition["spec"], partition["values"]) == ({"dt": "q"}, {"dt": "q"}), partition
    assert partition["location"].endswith("/cli/dt=q"), partition


# ---- bad input: Spark's usual errors, nothing half-written -------------------------------------------------
def test_bad_input(spark: Any, cat: str, db: str, ms: Any) -> None:
    from pyspark.errors import AnalysisException, NumberFormatException
    from pyspark.errors.exceptions.captured import CapturedException

    with pytest.raises(AnalysisException, match="unknown table format 'foo'"):
        spark.sql(f"CREATE TABLE {cat}.{db}.x (id INT) USING foo")
    with pytest.raises(AnalysisException, match="255"):
        spark.sql(f"CREATE TABLE {cat}.{db}.{'n' * 300} (id INT) USING parquet")
    with pytest.raises(AnalysisException, match="partition column"):  # bucketing is by data columns
        spark.sql(f"CREATE TABLE {cat}.{db}.x (id INT, h INT) USING parquet PARTITIONED BY (h) "
                  f"CLUSTERED BY (h) INTO 4 BUCKETS")
    assert ms.list_tables(("ushas", db)) == []

    spark.sql(f"CREATE TABLE {cat}.{db}.typed (id INT, h INT) USING parquet PARTITIONED BY (h)")
    with pytest.raises((NumberFormatException, CapturedException), match="CAST_INVALID_INPUT"):
        spark.sql(f"ALTER TABLE {cat}.{db}.typed ADD PARTITION (h='abc')")
    with pytest.raises(AnalysisException, match="INCOMPATIBLE_DATA_FOR_TABLE"):
        spark.sql(f"INSERT INTO {cat}.{db}.typed VALUES ('x', 1)")
    with pytest.raises(AnalysisException, match="NOT_SUPPORTED_CHANGE_COLUMN"):  # Spark's own refusal
        spark.sql(f"ALTER TABLE {cat}.{db}.typed ALTER COLUMN id TYPE STRING")
    info = ms.get_table(("ushas", db, "typed"))
    assert info.schema.field("id").data_type.ddl() == "INT"
    assert list(ms.list_partitions(("ushas", db, "typed"))) == []
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {cat}.{db}.nope")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {cat}.{db}.typed (id INT)")


def test_dates_and_ints_as_partition_values(spark: Any, cat: str, db: str) -> None:
    t = f"{cat}.{db}.dv"
    spark.sql(f"CREATE TABLE {t} (v STRING, d DATE, n BIGINT) USING parquet PARTITIONED BY (d, n)")
    spark.sql(f"INSERT INTO {t} VALUES ('x', DATE'2024-02-29', 7)")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (d='2024-03-01', n=8)")
    assert partitions(spark, t) == ["d=2024-02-29/n=7", "d=2024-03-01/n=8"]
    assert rows(spark, f"SELECT v, d, n FROM {t}") == [("x", dt.date(2024, 2, 29), 7)]


def test_positional_insert_after_add_column_on_a_partitioned_table(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.evolve"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, '2024-01-01')")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN channel STRING")
    assert ms.get_table(("ushas", db, "evolve")).schema.names == ["id", "channel", "dt"]
    spark.sql(f"INSERT INTO {t} VALUES (2, 'web', '2024-01-02')")  # positional: the partition value is last
    assert rows(spark, f"SELECT id, channel, dt FROM {t} ORDER BY id") == [(1, None, "2024-01-01"),
                                                                         (2, "web", "2024-01-02")]
    assert [p.values for p in ms.list_partitions(("ushas", db, "evolve"))] == [{"dt": "2024-01-01"},
                                                                                {"dt": "2024-01-02"}]
