"""One error table (``ushas_catalog.errors``): every error type of the hierarchy reaches Spark as the exception
class it names, through the table the jar carries (generated at build time, never hand-kept in Java), and the
partition errors Python raises reach Spark SQL as Spark's own PARTITIONS_NOT_FOUND / PARTITIONS_ALREADY_EXIST."""
from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.errors import AnalysisException

from ushas_catalog import errors

pytestmark = pytest.mark.spark

ALL_TYPES = sorted(errors.SPARK_EXCEPTION)


def _thrown(spark: Any, answer: dict[str, Any], ns: str = "db", name: str | None = "t") -> tuple[str, str, str]:
    text = spark._jvm.io.ushas.spark.ErrorsProbe.thrown(json.dumps(answer), ns, name)
    cls, condition, message = text.split("\n", 2)
    return cls, condition, message


def _is_a(spark: Any, cls: str, expected: str) -> bool:
    return bool(spark._jvm.io.ushas.spark.ErrorsProbe.isA(cls, expected))


def test_the_jar_carries_the_python_table(spark: Any) -> None:
    for type_ in ALL_TYPES:
        assert spark._jvm.io.ushas.spark.ErrorsProbe.exceptionOf(type_) == errors.SPARK_EXCEPTION[type_], type_


@pytest.mark.parametrize("type_", ALL_TYPES)
def test_every_error_type_reaches_spark_as_the_exception_it_names(spark: Any, type_: str) -> None:
    cls = getattr(errors, type_)
    error = cls("what went wrong", write_id="w1") if issubclass(cls, (errors.WriteEnded, errors.WriteIdTaken)) else (
        cls("what went wrong", limit="value") if issubclass(cls, errors.LimitExceeded) else cls("what went wrong"))
    thrown, condition, message = _thrown(spark, {"error": error.answer()}["error"])
    expected = errors.SPARK_EXCEPTION[type_]
    assert _is_a(spark, thrown, expected), (type_, thrown, expected)
    own = getattr(cls, "error_class", None)  # an error class of its own (PermissionDenied: INSUFFICIENT_PERMISSIONS)
    if own is not None:
        assert condition == own and message.startswith(f"[{own}] what went wrong"), message
    elif expected in (errors.ANALYSIS, errors.SYSTEM):  # the catalog's own error class, its message as it is
        assert condition == f"USHAS_{type_}" and message.startswith(f"[USHAS_{type_}] what went wrong"), message
    else:  # Spark's own exception: Spark's error class
        assert condition not in ("null", "") and not condition.startswith("USHAS_"), (type_, condition)


def test_a_type_the_jar_does_not_know_is_a_system_error(spark: Any) -> None:
    thrown, condition, message = _thrown(spark, {"type": "SomethingNew", "message": "m"})
    assert thrown == errors.SYSTEM and condition == "USHAS_SomethingNew" and message == "[USHAS_SomethingNew] m"


def test_no_error_class_outside_the_hierarchy_module() -> None:
    """Every error the project raises on purpose is declared in errors.py (so it is in the table)."""
    import importlib
    import pkgutil

    import lineage
    import ushas_catalog

    for package in (ushas_catalog, lineage):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            importlib.import_module(info.name)
    outside = [f"{cls.__module__}.{cls.__name__}" for cls in errors.hierarchy() if cls.__module__ != errors.__name__]
    assert outside == []


def test_partition_errors_from_python_are_sparks_own(spark: Any, db: str) -> None:
    t = f"ushas.{db}.pe"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    # Spark's own check passes (neither exists yet); the catalog refuses the second of the two
    with pytest.raises(AnalysisException) as caught:
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='a') PARTITION (dt='a')")
    assert caught.value.getCondition() == "PARTITIONS_ALREADY_EXIST"
    assert f"PARTITION (`dt` = a) in table `ushas`.`{db}`.`pe`" in str(caught.value)
    assert "USHAS_" not in str(caught.value)
    # TRUNCATE PARTITION: Spark does not check, the catalog does
    with pytest.raises(AnalysisException) as caught:
        spark.sql(f"TRUNCATE TABLE {t} PARTITION (dt='zz')")
    assert caught.value.getCondition() == "PARTITIONS_NOT_FOUND"
    assert f"PARTITION (`dt` = zz) cannot be found in table `ushas`.`{db}`.`pe`" in str(caught.value)
    with pytest.raises(AnalysisException, match="PARTITIONS_NOT_FOUND"):
        spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt='zz')")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='b')")
    with pytest.raises(AnalysisException, match="PARTITIONS_ALREADY_EXIST"):
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='b')")


def test_partition_error_parameters_from_the_detail() -> None:
    e = errors.PartitionAlreadyExists("partition (dt=a, h=1) of c.d.t already exists", table="c.d.t",
                                      partition={"dt": "a", "h": 1})
    assert e.answer()["spark"] == {"errorClass": "PARTITIONS_ALREADY_EXIST", "runtime": False, "parameters": {
        "partitionList": "PARTITION (`dt` = a, `h` = 1)", "tableName": "`c`.`d`.`t`"}}
    e2 = errors.NoSuchPartition("no partition (dt=a, h=1) in c.d.t", table="c.d.t")
    assert e2.answer()["spark"]["parameters"] == e.answer()["spark"]["parameters"]


def test_a_column_default_is_refused_not_dropped(spark: Any, db: str) -> None:
    """The shim sends ADD COLUMN's DEFAULT (a request field Python did not read: found by the field drift test);
    the catalog refuses it like Spark refuses DEFAULT in CREATE TABLE here, instead of adding the column without."""
    t = f"ushas.{db}.cd"
    spark.sql(f"CREATE TABLE {t} (a INT) USING parquet")
    with pytest.raises(AnalysisException) as caught:
        spark.sql(f"ALTER TABLE {t} ADD COLUMN c INT DEFAULT 5")
    assert caught.value.getCondition() == "USHAS_InvalidArgument"
    assert "column default values are not supported" in str(caught.value)
    assert [f.name for f in spark.table(t).schema.fields] == ["a"]
