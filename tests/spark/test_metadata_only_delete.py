"""A DELETE of whole partitions decided at analysis (``io.ushas.spark.MetadataOnlyDelete``, docs/row-level.md),
compared with Spark's own path (the rule off: ``spark.ushas.delete.metadataOnlyAtAnalysis=false``) on two tables
filled alike: for each condition the same rows are left, the same history (operation, metadata-only or not), the
same answer of ``spark.sql``; the rule takes only DELETEs Spark would also run metadata-only, and the others keep
Spark's row-level plan. The captured lineage, the refresh of a cached table, and the refusals (no MODIFY, the row
filter's removal rule: tests/spark/test_row_filters_changes.py) are those of Spark's path."""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

import pytest

from tests.spark.sql_tables_support import flush_lineage

CONF = "spark.ushas.delete.metadataOnlyAtAnalysis"
ROWS = ", ".join(f"({i}, 'v{i}', '{['x', 'y', 'z'][i % 3]}', DATE'2024-01-0{1 + i % 2}')" for i in range(1, 13))

#: (condition, taken by the rule at analysis) — whether it is metadata-only is Spark's path's answer, compared
CASES = [
    ("dt = 'x'", True),
    ("dt IN ('y', 'z')", True),
    ("dt = concat('x', '')", True),  # folded to a literal, as Spark's optimizer folds it
    ("d = '2024-01-02'", True),  # a DATE partition column: the string literal cast and folded
    ("dt = 'x' AND d = DATE'2024-01-01'", True),
    ("dt IS NULL", True),  # no such partition: nothing committed, on both paths
    ("dt = 'nope'", True),
    ("dt = 'x' AND id > 10", False),  # a data column: rows rewritten
    ("dt = 'x' OR id = 3", False),
    ("dt IN (SELECT c FROM VALUES ('y') AS s(c))", False),  # a subquery: Spark's path decides
    ("id % 4 = 0", False),
]


@pytest.fixture
def pair(spark: Any, db: str) -> Iterator[dict[str, Any]]:
    """Two tables ``a`` (the rule on) and ``b`` (off) with the same rows, and their filled versions."""
    filled = {}
    for t in "ab":
        spark.sql(f"CREATE TABLE ushas.{db}.{t} (id INT, v STRING, dt STRING, d DATE) USING parquet "
                  f"PARTITIONED BY (dt, d)")
        spark.sql(f"INSERT INTO ushas.{db}.{t} VALUES {ROWS}")
        filled[t] = spark.sql(f"SELECT max(version) AS v FROM ushas.{db}.{t}.history").first().v
    yield {"db": db, "filled": filled}
    spark.conf.unset(CONF)


def rows(spark: Any, table: str) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in spark.table(table).collect()}


def last_commit(spark: Any, table: str) -> tuple[str, bool]:
    r = spark.sql(f"SELECT operation, detail FROM {table}.history ORDER BY version DESC LIMIT 1").first()
    return r.operation, bool(json.loads(r.detail or "{}").get("metadata_only"))


def test_each_condition_matches_sparks_own_path(spark: Any, pair: dict[str, Any]) -> None:
    db, filled = pair["db"], pair["filled"]
    for condition, taken in CASES:
        got = {}
        for t, on in (("a", "true"), ("b", "false")):
            spark.conf.set(CONF, on)
            df = spark.sql(f"DELETE FROM ushas.{db}.{t} WHERE {condition}")
            got[t] = (df.columns, df.collect(), df._jdf.queryExecution().analyzed().nodeName(),
                      last_commit(spark, f"ushas.{db}.{t}"), rows(spark, f"ushas.{db}.{t}"))
        (a_cols, a_out, a_plan, a_commit, a_rows), (b_cols, b_out, b_plan, b_commit, b_rows) = got["a"], got["b"]
        assert a_rows == b_rows and (a_cols, a_out) == (b_cols, b_out) == ([], []), condition
        assert a_commit == b_commit, condition  # DELETE, and metadata-only on both paths or on neither
        assert a_plan == ("DeleteFromTableWithFilters" if taken else "ReplaceData"), condition
        assert b_plan == "ReplaceData", condition
        # taken: Spark's path is metadata-only too (or, when no partition matches, commits nothing either)
        assert not taken or b_commit in (("DELETE", True), ("RESTORE", False)), condition
        if condition == "dt = 'x'":  # Spark's own rule excluded: Spark's path never deletes by filters, nor this
            spark.conf.set(CONF, "true")
            spark.conf.set("spark.sql.optimizer.excludedRules",
                           "org.apache.spark.sql.execution.datasources.v2.OptimizeMetadataOnlyDeleteFromTable")
            try:
                plan = spark.sql(f"EXPLAIN EXTENDED DELETE FROM ushas.{db}.a WHERE {condition}").first()[0]
            finally:
                spark.conf.unset("spark.sql.optimizer.excludedRules")
            assert "DeleteFromTableWithFilters" not in plan, plan
        for t in "ab":
            spark.sql(f"CALL ushas.system.restore_table(table => '{db}.{t}', version => {filled[t]})")


def test_lineage_and_a_cached_table_as_sparks_path(spark: Any, pair: dict[str, Any]) -> None:
    """The captured run of the DELETE (kind, datasets read and written, the WHERE column as INDIRECT FILTER)
    is Spark's path's; a cached table's data is refreshed or uncached as on Spark's path (its DeleteFromTableExec
    runs in both): no stale rows."""
    db = pair["db"]
    runs, cached = {}, {}
    for t, on in (("a", "true"), ("b", "false")):
        table = f"ushas.{db}.{t}"
        spark.sql(f"CACHE TABLE {table}")
        assert spark.table(table).count() == 12
        spark.conf.set(CONF, on)
        spark.sql(f"DELETE FROM {table} WHERE dt = 'y'")
        cached[t] = spark.catalog.isCached(table)
        assert spark.table(table).count() == 8
        spark.sql(f"UNCACHE TABLE IF EXISTS {table}")
        runs[t] = table
    assert cached["a"] == cached["b"]
    flush_lineage(spark)
    seen = {}
    for t, table in runs.items():
        run = spark.sql(f"SELECT run_id, kind FROM ushas.system.runs WHERE sql = 'DELETE FROM {table} WHERE dt = ''y'''"
                        ).collect()
        assert len(run) == 1 and run[0].kind == "DELETE FROM", (t, run, spark.sql(
            "SELECT job, kind, sql FROM ushas.system.runs WHERE kind = 'DELETE FROM'").collect())
        rid = run[0].run_id
        access = {(r.dataset, r.access) for r in spark.sql(
            f"SELECT dataset, access FROM ushas.system.dataset_access WHERE run_id = '{rid}'").collect()}
        edges = {(r.target_table, r.target_column, r.source_table, r.source_column, r.type, r.subtype)
                 for r in spark.sql(f"SELECT * FROM ushas.system.column_lineage WHERE run_id = '{rid}'").collect()}
        assert access == {(table, "read"), (table, "write")}, (t, access)
        assert edges == {(table, None, table, "dt", "INDIRECT", "FILTER")}, (t, edges)
        seen[t] = (access, edges)
    assert seen["a"][1] and len(seen["a"][1]) == len(seen["b"][1])


#: (condition, taken before Spark's rewrite: columns compared with literals, MetadataOnlyDelete.BeforeResolution)
BEFORE_REWRITE = [
    ("dt = 'x'", True),
    ("dt IN ('y', 'z')", True),
    ("t.dt = 'x' AND d = DATE'2024-01-01'", True),  # the statement's alias
    ("DT IS NULL OR dt = 'nope'", True),  # the session's resolver: case-insensitive
    ("NOT (dt <> 'z')", True),
    ("dt = concat('x', '')", False),  # a function: the rule after the rewrite folds it
    ("d = '2024-01-02'", False),  # a DATE compared with a string: Spark's coercion first
    ("dt = 'x' AND id > 10", False),  # a data column: rows rewritten
    ("dt IN (SELECT c FROM VALUES ('y') AS s(c))", False),
]


def _rewrites(spark: Any) -> int:
    """How many times Spark's RewriteDeleteFromTable changed a plan since the rules' metrics were reset."""
    dump = spark.sparkContext._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.dumpTimeSpent()
    m = re.search(r"\.RewriteDeleteFromTable\s+\d+\s*/\s*\d+\s+(\d+)\s*/\s*\d+", dump)
    return int(m.group(1)) if m else 0


def _counted(spark: Any, monkeypatch: pytest.MonkeyPatch, sql: str) -> tuple[int, list[str]]:
    """Runs ``sql``: the times Spark's rewrite changed a plan, and the bridge calls (the lineage listener's aside)."""
    from ushas_catalog.spark import bridge

    ops: list[str] = []
    real = bridge.handle

    def counted(op: str, payload: str) -> str:
        if not op.startswith("lineage."):  # the listener's events, sent from its own thread
            ops.append(op)
        return real(op, payload)

    spark.sparkContext._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor.resetMetrics()
    with monkeypatch.context() as m:
        m.setattr(bridge, "handle", counted)  # Backend.call looks it up at every call
        spark.sql(sql)
    return _rewrites(spark), ops


def test_the_current_catalogs_table_is_taken_before_the_rewrite_too(spark: Any, pair: dict[str, Any],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``USE ushas.db`` then ``DELETE FROM a WHERE dt = 'x'``: the name is the current catalog's, taken early."""
    spark.sql(f"USE ushas.{pair['db']}")
    assert _counted(spark, monkeypatch, "DELETE FROM a WHERE dt = 'x'") == (0, ["load_table", "delete_where"])
    assert {r.dt for r in spark.table("a").collect()} == {"y", "z"}


@pytest.mark.parametrize("condition,before", BEFORE_REWRITE, ids=[c for c, _ in BEFORE_REWRITE])
def test_a_plain_partitions_delete_skips_sparks_rewrite_with_one_load(spark: Any, pair: dict[str, Any],
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       condition: str, before: bool) -> None:
    """A DELETE whose condition compares partition columns with literals is taken before Spark's Resolution batch:
    Spark's RewriteDeleteFromTable never runs, the bridge sees one load_table (with write privileges: Spark's own
    ResolveRelations) and one delete_where, and the table keeps the rows Spark's path keeps. Any other condition
    goes on as before (the rewrite, then the rule after it or Spark's row-level plan), its table loaded once."""
    db = pair["db"]
    spark.conf.set(CONF, "false")
    spark.sql(f"DELETE FROM ushas.{db}.b t WHERE {condition}")
    spark.conf.set(CONF, "true")
    rewrites, ops = _counted(spark, monkeypatch, f"DELETE FROM ushas.{db}.a t WHERE {condition}")
    assert rewrites == (0 if before else 1), condition
    assert ops.count("load_table") == 1 and ops.count("load_relation") == 0, (condition, ops)
    if before:
        assert ops == ["load_table", "delete_where"], (condition, ops)
    assert rows(spark, f"ushas.{db}.a") == rows(spark, f"ushas.{db}.b"), condition


def test_a_temporary_view_of_the_name_is_still_the_view(spark: Any, pair: dict[str, Any]) -> None:
    """The early path resolves the name as Spark does: a temporary view named as the table (the current namespace's)
    is what ``DELETE FROM a`` names, refused as on Spark's path (the rule off), the table behind it untouched."""
    db = pair["db"]
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW a AS SELECT * FROM ushas.{db}.a")
    errors = {}
    try:
        spark.sql(f"USE ushas.{db}")
        for on in ("true", "false"):
            spark.conf.set(CONF, on)
            with pytest.raises(Exception, match="DELETE") as e:  # noqa: PT011 - the same error either way
                spark.sql("DELETE FROM a WHERE dt = 'x'")
            errors[on] = str(e.value).split("\n")[0]
    finally:
        spark.sql("DROP VIEW IF EXISTS a")
    assert errors["true"] == errors["false"], errors
    assert len(rows(spark, f"ushas.{db}.a")) == 12


@pytest.mark.parametrize("filters,prefix", [
    ([{"op": "eq", "column": "dt", "value": "x"}], {"dt": "x"}),  # one key range read
    ([{"op": "eq", "column": "id", "value": "x"}], None),  # not a partition column
    ([{"op": "eq", "column": "d", "value": "2024-01-01"}], None),  # a DATE: its values compare as dates
    ([{"op": "eq", "column": "dt", "value": "1"}], None),  # a number's text matches '1.0' and '01' too
    ([{"op": "eq", "column": "dt", "value": "NaN"}], None),
    ([{"op": "in", "column": "dt", "values": ["x"]}], None),
    ([{"op": "is_null", "column": "dt"}, {"op": "eq", "column": "dt", "value": "y"}], {"dt": "y"}),
], ids=["string", "data-column", "date", "number-text", "nan", "in", "second-filter"])
def test_the_partitions_read_are_narrowed_only_where_the_match_is_exact(filters: list[dict[str, Any]],
                                                                        prefix: dict[str, str] | None) -> None:
    """delete_where reads only the partitions of ``column = 'value'`` when its filter evaluation is exact string
    equality there (a string partition column, a value that is not a number); every partition otherwise."""
    from ushas_catalog.model.schema import parse_schema
    from ushas_catalog.spark.row_level import partition_prefix

    info = type("Info", (), {"partition_columns": ["dt", "d"],
                             "schema": parse_schema("id INT, v STRING, dt STRING, d DATE")})
    assert partition_prefix(info, filters) == prefix
