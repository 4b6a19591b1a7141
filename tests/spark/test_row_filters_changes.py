"""Changes to a table under a row filter and column masks: the policies themselves (who may set them,
bad ones, DESCRIBE, history), and writes, row-level statements, compaction, statistics and repair that
would remove or reveal hidden rows are refused to bob and write nothing; carol (exempt) may.
Shared set-up: :mod:`tests.spark.row_filters_support`."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.spark.row_filters_support import people_with_policies, BOB, rows, denied


@pytest.fixture(scope="module")
def rm(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Any]:
    yield from people_with_policies(spark, spark_dirs)


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
