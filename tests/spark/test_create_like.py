"""``CREATE TABLE … LIKE`` into the ``ushas`` catalog, compared with Spark's session catalog in the same
session: the same columns (and column comments), partitioning, format, options, table properties,
managed / external type; from an ``ushas`` table, a session-catalog (Hive metastore) table and views."""
from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

pytestmark = pytest.mark.spark

SOURCE = ("(a INT COMMENT 'ca', b STRING, dt STRING) USING parquet OPTIONS ('x.note' 'kept') "
          "PARTITIONED BY (dt) COMMENT 'tc' TBLPROPERTIES ('p'='1')")


def described(spark: Any, table: str) -> dict[str, Any]:
    """What CREATE TABLE LIKE decides, as DESCRIBE EXTENDED and SHOW TBLPROPERTIES show it."""
    rows = [tuple(r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()]
    cut = rows.index(("# Detailed Table Information", "", ""))
    detail = {r[0]: r[1] for r in rows[cut + 1:]}
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    return {"columns": rows[:cut], "type": detail.get("Type"), "provider": detail.get("Provider"),
            "comment": detail.get("Comment"), "properties": props}


@pytest.fixture
def hive_db(spark: Any) -> Iterator[str]:
    name = "lk_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE DATABASE spark_catalog.{name}")
    yield name
    spark.sql(f"DROP DATABASE spark_catalog.{name} CASCADE")


@pytest.mark.parametrize("clauses", ["", "USING json LOCATION '{tmp}/{cat}-l' TBLPROPERTIES ('a'='b', 'p'='3')"])
def test_like_a_table_as_the_session_catalog_does(spark: Any, db: str, hive_db: str, tmp_path: Any,
                                                  clauses: str) -> None:
    out = {}
    for cat, ns in (("spark_catalog", hive_db), ("ushas", db)):
        spark.sql(f"CREATE TABLE {cat}.{ns}.src {SOURCE}")
        spark.sql(f"CREATE TABLE {cat}.{ns}.l LIKE {cat}.{ns}.src {clauses.format(tmp=tmp_path, cat=cat)}")
        out[cat] = described(spark, f"{cat}.{ns}.l")
    assert out["ushas"] == out["spark_catalog"]
    assert out["ushas"]["type"] == ("EXTERNAL" if "LOCATION" in clauses else "MANAGED")
    spark.sql(f"INSERT INTO ushas.{db}.l VALUES (1, 'x', 'd1')")  # a table that works
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM ushas.{db}.l").collect()] == [(1, "x", "d1")]


def test_like_a_session_catalog_table_and_views(spark: Any, db: str, hive_db: str) -> None:
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.src {SOURCE}")
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.l LIKE spark_catalog.{hive_db}.src")
    spark.sql(f"CREATE TABLE ushas.{db}.l LIKE spark_catalog.{hive_db}.src")  # across catalogs
    assert described(spark, f"ushas.{db}.l") == described(spark, f"spark_catalog.{hive_db}.l")
    # a Hive-format table: its storage maps to the catalog's format
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.h (a INT, b STRING) STORED AS ORC")
    spark.sql(f"CREATE TABLE ushas.{db}.h LIKE spark_catalog.{hive_db}.h")
    assert described(spark, f"ushas.{db}.h")["provider"] == "orc"
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.txt (a INT) STORED AS TEXTFILE")
    with pytest.raises(Exception, match="no format of this catalog; add USING"):
        spark.sql(f"CREATE TABLE ushas.{db}.txt LIKE spark_catalog.{hive_db}.txt")
    spark.sql(f"CREATE TABLE ushas.{db}.txt LIKE spark_catalog.{hive_db}.txt USING csv")
    # views: the default data source, the view's columns
    spark.sql(f"CREATE VIEW spark_catalog.{hive_db}.v AS SELECT 1 AS x, 'y' AS y")
    spark.sql(f"CREATE VIEW ushas.{db}.v AS SELECT 1 AS x, 'y' AS y")
    spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.lv LIKE spark_catalog.{hive_db}.v")
    spark.sql(f"CREATE TABLE ushas.{db}.lv LIKE spark_catalog.{hive_db}.v")
    spark.sql(f"CREATE TABLE ushas.{db}.lv2 LIKE ushas.{db}.v")
    expected = described(spark, f"spark_catalog.{hive_db}.lv")
    assert described(spark, f"ushas.{db}.lv") == expected == described(spark, f"ushas.{db}.lv2")


def test_like_refusals(spark: Any, db: str, hive_db: str) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.src {SOURCE}")
    spark.sql(f"CREATE TABLE ushas.{db}.l LIKE ushas.{db}.src")
    with pytest.raises(Exception) as exists:
        spark.sql(f"CREATE TABLE ushas.{db}.l LIKE ushas.{db}.src")
    assert exists.value.getCondition() == "TABLE_OR_VIEW_ALREADY_EXISTS"  # type: ignore[attr-defined]
    spark.sql(f"CREATE TABLE IF NOT EXISTS ushas.{db}.l LIKE ushas.{db}.src")
    with pytest.raises(Exception) as missing:
        spark.sql(f"CREATE TABLE ushas.{db}.m LIKE ushas.{db}.nope")
    assert missing.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"  # type: ignore[attr-defined]
    # Spark's own limitation: its session catalog (V2SessionCatalog) does not implement createTableLike,
    # so a V2 source into spark_catalog is refused by Spark for every V2 catalog
    with pytest.raises(Exception, match="spark_catalog does not support CREATE TABLE LIKE"):
        spark.sql(f"CREATE TABLE spark_catalog.{hive_db}.l LIKE ushas.{db}.src")
