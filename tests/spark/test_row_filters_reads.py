"""Reads of a table under a row filter and column masks: every query shape, count, view, cache, metadata
column and partition surface shows bob his EU rows with masked ``ssn`` only; carol (exempt) sees all.
Shared set-up: :mod:`tests.spark.row_filters_support`."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.spark.row_filters_support import people_with_policies, BOB, ALL, RAW_SSNS, rows, denied


@pytest.fixture(scope="module")
def rm(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Any]:
    yield from people_with_policies(spark, spark_dirs)


def test_plain_select_and_dataframe(spark: Any, rm: Any) -> None:
    assert rows(spark.sql(f"SELECT * FROM {rm.bob}.db.people")) == BOB
    assert rows(spark.table(f"{rm.bob}.db.people")) == BOB
    assert rows(spark.read.table(f"{rm.bob}.db.people")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {rm.carol}.db.people")) == ALL  # the exempt role
    assert rows(spark.sql(f"SELECT * FROM {rm.adm}.db.people")) == BOB  # owning is not being exempt
    # a filter of the user's own on the masked column sees the masked value
    assert spark.sql(f"SELECT id FROM {rm.bob}.db.people WHERE ssn = '111-22-3333'").collect() == []
    assert [r.id for r in spark.sql(f"SELECT id FROM {rm.bob}.db.people WHERE ssn = '***-3333'").collect()] == [1]
    # the partition column of a filtered-out partition reads nothing either
    assert spark.sql(f"SELECT * FROM {rm.bob}.db.people WHERE region = 'US'").collect() == []
    assert spark.sql(f"SELECT count(*) AS n FROM {rm.bob}.db.people").collect()[0].n == 2
    # a count answered from the files' footers (FooterCount, no job) counts the partitions the filter lets
    # through only, and the exempt role's count covers all
    for catalog, where, n in ((rm.bob, "", 2), (rm.bob, "WHERE region = 'US'", 0), (rm.carol, "", 4)):
        sql = f"SELECT count(*) AS n FROM {catalog}.db.people {where}"
        assert "LocalRelation" in spark.sql(sql)._jdf.queryExecution().optimizedPlan().toString(), sql
        assert spark.sql(sql).first().n == n, sql
    assert {r.region for r in spark.sql(f"SELECT DISTINCT region FROM {rm.bob}.db.people").collect()} == {"EU"}


#: (form, how bob counts ``{t}`` (his catalog's filtered table; ``{bob}``: his catalog), the rows he may see):
#: every way to ask for a count, with partition filters that would select the hidden partitions
COUNTS: list[tuple[str, Any, int]] = [
    ("all", "SELECT count(*) FROM {t}", 2),
    ("a hidden partition", "SELECT count(*) FROM {t} WHERE region = 'US'", 0),
    ("hidden and seen partitions", "SELECT count(*), count(1) FROM {t} WHERE region IN ('EU', 'US', 'APAC')", 2),
    ("every partition but the seen one", "SELECT count(*) FROM {t} WHERE region <> 'EU'", 0),
    ("a derived table", "SELECT count(*) FROM (SELECT region FROM {t} WHERE region > 'A') s", 2),
    ("a CTE", "WITH c AS (SELECT * FROM {t} WHERE region = 'APAC') SELECT count(*) FROM c", 0),
    ("a scalar subquery", "SELECT (SELECT count(*) FROM {t} WHERE region = 'US')", 0),
    ("a union", "SELECT count(*) FROM (SELECT * FROM {t} UNION ALL SELECT * FROM {t})", 4),
    ("a view", "SELECT count(*) FROM {bob}.db.fc_all", 2),
    ("a view of a hidden partition", "SELECT count(*) FROM {bob}.db.fc_us", 0),
    ("a view, filtered to a hidden partition", "SELECT count(*) FROM {bob}.db.fc_all WHERE region = 'US'", 0),
    ("a temporary view", "SELECT count(*) FROM fc_tv WHERE region IN ('US', 'APAC')", 0),
    ("DataFrame count", lambda df: df.count(), 2),
    ("DataFrame count of a hidden partition", lambda df: df.where("region = 'US'").count(), 0),
    ("DataFrame groupBy().count()", lambda df: df.groupBy().count().first()[0], 2),
    ("as of the current version", "SELECT count(*) FROM {t} VERSION AS OF {version} WHERE region <> 'EU'", 0),
]


def test_a_count_from_footers_never_counts_hidden_rows(spark: Any, rm: Any) -> None:
    """``count(*)`` answered from the files' footers (io.ushas.spark.FooterCount) counts the files of the partitions
    the row filter lets through: no form of a count — partition filters naming hidden partitions, views, temporary
    views, the DataFrame API, subqueries, time travel — gives a filtered user a hidden row's count. The exempt
    user's counts show the hidden rows are there to count, and that most forms are answered from footers."""
    t = f"{rm.bob}.db.people"
    spark.sql(f"CREATE OR REPLACE VIEW {rm.bob}.db.fc_all AS SELECT * FROM {t}")
    spark.sql(f"CREATE OR REPLACE VIEW {rm.bob}.db.fc_us AS SELECT * FROM {t} WHERE region = 'US'")
    spark.table(t).createOrReplaceTempView("fc_tv")
    version = rm.ms.get_table(("main", "db", "people")).version
    answered = 0
    try:
        for form, how, expected in COUNTS:
            if callable(how):
                assert how(spark.table(t)) == expected, form
                continue
            sql = how.format(t=t, bob=rm.bob, version=version)
            got = spark.sql(sql)
            answered += "LocalRelation" in got._jdf.queryExecution().optimizedPlan().toString()
            assert all(n == expected for n in got.first()), (form, sql, got.first())
        assert answered >= 5  # the rule answered (not only the scan): its pruning is what is tested
        carol = f"{rm.carol}.db.people"
        assert spark.sql(f"SELECT count(*) FROM {carol} WHERE region <> 'EU'").first()[0] == 2
        assert spark.table(carol).where("region = 'US'").count() == 1
    finally:
        spark.sql(f"DROP VIEW IF EXISTS {rm.adm}.db.fc_all")
        spark.sql(f"DROP VIEW IF EXISTS {rm.adm}.db.fc_us")
        spark.catalog.dropTempView("fc_tv")


@pytest.mark.parametrize("query", [
    "SELECT * FROM (SELECT * FROM {t}) s",
    "SELECT * FROM {t} WHERE id IN (SELECT id FROM {t})",
    "SELECT * FROM {t} WHERE EXISTS (SELECT 1 FROM {t} x WHERE x.id = {t}.id)",
    "WITH c AS (SELECT * FROM {t}) SELECT * FROM c",
    "SELECT a.id, a.name, b.ssn, b.region FROM {t} a JOIN {t} b ON a.id = b.id",
    "SELECT a.id, a.name, b.ssn, b.region FROM {t} a LEFT JOIN {t} b ON a.id = b.id",
    "SELECT id, name, ssn, region FROM {t} UNION SELECT id, name, ssn, region FROM {t}",
], ids=["derived", "in", "exists", "cte", "self_join", "left_join", "union"])
def test_query_shapes(spark: Any, rm: Any, query: str) -> None:
    assert rows(spark.sql(query.format(t=f"{rm.bob}.db.people"))) == BOB


def test_scalar_subqueries_and_aggregates(spark: Any, rm: Any) -> None:
    t = f"{rm.bob}.db.people"
    (row,) = spark.sql(f"SELECT (SELECT max(id) FROM {t}) AS m, (SELECT collect_set(ssn) FROM {t}) AS s").collect()
    assert row.m == 3 and set(row.s) == {"***-3333", "***-5555"}
    (row,) = spark.sql(f"SELECT count(*) AS n, max(ssn) AS s FROM {t}").collect()
    assert (row.n, row.s) == (2, "***-5555")


def test_join_with_an_unfiltered_table(spark: Any, rm: Any) -> None:
    spark.sql(f"CREATE TABLE IF NOT EXISTS {rm.adm}.db.ids (id INT) USING parquet")
    spark.sql(f"INSERT INTO {rm.adm}.db.ids VALUES (1), (2), (3), (4)")
    got = spark.sql(f"SELECT i.id, p.ssn FROM {rm.bob}.db.ids i LEFT JOIN {rm.bob}.db.people p ON i.id = p.id")
    assert {tuple(r) for r in got.collect()} == {(1, "***-3333"), (2, None), (3, "***-5555"), (4, None)}


def test_views(spark: Any, rm: Any) -> None:
    bob = rm.bob
    spark.sql(f"CREATE OR REPLACE VIEW {bob}.db.v_people AS SELECT * FROM {bob}.db.people")
    assert rows(spark.sql(f"SELECT * FROM {bob}.db.v_people")) == BOB
    spark.sql(f"CREATE OR REPLACE TEMP VIEW tv_people AS SELECT * FROM {bob}.db.people")
    assert rows(spark.sql("SELECT * FROM tv_people")) == BOB
    spark.table(f"{bob}.db.people").createOrReplaceTempView("tv_people_df")
    assert rows(spark.sql("SELECT * FROM tv_people_df")) == BOB
    spark.table(f"{bob}.db.people").createOrReplaceGlobalTempView("gv_people")
    assert rows(spark.sql("SELECT * FROM global_temp.gv_people")) == BOB


def test_file_metadata_columns(spark: Any, rm: Any) -> None:
    t = f"{rm.bob}.db.people"
    got = spark.sql(f"SELECT id, ssn, _metadata.file_path AS path FROM {t}").collect()
    assert {(r.id, r.ssn) for r in got} == {(1, "***-3333"), (3, "***-5555")}
    assert all("region=EU" in r.path for r in got)
    got = spark.sql(f"SELECT id, ssn, input_file_name() AS f FROM {t}").collect()
    assert {(r.id, r.ssn) for r in got} == {(1, "***-3333"), (3, "***-5555")}
    assert all("region=EU" in r.f for r in got)
    got = spark.table(t).select("id", "_metadata.file_name").collect()
    assert {r.id for r in got} == {1, 3}


def test_cached_relations(spark: Any, rm: Any) -> None:
    t = f"{rm.bob}.db.people"
    spark.sql(f"CACHE TABLE {t}")
    try:
        assert rows(spark.sql(f"SELECT * FROM {t}")) == BOB
        assert rows(spark.table(t)) == BOB
    finally:
        spark.sql(f"UNCACHE TABLE IF EXISTS {t}")
    spark.sql(f"CACHE TABLE c_people AS SELECT * FROM {t}")
    try:
        assert rows(spark.sql("SELECT * FROM c_people")) == BOB
    finally:
        spark.sql("UNCACHE TABLE IF EXISTS c_people")
    carol = spark.table(f"{rm.carol}.db.people").cache()  # the exempt user's cached data is not bob's
    try:
        assert rows(carol) == ALL
        df = spark.table(t).cache()
        assert rows(df) == BOB and rows(spark.table(t)) == BOB
        df.unpersist()
    finally:
        carol.unpersist()


def test_metadata_tables_are_metadata(spark: Any, rm: Any) -> None:
    files = spark.sql(f"SELECT * FROM {rm.carol}.db.people.files").collect()
    assert files  # metadata of the table (paths, sizes), no row data
    assert not any(s in str(tuple(r)) for r in files for s in RAW_SSNS)


@pytest.mark.parametrize("query", [
    "SHOW PARTITIONS {t}",
    "SHOW PARTITIONS {t} PARTITION (region = 'US')",
    "SELECT * FROM {t}.partitions",
    "SELECT * FROM {t}.files",
    "DESCRIBE TABLE EXTENDED {t} PARTITION (region = 'US')",
    "SHOW TABLE EXTENDED IN {db} LIKE 'people' PARTITION (region = 'US')",
])
def test_partitions_are_not_shown_through_the_filter(spark: Any, rm: Any, query: str) -> None:
    """Partition values, their counts and file paths are row data (the filter is on ``region``): bob is
    refused them on every Spark surface, the exempt member sees them; ``system.partitions`` leaves the
    table out for bob."""
    version = rm.ms.get_table(("main", "db", "people")).version
    text = denied(lambda: spark.sql(query.format(t=f"{rm.bob}.db.people", db=f"{rm.bob}.db")).collect())
    assert "[USHAS_RowPolicy]" in text and "user bob" in text and "APAC" not in text, text
    assert "US" in str(spark.sql(query.format(t=f"{rm.carol}.db.people", db=f"{rm.carol}.db")).collect())
    assert rm.ms.get_table(("main", "db", "people")).version == version


def test_system_partitions_leave_filtered_tables_out(spark: Any, rm: Any) -> None:
    def regions(catalog: str) -> set[str]:
        return {r.spec["region"] for r in spark.sql(f"SELECT * FROM {catalog}.system.partitions "
                                                    f"WHERE table = 'people'").collect()}

    for user in ("user:bob", "user:carol"):
        rm.ms.grant("SELECT", "main", user)  # the catalog's system tables
    assert regions(rm.carol) == {"EU", "US", "APAC"}
    assert regions(rm.bob) == set()


def test_no_raw_value_reaches_bob(spark: Any, rm: Any) -> None:
    t = f"{rm.bob}.db.people"
    queries = [f"SELECT * FROM {t}", f"SELECT to_json(struct(*)) FROM {t}", f"SELECT ssn FROM {t} WHERE id > 0",
               f"SELECT collect_list(ssn) FROM {t}", f"SELECT * FROM {t} a CROSS JOIN {t} b",
               f"SELECT * FROM {t} TABLESAMPLE (100 PERCENT)",
               f"SELECT id, ssn FROM {t} WHERE region IN ('US', 'APAC') OR id IN (2, 4)"]
    for q in queries:
        text = str(spark.sql(q).collect())
        assert not any(s in text for s in RAW_SSNS), q
        assert "ben" not in text and "dan" not in text, q


def test_current_user_and_is_member(spark: Any, rm: Any) -> None:
    adm = rm.adm
    spark.sql(f"CREATE TABLE {adm}.db.owned (id INT, owner STRING, note STRING) USING parquet")
    spark.sql(f"INSERT INTO {adm}.db.owned VALUES (1, 'bob', 'b1'), (2, 'carol', 'c1'), (3, 'bob', 'b2')")
    spark.sql(f"CALL {adm}.system.set_row_filter('db.owned', "
              f"\"owner = current_user() OR is_member('role:auditors')\")").collect()
    spark.sql(f"CALL {adm}.system.set_column_mask('db.owned', 'note', "
              f"\"CASE WHEN is_member('auditors') THEN note ELSE upper(note) END\")").collect()
    got = {tuple(r) for r in spark.sql(f"SELECT * FROM {rm.bob}.db.owned").collect()}
    assert got == {(1, "bob", "B1"), (3, "bob", "B2")}
    got = {tuple(r) for r in spark.sql(f"SELECT * FROM {rm.carol}.db.owned").collect()}
    assert got == {(1, "bob", "b1"), (2, "carol", "c1"), (3, "bob", "b2")}  # is_member: carol is an auditor
    # a role change applies at the next query (no cached policy)
    rm.ms.grant_role("auditors", "user:bob")
    try:
        assert len(spark.sql(f"SELECT * FROM {rm.bob}.db.owned").collect()) == 3
    finally:
        rm.ms.revoke_role("auditors", "user:bob")
    assert len(spark.sql(f"SELECT * FROM {rm.bob}.db.owned").collect()) == 2
    # and losing the exempt role too: carol's cached table (read raw) is not served raw any more
    assert rows(spark.table(f"{rm.carol}.db.people")) == ALL
    rm.ms.revoke_role("auditors", "user:carol")
    try:
        assert rows(spark.table(f"{rm.carol}.db.people")) == BOB
    finally:
        rm.ms.grant_role("auditors", "user:carol")
    assert rows(spark.table(f"{rm.carol}.db.people")) == ALL
