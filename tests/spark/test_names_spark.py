"""Names that would make paths collide or escape, fixed partition columns and managed locations
that are not free, through Spark: each refused with the error class Spark's own catalog uses,
nothing written to the store or the warehouse."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

pytestmark = pytest.mark.spark

#: hostile names as they are written inside backticks in SQL
HOSTILE = ["a/b", "/abs", "a\\b", ".", "..", "a\x01b", "a\x7fb", "a\x85b"]


@pytest.fixture(scope="module")
def store(spark_dirs: dict[str, Path]) -> Iterator[Any]:
    from ushas_catalog.metastore import Metastore

    m = Metastore.open(f"sqlite:///{spark_dirs['store']}", project="default")
    yield m
    m.close()


@pytest.fixture(scope="module")
def hdb(spark: Any) -> Iterator[str]:
    """One database for the whole module: a partitioned table ``t`` and a view ``v`` (every
    refused statement must leave them, and everything else, as they were)."""
    name = "names_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{name}")
    spark.sql(f"CREATE TABLE ushas.{name}.t (i INT, v STRING, p INT, dt STRING) USING parquet "
              f"PARTITIONED BY (p, dt)")
    spark.sql(f"INSERT INTO ushas.{name}.t VALUES (1, 'x', 7, '2024-01-01')")
    spark.sql(f"CREATE VIEW ushas.{name}.v AS SELECT 1 AS x")
    yield name
    spark.sql(f"DROP NAMESPACE IF EXISTS ushas.{name} CASCADE")


def snapshot(store: Any, warehouse: Path) -> tuple[list[tuple[bytes, bytes]], list[str]]:
    """Every key and value of the store's catalogs (names, tables, views, partitions, commits)
    and every path in the warehouse. (Lineage, usage and the SYSTEM metadata they keep are
    written by the listener after any query, asynchronously, so they are left out.)"""
    def read(tr: Any) -> list[tuple[bytes, bytes]]:
        return [(kv.key, kv.value) for kv in tr.get_range(*store.project_path.add("Catalog").range())]

    paths = sorted(os.path.relpath(os.path.join(d, f), warehouse)
                   for d, dirs, files in os.walk(warehouse) for f in dirs + files)
    return store.db.run(read), paths


def condition(exc: BaseException) -> tuple[str | None, dict[str, str]]:
    return exc.getCondition(), dict(exc.getMessageParameters())  # type: ignore[attr-defined]


def refused(spark: Any, store: Any, warehouse: Path, action: Callable[[], Any]) -> tuple[str | None, dict]:
    """Run ``action``, which must fail; its Spark error class and parameters. Nothing changed."""
    from pyspark.errors import PySparkException

    before = snapshot(store, warehouse)
    with pytest.raises(PySparkException) as info:
        action()
    after = snapshot(store, warehouse)
    assert after[1] == before[1], "the warehouse changed"
    assert [kv for kv in after[0] if kv not in before[0]] == [], "keys written"
    assert after[0] == before[0]
    return condition(info.value)


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


SqlEntry = Callable[[str, str], str]
#: every SQL statement a new catalog object's name enters by
NAME_STATEMENTS: dict[str, SqlEntry] = {
    "create table": lambda db, n: f"CREATE TABLE ushas.{db}.{q(n)} (i INT) USING parquet",
    "create table partitioned": lambda db, n: f"CREATE TABLE ushas.{db}.{q(n)} (i INT, p INT) USING parquet "
                                              f"PARTITIONED BY (p)",
    "ctas": lambda db, n: f"CREATE TABLE ushas.{db}.{q(n)} USING parquet AS SELECT 1 AS i",
    "create or replace": lambda db, n: f"CREATE OR REPLACE TABLE ushas.{db}.{q(n)} USING parquet AS SELECT 1 AS i",
    "create view": lambda db, n: f"CREATE VIEW ushas.{db}.{q(n)} AS SELECT 1 AS x",
    "create namespace": lambda db, n: f"CREATE NAMESPACE ushas.{q(n)}",
    "rename table": lambda db, n: f"ALTER TABLE ushas.{db}.t RENAME TO {db}.{q(n)}",
    "rename table, target as typed": lambda db, n: f"ALTER TABLE ushas.{db}.t RENAME TO {q(n)}",
    "rename view": lambda db, n: f"ALTER VIEW ushas.{db}.v RENAME TO {db}.{q(n)}",
}


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("statement", list(NAME_STATEMENTS))
def test_hostile_names_in_sql(spark: Any, store: Any, spark_dirs: dict[str, Path], hdb: str, statement: str,
                              name: str) -> None:
    sql = NAME_STATEMENTS[statement](hdb, name)
    cls, params = refused(spark, store, spark_dirs["warehouse"], lambda: spark.sql(sql).collect())
    assert (cls, params) == ("INVALID_SCHEMA_OR_RELATION_NAME", {"name": q(name)})


@pytest.mark.parametrize("name", ["a/b", "..", "a\\b"])
@pytest.mark.parametrize("writer", ["saveAsTable", "writeTo.create"])
def test_hostile_names_from_dataframes(spark: Any, store: Any, spark_dirs: dict[str, Path], hdb: str,
                                       writer: str, name: str) -> None:
    target = f"ushas.{hdb}.{q(name)}"
    df = spark.range(3)
    action = (lambda: df.write.saveAsTable(target)) if writer == "saveAsTable" else \
        (lambda: df.writeTo(target).using("parquet").create())
    cls, params = refused(spark, store, spark_dirs["warehouse"], action)
    assert (cls, params) == ("INVALID_SCHEMA_OR_RELATION_NAME", {"name": q(name)})


def test_hostile_names_are_not_found_when_read(spark: Any, hdb: str) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as info:
        spark.sql(f"SELECT * FROM ushas.{hdb}.`a/b`").collect()
    assert info.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"


#: every SQL statement (and DataFrame write) a new column name enters by
COLUMN_STATEMENTS: dict[str, SqlEntry] = {
    "create table": lambda db, n: f"CREATE TABLE ushas.{db}.c (i INT, {q(n)} INT) USING parquet",
    "partition column": lambda db, n: f"CREATE TABLE ushas.{db}.c (i INT, {q(n)} INT) USING parquet "
                                      f"PARTITIONED BY ({q(n)})",
    "ctas": lambda db, n: f"CREATE TABLE ushas.{db}.c USING parquet AS SELECT 1 AS {q(n)}",
    "ctas partitioned": lambda db, n: f"CREATE TABLE ushas.{db}.c USING parquet PARTITIONED BY ({q(n)}) "
                                      f"AS SELECT 1 AS i, 2 AS {q(n)}",
    "add column": lambda db, n: f"ALTER TABLE ushas.{db}.t ADD COLUMNS ({q(n)} INT)",
}


@pytest.mark.parametrize("name", ["a/b", "a\\b", ".", "..", "a\x01b"])
@pytest.mark.parametrize("statement", list(COLUMN_STATEMENTS))
def test_hostile_column_names_in_sql(spark: Any, store: Any, spark_dirs: dict[str, Path], hdb: str,
                                     statement: str, name: str) -> None:
    sql = COLUMN_STATEMENTS[statement](hdb, name)
    cls, params = refused(spark, store, spark_dirs["warehouse"], lambda: spark.sql(sql).collect())
    assert (cls, params) == ("INVALID_COLUMN_NAME_AS_PATH", {"datasource": "parquet", "columnName": q(name)})


def test_hostile_column_name_from_save_as_table(spark: Any, store: Any, spark_dirs: dict[str, Path],
                                                hdb: str) -> None:
    df = spark.range(3).selectExpr("id", "id AS `a/b`")
    cls, params = refused(spark, store, spark_dirs["warehouse"], lambda: df.write.saveAsTable(f"ushas.{hdb}.c"))
    assert (cls, params) == ("INVALID_COLUMN_NAME_AS_PATH", {"datasource": "parquet", "columnName": "`a/b`"})


# ---- partition columns are fixed ---------------------------------------------------------------------
@pytest.mark.parametrize("statement, expected", [
    ("ALTER TABLE {t} RENAME COLUMN dt TO day",
     ("UNSUPPORTED_FEATURE.TABLE_OPERATION", {"operation": "RENAME COLUMN"})),
    ("ALTER TABLE {t} DROP COLUMN dt",
     ("UNSUPPORTED_FEATURE.TABLE_OPERATION", {"operation": "DROP COLUMN of partition column `dt`"})),
    ("ALTER TABLE {t} DROP COLUMNS (v, p)",
     ("UNSUPPORTED_FEATURE.TABLE_OPERATION", {"operation": "DROP COLUMN of partition column `p`"})),
    ("ALTER TABLE {t} REPLACE COLUMNS (i INT, v STRING, day STRING)",
     ("UNSUPPORTED_FEATURE.TABLE_OPERATION", {"operation": "DROP COLUMN of partition column `p`"})),
    ("ALTER TABLE {t} ALTER COLUMN p TYPE BIGINT",
     ("CANNOT_ALTER_PARTITION_COLUMN", {"columnName": "`p`"})),
])
def test_partition_columns_are_fixed(spark: Any, store: Any, spark_dirs: dict[str, Path], hdb: str,
                                     statement: str, expected: tuple[str, dict[str, str]]) -> None:
    t = f"ushas.{hdb}.t"
    cls, params = refused(spark, store, spark_dirs["warehouse"], lambda: spark.sql(statement.format(t=t)).collect())
    assert cls == expected[0]
    assert params == {"tableName": f"`ushas`.`{hdb}`.`t`", **expected[1]}
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()] == [(1, "x", 7, "2024-01-01")]


def test_partition_column_comment_still_changes(spark: Any, hdb: str, store: Any) -> None:
    spark.sql(f"ALTER TABLE ushas.{hdb}.t ALTER COLUMN dt COMMENT 'the day'")
    assert store.get_table(("ushas", hdb, "t")).schema.field("dt").comment == "the day"


# ---- managed locations --------------------------------------------------------------------------------
@pytest.fixture
def db(spark: Any) -> Iterator[str]:
    name = "loc_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{name}")
    yield name
    spark.sql(f"DROP NAMESPACE IF EXISTS ushas.{name} CASCADE")


@pytest.mark.parametrize("statement", [
    "CREATE TABLE {t} (i INT) USING parquet",
    "CREATE TABLE {t} USING parquet AS SELECT 1 AS i",
])
def test_managed_location_that_exists_is_refused(spark: Any, store: Any, spark_dirs: dict[str, Path], db: str,
                                                 statement: str) -> None:
    existing = spark_dirs["warehouse"] / f"{db}.db" / "x"
    existing.mkdir(parents=True)
    (existing / "stray.parquet").write_bytes(b"not a table's file")
    cls, params = refused(spark, store, spark_dirs["warehouse"],
                          lambda: spark.sql(statement.format(t=f"ushas.{db}.x")).collect())
    assert (cls, params) == ("LOCATION_ALREADY_EXISTS", {"identifier": f"`ushas`.`{db}`.`x`",
                                                         "location": f"'file:{existing}'"})
    (existing / "stray.parquet").unlink()  # an empty directory is free, as in Spark's catalog
    spark.sql(statement.format(t=f"ushas.{db}.x"))
    assert spark.table(f"ushas.{db}.x").count() == (1 if "AS SELECT" in statement else 0)


@pytest.mark.parametrize("other", ["inner", "inner/part"])
def test_managed_location_inside_another_tables_is_refused(spark: Any, store: Any, spark_dirs: dict[str, Path],
                                                           db: str, other: str) -> None:
    """A table placed (explicitly) at what would be another table's default location, or inside
    it: the managed table is refused even while that directory does not exist yet."""
    where = spark_dirs["warehouse"] / f"{db}.db" / other
    spark.sql(f"CREATE TABLE ushas.{db}.ext (i INT) USING parquet LOCATION '{where}'")
    cls, params = refused(spark, store, spark_dirs["warehouse"],
                          lambda: spark.sql(f"CREATE TABLE ushas.{db}.inner (i INT) USING parquet").collect())
    assert cls == "LOCATION_ALREADY_EXISTS" and params["identifier"] == f"`ushas`.`{db}`.`inner`"
    # the user may still put a table there explicitly
    spark.sql(f"CREATE TABLE ushas.{db}.mine (i INT) USING parquet LOCATION '{where}/mine'")


def test_rename_into_an_existing_location_is_refused(spark: Any, store: Any, spark_dirs: dict[str, Path],
                                                     db: str) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.src (i INT) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.src VALUES (1)")
    existing = spark_dirs["warehouse"] / f"{db}.db" / "dst"
    existing.mkdir(parents=True)
    (existing / "stray").write_text("x")
    cls, _ = refused(spark, store, spark_dirs["warehouse"],
                     lambda: spark.sql(f"ALTER TABLE ushas.{db}.src RENAME TO {db}.dst").collect())
    assert cls == "LOCATION_ALREADY_EXISTS"
    assert [r[0] for r in spark.sql(f"SELECT i FROM ushas.{db}.src").collect()] == [1]


def test_data_a_dropped_table_keeps_does_not_block_its_name(spark: Any, store: Any, db: str) -> None:
    """Until purge a dropped table keeps its data at its location (undrop restores it): creating a
    table of that name again is not refused for that data (only foreign data blocks a name)."""
    spark.sql(f"CREATE TABLE ushas.{db}.again (i INT) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.again VALUES (1)")
    store.drop_table(("ushas", db, "again"))  # the metastore's drop: the files stay
    spark.sql(f"CREATE TABLE ushas.{db}.again (i INT, j INT) USING parquet")
    assert [f.name for f in store.get_table(("ushas", db, "again")).schema.fields] == ["i", "j"]
