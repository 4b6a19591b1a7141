"""Row filters and column masks through Spark (docs/governance.md, "Row filters and column masks"): the
bypass suite. Three catalog instances of the shared session on one fresh project, authorization on:
``adm`` (user admin, OWN on the project, sets the policies), ``bob`` (SELECT and CREATE on the database,
subject to them) and ``carol`` (member of ``role:auditors``, the exempt role). Whatever the query shape,
bob never sees a row of another region nor an unmasked ``ssn``; carol sees everything."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from ushas_catalog.metastore import Metastore
from spark_processes import conf_args, run_spark, spark_bin
from user_catalogs import user_catalog

ROWS = [(1, "ann", "111-22-3333", "EU", "bob"), (2, "ben", "222-33-4444", "US", "carol"),
        (3, "cat", "333-44-5555", "EU", "carol"), (4, "dan", "444-55-6666", "APAC", "bob")]
#: what bob reads: EU rows only, ssn masked to its last four digits
BOB = {(1, "ann", "***-3333", "EU"), (3, "cat", "***-5555", "EU")}
ALL = {(i, n, s, r) for i, n, s, r, _ in ROWS}
RAW_SSNS = {s for _, _, s, _, _ in ROWS}
HIDDEN = {2, 4}


@pytest.fixture(scope="module")
def rm(spark: Any, spark_dirs: dict[str, Path]) -> Any:
    project = "rm_" + uuid.uuid4().hex[:8]
    uri = f"sqlite:///{spark_dirs['store']}"
    admin = Metastore.open(uri, project=project)
    admin.grant("OWN", "project", "user:admin")
    names = {}
    for role, user in (("adm", "admin"), ("bob", "bob"), ("carol", "carol")):
        names[role] = user_catalog(spark, f"r{role}", uri=uri, project=project,
                                   warehouse=str(spark_dirs["warehouse"]), user=user)
    adm = names["adm"]
    spark.sql(f"CREATE NAMESPACE {adm}.db")
    spark.sql(f"CREATE TABLE {adm}.db.people (id INT, name STRING, ssn STRING, region STRING, owner STRING) "
              f"USING parquet PARTITIONED BY (region)")
    spark.createDataFrame(ROWS, "id INT, name STRING, ssn STRING, region STRING, owner STRING") \
        .select("id", "name", "ssn", "owner", "region").writeTo(f"{adm}.db.people").append()
    admin.create_role("auditors")
    admin.grant_role("auditors", "user:carol")
    for user in ("bob", "carol"):
        admin.grant("SELECT", ("main", "db"), f"user:{user}")
        admin.grant("CREATE", ("main", "db"), f"user:{user}")
    spark.sql(f"CALL {adm}.system.set_row_filter('db.people', \"region = 'EU'\", 'role:auditors')").collect()
    spark.sql(f"CALL {adm}.system.set_column_mask('db.people', 'ssn', \"concat('***-', substr(ssn, -4, 4))\", "
              f"'role:auditors')").collect()
    yield type("RM", (), {"adm": adm, "bob": names["bob"], "carol": names["carol"], "ms": admin, "project": project})
    admin.close()


def rows(df: Any, cols: str = "id, name, ssn, region") -> set[tuple[Any, ...]]:
    return {tuple(r) for r in df.selectExpr(*[c.strip() for c in cols.split(",")]).collect()}


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


def files_under(root: str) -> dict[str, tuple[int, int]]:
    """Every file and directory under local directory ``root``, with its size and modification time (nanoseconds)
    for a file."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, 0) for p in Path(root).rglob("*")}


def insufficient(fn: Callable[[], Any]) -> str:
    """The message of ``fn()``'s refusal, which must be Spark's INSUFFICIENT_PERMISSIONS, SQLSTATE 42501."""
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        fn()
    error = info.value
    assert (error.getCondition(), error.getSqlState()) == ("INSUFFICIENT_PERMISSIONS", "42501"), str(error)
    return str(error)


def denied(fn: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as info:
        fn()
    return str(info.value)


def test_bob_cannot_drop_or_change_them(spark: Any, rm: Any) -> None:
    text = denied(lambda: spark.sql(f"CALL {rm.bob}.system.drop_row_filter('db.people')").collect())
    assert "[INSUFFICIENT_PERMISSIONS]" in text and "MANAGE" in text, text
    text = denied(lambda: spark.sql(f"CALL {rm.bob}.system.set_column_mask('db.people', 'ssn', 'ssn')").collect())
    assert "[INSUFFICIENT_PERMISSIONS]" in text, text
    assert rows(spark.table(f"{rm.bob}.db.people")) == BOB


def test_bad_policies_are_refused(spark: Any, rm: Any) -> None:
    adm = rm.adm
    before = rm.ms.get_table(("main", "db", "people")).version
    cases = {
        f"CALL {adm}.system.set_row_filter('db.people', 'nope > 1')": "UNRESOLVED_COLUMN",
        f"CALL {adm}.system.set_row_filter('db.people', 'id >')": "PARSE_SYNTAX_ERROR",
        f"CALL {adm}.system.set_row_filter('db.people', 'id + 1')": "not BOOLEAN",
        f"CALL {adm}.system.set_row_filter('db.people', 'no_such_fn(id)')": "UNRESOLVED_ROUTINE",
        f"CALL {adm}.system.set_column_mask('db.people', 'nope', 'id')": "column 'nope' does not exist",
        f"CALL {adm}.system.set_column_mask('db.people', 'id', 'array(1)')": "cannot be cast",
        f"CALL {adm}.system.set_row_filter('db.people', 'id > 1', 'admins')": "is not role:NAME",
        f"CALL {adm}.system.set_row_filter('db.people', \"is_member(name)\")": "is_member takes one string",
        f"CALL {adm}.system.drop_column_mask('db.people', 'name')": "has no mask",
    }
    for sql, message in cases.items():
        text = denied(lambda: spark.sql(sql).collect())
        assert message in text, (sql, text)
    assert rm.ms.get_table(("main", "db", "people")).version == before  # nothing written


def test_describe_shows_them(spark: Any, rm: Any) -> None:
    described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {rm.bob}.db.people").collect()}
    assert described.get("Row Filter") == "region = 'EU' (exempt: role:auditors)"
    assert "ssn" in described.get("Column Masks", "")


def test_history_and_changes_record_them(spark: Any, rm: Any) -> None:
    ops = [r.operation for r in spark.sql(f"SELECT operation FROM {rm.adm}.db.people.history").collect()]
    assert "SET ROW FILTER" in ops and "SET COLUMN MASK" in ops
    audit = spark.sql(f"SELECT operation, user, object, principal, detail FROM {rm.adm}.system.audit "
                      f"WHERE change = 'ALTERED' AND object = 'main.db.people'").collect()
    assert {(r.operation, r.user, r.principal) for r in audit} >= {("SET ROW FILTER", "admin", "role:auditors"),
                                                                  ("SET COLUMN MASK", "admin", "role:auditors")}
    assert any("region = 'EU'" in r.detail for r in audit)


@pytest.mark.slow
def test_a_session_without_the_extension_is_refused(rm: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    """Fail closed: spark-sql started without io.ushas.spark.UshasExtensions reads tables without a policy
    (for carol, exempt) but refuses bob's read of the filtered table instead of reading it unfiltered."""
    extra = {"spark.sql.extensions": "com.example.NotThere"}
    for cat, user in (("bob", "bob"), ("carol", "carol")):
        extra.update({f"spark.sql.catalog.{cat}": "io.ushas.spark.UshasCatalog",
                      f"spark.sql.catalog.{cat}.uri": f"sqlite:///{spark_dirs['store']}",
                      f"spark.sql.catalog.{cat}.project": rm.project, f"spark.sql.catalog.{cat}.catalog": "main",
                      f"spark.sql.catalog.{cat}.user": user})
    args = conf_args(spark_dirs["store"], spark_dirs["warehouse"], **extra)
    sql = "SELECT count(*) AS carol_rows FROM carol.db.people; SELECT * FROM bob.db.people;"
    done = run_spark([spark_bin("spark-sql"), *args, "-e", sql], tmp_path, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "[USHAS_RowPolicy]" in out and "spark.sql.extensions=io.ushas.spark.UshasExtensions" in out, out[-3000:]
    assert "4" in done.stdout  # carol's count ran: tables without a policy for the reader read as ever
    assert not any(s in done.stdout for s in RAW_SSNS)


def test_streaming_reads_apply_the_filter_and_masks(spark: Any, rm: Any, tmp_path: Path) -> None:
    """``readStream.table`` of the policy table: bob's stream holds his filtered, masked rows (an option
    naming the rule's mark does not turn the policy off); carol's, the exempt role's, all of them."""
    def stream(catalog: str, name: str, **options: str) -> set[tuple[Any, ...]]:
        reader = spark.readStream
        for k, v in options.items():
            reader = reader.option(k, v)
        q = (reader.table(f"{catalog}.db.people").select("id", "name", "ssn", "region").writeStream
             .format("parquet").option("path", str(tmp_path / name / "out"))
             .option("checkpointLocation", str(tmp_path / name / "ck")).trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        finally:
            q.stop()
        assert q.exception() is None, q.exception()
        return {tuple(r) for r in spark.read.parquet(str(tmp_path / name / "out")).collect()}

    assert stream(rm.bob, "bob") == BOB
    assert stream(rm.bob, "forged", **{"ushas.policyApplied": "true"}) == BOB
    assert stream(rm.carol, "carol") == ALL


@pytest.mark.slow
def test_compaction_needs_modify_and_is_refused_under_a_row_filter(spark: Any, rm: Any) -> None:
    """``CALL system.compact`` rewrites rows, hidden ones too: MODIFY, and never for a user whose reads go
    through the table's row filter (as an overwrite); nothing is committed either way."""
    spark.sql(f"CREATE TABLE {rm.adm}.db.c (id INT, region STRING) USING parquet PARTITIONED BY (region)")
    for i in range(2):
        spark.sql(f"INSERT INTO {rm.adm}.db.c VALUES ({i}, 'EU'), ({i + 10}, 'US')")
    spark.sql(f"CALL {rm.adm}.system.set_row_filter('db.c', \"region = 'EU'\", 'role:auditors')").collect()
    version = rm.ms.get_table(("main", "db", "c")).version
    call = f"CALL {rm.bob}.system.compact(table => 'db.c')"
    assert "INSUFFICIENT_PERMISSIONS" in denied(lambda: spark.sql(call).collect())
    rm.ms.grant("MODIFY", ("main", "db", "c"), "user:bob")
    text = denied(lambda: spark.sql(call).collect())
    assert "[USHAS_RowPolicy]" in text and "COMPACT" in text, text
    assert rm.ms.get_table(("main", "db", "c")).version == version
    rm.ms.grant("MODIFY", ("main", "db", "c"), "user:carol")
    [row] = spark.sql(f"CALL {rm.carol}.system.compact(table => 'db.c', where => \"region = 'US'\")").collect()
    assert (row.partitions, row.files_removed, row.files_added) == (1, 2, 1)  # carol: the exempt role
    assert {r.id for r in spark.table(f"{rm.carol}.db.c").collect()} == {0, 1, 10, 11}


@pytest.mark.slow
def test_a_session_without_the_extension_cannot_stream_a_policy_table(rm: Any, spark_dirs: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    """Fail closed for streams too: a PySpark job without io.ushas.spark.UshasExtensions starting bob's stream
    of the filtered table is refused when the query starts; nothing of the table is written out."""
    extra = {"spark.sql.extensions": "com.example.NotThere", "spark.sql.catalog.bob": "io.ushas.spark.UshasCatalog",
             "spark.sql.catalog.bob.uri": f"sqlite:///{spark_dirs['store']}", "spark.sql.catalog.bob.project": rm.project,
             "spark.sql.catalog.bob.catalog": "main", "spark.sql.catalog.bob.user": "bob"}
    script = tmp_path / "stream.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        f"q = (spark.readStream.table('bob.db.people').writeStream.format('parquet').option('path', '{tmp_path}/out')"
        f".option('checkpointLocation', '{tmp_path}/ck').trigger(availableNow=True).start())\n"
        "q.awaitTermination(120)\n")
    done = run_spark([spark_bin("spark-submit"), *conf_args(spark_dirs["store"], spark_dirs["warehouse"], **extra),
                      str(script)], tmp_path, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-3000:]
    assert "[USHAS_RowPolicy]" in out and "spark.sql.extensions=io.ushas.spark.UshasExtensions" in out, out[-3000:]
    assert not list((tmp_path / "out").glob("*.parquet"))


def test_writes_append_but_never_remove_hidden_rows(spark: Any, rm: Any) -> None:
    """A user under a row filter may append (with MODIFY), as in Unity Catalog; writes that remove rows
    (INSERT OVERWRITE, dynamic overwrite, TRUNCATE, DROP PARTITION) are refused to it and write nothing;
    the exempt principal's members overwrite as anyone."""
    adm, bob, carol = rm.adm, rm.bob, rm.carol
    spark.sql(f"CREATE TABLE {adm}.db.w (id INT, region STRING) USING parquet PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {adm}.db.w VALUES (1, 'EU'), (2, 'US')")
    spark.sql(f"CALL {adm}.system.set_row_filter('db.w', \"region = 'EU'\", 'role:auditors')").collect()
    for user in ("user:bob", "user:carol"):
        rm.ms.grant("MODIFY", ("main", "db", "w"), user)
    spark.sql(f"INSERT INTO {bob}.db.w VALUES (3, 'EU'), (4, 'US')")
    spark.createDataFrame([(5, "EU")], "id INT, region STRING").writeTo(f"{bob}.db.w").append()
    assert {r.id for r in spark.table(f"{bob}.db.w").collect()} == {1, 3, 5}
    version = rm.ms.get_table(("main", "db", "w")).version
    removals = [
        lambda: spark.sql(f"INSERT OVERWRITE {bob}.db.w VALUES (9, 'EU')"),
        lambda: spark.sql(f"INSERT OVERWRITE {bob}.db.w PARTITION (region = 'EU') VALUES (9)"),
        lambda: spark.createDataFrame([(9, "EU")], "id INT, region STRING").writeTo(f"{bob}.db.w")
        .overwritePartitions(),
        lambda: spark.sql(f"TRUNCATE TABLE {bob}.db.w"),
        lambda: spark.sql(f"ALTER TABLE {bob}.db.w DROP PARTITION (region = 'US')"),
        lambda: spark.sql(f"CALL {bob}.system.restore_table('db.w', 1)").collect(),
        # row-level statements (docs/row-level.md): also a metadata-only DELETE of a whole partition
        lambda: spark.sql(f"DELETE FROM {bob}.db.w WHERE id = 1"),
        lambda: spark.sql(f"DELETE FROM {bob}.db.w WHERE region = 'US'"),
        lambda: spark.sql(f"DELETE FROM {bob}.db.w"),
        lambda: spark.sql(f"UPDATE {bob}.db.w SET id = id + 100"),
        lambda: spark.sql(f"MERGE INTO {bob}.db.w t USING (SELECT 2 AS id) s ON t.id = s.id "
                          f"WHEN MATCHED THEN DELETE"),
        # an upsert with a small source: the plan the catalog's MERGE rule rewrites (MergeBroadcastJoin)
        lambda: spark.sql(f"MERGE INTO {bob}.db.w t USING (SELECT * FROM VALUES (2, 'US'), (7, 'US') AS s(id, region)) s "
                          f"ON t.id = s.id AND t.region = 'US' WHEN MATCHED THEN UPDATE SET id = 20 "
                          f"WHEN NOT MATCHED THEN INSERT *"),
    ]
    for run in removals:
        text = denied(run)
        assert "[USHAS_RowPolicy]" in text and "user bob" in text, text
    assert rm.ms.get_table(("main", "db", "w")).version == version  # nothing written
    assert {r.id for r in spark.table(f"{carol}.db.w").collect()} == {1, 2, 3, 4, 5}
    spark.sql(f"INSERT OVERWRITE {carol}.db.w PARTITION (region = 'US') VALUES (6)")  # exempt
    assert {r.id for r in spark.table(f"{carol}.db.w").collect()} == {1, 3, 5, 6}
    spark.sql(f"DELETE FROM {carol}.db.w WHERE id = 6")  # exempt: a row-level statement as anyone's
    assert {r.id for r in spark.table(f"{carol}.db.w").collect()} == {1, 3, 5}


def test_a_masked_user_may_not_update_delete_or_merge(spark: Any, rm: Any) -> None:
    """Without a row filter, column masks alone refuse row-level statements: they would read the raw
    values (UPDATE t SET visible = masked copies them where the user sees them)."""
    adm, bob = rm.adm, rm.bob
    spark.sql(f"CREATE TABLE {adm}.db.m (id INT, note STRING, ssn STRING) USING parquet")
    spark.sql(f"INSERT INTO {adm}.db.m VALUES (1, 'n', '111-22-3333')")
    spark.sql(f"CALL {adm}.system.set_column_mask('db.m', 'ssn', \"'***'\", 'role:auditors')").collect()
    rm.ms.grant("MODIFY", ("main", "db", "m"), "user:bob")
    for sql in (f"UPDATE {bob}.db.m SET note = ssn", f"DELETE FROM {bob}.db.m WHERE ssn = '111-22-3333'",
                f"MERGE INTO {bob}.db.m t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN "
                f"UPDATE SET note = t.ssn"):
        text = denied(lambda: spark.sql(sql))
        assert "[USHAS_RowPolicy]" in text and "column masks" in text, text
    assert [tuple(r) for r in spark.sql(f"SELECT note, ssn FROM {rm.carol}.db.m").collect()] == [("n", "111-22-3333")]


def test_a_masked_user_may_not_delete_whole_partitions_before_sparks_rewrite(spark: Any, rm: Any) -> None:
    """A DELETE of whole partitions taken before Spark's rewrite (MetadataOnlyDelete.BeforeResolution: columns
    compared with literals) is refused to a user under column masks as Spark's path refuses it, however the
    statement is written (an alias, another case, IN, NOT); nothing is written; the exempt member may."""
    adm, bob = rm.adm, rm.bob
    spark.sql(f"CREATE TABLE {adm}.db.pm (id INT, ssn STRING, region STRING) USING parquet PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {adm}.db.pm VALUES (1, '111-22-3333', 'EU'), (2, '222-33-4444', 'US')")
    spark.sql(f"CALL {adm}.system.set_column_mask('db.pm', 'ssn', \"'***'\", 'role:auditors')").collect()
    for user in ("user:bob", "user:carol"):
        rm.ms.grant("MODIFY", ("main", "db", "pm"), user)
    version = rm.ms.get_table(("main", "db", "pm")).version
    for sql in (f"DELETE FROM {bob}.db.pm WHERE region = 'US'", f"DELETE FROM {bob}.db.pm AS x WHERE x.REGION IN ('US')",
                f"DELETE FROM {bob}.db.pm WHERE NOT (region <> 'US') OR region IS NULL"):
        text = denied(lambda: spark.sql(sql))
        assert "[USHAS_RowPolicy]" in text and "column masks" in text, (sql, text)
    assert rm.ms.get_table(("main", "db", "pm")).version == version  # nothing written
    spark.sql(f"DELETE FROM {rm.carol}.db.pm WHERE region = 'US'")  # carol is in the exempt role
    assert [r.id for r in spark.table(f"{adm}.db.pm").collect()] == [1]


def test_statistics_of_hidden_rows_are_withheld(spark: Any, rm: Any) -> None:
    """After the exempt member runs ANALYZE … FOR ALL COLUMNS, bob (under the row filter) sees no column
    statistics (min / max / distinct counts over hidden rows) and no row count; carol sees them."""
    rm.ms.grant("MODIFY", ("main", "db", "people"), "user:carol")  # ANALYZE writes statistics
    spark.sql(f"ANALYZE TABLE {rm.carol}.db.people COMPUTE STATISTICS FOR ALL COLUMNS")

    def stats(catalog: str, column: str) -> dict[str, str]:
        return {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {catalog}.db.people {column}").collect()}

    assert stats(rm.carol, "id")["max"] == "4" and stats(rm.carol, "id")["distinct_count"] == "4"
    for column in ("id", "name", "owner"):
        shown = stats(rm.bob, column)
        assert shown["min"] == shown["max"] == shown["distinct_count"] == "NULL", (column, shown)
    table = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {rm.bob}.db.people").collect()}
    assert "rows" not in str(table.get("Statistics") or ""), table.get("Statistics")
    assert rows(spark.table(f"{rm.bob}.db.people")) == BOB  # reads plan as before


def test_a_branch_made_before_the_policy_reads_through_it(spark: Any, rm: Any, spark_dirs: dict[str, Path]) -> None:
    """A policy set on main holds in every branch, whenever the branch was made: bob's branch catalog, which
    loaded the table before the filter existed, reads only the EU rows from the next query on."""
    adm = rm.adm
    spark.sql(f"CREATE TABLE {adm}.db.b (id INT, region STRING) USING parquet")
    spark.sql(f"INSERT INTO {adm}.db.b VALUES (1, 'EU'), (2, 'US')")
    branch = "dev_" + uuid.uuid4().hex[:6]
    spark.sql(f"CALL {adm}.system.create_branch('main', '{branch}')").collect()
    bob_dev = user_catalog(spark, "rbobdev", uri=f"sqlite:///{spark_dirs['store']}", project=rm.project,
                           warehouse=str(spark_dirs["warehouse"]), user="bob")
    spark.conf.set(f"spark.sql.catalog.{bob_dev}.branch", branch)
    assert {r.id for r in spark.table(f"{bob_dev}.db.b").collect()} == {1, 2}  # no policy yet
    spark.sql(f"CALL {adm}.system.set_row_filter('db.b', \"region = 'EU'\", 'role:auditors')").collect()
    spark.sql(f"CALL {adm}.system.set_column_mask('db.b', 'region', \"'*'\", 'role:auditors')").collect()
    assert [tuple(r) for r in spark.sql(f"SELECT id, region FROM {bob_dev}.db.b").collect()] == [(1, "*")]
    assert [tuple(r) for r in spark.table(f"{bob_dev}.db.b").collect()] == [(1, "*")]


def test_no_location_in_governed_storage(spark: Any, rm: Any, tmp_path: Path) -> None:
    """bob (CREATE on the database) cannot point a table or a partition at the people table's directory (or
    anywhere in the managed warehouse) to read its files raw: CREATE TABLE … LOCATION, ADD PARTITION …
    LOCATION and SET LOCATION are refused and write nothing; a location of his own outside it works."""
    victim = rm.ms.get_table(("main", "db", "people")).location
    mine = tmp_path / "mine"
    spark.sql(f"CREATE TABLE {rm.bob}.db.own (id INT, p STRING) USING parquet PARTITIONED BY (p) "
              f"LOCATION '{mine}'")
    keys = {t.name for t in rm.ms.list_tables(("main", "db"))}
    version = rm.ms.get_table(("main", "db", "own")).version
    attempts = [
        f"CREATE TABLE {rm.bob}.db.steal (id INT, name STRING, ssn STRING, owner STRING, region STRING) "
        f"USING parquet PARTITIONED BY (region) LOCATION '{victim}'",
        f"CREATE TABLE {rm.bob}.db.steal2 (id INT) USING parquet LOCATION '{victim}/region=US'",
        f"ALTER TABLE {rm.bob}.db.own ADD PARTITION (p = 'x') LOCATION '{victim}/region=US'",
        f"ALTER TABLE {rm.bob}.db.own SET LOCATION '{victim}'",
        f"CREATE TABLE {rm.bob}.db.steal3 USING parquet LOCATION '{victim}' AS SELECT 1 AS id",
    ]
    for statement in attempts:
        try:
            spark.sql(statement).collect()
            text = "allowed"
        except Exception as e:  # noqa: BLE001 - the refusal is checked below
            text = str(e)
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "governed storage" in text, (statement, text)
    assert {t.name for t in rm.ms.list_tables(("main", "db"))} == keys
    assert rm.ms.get_table(("main", "db", "own")).version == version
    spark.sql(f"ALTER TABLE {rm.bob}.db.own ADD PARTITION (p = 'y') LOCATION '{mine}/elsewhere'")  # inside its own


def test_repair_never_drops_hidden_partitions(spark: Any, rm: Any) -> None:
    """MSCK REPAIR … SYNC / DROP PARTITIONS and ``repair_table(…, 'drop')`` unregister partitions whose
    directory is gone: refused to a user under the row filter (they would remove hidden rows), done by the
    exempt role's member."""
    import shutil

    adm, bob, carol = rm.adm, rm.bob, rm.carol
    spark.sql(f"CREATE TABLE {adm}.db.r (id INT, region STRING) USING parquet PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {adm}.db.r VALUES (1, 'EU'), (2, 'US')")
    spark.sql(f"CALL {adm}.system.set_row_filter('db.r', \"region = 'EU'\", 'role:auditors')").collect()
    for user in ("user:bob", "user:carol"):
        rm.ms.grant("MODIFY", ("main", "db", "r"), user)
    us = rm.ms.get_partition(("main", "db", "r"), {"region": "US"}).location
    shutil.rmtree(us.removeprefix("file:"))
    version = rm.ms.get_table(("main", "db", "r")).version
    for run in (lambda: spark.sql(f"MSCK REPAIR TABLE {bob}.db.r SYNC PARTITIONS").collect(),
                lambda: spark.sql(f"MSCK REPAIR TABLE {bob}.db.r DROP PARTITIONS").collect(),
                lambda: spark.sql(f"CALL {bob}.system.repair_table('db.r', 'drop')").collect()):
        text = denied(run)
        assert "[USHAS_RowPolicy]" in text and "user bob" in text, text
    assert rm.ms.get_table(("main", "db", "r")).version == version  # nothing written
    spark.sql(f"CALL {carol}.system.repair_table('db.r', 'drop')").collect()
    assert [p.values for p in rm.ms.list_partitions(("main", "db", "r"))] == [{"region": "EU"}]


def test_a_share_reads_through_the_owners_policy(spark: Any, rm: Any, spark_dirs: dict[str, Path]) -> None:
    """A recipient project reads a shared table through its owner's filter and masks, holding none of the
    owner project's roles (carol's exemption is the owner's)."""
    tag = uuid.uuid4().hex[:8]
    recipient, share, mount = f"rrcp_{tag}", f"rs_{tag}", f"rpart_{tag}"
    adm = rm.adm
    spark.sql(f"CALL {adm}.system.create_share('{share}')").collect()
    spark.sql(f"CALL {adm}.system.add_to_share('{share}', 'db.people')").collect()
    spark.sql(f"CALL {adm}.system.grant_share('{share}', 'project:{recipient}')").collect()
    home = user_catalog(spark, "rhome", uri=f"sqlite:///{spark_dirs['store']}", project=recipient,
                        warehouse=str(spark_dirs["warehouse"]), user="carol")
    recipient_ms = Metastore.open(f"sqlite:///{spark_dirs['store']}", project=recipient)
    recipient_ms.grant("OWN", "project", "user:carol")
    recipient_ms.close()
    spark.sql(f"CALL {home}.system.mount_share('`{rm.project}`.{share}', '{mount}')").collect()
    for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{spark_dirs['store']}",
                       ".project": recipient, ".catalog": mount, ".user": "carol",
                       ".warehouse": str(spark_dirs["warehouse"])}.items():
        spark.conf.set(f"spark.sql.catalog.{mount}{key}", value)
    assert rows(spark.table(f"{mount}.db.people")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {mount}.db.people")) == BOB


def test_reads_as_of_a_version_go_through_the_policies_in_force_now(spark: Any, rm: Any,
                                                                    spark_dirs: dict[str, Path]) -> None:
    """Version 2 (the append) is older than the row filter and the mask: bob still reads through them;
    a user without SELECT reads no version."""
    dave = user_catalog(spark, "rdave", uri=f"sqlite:///{spark_dirs['store']}", project=rm.project,
                        warehouse=str(spark_dirs["warehouse"]), user="dave")
    for query in (f"SELECT * FROM {dave}.db.people VERSION AS OF 2", f"SELECT * FROM {dave}.db.people"):
        with pytest.raises(Exception, match="INSUFFICIENT_PERMISSIONS"):
            spark.sql(query).collect()
    for t in (rm.bob, rm.carol):
        history = spark.sql(f"SELECT version, operation FROM {t}.db.people.history").collect()
        assert (history[1].version, history[1].operation) == (2, "APPEND")
    assert rows(spark.sql(f"SELECT * FROM {rm.bob}.db.people VERSION AS OF 2")) == BOB
    assert rows(spark.read.option("versionAsOf", "2").table(f"{rm.bob}.db.people")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {rm.bob}.db.people TIMESTAMP AS OF current_timestamp()")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {rm.carol}.db.people VERSION AS OF 2")) == ALL
    # a tag is a change to the table: bob (SELECT only) may not make one
    error = None
    try:
        spark.sql(f"CALL {rm.bob}.system.create_tag('db.people', 'mine', 2)").collect()
    except Exception as e:  # noqa: BLE001 - the condition is checked below
        error = str(getattr(e, "getCondition", lambda: "")())
    assert error == "INSUFFICIENT_PERMISSIONS"


def test_path_reads_and_external_locations(spark: Any, rm: Any, tmp_path: Path) -> None:
    """Governed path reads and external locations (docs/governance.md, "External locations"): bob cannot read the
    filtered table's files by path (SQL on a path, ``spark.read.load``, a partition directory, the files
    ``input_file_name()`` named), nor files of a declared location without READ FILES; he cannot place a table in
    a declared location without CREATE EXTERNAL TABLE, over another table's directory, nor outside every declared
    location. Each refusal is INSUFFICIENT_PERMISSIONS, leaks no value, changes no table."""
    victim = rm.ms.get_table(("main", "db", "people")).location
    files = [r.f for r in spark.sql(f"SELECT input_file_name() AS f FROM {rm.bob}.db.people").collect()]
    lake = tmp_path / "lake"
    spark.range(2).write.parquet(str(lake / "loose"))
    reads: list[Callable[[], Any]] = [
        lambda: spark.sql(f"SELECT * FROM parquet.`{victim}`").collect(),
        lambda: spark.read.load(victim).collect(),
        lambda: spark.read.parquet(f"{victim}/region=US").select("ssn").collect(),
        lambda: spark.read.parquet(*files).collect(),
        lambda: spark.sql(f"SELECT count(*) FROM {rm.bob}.db.people WHERE id IN "
                          f"(SELECT id FROM parquet.`{victim}`)").collect(),
    ]
    for read in reads:
        text = insufficient(read)
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "row filter or a column mask" in text, text
        assert not any(s in text for s in RAW_SSNS)
    tables = {t.name for t in rm.ms.list_tables(("main", "db"))}
    rm.ms.create_location("lake", str(lake))
    try:
        text = insufficient(lambda: spark.read.parquet(str(lake / "loose")).collect())
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "READ FILES on location lake" in text, text
        for user in ("bob", "carol", "dave"):  # every governed catalog of the session must allow a path read
            rm.ms.grant("READ FILES", "location:lake", f"user:{user}")
        loose = spark.read.parquet(str(lake / "loose"))
        assert loose.count() == 2
        rm.ms.revoke("READ FILES", "location:lake", "user:bob")  # between two statements of the session
        text = insufficient(lambda: loose.count())  # the same DataFrame: its next statement is checked again
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "READ FILES on location lake" in text, text
        rm.ms.grant("READ FILES", "location:lake", "user:bob")
        create = f"CREATE TABLE {rm.bob}.db.{{}} (id BIGINT) USING parquet LOCATION '{{}}'"
        for name, where, why in (("ext", lake / "ext", "CREATE EXTERNAL TABLE on location lake"),
                                 ("ext", tmp_path / "outside", "no declared external location")):
            text = insufficient(lambda: spark.sql(create.format(name, where)).collect())
            assert "[INSUFFICIENT_PERMISSIONS]" in text and why in text, text
        assert {t.name for t in rm.ms.list_tables(("main", "db"))} == tables
        spark.sql(f"CALL {rm.adm}.system.grant('CREATE EXTERNAL TABLE', 'location:lake', 'user:bob')").collect()
        spark.sql(create.format("ext", lake / "ext"))
        text = insufficient(lambda: spark.sql(create.format("ext2", lake / "ext" / "inner")).collect())
        assert "overlaps the location of another table" in text, text
        shown = spark.sql(f"CALL {rm.adm}.system.show_locations()").collect()
        assert [(r.name, r.url) for r in shown] == [("lake", f"file:{lake}")]
    finally:
        rm.ms.drop_location("lake")


def test_path_writes_need_write_files(spark: Any, rm: Any, tmp_path: Path, spark_dirs: dict[str, Path]) -> None:
    """Governed path writes (docs/governance.md, "External locations"): bob, subject to the row filter, cannot
    overwrite the table's files by path (``df.write.parquet``, ``df.write.save``, ``INSERT OVERWRITE DIRECTORY``),
    nor write into a declared location without WRITE FILES; each refusal is INSUFFICIENT_PERMISSIONS and the table
    keeps every row."""
    victim = rm.ms.get_table(("main", "db", "people")).location
    local = victim.removeprefix("file:")
    before = files_under(local)
    one = spark.range(1).selectExpr("CAST(id AS INT) AS id")
    spark.sql(f"SHOW TABLES IN {rm.bob}.db").collect()  # bob's catalog, defined at run time, is initialized
    hive = "INSERT OVERWRITE {local}DIRECTORY '{path}' STORED AS {fmt} SELECT 1 AS id"
    writes: list[Callable[[], Any]] = [
        lambda: one.write.mode("overwrite").parquet(victim),
        lambda: one.write.format("parquet").mode("append").save(f"{victim}/region=US"),
        lambda: spark.sql(f"INSERT OVERWRITE DIRECTORY '{victim}' USING parquet SELECT 1 AS id").collect(),
        # Hive-format directory writes: textfile is Spark's InsertIntoHiveDirCommand, parquet / orc are converted
        # to the data source command (spark.sql.hive.convertMetastoreInsertDir); LOCAL qualifies the path itself
        lambda: spark.sql(hive.format(local="", path=victim, fmt="textfile")).collect(),
        lambda: spark.sql(hive.format(local="LOCAL ", path=f"{local}/region=US", fmt="textfile")).collect(),
        lambda: spark.sql(hive.format(local="LOCAL ", path=local, fmt="parquet")).collect(),
        lambda: spark.sql(hive.format(local="", path=f"{victim}/region=EU", fmt="orc")).collect(),
        lambda: spark.sql(f"INSERT OVERWRITE LOCAL DIRECTORY '{local}/x/..' ROW FORMAT DELIMITED FIELDS "
                          f"TERMINATED BY ',' STORED AS textfile SELECT 1 AS id").collect(),
    ]
    for i, write in enumerate(writes):
        text = insufficient(write)
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "holds data of table main.db.people" in text, (i, text)
        assert files_under(local) == before, i  # not a file written, deleted or changed
    assert rows(spark.table(f"{rm.carol}.db.people")) == ALL  # carol, exempt, still reads every row
    for url in (spark_dirs["warehouse"], spark_dirs["warehouse"] / "db.db" / "x", spark_dirs["warehouse"].parent):
        text = denied(lambda: spark.sql(f"CALL {rm.adm}.system.create_location('wh', '{url}')").collect())
        assert "overlaps the managed" in text, text  # the warehouse is the catalog's, never an external location
    lake = tmp_path / "lake"
    rm.ms.create_location("lake", str(lake))
    try:
        text = insufficient(lambda: one.write.parquet(str(lake / "out")))
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "WRITE FILES on location lake" in text, text
        assert [p.name for p in (lake / "out").rglob("*")] == []  # Spark's mkdirs of the sink's parent remains
        for user in ("bob", "carol", "dave"):  # every governed catalog of the session must allow it
            rm.ms.grant("WRITE FILES", "location:lake", f"user:{user}")
        one.write.parquet(str(lake / "out"))
        assert (lake / "out").is_dir()
    finally:
        rm.ms.drop_location("lake")


def test_streaming_path_reads_and_writes_are_checked(spark: Any, rm: Any, tmp_path: Path) -> None:
    """Streams by path get the batch rules (docs/governance.md, "External locations"): bob cannot stream the
    filtered table's files (``readStream…load``/``.parquet``/``.text`` of its directory, a partition or a glob,
    refused when the stream's DataFrame is made), nor start a stream whose file sink (``option("path")``,
    ``.start(path)``) or checkpoint lies in the table's directory; a declared location needs READ FILES / WRITE FILES,
    and with them a stream runs from one to the other. Each refusal is INSUFFICIENT_PERMISSIONS, no file changes."""
    victim = rm.ms.get_table(("main", "db", "people")).location
    local = victim.removeprefix("file:")
    before = files_under(local)
    spark.sql(f"SHOW TABLES IN {rm.bob}.db").collect()  # bob's catalog, defined at run time, is initialized
    schema = "id INT, name STRING, ssn STRING, owner STRING"
    reads: list[Callable[[], Any]] = [
        lambda: spark.readStream.schema(schema).format("parquet").load(victim),
        lambda: spark.readStream.schema(schema).parquet(f"{victim}/region=US"),
        lambda: spark.readStream.schema(schema).option("path", f"{local}/*").format("parquet").load(),
        lambda: spark.readStream.text(f"{local}/region=US/*.parquet"),
    ]
    for i, read in enumerate(reads):
        text = insufficient(read)
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "row filter or a column mask" in text, (i, text)
        assert not any(s in text for s in RAW_SSNS)
    src = tmp_path / "src"
    spark.range(3).selectExpr("CAST(id AS INT) AS id").write.parquet(str(src))

    def started(out: str | None, check: Path, path_option: bool = True) -> Any:
        w = (spark.readStream.schema("id INT").parquet(str(src)).writeStream.format("parquet")
             .option("checkpointLocation", str(check)).trigger(availableNow=True))
        if out is not None and path_option:
            w = w.option("path", out)
        q = w.start() if path_option else w.start(out)
        try:
            q.awaitTermination(120)
        finally:
            q.stop()
        assert q.exception() is None, q.exception()
        return q

    writes: list[Callable[[], Any]] = [
        lambda: started(victim, tmp_path / "ck1"),
        lambda: started(f"{victim}/region=US", tmp_path / "ck2", path_option=False),
        lambda: started(str(tmp_path / "out"), Path(local) / "_checkpoint"),
    ]
    for i, write in enumerate(writes):
        text = insufficient(write)
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "holds data of table main.db.people" in text, (i, text)
        assert files_under(local) == before, i
    assert not spark.streams.active
    assert rows(spark.table(f"{rm.carol}.db.people")) == ALL
    lake = tmp_path / "lake"
    spark.range(2).selectExpr("CAST(id AS INT) AS id").write.parquet(str(lake / "in"))
    rm.ms.create_location("lake", str(lake))
    try:
        text = insufficient(lambda: spark.readStream.schema("id INT").parquet(str(lake / "in")))
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "READ FILES on location lake" in text, text
        text = insufficient(lambda: started(str(lake / "out"), tmp_path / "ck3"))
        assert "[INSUFFICIENT_PERMISSIONS]" in text and "WRITE FILES on location lake" in text, text
        assert [p.name for p in (lake / "out").rglob("*")] == []  # Spark's mkdirs of the sink's parent remains
        for user in ("bob", "carol", "dave"):  # every governed catalog of the session must allow them
            rm.ms.grant("READ FILES", "location:lake", f"user:{user}")
            rm.ms.grant("WRITE FILES", "location:lake", f"user:{user}")
        q = (spark.readStream.schema("id INT").parquet(str(lake / "in")).writeStream.format("parquet")
             .option("checkpointLocation", str(lake / "ck")).trigger(availableNow=True).start(str(lake / "out")))
        try:
            q.awaitTermination(120)
        finally:
            q.stop()
        assert q.exception() is None, q.exception()
        assert sorted(r.id for r in spark.read.parquet(str(lake / "out")).collect()) == [0, 1]
    finally:
        rm.ms.drop_location("lake")


def test_a_partitions_delete_decided_at_analysis_is_refused_as_sparks_path(spark: Any, rm: Any) -> None:
    """A DELETE of whole partitions taken at analysis (io.ushas.spark.MetadataOnlyDelete) is refused exactly as on
    Spark's path (the rule off): without MODIFY the same error, audited once per attempt, nothing written; with
    MODIFY it drops the partition, recorded as the caller's DELETE."""
    adm, bob = rm.adm, rm.bob
    spark.sql(f"CREATE TABLE {adm}.db.dw (id INT, region STRING) USING parquet PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {adm}.db.dw VALUES (1, 'EU'), (2, 'US'), (3, 'APAC')")
    name = ("main", "db", "dw")
    version = rm.ms.get_table(name).version
    texts, audited = {}, {}
    try:
        for on in ("true", "false"):
            spark.conf.set("spark.ushas.delete.metadataOnlyAtAnalysis", on)
            before = sum(1 for c in rm.ms.changes() if c.change == "ACCESS_DENIED" and c.user == "bob")
            texts[on] = denied(lambda: spark.sql(f"DELETE FROM {bob}.db.dw WHERE region = 'US'"))
            audited[on] = sum(1 for c in rm.ms.changes() if c.change == "ACCESS_DENIED" and c.user == "bob") - before
        assert "[INSUFFICIENT_PERMISSIONS]" in texts["true"] and "MODIFY" in texts["true"], texts["true"]
        assert texts["true"].split("\n")[0] == texts["false"].split("\n")[0]
        assert audited == {"true": 1, "false": 1}
        assert rm.ms.get_table(name).version == version  # nothing written
        rm.ms.grant("MODIFY", name, "user:bob")
        spark.conf.set("spark.ushas.delete.metadataOnlyAtAnalysis", "true")
        spark.sql(f"DELETE FROM {bob}.db.dw WHERE region = 'US'")
    finally:
        spark.conf.unset("spark.ushas.delete.metadataOnlyAtAnalysis")
    assert {r.id for r in spark.table(f"{adm}.db.dw").collect()} == {1, 3}
    last = spark.sql(f"SELECT operation, user, detail FROM {adm}.db.dw.history ORDER BY version DESC LIMIT 1").first()
    assert (last.operation, last.user) == ("DELETE", "bob") and '"metadata_only":true' in last.detail, last
