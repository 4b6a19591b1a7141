"""Reads as of a version through Spark (docs/time-travel.md): ``VERSION AS OF n | 'tag'``, ``TIMESTAMP
AS OF``, the DataFrame options, across overwrites, a schema change, a restore and a purge; tags."""
from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest


def rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def condition(spark: Any, sql: str) -> tuple[str, str]:
    with pytest.raises(Exception) as caught:
        spark.sql(sql).collect()
    get = getattr(caught.value, "getCondition", None)
    assert get is not None, f"{sql}: not a Spark error: {caught.value!r}"
    return str(get()), str(caught.value)


def call(spark: Any, text: str) -> list[Any]:
    return spark.sql(f"CALL ushas.system.{text}").collect()


@pytest.mark.parametrize("partitioned", [True, False])
def test_every_version_reads_its_rows_until_purge(spark: Any, db: str, partitioned: bool) -> None:
    t = f"ushas.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT, dt STRING) USING parquet" + (" PARTITIONED BY (dt)" if partitioned else ""))
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y')")                 # 2
    if partitioned:
        spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'x') VALUES (10)")  # 3
    else:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (10, 'x'), (2, 'y')")       # 3
    mark = spark.sql("SELECT current_timestamp() AS now").first().now
    time.sleep(0.05)
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (b STRING)")                   # 4
    spark.sql(f"INSERT INTO {t} (a, b, dt) VALUES (3, 'new', 'y')")          # 5
    v2, v3 = [(1, "x"), (2, "y")], [(2, "y"), (10, "x")]
    assert rows(spark, f"SELECT a, dt FROM {t} VERSION AS OF 2") == v2
    assert rows(spark, f"SELECT * FROM {t} VERSION AS OF 3") == v3  # the schema of then: no column b
    assert rows(spark, f"SELECT * FROM {t} VERSION AS OF 1") == []
    assert rows(spark, f"SELECT a, dt FROM {t} TIMESTAMP AS OF '{mark}'") == v3
    assert rows(spark, f"SELECT a FROM {t} VERSION AS OF 2 WHERE dt = 'x'") == [(1,)]
    df = spark.read.option("versionAsOf", 2).table(t)
    assert sorted(tuple(r) for r in df.select("a", "dt").collect()) == v2
    assert sorted((r.a, r.dt) for r in spark.read.option("timestampAsOf", str(mark)).table(t).collect()) == v3
    now = rows(spark, f"SELECT a, b FROM {t}")
    assert now == [(2, None), (3, "new"), (10, None)]
    assert rows(spark, f"SELECT a, b FROM {t} VERSION AS OF 5") == now
    # a restore is a version like another; the versions before it still read as they were
    call(spark, f"restore_table('{db}.t', 2)")                              # 6
    assert rows(spark, f"SELECT a, dt FROM {t}") == v2
    assert rows(spark, f"SELECT a, dt FROM {t} VERSION AS OF 3") == v3
    # a tag names a version; purge keeps its files, not the others'
    (tag,) = call(spark, f"create_tag('{db}.t', 'before_fix', 3)")
    assert (tag.tag, tag.version) == ("before_fix", 3)
    assert rows(spark, f"SELECT a, dt FROM {t} VERSION AS OF 'before_fix'") == v3
    call(spark, f"purge(table => '{db}.t')")
    assert rows(spark, f"SELECT a, dt FROM {t} VERSION AS OF 'before_fix'") == v3
    assert rows(spark, f"SELECT a, dt FROM {t}") == v2  # the restored files were never purge's
    error, message = condition(spark, f"SELECT * FROM {t} VERSION AS OF 5")
    assert error == "USHAS_NoSuchVersion" and "no longer readable: the purge of" in message, message
    history = {r.version: (r.readable, r.tags) for r in spark.sql(f"SELECT * FROM {t}.history").collect()}
    assert history[3] == (True, ["before_fix"]) and history[5] == (False, []) and history[6] == (True, [])
    call(spark, f"drop_tag('{db}.t', 'before_fix')")
    assert condition(spark, f"SELECT * FROM {t} VERSION AS OF 'before_fix'")[0] == "USHAS_NoSuchVersion"


#: (query, Spark's error class)
BAD_READS = [
    ("SELECT * FROM {t} VERSION AS OF 99", "USHAS_NoSuchVersion"),
    ("SELECT * FROM {t} VERSION AS OF 'no_such_tag'", "USHAS_NoSuchVersion"),
    ("SELECT * FROM {t} TIMESTAMP AS OF '2000-01-01 00:00:00'", "USHAS_NoSuchVersion"),
    ("SELECT * FROM ushas.{db}.missing VERSION AS OF 1", "TABLE_OR_VIEW_NOT_FOUND"),
    ("CALL ushas.system.create_tag('{db}.t', '7', 1)", "USHAS_InvalidArgument"),
    ("CALL ushas.system.create_tag('{db}.t', 'v', 99)", "USHAS_NoSuchVersion"),
    ("CALL ushas.system.drop_tag('{db}.t', 'never')", "USHAS_NotFound"),
    ("INSERT INTO {t} VERSION AS OF 1 VALUES (1)", "PARSE_SYNTAX_ERROR"),
    ("ALTER TABLE {t} CREATE TAG x", "PARSE_SYNTAX_ERROR"),  # Iceberg's SQL extension, not Spark's
]


def test_bad_reads_as_of_get_clear_errors(spark: Any, db: str) -> None:
    t = f"ushas.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT) USING parquet")
    got = {q: condition(spark, q.format(t=t, db=db))[0] for q, _ in BAD_READS}
    assert got == dict(BAD_READS)
    call(spark, f"create_tag('{db}.t', 'v1')")
    assert condition(spark, f"CALL ushas.system.create_tag('{db}.t', 'v1')")[0] == "USHAS_AlreadyExists"


def test_time_travel_reads_nothing_written_after(spark: Any, db: str) -> None:
    """A version's read is fixed: writes after it (another partition, an append) never show in it."""
    t = f"ushas.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT, dt DATE) USING orc PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, DATE '2024-01-01')")
    df = spark.sql(f"SELECT a FROM {t} VERSION AS OF 2")
    spark.sql(f"INSERT INTO {t} VALUES (2, DATE '2024-01-01'), (3, DATE '2024-01-02')")
    assert sorted(r.a for r in df.collect()) == [1]
    assert sorted(r.a for r in spark.sql(f"SELECT a FROM {t}").collect()) == [1, 2, 3]
    assert rows(spark, f"SELECT count(*) FROM {t} VERSION AS OF 2 WHERE dt >= DATE '2024-01-02'") == [(0,)]
    assert dt.date(2024, 1, 1) in {r.dt for r in spark.sql(f"SELECT dt FROM {t} VERSION AS OF 2").collect()}
