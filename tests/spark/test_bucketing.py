"""Bucketed tables (``CLUSTERED BY (a) [SORTED BY (b)] INTO n BUCKETS``) in the ``ushas`` catalog, next to
the same table in Spark's session catalog: the spec is stored and shown, writes put each bucket's rows in
files named by Spark's bucket naming, reads use the buckets (pruning, joins without a shuffle), CTAS /
LIKE keep the spec, and ``import-hive`` keeps it."""
from __future__ import annotations

import os
import re
import uuid
from typing import Any, Iterator

import pytest

pytestmark = pytest.mark.spark

DDL = "(a INT, b STRING, dt STRING) USING parquet PARTITIONED BY (dt) CLUSTERED BY (a) SORTED BY (b) INTO 4 BUCKETS"
ROWS = "SELECT CAST(id AS INT) AS a, CAST(id * 7 % 11 AS STRING) AS b, CAST(id % 2 AS STRING) AS dt FROM range(40)"


@pytest.fixture
def hive_db(spark: Any) -> Iterator[str]:
    name = "bk_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE DATABASE spark_catalog.{name}")
    yield name
    spark.sql(f"DROP DATABASE spark_catalog.{name} CASCADE")


def rows(spark: Any, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def plan(spark: Any, sql: str) -> str:
    return str(spark.sql(f"EXPLAIN {sql}").collect()[0][0])


def bucket_of(name: str) -> int:
    m = re.search(r"_(\d+)(?:\..*)?$", name)
    assert m, name
    return int(m.group(1))


def buckets_described(spark: Any, table: str) -> tuple[str, list[str], list[str]]:
    """(Num Buckets, Bucket Columns, Sort Columns) of DESCRIBE EXTENDED, as the session catalog prints them."""
    detail = {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED {table}").collect()}

    def names(key: str) -> list[str]:
        text = (detail.get(key) or "").strip("[]")
        return [c.strip().strip("`") for c in text.split(",")] if text else []

    return detail.get("Num Buckets"), names("Bucket Columns"), names("Sort Columns")


def test_the_spec_is_stored_shown_and_replayable(spark: Any, db: str, ms: Any) -> None:
    from ushas_catalog.model.bucketing import Bucketing

    t = f"ushas.{db}.b"
    spark.sql(f"CREATE TABLE {t} {DDL}")
    assert ms.get_table(("ushas", db, "b")).bucketing == Bucketing(4, ["a"], ["b"])
    # DESCRIBE (the extension's session-catalog layout) shows the spec as the session catalog does;
    # SHOW CREATE TABLE too (the extension rewrites Spark's PARTITIONED BY (dt, sorted_bucket(a, 4, b)))
    assert buckets_described(spark, t) == ("4", ["a"], ["b"])
    assert ("# Partition Information", "") in [tuple(r)[:2] for r in spark.sql(f"DESCRIBE TABLE {t}").collect()]
    shown = spark.sql(f"SHOW CREATE TABLE {t}").collect()[0][0]
    assert "PARTITIONED BY (dt)\nCLUSTERED BY (a)\nSORTED BY (b)\nINTO 4 BUCKETS\n" in shown
    # what SHOW CREATE TABLE shows replays to the same bucketed table
    spark.sql(re.sub(r"LOCATION '[^']*'\n", "", shown.replace(f"{t} (", f"ushas.{db}.again (")))
    assert ms.get_table(("ushas", db, "again")).bucketing == Bucketing(4, ["a"], ["b"])
    spark.sql(f"CREATE TABLE ushas.{db}.plain (a INT, b STRING) USING parquet CLUSTERED BY (a, b) INTO 3 BUCKETS")
    assert ms.get_table(("ushas", db, "plain")).bucketing == Bucketing(3, ["a", "b"], [])
    assert buckets_described(spark, f"ushas.{db}.plain") == ("3", ["a", "b"], [])
    # ALTER TABLE keeps the spec; a bucket column cannot be dropped
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (c INT)")
    assert ms.get_table(("ushas", db, "b")).bucketing == Bucketing(4, ["a"], ["b"])
    with pytest.raises(Exception, match="bucketed by it"):
        spark.sql(f"ALTER TABLE ushas.{db}.plain DROP COLUMN b")
    with pytest.raises(Exception, match="is a partition column"):
        spark.sql(f"CREATE TABLE ushas.{db}.bad (a INT, dt STRING) USING parquet PARTITIONED BY (dt) "
                  f"CLUSTERED BY (dt) INTO 2 BUCKETS")


def test_writes_make_bucket_files_and_reads_use_them(spark: Any, db: str, hive_db: str, ms: Any) -> None:
    ours, theirs = f"ushas.{db}.b", f"spark_catalog.{hive_db}.b"
    for t in (ours, theirs):
        spark.sql(f"CREATE TABLE {t} {DDL}")
        spark.sql(f"INSERT INTO {t} {ROWS}")
    spark.sql(f"INSERT INTO {ours} SELECT 100, 'x', '0'")  # a second write adds files to the buckets
    spark.sql(f"INSERT INTO {theirs} SELECT 100, 'x', '0'")
    assert rows(spark, f"SELECT * FROM {ours}") == rows(spark, f"SELECT * FROM {theirs}")
    # every file holds exactly its bucket's rows, by Spark's bucket id (the one the session catalog uses)
    partitions = ms.list_partitions(("ushas", db, "b"))
    assert [p.spec for p in partitions] == [{"dt": "0"}, {"dt": "1"}]
    for p in partitions:
        assert p.data_files
        for f in p.data_files:
            bucket = bucket_of(os.path.basename(f.path))
            ids = {r[0] for r in spark.read.parquet(f.path).selectExpr("pmod(hash(a), 4)").collect()}
            assert ids == {bucket}, (f.path, ids)
    per_bucket = "SELECT pmod(hash(a), 4) AS k, count(*) FROM {t} GROUP BY 1"
    assert rows(spark, per_bucket.format(t=ours)) == rows(spark, per_bucket.format(t=theirs))

    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.sql.sources.bucketing.autoBucketedScan.enabled", "false")
    try:
        for t in (ours, theirs):  # a join on the bucket key needs no shuffle; a point filter reads one bucket
            joined = plan(spark, f"SELECT * FROM {t} x JOIN {t} y ON x.a = y.a")
            assert "Bucketed: true" in joined and "Exchange" not in joined, joined
            pruned = plan(spark, f"SELECT * FROM {t} WHERE a = 3")
            assert "SelectedBucketsCount: 1 out of 4" in pruned, pruned
        assert rows(spark, f"SELECT x.a, y.b FROM {ours} x JOIN {ours} y ON x.a = y.a WHERE x.a < 5") == \
            rows(spark, f"SELECT x.a, y.b FROM {theirs} x JOIN {theirs} y ON x.a = y.a WHERE x.a < 5")
        assert rows(spark, f"SELECT * FROM {ours} WHERE a = 3") == rows(spark, f"SELECT * FROM {theirs} WHERE a = 3")
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
        spark.conf.unset("spark.sql.sources.bucketing.autoBucketedScan.enabled")


def test_ctas_and_like_keep_the_spec(spark: Any, db: str, hive_db: str, ms: Any) -> None:
    from ushas_catalog.model.bucketing import Bucketing

    spark.sql(f"CREATE TABLE ushas.{db}.c USING parquet CLUSTERED BY (a) INTO 2 BUCKETS AS {ROWS}")
    assert ms.get_table(("ushas", db, "c")).bucketing == Bucketing(2, ["a"], [])
    names = [os.path.basename(f.path) for f in ms.table_data_files(("ushas", db, "c")) or []]
    assert sorted({bucket_of(n) for n in names}) == [0, 1]
    assert spark.table(f"ushas.{db}.c").count() == 40
    spark.sql(f"CREATE OR REPLACE TABLE ushas.{db}.c USING parquet CLUSTERED BY (b) SORTED BY (a) INTO 3 BUCKETS "
              f"AS {ROWS}")
    assert ms.get_table(("ushas", db, "c")).bucketing == Bucketing(3, ["b"], ["a"])

    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.src {DDL}")
    spark.sql(f"CREATE TABLE ushas.{db}.src {DDL}")
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.l LIKE spark_catalog.{hive_db}.src")
    spark.sql(f"CREATE TABLE ushas.{db}.l1 LIKE ushas.{db}.src")
    spark.sql(f"CREATE TABLE ushas.{db}.l2 LIKE spark_catalog.{hive_db}.src")
    detail = {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED spark_catalog.{hive_db}.l").collect()}
    theirs = Bucketing(int(detail["Num Buckets"]), [c.strip("`") for c in detail["Bucket Columns"].strip("[]").split(",")],
                       [c.strip("`") for c in detail["Sort Columns"].strip("[]").split(",")])
    assert ms.get_table(("ushas", db, "l1")).bucketing == theirs == ms.get_table(("ushas", db, "l2")).bucketing


def test_import_hive_keeps_bucket_specs(spark: Any, hive_db: str, store_uri: str) -> None:
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.model.bucketing import Bucketing
    from ushas_catalog.spark.hive_import import HIVE_BUCKETING_PROPERTY, SparkHiveSource, import_hive

    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.ds {DDL}")
    spark.sql(f"INSERT INTO spark_catalog.{hive_db}.ds {ROWS}")
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.hv (a INT, b STRING) CLUSTERED BY (a) SORTED BY (b) "
              f"INTO 2 BUCKETS STORED AS PARQUET")
    with Metastore.open(store_uri) as m:
        report = import_hive(m, SparkHiveSource(spark), "lake", databases=[hive_db])
        assert sorted(report.tables_created) == [f"{hive_db}.ds", f"{hive_db}.hv"], report.problems
        ds = m.get_table(f"lake.{hive_db}.ds")
        assert ds.bucketing == Bucketing(4, ["a"], ["b"])
        # a Hive-format table: Spark reads it without buckets (Hive names bucket files its own way);
        # its spec is kept as a property
        hv = m.get_table(f"lake.{hive_db}.hv")
        assert hv.bucketing is None
        assert hv.properties[HIVE_BUCKETING_PROPERTY] == \
            '{"columns": ["a"], "num_buckets": 2, "sort_columns": ["b"]}'
        again = import_hive(m, SparkHiveSource(spark), "lake", databases=[hive_db])
        assert sorted(again.tables_existing) == [f"{hive_db}.ds", f"{hive_db}.hv"], again.problems
