"""Versioned objects from Spark SQL (docs/objects.md): the procedures, the system tables, tags, and the
name space they share with tables (Spark's own error classes)."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def call(spark: Any, text: str) -> list[Any]:
    return spark.sql(f"CALL ushas.system.{text}").collect()


def condition(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as caught:
        spark.sql(sql).collect()
    return str(caught.value.getCondition())  # type: ignore[attr-defined]


def test_objects_from_spark_sql(spark: Any, db: str, ms: Any) -> None:
    (row,) = call(spark, f"create_object('{db}.churn', 'model', 's3://m/churn', properties => map('fw', 'xgb'))")
    assert (row.action, row.object) == ("CREATE OBJECT", f"ushas.{db}.churn")
    (v1,) = call(spark, f"add_object_version('{db}.churn', 's3://m/churn/1', map('auc', '0.8'))")
    assert (v1.version, v1.dataset) == (1, f"ushas.{db}.churn@v1")
    call(spark, f"add_object_version(object => '{db}.churn')")
    (back,) = call(spark, f"rollback_object('{db}.churn', 1)")
    assert back.version == 3 and ms.objects.version(f"ushas.{db}.churn").location == "s3://m/churn/1"
    call(spark, f"set_tag('{db}.churn', 'pii')")
    assert ms.metadata.get(["ushas", db, "churn"]).user.tags == ["pii"]
    rows = spark.sql(f"SELECT name, kind, current_version, properties FROM ushas.system.objects "
                     f"WHERE database = '{db}'").collect()
    assert [tuple(r) for r in rows] == [("churn", "model", 3, {"fw": "xgb"})]
    versions = spark.sql(f"SELECT version, current, rolled_back_from FROM ushas.system.object_versions "
                         f"WHERE database = '{db}' AND object = 'churn' ORDER BY version").collect()
    assert [tuple(r) for r in versions] == [(1, False, None), (2, False, None), (3, True, 1)]
    assert condition(spark, f"CREATE TABLE ushas.{db}.churn (a INT) USING parquet") == \
        "TABLE_OR_VIEW_ALREADY_EXISTS"
    assert condition(spark, f"DROP NAMESPACE ushas.{db}") == "SCHEMA_NOT_EMPTY"
    assert condition(spark, f"CALL ushas.system.rollback_object('{db}.churn', 9)") == "USHAS_NoSuchVersion"
    assert condition(spark, f"CALL ushas.system.create_object('{db}.x', 'Bad Kind', '/x')") == \
        "USHAS_InvalidArgument"
    call(spark, f"drop_object('{db}.churn')")
    assert spark.sql(f"SELECT * FROM ushas.system.objects WHERE database = '{db}'").count() == 0
    (row,) = call(spark, f"undrop_object('{db}.churn')")
    assert row.version == 3
