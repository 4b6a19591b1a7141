"""Partition tags from Spark: ``CALL ushas.system.set_partition_tags / unset_partition_tags``, the tags
column of the partitions tables, ``<db>.<t>.partition_tags`` (a read of the tag index) and
``ushas.system.partition_tag_stats``; tags kept across INSERT OVERWRITE (static and dynamic) and TRUNCATE,
gone with DROP PARTITION."""
from __future__ import annotations

from typing import Any

import pytest

from tests.spark.sql_tables_support import count_key_reads


def call(spark: Any, text: str) -> list[Any]:
    return spark.sql(f"CALL ushas.system.{text}").collect()


@pytest.fixture
def cities(spark: Any, db: str) -> str:
    name = f"ushas.{db}.cities"
    spark.sql(f"CREATE TABLE {name} (id INT, pop BIGINT, city STRING) USING parquet PARTITIONED BY (city)")
    spark.sql(f"INSERT INTO {name} VALUES (1, 7, 'Pune'), (2, 20, 'Mumbai'), (3, 3, 'Nagpur'), (4, 30, 'Delhi'), "
              f"(5, 11, 'Chennai'), (6, 1, 'Pune')")
    return name


def tags_of(spark: Any, name: str) -> dict[str, dict[str, str]]:
    return {r.city: dict(r.tags) for r in spark.sql(f"SELECT city, tags FROM {name}.partitions").collect()}


def test_procedures_and_tables(spark: Any, db: str, cities: str) -> None:
    rows = call(spark, f"set_partition_tags('{db}.cities', \"city IN ('Pune', 'Mumbai', 'Nagpur')\", "
                       f"map('province', 'MH', 'band', 'big'))")
    assert [(r.action, r.object, r.matched, r.changed) for r in rows] == [
        ("SET PARTITION TAGS", f"ushas.{db}.cities", 3, 3)]
    assert rows[0].version is not None and rows[0].detail == "band=big, province=MH"
    call(spark, f"set_partition_tags(table => '{db}.cities', partition => 'city=Delhi', "
                f"tags => map('province', 'DL'))")
    call(spark, f"set_partition_tags('{db}.cities', 'city=Chennai', map('province', 'TN'))")
    rows = call(spark, f"unset_partition_tags('{db}.cities', 'city=Nagpur', array('band'))")
    assert (rows[0].action, rows[0].changed) == ("UNSET PARTITION TAGS", 1)
    assert tags_of(spark, cities) == {"Pune": {"province": "MH", "band": "big"},
                                      "Mumbai": {"province": "MH", "band": "big"}, "Nagpur": {"province": "MH"},
                                      "Delhi": {"province": "DL"}, "Chennai": {"province": "TN"}}
    # select by tag: the tags map column (Spark filters), and the tag index table
    mh = spark.sql(f"SELECT city FROM {cities}.partitions WHERE tags['province'] = 'MH' ORDER BY city").collect()
    assert [r.city for r in mh] == ["Mumbai", "Nagpur", "Pune"]
    got = spark.sql(f"SELECT city, tag_value, files FROM {cities}.partition_tags "
                    f"WHERE tag_key = 'province' AND tag_value IN ('MH', 'TN') ORDER BY city").collect()
    assert [(r.city, r.tag_value) for r in got] == [("Chennai", "TN"), ("Mumbai", "MH"), ("Nagpur", "MH"),
                                                    ("Pune", "MH")]
    assert all(r.files >= 1 for r in got)
    # the partitions of a tag, joined with the data (a dynamic partition filter)
    total = spark.sql(f"SELECT sum(pop) AS s FROM {cities} WHERE city IN (SELECT city FROM "
                      f"{cities}.partition_tags WHERE tag_key = 'province' AND tag_value = 'MH')").first().s
    assert total == 7 + 20 + 3 + 1
    stats = spark.sql(f"SELECT tag_key, tag_value, partitions, bytes FROM ushas.system.partition_tag_stats "
                      f"WHERE database = '{db}' AND table = 'cities' ORDER BY tag_key, tag_value").collect()
    assert [(r.tag_key, r.tag_value, r.partitions) for r in stats] == [
        ("band", "big", 2), ("province", "DL", 1), ("province", "MH", 3), ("province", "TN", 1)]
    assert all(r.bytes > 0 for r in stats)
    system = spark.sql(f"SELECT spec['city'] AS city, tags FROM ushas.system.partitions "
                       f"WHERE database = '{db}' AND table = 'cities' AND spec['city'] = 'Delhi'").collect()
    assert [dict(r.tags) for r in system] == [{"province": "DL"}]
    history = spark.sql(f"SELECT operation FROM {cities}.history ORDER BY version DESC LIMIT 2").collect()
    assert [r.operation for r in history] == ["UNSET PARTITION TAGS", "SET PARTITION TAGS"]


def test_tags_are_kept_across_overwrites_and_go_with_a_drop(spark: Any, db: str, cities: str) -> None:
    call(spark, f"set_partition_tags('{db}.cities', '', map('country', 'IN'))")
    call(spark, f"set_partition_tags('{db}.cities', 'city=Pune', map('province', 'MH'))")
    spark.sql(f"INSERT OVERWRITE {cities} PARTITION (city = 'Pune') VALUES (9, 8)")  # static overwrite
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {cities} VALUES (10, 21, 'Mumbai'), (11, 2, 'Goa')")  # dynamic overwrite
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    spark.sql(f"TRUNCATE TABLE {cities} PARTITION (city = 'Nagpur')")
    spark.sql(f"INSERT INTO {cities} VALUES (12, 5, 'Chennai')")  # an append to a tagged partition
    tags = tags_of(spark, cities)
    assert tags["Pune"] == {"country": "IN", "province": "MH"} and tags["Mumbai"] == {"country": "IN"}
    assert tags["Nagpur"] == {"country": "IN"} and tags["Goa"] == {} and tags["Chennai"] == {"country": "IN"}
    assert spark.sql(f"SELECT pop FROM {cities} WHERE city = 'Pune'").collect()[0].pop == 8
    spark.sql(f"ALTER TABLE {cities} DROP PARTITION (city = 'Pune')")
    left = spark.sql(f"SELECT city FROM {cities}.partition_tags WHERE tag_key = 'province'").collect()
    assert left == []
    spark.sql(f"ALTER TABLE {cities} ADD PARTITION (city = 'Pune')")
    assert tags_of(spark, cities)["Pune"] == {}


def test_the_tag_index_table_reads_only_the_tag(spark: Any, db: str, ms: Any) -> None:
    name = f"ushas.{db}.wards"
    spark.sql(f"CREATE TABLE {name} (id INT, ward INT) USING parquet PARTITIONED BY (ward)")
    ms.add_partitions(name, [{"ward": w} for w in range(2_000)])
    call(spark, f"set_partition_tags('{db}.wards', 'ward >= 100 AND ward < 120', map('zone', 'north'))")
    with count_key_reads(spark) as reads:
        got = spark.sql(f"SELECT ward FROM {name}.partition_tags WHERE tag_key = 'zone' AND tag_value = 'north'"
                        ).collect()
    assert sorted(r.ward for r in got) == list(range(100, 120))
    assert reads.keys < 2 * 20 + 40, reads  # the tag's index keys and records, not 2,000 partitions


def test_bad_calls(spark: Any, db: str, cities: str) -> None:
    for text, message in ((f"set_partition_tags('{db}.cities', 'town=Pune', map('a', 'b'))",
                           "'town' is not a partition column"),
                          (f"set_partition_tags('{db}.cities', 'city=Pune', map('a', CAST(NULL AS STRING)))",
                           "must be a string"),
                          (f"unset_partition_tags('{db}.cities', 'city=Pune', array())", "non-empty array")):
        with pytest.raises(Exception) as caught:
            call(spark, text)
        assert getattr(caught.value, "getCondition")() == "USHAS_InvalidArgument"
        assert message in str(caught.value)
    with pytest.raises(Exception) as caught:
        call(spark, f"set_partition_tags('{db}.cities', 'city=Goa', map('a', 'b'))")
    assert getattr(caught.value, "getCondition")() == "PARTITIONS_NOT_FOUND"
    spark.sql(f"CREATE TABLE ushas.{db}.flat (id INT) USING parquet")
    assert spark.sql(f"SELECT * FROM ushas.{db}.flat.partition_tags").collect() == []
