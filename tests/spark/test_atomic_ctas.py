"""Atomic CTAS / RTAS (``StagingTableCatalog``): the table, or its replacement, appears with its data in
one metastore commit; a failed statement leaves the previous state exactly; readers never see an empty
or half table; what a failed write placed is removed (or named for ``ushas purge``)."""
from __future__ import annotations

import os
import threading
from typing import Any

import pytest
from pyspark.errors import AnalysisException

pytestmark = pytest.mark.spark


def rows(spark: Any, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def staged_entries(ms: Any) -> list[Any]:
    from ushas_catalog.data.staged import staged_write

    return [e for e in ms.garbage() if staged_write(e) is not None]


def data_files_under(path: str) -> list[str]:
    root = path.removeprefix("file:")
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.join(d, f) for f in files if not f.startswith((".", "_"))]
    return sorted(out)


#: a query that fails in its tasks, after some rows were written (assert_true raises on id = 3)
FAILING = "SELECT /*+ REPARTITION(2) */ id, CAST(id % 2 AS STRING) AS dt, assert_true(id < 3) AS ok FROM range(6)"


def test_ctas_forms_create_the_table_with_its_data(spark: Any, db: str, ms: Any) -> None:
    t = f"ushas.{db}.c"
    spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (dt) COMMENT 'made' TBLPROPERTIES ('k' = 'v') "
              f"AS SELECT id, CAST(id % 2 AS STRING) AS dt FROM range(4)")
    assert rows(spark, f"SELECT id, dt FROM {t} ORDER BY id") == [(0, "0"), (1, "1"), (2, "0"), (3, "1")]
    info = ms.get_table(("ushas", db, "c"))
    assert info.comment == "made" and info.properties["k"] == "v" and list(info.partition_columns) == ["dt"]
    assert sorted(p.spec["dt"] for p in ms.list_partitions(("ushas", db, "c"))) == ["0", "1"]
    assert all(p.data_files for p in ms.list_partitions(("ushas", db, "c")))  # exactly the write's files
    # the create and its data are one metastore transaction (one change feed commit, two versions)
    assert [h.operation for h in ms.history(("ushas", db, "c"))][-2:] in (["CREATE TABLE", "APPEND"],
                                                                         ["APPEND", "CREATE TABLE"])
    assert staged_entries(ms) == []
    assert not os.path.exists(info.location.removeprefix("file:") + "/_ushas_staging")

    with pytest.raises(Exception) as exists:
        spark.sql(f"CREATE TABLE {t} USING parquet AS SELECT 1 AS id")
    assert exists.value.getCondition() == "TABLE_OR_VIEW_ALREADY_EXISTS"  # type: ignore[attr-defined]
    spark.sql(f"CREATE TABLE IF NOT EXISTS {t} USING parquet AS SELECT 1 AS id")  # nothing done
    assert spark.table(t).count() == 4

    # unpartitioned, DataFrame API
    spark.range(3).writeTo(f"ushas.{db}.w").create()
    assert rows(spark, f"SELECT id FROM ushas.{db}.w ORDER BY id") == [(0,), (1,), (2,)]
    spark.range(5).writeTo(f"ushas.{db}.w").replace()
    assert spark.table(f"ushas.{db}.w").count() == 5
    spark.range(2).writeTo(f"ushas.{db}.w").createOrReplace()
    spark.range(7).writeTo(f"ushas.{db}.w2").createOrReplace()
    assert spark.table(f"ushas.{db}.w").count() == 2 and spark.table(f"ushas.{db}.w2").count() == 7
    spark.range(9).write.mode("overwrite").saveAsTable(f"ushas.{db}.w")
    spark.range(1).write.mode("overwrite").saveAsTable(f"ushas.{db}.s")
    assert spark.table(f"ushas.{db}.w").count() == 9 and spark.table(f"ushas.{db}.s").count() == 1
    assert int(ms.get_table(("ushas", db, "w")).properties["numRows"]) == 9
    with pytest.raises(Exception) as missing:
        spark.range(1).writeTo(f"ushas.{db}.nope").replace()
    assert missing.value.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND",  # type: ignore[attr-defined]
                                            "CANNOT_REPLACE_MISSING_TABLE")
    assert not ms.table_exists(("ushas", db, "nope"))
    assert staged_entries(ms) == []


def test_rtas_replaces_in_one_commit_and_keeps_the_old_table(spark: Any, db: str, ms: Any) -> None:
    t = f"ushas.{db}.r"
    name = ("ushas", db, "r")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt) TBLPROPERTIES ('old'='1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    old = ms.get_table(name)
    old_files = data_files_under(old.location)
    spark.sql(f"CREATE OR REPLACE TABLE {t} USING orc TBLPROPERTIES ('new'='1') AS SELECT 'x' AS s, 7 AS n")
    assert rows(spark, f"SELECT * FROM {t}") == [("x", 7)]
    new = ms.get_table(name)
    assert new.format == "orc" and "old" not in new.properties and new.properties["new"] == "1"
    assert new.id != old.id
    # the replaced table is kept, with its data, until purge: UNDROP brings it back
    dropped = [d for d in ms.list_dropped_tables(("ushas", db)) if d.name.split(".")[-1] == "r"]
    assert len(dropped) == 1
    assert all(os.path.exists(f) for f in old_files)
    spark.sql(f"REPLACE TABLE {t} USING parquet AS SELECT 1 AS one")
    assert rows(spark, f"SELECT * FROM {t}") == [(1,)]
    spark.sql(f"DROP TABLE {t}")
    ms.undrop_table(name)
    assert rows(spark, f"SELECT one FROM {t}") == [(1,)]
    assert staged_entries(ms) == []


@pytest.mark.parametrize("statement", ["CREATE TABLE {t} USING parquet PARTITIONED BY (dt) AS " + FAILING,
                                       "CREATE OR REPLACE TABLE {t} USING parquet AS " + FAILING,
                                       "REPLACE TABLE {t} USING parquet PARTITIONED BY (dt) AS " + FAILING])
def test_a_failed_statement_leaves_the_previous_state(spark: Any, db: str, ms: Any, statement: str,
                                                       spark_dirs: dict[str, Any]) -> None:
    from ushas_catalog.data.write_fence import list_outcomes

    t = f"ushas.{db}.f"
    name = ("ushas", db, "f")
    if not statement.startswith("CREATE TABLE"):
        spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING parquet TBLPROPERTIES ('keep'='me') COMMENT 'c'")
        spark.sql(f"INSERT INTO {t} VALUES (1, 'one'), (2, 'two')")
    before = ms.get_table(name) if ms.table_exists(name) else None
    location = before.location if before is not None else f"{spark_dirs['warehouse']}/{db}.db/f"
    files_before = data_files_under(location)
    with pytest.raises(Exception) as failed:
        spark.sql(statement.format(t=t))
    assert "assert" in str(failed.value).lower() or "id < 3" in str(failed.value)
    if before is None:
        assert not ms.table_exists(name)
        with pytest.raises(AnalysisException) as gone:
            spark.table(t)
        assert gone.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    else:
        after = ms.get_table(name)
        assert (after.id, after.version, after.schema, after.properties, after.comment, after.format) == (
            before.id, before.version, before.schema, before.properties, before.comment, before.format)
        assert rows(spark, f"SELECT id, v FROM {t} ORDER BY id") == [(1, "one"), (2, "two")]
    # nothing the failed write placed is left, and nothing stays named for purge
    assert data_files_under(location) == files_before
    assert staged_entries(ms) == []
    assert list_outcomes(ms, limit=1)[0].state == "ABORTED"


def test_concurrent_readers_see_the_old_or_the_new_table(spark: Any, db: str) -> None:
    """A reader running while RTAS writes (each row sleeps 150 ms in its task) sees the whole old table
    or the whole new one, never an empty, missing or half table."""
    t = f"ushas.{db}.live"
    spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (dt) AS "
              f"SELECT id, CAST(id % 3 AS STRING) AS dt FROM range(30)")
    seen: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(spark.table(t).count())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        spark.sql(f"CREATE OR REPLACE TABLE {t} USING parquet PARTITIONED BY (dt) AS "
                  f"SELECT /*+ REPARTITION(4) */ id, CAST(id % 4 AS STRING) AS dt, "
                  f"reflect('java.lang.Thread', 'sleep', CAST(150 AS BIGINT)) AS pause FROM range(100, 120)")
    finally:
        done.set()
        reader.join(timeout=120)
    assert not errors, errors
    assert seen and set(seen) <= {30, 20}, sorted(set(seen))
    assert spark.table(t).count() == 20


def test_replace_without_a_query(spark: Any, db: str, ms: Any) -> None:
    """CREATE OR REPLACE / REPLACE TABLE without AS SELECT: staged, committed with no write."""
    t = f"ushas.{db}.p"
    spark.sql(f"CREATE TABLE {t} USING parquet AS SELECT 1 AS one")
    spark.sql(f"CREATE OR REPLACE TABLE {t} (z INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    assert spark.table(t).columns == ["z", "dt"] and spark.table(t).count() == 0
    spark.sql(f"REPLACE TABLE {t} (y STRING) USING orc")
    assert spark.table(t).columns == ["y"] and ms.get_table(("ushas", db, "p")).format == "orc"
    with pytest.raises(Exception) as missing:
        spark.sql(f"REPLACE TABLE ushas.{db}.nope (y STRING) USING orc")
    assert missing.value.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND",  # type: ignore[attr-defined]
                                            "CANNOT_REPLACE_MISSING_TABLE")
    assert staged_entries(ms) == []
