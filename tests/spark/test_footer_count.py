"""``count(*)`` of a few parquet files answered from their footers (io.ushas.spark.FooterCount): the
same answer as the scan, no Spark job, and only for the query shapes where that holds (docs/spark.md,
"Counting rows without a job")."""
from __future__ import annotations

from typing import Any

import pytest

CONF = "spark.ushas.read.countFromFooters.maxFiles"


def footers(spark: Any, sql: str) -> bool:
    """Whether the query was answered from the footers (its optimized plan is a local relation)."""
    return "LocalRelation" in spark.sql(sql)._jdf.queryExecution().optimizedPlan().toString()


def scanned(spark: Any, sql: str) -> list[Any]:
    """The query's answer with the rule off: what the scan counts."""
    spark.conf.set(CONF, "0")
    try:
        return [tuple(r) for r in spark.sql(sql).collect()]
    finally:
        spark.conf.unset(CONF)


@pytest.fixture(scope="module")
def counted(spark: Any) -> Any:
    """A table of 110 rows in 4 partitions, written by two INSERTs (two files in each partition), and an
    unpartitioned one."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ushas.fc")
    spark.sql("DROP TABLE IF EXISTS ushas.fc.t")
    spark.sql("DROP TABLE IF EXISTS ushas.fc.flat")
    spark.sql("CREATE TABLE ushas.fc.t (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO ushas.fc.t SELECT id, CAST(id % 4 AS STRING) FROM range(100)")
    spark.sql("INSERT INTO ushas.fc.t SELECT id, CAST(id % 4 AS STRING) FROM range(10)")
    spark.sql("CREATE TABLE ushas.fc.flat (id BIGINT) USING parquet")
    spark.sql("INSERT INTO ushas.fc.flat SELECT id FROM range(7)")
    yield "ushas.fc.t"
    spark.sql("DROP NAMESPACE IF EXISTS ushas.fc CASCADE")


@pytest.mark.parametrize("query, expected, from_footers", [
    ("SELECT count(*) FROM ushas.fc.t WHERE p = '1'", [(28,)], True),
    ("SELECT count(*), count(1) AS n FROM ushas.fc.t", [(110, 110)], True),
    ("SELECT count(*) FROM ushas.fc.t WHERE P IN ('1', '2') AND p IS NOT NULL", [(55,)], True),
    ("SELECT count(*) FROM ushas.fc.t WHERE p = 'none'", [(0,)], True),
    ("SELECT count(*) FROM ushas.fc.flat", [(7,)], True),
    ("SELECT count(*) FROM (SELECT p FROM ushas.fc.t WHERE p > '1') s", [(54,)], True),
    # not a plain count of the files' rows: the scan runs
    ("SELECT count(*) FROM ushas.fc.t WHERE id > 50", [(49,)], False),
    ("SELECT count(*) FROM ushas.fc.t WHERE p = '1' OR id = 0", [(30,)], False),
    ("SELECT count(id) FROM ushas.fc.t", [(110,)], False),
    ("SELECT count(DISTINCT id) FROM ushas.fc.t", [(100,)], False),
    ("SELECT count(*) FILTER (WHERE id < 5) FROM ushas.fc.t", [(10,)], False),
    ("SELECT p, count(*) FROM ushas.fc.t WHERE p = '0' GROUP BY p", [("0", 28)], False),
    ("SELECT count(*) FROM ushas.fc.t WHERE p = '1' AND length(uuid()) = 36", [(28,)], False),
    ("SELECT count(*) FROM ushas.fc.t WHERE p IN (SELECT CAST(id AS STRING) FROM ushas.fc.flat WHERE id = 1)",
     [(28,)], False),
])
def test_footer_count_answers_as_the_scan(spark: Any, counted: str, query: str, expected: list[Any],
                                          from_footers: bool) -> None:
    assert [tuple(r) for r in spark.sql(query).collect()] == expected
    assert footers(spark, query) is from_footers
    if from_footers:
        assert scanned(spark, query) == expected


def test_footer_count_follows_writes_versions_and_its_limit(spark: Any, counted: str) -> None:
    q = "SELECT count(*) FROM ushas.fc.t WHERE p = '3'"
    assert spark.sql(q).first()[0] == 27
    version = spark.sql("SELECT max(version) AS v FROM ushas.fc.t.history").first().v
    spark.sql("INSERT INTO ushas.fc.t VALUES (1003, '3')")  # a third file in p = '3'
    assert spark.sql(q).first()[0] == 28  # nothing cached: every query asks the catalog
    old = f"SELECT count(*) FROM ushas.fc.t VERSION AS OF {version} WHERE p = '3'"
    assert footers(spark, old) and spark.sql(old).first()[0] == 27  # time travel counts that version's files
    spark.sql("INSERT OVERWRITE ushas.fc.t PARTITION (p = '3') VALUES (1)")
    assert spark.sql(q).first()[0] == 1
    spark.conf.set(CONF, "2")  # more files than the limit: the scan runs
    try:
        assert not footers(spark, "SELECT count(*) FROM ushas.fc.t") and footers(spark, q)
        assert spark.sql("SELECT count(*) FROM ushas.fc.t").first()[0] == 84
        spark.conf.set(CONF, "many")
        with pytest.raises(Exception, match="countFromFooters.maxFiles: expected a number of files, got 'many'"):
            spark.sql(q).collect()
    finally:
        spark.conf.unset(CONF)


def test_unreadable_footer_leaves_the_scan_to_report_it(spark: Any, counted: str, tmp_path: Any) -> None:
    """A file the catalog lists that is not parquet: the rule steps aside and the scan fails as Spark does."""
    spark.sql("CREATE TABLE ushas.fc.broken (id BIGINT) USING parquet")
    spark.sql("INSERT INTO ushas.fc.broken VALUES (1)")
    (path,) = [r[0] for r in spark.sql("SELECT input_file_name() FROM ushas.fc.broken").collect()]
    with open(path.removeprefix("file:"), "wb") as f:
        f.write(b"not parquet at all")
    assert not footers(spark, "SELECT count(*) FROM ushas.fc.broken")
    with pytest.raises(Exception, match="(?i)parquet|not a Parquet file|magic"):
        spark.sql("SELECT count(*) FROM ushas.fc.broken").collect()
