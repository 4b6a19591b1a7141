"""``CALL ushas.system.<procedure>(...)`` end to end in the shared session: every procedure does what it says
and answers rows saying what it did; bad calls get Spark's own error classes (table-driven)."""
from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.procedures import PROCEDURES


def call(spark: Any, cat: str, text: str) -> list[Any]:
    return spark.sql(f"CALL {cat}.system.{text}").collect()


def condition(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as caught:
        spark.sql(sql).collect()
    get = getattr(caught.value, "getCondition", None)
    assert get is not None, f"{sql}: not a Spark error: {caught.value!r}"
    return str(get())


def test_every_declared_procedure_is_listed(spark: Any, cat: str) -> None:
    shown = {r.procedure_name for r in spark.sql(f"SHOW PROCEDURES IN {cat}.system").collect()}
    assert shown == set(PROCEDURES)
    assert {"undrop_table", "purge", "repair_table", "restore_table", "set_tag", "unset_tag", "set_property",
            "expire_changes", "refresh_table", "analyze_table"} <= shown
    described = spark.sql(f"DESCRIBE PROCEDURE {cat}.system.restore_table").collect()
    assert "restore_table" in described[0][0]


#: (call, Spark's error class): arity, names, types and unknown procedures are Spark's own checks
BAD_CALLS = [
    ("CALL {cat}.system.no_such_procedure('x')", "FAILED_TO_LOAD_ROUTINE"),
    ("CALL {cat}.other.undrop_table('x')", "FAILED_TO_LOAD_ROUTINE"),
    ("CALL {cat}.system.undrop_table()", "REQUIRED_PARAMETER_NOT_FOUND"),
    ("CALL {cat}.system.undrop_table('a.b', 'c')", "WRONG_NUM_ARGS.WITHOUT_SUGGESTION"),
    ("CALL {cat}.system.undrop_table(tabel => 'a.b')", "UNRECOGNIZED_PARAMETER_NAME"),
    ("CALL {cat}.system.undrop_table(table => 'a.b', table => 'a.c')",
     "DUPLICATE_ROUTINE_PARAMETER_ASSIGNMENT.DOUBLE_NAMED_ARGUMENT_REFERENCE"),
    ("CALL {cat}.system.restore_table(table => 'a.b', 3)", "UNEXPECTED_POSITIONAL_ARGUMENT"),
    ("CALL {cat}.system.restore_table('a.b', array(1))", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("CALL {cat}.system.restore_table('{db}.nope', 1)", "TABLE_OR_VIEW_NOT_FOUND"),
    ("CALL {cat}.system.refresh_table('no_such_db_x.t')", "SCHEMA_NOT_FOUND"),
    ("CALL {cat}.system.undrop_table('{db}.never_dropped')", "USHAS_NotFound"),
    ("CALL {cat}.system.restore_table('{db}.t')", "USHAS_InvalidArgument"),
    ("CALL {cat}.system.restore_table('{db}.t', 99)", "USHAS_NoSuchVersion"),
    ("CALL {cat}.system.repair_table('{db}.t', 'everything')", "USHAS_InvalidArgument"),
    ("CALL {cat}.system.repair_table('{db}.flat')", "USHAS_InvalidArgument"),
    ("CALL {cat}.system.refresh_table('other_catalog.{db}.t')", "USHAS_InvalidArgument"),
    ("CALL {cat}.system.set_tag('{db}.t.no_column', 'pii')", "USHAS_NotFound"),
    ("CALL {cat}.system.analyze_table('{db}.t', array('no_column'))", "USHAS_InvalidArgument"),
    ("CALL {cat}.system.purge(table => '{db}.t', database => '{db}')", "USHAS_InvalidArgument"),
]


def test_bad_calls_get_sparks_error_classes(spark: Any, cat: str, db: str) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.t (a INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {cat}.{db}.flat (a INT) USING parquet")
    got = {sql: condition(spark, sql.format(db=db, cat=cat)) for sql, _ in BAD_CALLS}
    assert got == dict(BAD_CALLS)


def test_undrop_table_brings_the_table_back_with_its_rows(spark: Any, cat: str, db: str) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.t (a INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {cat}.{db}.t VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"DROP TABLE {cat}.{db}.t")
    (row,) = call(spark, cat, f"undrop_table(table => '{db}.t')")
    assert (row.action, row.object) == ("UNDROP TABLE", f"ushas.{db}.t") and row.version > 1
    assert sorted(r.a for r in spark.sql(f"SELECT a FROM {cat}.{db}.t").collect()) == [1, 2]
    assert condition(spark, f"CALL {cat}.system.undrop_table('{db}.t')") == "USHAS_NotFound"


def test_purge_a_table_a_database_and_only_what_is_older(spark: Any, cat: str, db: str, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.t (a INT) USING parquet")
    spark.sql(f"INSERT INTO {cat}.{db}.t VALUES (1)")
    location = spark.sql(f"DESC EXTENDED {cat}.{db}.t").where("col_name = 'Location'").first().data_type
    spark.sql(f"DROP TABLE {cat}.{db}.t")
    (kept,) = call(spark, cat, f"purge(table => '{db}.t', older_than => TIMESTAMP '2000-01-01 00:00:00')")
    assert kept.purged_objects == 0
    (row,) = call(spark, cat, f"purge(table => '{db}.t')")
    assert row.purged_objects == 1 and row.deleted_paths >= 1 and row.unreachable == []
    assert not os.path.exists(location.removeprefix("file:"))
    assert condition(spark, f"CALL {cat}.system.undrop_table('{db}.t')") == "USHAS_NotFound"

    other = "p_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE {cat}.{other}")
    spark.sql(f"CREATE TABLE {cat}.{other}.x (a INT) USING parquet")
    spark.sql(f"DROP NAMESPACE {cat}.{other} CASCADE")
    (row,) = call(spark, cat, f"purge(database => '{other}')")
    assert row.purged_objects == 1


def _write_partition(spark: Any, root: Path, dt_value: str, rows: int) -> None:
    spark.range(rows).selectExpr("CAST(id AS INT) AS a").write.mode("overwrite").parquet(str(root / f"dt={dt_value}"))


def test_repair_table_registers_and_unregisters_directories(spark: Any, cat: str, db: str, tmp_path: Path) -> None:
    root = tmp_path / "ext"
    spark.sql(f"CREATE TABLE {cat}.{db}.t (a INT, dt STRING) USING parquet PARTITIONED BY (dt) LOCATION '{root}'")
    _write_partition(spark, root, "2024-01-01", 2)
    _write_partition(spark, root, "2024-01-02", 3)
    (row,) = call(spark, cat, f"repair_table('{db}.t')")
    assert (row.mode, row.listed, row.added, row.dropped, row.invalid) == ("add", 2, 2, 0, 0)
    assert spark.sql(f"SELECT count(*) FROM {cat}.{db}.t").first()[0] == 5
    import shutil

    shutil.rmtree(root / "dt=2024-01-01")
    (row,) = call(spark, cat, f"repair_table(table => '{db}.t', mode => 'sync')")
    assert (row.added, row.dropped) == (0, 1)
    assert [r.partition for r in spark.sql(f"SHOW PARTITIONS {cat}.{db}.t").collect()] == ["dt=2024-01-02"]


def test_restore_table_is_a_new_version_and_undoable(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    then = ms.get_table(("ushas", db, "t")).version
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (c STRING)")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('k' = 'v')")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') VALUES (10, 'new')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'x', 'c')")
    latest = ms.get_table(("ushas", db, "t")).version

    (row,) = call(spark, cat, f"restore_table('{db}.t', {then})")
    assert (row.restored_version, row.version) == (then, latest + 1)
    assert row.schema_changed and row.properties_changed
    assert (row.partitions_added, row.partitions_dropped, row.partitions_replaced) == (0, 1, 1)
    assert spark.table(t).columns == ["a", "dt"]
    assert sorted(tuple(r) for r in spark.table(t).collect()) == [(1, "a"), (2, "b")]
    assert "k" not in ms.get_table(("ushas", db, "t")).properties
    assert ms.history(("ushas", db, "t"), limit=1)[0].operation == "RESTORE"

    (row,) = call(spark, cat, f"restore_table(table => '{db}.t', version => {latest})")  # the restore undone
    assert row.version == latest + 2
    assert spark.table(t).columns == ["a", "c", "dt"]
    assert sorted(tuple(r) for r in spark.table(t).collect()) == [(2, None, "b"), (3, "x", "c"), (10, "new", "a")]
    # the overwritten files the first restore brought back are let go again, and the live ones kept
    call(spark, cat, f"purge(table => '{db}.t')")
    assert spark.table(t).count() == 3


def test_restore_table_by_timestamp(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT) USING parquet")
    time.sleep(0.01)
    micros = int(time.time() * 1_000_000)
    time.sleep(0.01)
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (b STRING)")
    (row,) = call(spark, cat, f"restore_table('{db}.t', timestamp => timestamp_micros({micros}))")
    assert row.restored_version == 1 and row.schema_changed
    assert spark.table(t).columns == ["a"]


def test_tags_and_properties_on_any_object(spark: Any, cat: str, db: str, ms: Any) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.t (customer_id BIGINT, address STRUCT<city: STRING>) USING parquet")
    cases = [(f"{db}.t.customer_id", ["ushas", db, "t", "customer_id"]), (f"{db}.t", ["ushas", db, "t"]),
             (f"{db}.t.address.city", ["ushas", db, "t", "address", "city"]), (db, ["ushas", db])]
    for text, parts in cases:
        (row,) = call(spark, cat, f"set_tag('{text}', 'pii')")
        assert (row.action, row.object, row.tags) == ("SET TAG", ".".join(parts), ["pii"])
        assert "pii" in ms.metadata.get(parts).user.tags
        (row,) = call(spark, cat, f"set_property(object => '{text}', key => 'owner_team', value => 'growth')")
        assert row.properties == {"owner_team": "growth"}
        assert ms.metadata.get(parts).user.properties["owner_team"] == "growth"
        (row,) = call(spark, cat, f"unset_tag('{text}', 'pii')")
        assert row.tags == [] and "pii" not in ms.metadata.get(parts).user.tags
        (row,) = call(spark, cat, f"set_property('{text}', 'owner_team')")  # NULL value: removed
        assert row.properties == {} and "owner_team" not in ms.metadata.get(parts).user.properties
    (row,) = call(spark, cat, "set_property('', 'tier', 'gold')")  # '' is the catalog itself
    assert row.object == "ushas" and ms.metadata.get(["ushas"]).user.properties["tier"] == "gold"
    call(spark, cat, "set_property('', 'tier')")


def test_expire_changes_removes_events_before_the_time(spark: Any, cat: str, db: str, ms: Any) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.before (a INT) USING parquet")
    time.sleep(0.01)
    micros = int(time.time() * 1_000_000)
    time.sleep(0.01)
    spark.sql(f"CREATE TABLE {cat}.{db}.after (a INT) USING parquet")
    (row,) = call(spark, cat, f"expire_changes(timestamp_micros({micros}))")
    assert row.removed >= 1 and row.last_removed
    names = {c.name for c in ms.changes()}
    assert f"ushas.{db}.after" in names and f"ushas.{db}.before" not in names
    (row,) = call(spark, cat, "expire_changes(older_than => TIMESTAMP '2000-01-01 00:00:00')")
    assert (row.removed, row.last_removed) == (0, None)


def test_refresh_table_drops_the_cached_relation(spark: Any, db: str, spark_dirs: dict[str, Path]) -> None:
    """A catalog instance that serves its cached relations without asking (``cache.check=false``) sees a
    change made elsewhere (here: through another catalog instance, as another session would) after
    ``refresh_table``, as after REFRESH TABLE."""
    name = "ushas_nocheck"
    for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{spark_dirs['store']}",
                       ".catalog": "ushas", ".warehouse": str(spark_dirs["warehouse"]),
                       ".cache.check": "false"}.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)
    spark.sql(f"CREATE TABLE ushas.{db}.t (a INT) USING parquet")
    assert spark.table(f"{name}.{db}.t").columns == ["a"]
    spark.sql(f"ALTER TABLE ushas.{db}.t ADD COLUMNS (b STRING)")
    assert spark.table(f"{name}.{db}.t").columns == ["a"]  # served from its cache
    (row,) = spark.sql(f"CALL {name}.system.refresh_table('{db}.t')").collect()
    assert (row.action, row.object) == ("REFRESH TABLE", f"ushas.{db}.t")
    assert spark.table(f"{name}.{db}.t").columns == ["a", "b"]


def test_analyze_table_stores_table_partition_and_column_statistics(spark: Any, cat: str, db: str, ms: Any) -> None:
    t = f"{cat}.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT, s STRING, d DATE, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', DATE '2024-01-01', 'a'), (2, NULL, NULL, 'a'), "
              f"(3, 'zzz', DATE '2024-03-01', 'b')")
    (row,) = call(spark, cat, f"analyze_table('{db}.t')")
    assert (row.rows, row.columns, row.partitions) == (3, ["a", "s", "d", "dt"], 2)
    props = ms.get_table(("ushas", db, "t")).properties
    stats = {k.removeprefix("spark.sql.statistics."): v for k, v in props.items() if k.startswith("spark.sql.stat")}
    assert stats["numRows"] == "3" and int(stats["totalSize"]) > 0  # the bytes the writes recorded
    assert {k: stats[f"colStats.a.{k}"] for k in ("min", "max", "nullCount", "distinctCount")} == {
        "min": "1", "max": "3", "nullCount": "0", "distinctCount": "3"}
    assert (stats["colStats.s.nullCount"], stats["colStats.s.maxLen"], stats["colStats.s.avgLen"]) == ("1", "3", "2")
    assert (stats["colStats.d.min"], stats["colStats.d.max"]) == ("2024-01-01", "2024-03-01")
    assert {p.spec["dt"]: p.rows for p in ms.list_partitions(("ushas", db, "t"))} == {"a": 2, "b": 1}
    assert ms.history(("ushas", db, "t"), limit=1)[0].operation == "ANALYZE TABLE"
    # DESCRIBE shows them (Spark prints a V2 column's min / max through Optional.toString: "Optional[1]")
    desc = {r.info_name: r.info_value for r in spark.sql(f"DESC FORMATTED {t} a").collect()}
    assert (desc["num_nulls"], desc["distinct_count"], desc["max_col_len"]) == ("0", "3", "4")
    assert desc["min"] in ("1", "Optional[1]") and desc["max"] in ("3", "Optional[3]")
    shown = {r.col_name: r.data_type for r in spark.sql(f"DESC EXTENDED {t}").collect()}
    assert shown["Statistics"] == f"{stats['totalSize']} bytes, 3 rows"
    # the optimizer uses the row count (with plan statistics on, as for Spark's own tables)
    spark.conf.set("spark.sql.cbo.planStats.enabled", "true")
    try:
        plan = spark.sql(f"EXPLAIN COST SELECT * FROM {t}").first()[0]
    finally:
        spark.conf.unset("spark.sql.cbo.planStats.enabled")
    assert "rowCount=3" in plan

    spark.sql(f"INSERT INTO {t} VALUES (4, 'q', NULL, 'b')")
    (row,) = call(spark, cat, f"analyze_table(table => '{db}.t', partition => map('dt', 'b'))")
    assert (row.rows, row.columns, row.partitions) == (2, [], 1)
    assert {p.spec["dt"]: p.rows for p in ms.list_partitions(("ushas", db, "t"))}["b"] == 2
    (row,) = call(spark, cat, f"analyze_table('{db}.t', array('A'))")  # names as Spark resolves them
    assert row.columns == ["a"]


def test_a_call_is_one_transaction(spark: Any, cat: str, db: str, ms: Any) -> None:
    """restore_table writes schema, properties and partitions: all of it in the one RESTORE commit."""
    t = f"{cat}.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt = 'a')")
    before = ms.get_table(("ushas", db, "t")).version
    call(spark, cat, f"restore_table('{db}.t', 1)")
    after = ms.get_table(("ushas", db, "t"))
    assert after.version == before + 1
    assert list(ms.list_partitions(("ushas", db, "t"))) == []


def test_timestamps_are_utc_microseconds() -> None:
    from ushas_catalog.procedures.registry import from_micros, to_micros

    when = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone.utc)
    assert from_micros(to_micros(when)) == when
    assert to_micros(when.replace(tzinfo=None)) == to_micros(when)


@pytest.mark.slow
def test_config_only_spark_sql(spark: Any, db: str, ms: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    """``spark-sql -e`` with nothing but ``--conf``s (the shim launches its own Python bridge): a drop
    undone with CALL, its answer printed, the table read back."""
    from spark_processes import conf_args, run_spark, spark_bin

    t = f"ushas.{db}.t"
    spark.sql(f"CREATE TABLE {t} (a INT) USING parquet")
    spark.sql(f"INSERT INTO {t} VALUES (7)")
    spark.sql(f"DROP TABLE {t}")
    proc = run_spark([spark_bin("spark-sql"), "--master", "local[1]",
                      *conf_args(spark_dirs["store"], spark_dirs["warehouse"]),
                      "-e", f"CALL ushas.system.undrop_table(table => '{db}.t'); SELECT a FROM {t};"
                            f"CALL ushas.system.set_tag('{db}.t.a', 'pii');"
                            f"CALL ushas.system.analyze_table('{db}.t');"], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"UNDROP TABLE\tushas.{db}.t\t")
    assert lines[1] == "7"
    assert lines[2].startswith(f"SET TAG\tushas.{db}.t.a\ttagged pii\t")
    assert lines[3].startswith(f"ushas.{db}.t\t1\t")  # the JVM ran analyze_table's query between two calls
    assert spark.table(t).collect()[0].a == 7
    assert ms.get_table(("ushas", db, "t")).properties["spark.sql.statistics.numRows"] == "1"


def test_the_docs_list_every_procedure_with_its_parameters_and_columns() -> None:
    """docs/procedures.md cannot drift from the declarations: each procedure has its row, naming every
    parameter and result column."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "procedures.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `")}
    for name, proc in PROCEDURES.items():
        assert name in rows, f"docs/procedures.md has no row for {name}"
        missing = [w for w in [p.name for p in proc.params] + [c.name for c in proc.result]
                   if f"`{w}`" not in rows[name]]
        assert missing == [], f"docs/procedures.md, {name}: {missing} not named"
