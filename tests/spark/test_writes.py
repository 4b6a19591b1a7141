"""Every DataFrame / SQL write form into Ushas tables (a V2 batch write on Spark's file writers):
partitions registered with files / bytes, overwritten partitions replaced (old files gone), stats of
unpartitioned tables, failed writes leaving the metadata untouched, RENAME TO of managed tables."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality

pytestmark = pytest.mark.spark

SCHEMA = "id int, dt string"


@pytest.fixture
def dynamic(spark: Any) -> Any:
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    yield
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")


def data_files(location: str) -> list[str]:
    """Data files under a location (recursively), as paths relative to it."""
    root = location.removeprefix("file:")
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.relpath(os.path.join(d, n), root) for n in names if not n.startswith((".", "_"))]
    return sorted(out)


def expect(spark: Any, table: str, data: list[tuple], schema: str = SCHEMA) -> None:
    """A fresh read of the table is exactly ``data``."""
    actual = spark.table(table).select(*[c.split()[0] for c in schema.split(",")])
    assert_df_equality(actual, spark.createDataFrame(data, schema), ignore_row_order=True, ignore_nullable=True)


def relative(path: str, table_location: str) -> str:
    return os.path.relpath(path.removeprefix("file:"), table_location.removeprefix("file:"))


def kept_files(ms: Any, name: tuple[str, str, str], table_location: str) -> list[str]:
    """The files overwrites / drops of the table let go, kept on disk until purge (relative paths)."""
    return sorted(relative(f.path, table_location) for e in ms.garbage(name) for f in e.files)


def check_registered(ms: Any, name: tuple[str, str, str], table_location: str) -> dict[str, Any]:
    """Every registered partition's file list is its files / bytes, on disk; every file on disk is in a
    registered partition's list or kept until purge (replaced by an overwrite). Returns the partitions
    by their first value."""
    parts = list(ms.list_partitions(name))
    on_disk = data_files(table_location)
    registered = []
    for p in parts:
        assert p.data_files is not None, p.spec
        assert p.files == len(p.data_files), (p.spec, p.data_files)
        assert p.bytes == sum(os.path.getsize(f.path.removeprefix("file:")) for f in p.data_files)
        registered += [relative(f.path, table_location) for f in p.data_files]
    assert sorted(registered + kept_files(ms, name, table_location)) == on_disk
    return {"/".join(p.spec.values()): p for p in parts}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_writeto_append_overwrite_partitions_overwrite(spark: Any, db: str, ms: Any, fmt: str) -> None:
    from pyspark.sql.functions import col

    t, name = f"ushas.{db}.v2", ("ushas", db, "v2")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING {fmt} PARTITIONED BY (dt)")
    location = ms.get_table(name).location

    spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA).writeTo(t).append()
    spark.createDataFrame([(3, "a")], SCHEMA).writeTo(t).append()
    expect(spark, t, [(1, "a"), (2, "b"), (3, "a")])
    parts = check_registered(ms, name, location)
    assert sorted(parts) == ["a", "b"] and parts["a"].files == 2 and parts["a"].bytes > 0
    old_a = [relative(f.path, location) for f in parts["a"].data_files]

    spark.createDataFrame([(4, "a"), (5, "c")], SCHEMA).writeTo(t).overwritePartitions()  # a replaced, c new
    expect(spark, t, [(2, "b"), (4, "a"), (5, "c")])
    parts = check_registered(ms, name, location)
    assert sorted(parts) == ["a", "b", "c"] and parts["a"].files == 1 and parts["a"].rows is None
    # the old files are in no list at once, and kept until purge
    assert not set(old_a) & {relative(f.path, location) for f in parts["a"].data_files}
    assert set(old_a) <= set(kept_files(ms, name, location)) <= set(data_files(location))

    spark.createDataFrame([(6, "b")], SCHEMA).writeTo(t).overwrite(col("dt").isin("b", "c"))  # c dropped
    expect(spark, t, [(4, "a"), (6, "b")])
    parts = check_registered(ms, name, location)
    assert sorted(parts) == ["a", "b"] and parts["b"].rows == 1
    assert all(f.startswith("dt=c/") or f.startswith("dt=a/") or f.startswith("dt=b/")
               for f in kept_files(ms, name, location))
    assert any(f.startswith("dt=c/") for f in kept_files(ms, name, location))  # dt=c: unreachable, kept

    spark.createDataFrame([(7, "d")], SCHEMA).writeTo(t).overwrite(col("dt") == "zz")  # replaces nothing
    expect(spark, t, [(4, "a"), (6, "b"), (7, "d")])
    assert sorted(check_registered(ms, name, location)) == ["a", "b", "d"]


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_insert_into_overwrite_dynamic_and_static(spark: Any, db: str, ms: Any, fmt: str, dynamic: Any) -> None:
    t, name = f"ushas.{db}.ii", ("ushas", db, "ii")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING {fmt} PARTITIONED BY (dt)")
    location = ms.get_table(name).location
    spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA).write.insertInto(t)

    # dynamic (the fixture's mode): only the partitions written are replaced
    spark.createDataFrame([(3, "b"), (4, "c")], SCHEMA).write.insertInto(t, overwrite=True)
    expect(spark, t, [(1, "a"), (3, "b"), (4, "c")])
    parts = check_registered(ms, name, location)
    assert sorted(parts) == ["a", "b", "c"] and parts["b"].files == 1

    # SQL dynamic overwrite takes the same path
    spark.createDataFrame([(5, "c")], SCHEMA).createOrReplaceTempView("ii_src")
    spark.sql(f"INSERT OVERWRITE {t} SELECT * FROM ii_src")
    expect(spark, t, [(1, "a"), (3, "b"), (5, "c")])

    # static: the whole table is replaced
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    spark.createDataFrame([(6, "d")], SCHEMA).write.mode("overwrite").insertInto(t)
    expect(spark, t, [(6, "d")])
    parts = check_registered(ms, name, location)
    assert sorted(parts) == ["d"] and parts["d"].files == 1 and parts["d"].rows == 1
    assert all(relative(f.path, location).startswith("dt=d/") for f in parts["d"].data_files)

    # static partition overwrite in SQL
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt='d') SELECT 7")
    spark.sql(f"INSERT INTO {t} PARTITION (dt='e') SELECT 8")
    expect(spark, t, [(7, "d"), (8, "e")])
    assert sorted(check_registered(ms, name, location)) == ["d", "e"]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_unpartitioned_writes_record_stats(spark: Any, db: str, ms: Any, fmt: str) -> None:
    from pyspark.sql.functions import lit

    t, name = f"ushas.{db}.u", ("ushas", db, "u")
    schema = "id int, s string"
    spark.sql(f"CREATE TABLE {t} (id INT, s STRING) USING {fmt}")
    location = ms.get_table(name).location

    def rows_recorded() -> str | None:
        """numFiles / totalSize are the recorded files' (on disk); returns numRows."""
        props = ms.get_table(name).properties
        files = [relative(f.path, location) for f in ms.table_data_files(name)]
        assert set(files) <= set(data_files(location))
        assert props.get("numFiles") == str(len(files))
        assert props.get("totalSize") == str(sum(os.path.getsize(os.path.join(location.removeprefix("file:"), f))
                                                 for f in files))
        return props.get("numRows")

    spark.createDataFrame([(1, "x"), (2, "y")], schema).writeTo(t).append()
    assert rows_recorded() == "2"
    spark.sql(f"INSERT INTO {t} VALUES (3, 'z')")
    spark.createDataFrame([(4, "w")], schema).write.insertInto(t)
    expect(spark, t, [(1, "x"), (2, "y"), (3, "z"), (4, "w")], schema)
    assert rows_recorded() == "4"
    old = [relative(f.path, location) for f in ms.table_data_files(name)]

    spark.createDataFrame([(5, "v")], schema).writeTo(t).overwritePartitions()
    expect(spark, t, [(5, "v")], schema)
    assert rows_recorded() == "1" and not set(old) & {relative(f.path, location) for f in ms.table_data_files(name)}
    assert set(old) <= set(data_files(location))  # unreachable, kept until purge
    spark.createDataFrame([(6, "u"), (7, "t")], schema).writeTo(t).overwrite(lit(True))
    expect(spark, t, [(6, "u"), (7, "t")], schema)
    assert rows_recorded() == "2"
    spark.sql(f"INSERT OVERWRITE {t} SELECT id + 1, s FROM (SELECT 7 AS id, 't' AS s)")
    expect(spark, t, [(8, "t")], schema)
    assert rows_recorded() == "1"
    spark.createDataFrame([(9, "s")], schema).write.mode("overwrite").insertInto(t)
    expect(spark, t, [(9, "s")], schema)
    assert rows_recorded() == "1"


def test_save_as_table_and_create(spark: Any, db: str, ms: Any) -> None:
    from pyspark.sql.functions import col

    t = f"ushas.{db}.s"
    spark.createDataFrame([(1, "a")], SCHEMA).write.partitionBy("dt").saveAsTable(t)
    spark.createDataFrame([(2, "b")], SCHEMA).write.mode("append").saveAsTable(t)
    expect(spark, t, [(1, "a"), (2, "b")])
    spark.createDataFrame([(9, "z")], SCHEMA).writeTo(f"ushas.{db}.c").partitionedBy(col("dt")).create()
    expect(spark, f"ushas.{db}.c", [(9, "z")])
    loc = ms.get_table(("ushas", db, "c")).location
    assert sorted(check_registered(ms, ("ushas", db, "c"), loc)) == ["z"]


def test_overwrite_by_data_column_is_refused(spark: Any, db: str, ms: Any) -> None:
    from pyspark.errors import AnalysisException
    from pyspark.sql.functions import col

    t, name = f"ushas.{db}.r", ("ushas", db, "r")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {t}u (id INT, dt STRING) USING parquet")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    before = data_files(ms.get_table(name).location)
    for target, cond in ((t, col("id") == 1), (f"{t}u", col("dt") == "a")):
        with pytest.raises(AnalysisException, match="only the partition columns"):
            spark.createDataFrame([(2, "a")], SCHEMA).writeTo(target).overwrite(cond)
    expect(spark, t, [(1, "a")])
    assert data_files(ms.get_table(name).location) == before


def test_failed_writes_leave_metadata_untouched(spark: Any, db: str, ms: Any) -> None:
    from pyspark.errors import AnalysisException
    from pyspark.sql.functions import col, udf

    t, name = f"ushas.{db}.f", ("ushas", db, "f")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    location = ms.get_table(name).location
    version = ms.get_table(name).version
    before = [p.to_json() for p in ms.list_partitions(name)]
    files = data_files(location)

    # a value that cannot be cast: refused at analysis
    bad = spark.createDataFrame([("x", "a")], "id string, dt string")
    with pytest.raises(AnalysisException, match="INCOMPATIBLE_DATA_FOR_TABLE|CANNOT_UP_CAST|cast"):
        bad.writeTo(t).overwritePartitions()

    # a task failure in the middle of the write
    @udf("int")
    def explode_on_3(v: int) -> int:
        if v == 3:
            raise ValueError("task failure on purpose")
        return v

    failing = spark.createDataFrame([(3, "a"), (4, "c")], SCHEMA).select(explode_on_3(col("id")).alias("id"), "dt")
    with pytest.raises(Exception, match="task failure on purpose"):
        failing.writeTo(t).overwritePartitions()
    with pytest.raises(Exception, match="task failure on purpose"):
        failing.write.mode("overwrite").insertInto(t)

    assert ms.get_table(name).version == version
    assert [p.to_json() for p in ms.list_partitions(name)] == before
    assert data_files(location) == files
    expect(spark, t, [(1, "a"), (2, "b")])


def test_rename_moves_managed_data_keeps_external(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.m (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.m VALUES (1, 'a')")
    old = ms.get_table(("ushas", db, "m")).location
    spark.sql(f"ALTER TABLE ushas.{db}.m RENAME TO {db}.m2")
    new = ms.get_table(("ushas", db, "m2")).location
    assert new == old[: -len("/m")] + "/m2" and not os.path.exists(old.removeprefix("file:"))
    assert data_files(new) and [p.location for p in ms.list_partitions(("ushas", db, "m2"))] == [f"{new}/dt=a"]
    expect(spark, f"ushas.{db}.m2", [(1, "a")])
    spark.sql(f"INSERT INTO ushas.{db}.m2 VALUES (2, 'b')")  # writes go to the new location
    expect(spark, f"ushas.{db}.m2", [(1, "a"), (2, "b")])
    assert any(f.startswith("dt=b/") for f in data_files(new)) and not os.path.exists(old.removeprefix("file:"))

    # the new location is taken: the rename fails, the table keeps its name and location
    os.makedirs(new.removeprefix("file:")[: -len("/m2")] + "/m3")
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"ALTER TABLE ushas.{db}.m2 RENAME TO {db}.m3")
    assert ms.table_exists(("ushas", db, "m2")) and not ms.table_exists(("ushas", db, "m3"))
    assert ms.get_table(("ushas", db, "m2")).location == new
    expect(spark, f"ushas.{db}.m2", [(1, "a"), (2, "b")])

    spark.sql(f"CREATE TABLE ushas.{db}.e (id INT, dt STRING) USING json LOCATION '{tmp_path}/ext'")
    spark.sql(f"INSERT INTO ushas.{db}.e VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE ushas.{db}.e RENAME TO {db}.e2")
    assert ms.get_table(("ushas", db, "e2")).location == f"file:{tmp_path}/ext"
    expect(spark, f"ushas.{db}.e2", [(3, "c")])


def test_many_partition_writes_place_whole_directories_and_cluster_by_default(spark: Any, db: str, ms: Any) -> None:
    """New partitions (two levels, some parents already there) are moved into place whole, existing ones
    file by file: every partition lists exactly its files, every file on disk is registered. With
    ``write.distribution-mode=hash``, and without the property (Iceberg's default), each partition of a
    write is one file; with ``none``, one per task."""
    src = "SELECT id, CAST(id % 3 AS STRING) AS dt, CAST(id % 4 AS INT) AS h FROM range(0, {n}, 1, 2)"
    files = {}
    for mode in ("none", "hash", "default"):
        table = f"ushas.{db}.spread_{mode}"
        props = "" if mode == "default" else f" TBLPROPERTIES ('write.distribution-mode' = '{mode}')"
        spark.sql(f"CREATE TABLE {table} (id BIGINT, dt STRING, h INT) USING parquet PARTITIONED BY (dt, h){props}")
        spark.sql(f"INSERT INTO {table} " + src.format(n=24))  # 12 partitions, each from both tasks
        spark.sql(f"INSERT INTO {table} " + src.format(n=48).replace("id % 4", "id % 8"))  # 12 more, 12 again
        name = ("ushas", db, f"spread_{mode}")
        parts = check_registered(ms, name, location_of_table(ms, name))
        assert len(parts) == 24
        assert spark.sql(f"SELECT count(*), sum(id) FROM {table}").collect()[0] == (72, sum(range(24)) + sum(range(48)))
        files[mode] = {k: p.files for k, p in parts.items()}
    assert files["hash"]["0/0"] == 2 and files["hash"]["0/4"] == 1  # one file per write
    assert files["default"] == files["hash"]
    assert files["none"]["0/0"] == 4 and files["none"]["0/4"] == 2  # one per task per write


def test_rows_the_driver_holds_are_written_without_a_shuffle(spark: Any, db: str, ms: Any) -> None:
    """INSERT … VALUES into a table clustered by partition (the default): no shuffle (the local rows go to one
    task, io.ushas.spark.LocalRowsWrite), still one file per partition; rows from a query are shuffled."""
    table, name = f"ushas.{db}.local_rows", ("ushas", db, "local_rows")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    values = "VALUES (1, 'a'), (2, 'b'), (3, 'a'), (4, 'c'), (5, 'b')"
    plan = "\n".join(r[0] for r in spark.sql(f"EXPLAIN INSERT INTO {table} {values}").collect())
    assert "Exchange" not in plan and "Coalesce 1" in plan, plan
    queried = "\n".join(r[0] for r in spark.sql(
        f"EXPLAIN INSERT INTO {table} SELECT id, CAST(id % 3 AS STRING) FROM range(0, 6, 1, 2)").collect())
    assert "REBALANCE_PARTITIONS_BY_COL" in queried, queried
    spark.sql(f"INSERT INTO {table} {values}")
    parts = check_registered(ms, name, location_of_table(ms, name))
    assert {k: p.files for k, p in parts.items()} == {"a": 1, "b": 1, "c": 1}
    assert sorted(spark.sql(f"SELECT id FROM {table}").toPandas()["id"]) == [1, 2, 3, 4, 5]


def location_of_table(ms: Any, name: tuple[str, str, str]) -> str:
    return str(ms.get_table(name).location)


def test_appends_list_a_partition_directory_only_when_its_files_are_not_recorded(spark: Any, db: str,
                                                                               ms: Any) -> None:
    """An append into partitions whose files are recorded sends no listing of their directories and adds the
    new files to the recorded lists; one into a partition whose files were never recorded (ADD PARTITION)
    makes the catalog ask the shim to list it, then keeps what was there: files put there by hand are still
    read; a direct write (the default on file: tables) records them with its own from then on (its
    committed files never depend on a listing, issue 38), the staged path keeps the directory listed; an
    empty one records its files from then on."""
    import shutil

    t = f"ushas.{db}.mixed"
    name = ("ushas", db, "mixed")
    spark.sql(f"CREATE TABLE {t} ({SCHEMA}) USING parquet PARTITIONED BY (dt)")
    spark.createDataFrame([(1, "a"), (2, "h"), (3, "e")], SCHEMA).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='m') PARTITION (dt='n')")  # files not recorded
    loc = {p.values["dt"]: p.location for p in ms.list_partitions(name)}
    by_hand = [f for f in data_files(loc["h"]) if f.endswith(".parquet")][0]
    os.makedirs(loc["m"].removeprefix("file:"), exist_ok=True)
    shutil.copy(os.path.join(loc["h"].removeprefix("file:"), by_hand), loc["m"].removeprefix("file:"))
    spark.createDataFrame([(4, "a"), (5, "m"), (6, "n")], SCHEMA).writeTo(t).append()
    expect(spark, t, [(1, "a"), (2, "h"), (3, "e"), (4, "a"), (5, "m"), (2, "m"), (6, "n")])
    parts = {p.values["dt"]: p for p in ms.list_partitions(name)}
    assert len(parts["a"].data_files or []) == 2 and parts["a"].files == 2
    # a file no write recorded, found at commit: recorded with the direct write's
    assert by_hand in {os.path.basename(f.path) for f in parts["m"].data_files or []}
    assert parts["m"].files == 2 and len(parts["m"].data_files or []) == 2
    assert len(parts["n"].data_files or []) == 1
    history = ms.history(name)
    assert history[0].operation == "APPEND" and history[0].detail.get("replaced") == 3
    spark.createDataFrame([(7, "a")], SCHEMA).writeTo(t).append()  # recorded: appended without a listing
    a = ms.get_partition(name, {"dt": "a"})
    assert (len(a.data_files or []), a.files, a.rows) == (3, 3, None)
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'a'").first()[0] == 3
    # the staged path (ushas.write.direct=false) keeps a directory with files no write recorded listed
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='p')")
    p_dir = ms.get_partition(name, {"dt": "p"}).location.removeprefix("file:")
    os.makedirs(p_dir, exist_ok=True)
    shutil.copy(os.path.join(loc["h"].removeprefix("file:"), by_hand), p_dir)
    spark.createDataFrame([(8, "p")], SCHEMA).writeTo(t).option("ushas.write.direct", "false").append()
    p = ms.get_partition(name, {"dt": "p"})
    assert p.data_files is None and p.files == 2
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'p'").first()[0] == 2


def test_overwrites_list_a_partition_directory_only_when_its_files_are_not_recorded(spark: Any, db: str,
                                                                                    ms: Any) -> None:
    """A dynamic INSERT OVERWRITE sends no listing of the directories it writes into (the replaced partitions'
    files are recorded); when a partition it replaces has files no write recorded (ADD PARTITION, a file put
    there by hand), the catalog asks the shim to list the directories and releases that file with the
    replaced ones."""
    import shutil

    t = f"ushas.{db}.mixed_ow"
    name = ("ushas", db, "mixed_ow")
    spark.sql(f"CREATE TABLE {t} ({SCHEMA}) USING parquet PARTITIONED BY (dt)")
    spark.createDataFrame([(1, "a"), (2, "h")], SCHEMA).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='m')")  # files not recorded
    loc = {p.values["dt"]: p.location.removeprefix("file:") for p in ms.list_partitions(name)}
    old_a = {f.path for f in ms.get_partition(name, {"dt": "a"}).data_files or []}
    by_hand = [f for f in data_files("file:" + loc["h"]) if f.endswith(".parquet")][0]
    os.makedirs(loc["m"], exist_ok=True)
    shutil.copy(os.path.join(loc["h"], by_hand), loc["m"])
    spark.createDataFrame([(3, "a"), (4, "m")], SCHEMA).writeTo(t).overwritePartitions()
    expect(spark, t, [(3, "a"), (2, "h"), (4, "m")])
    released = {f.path for g in ms.garbage(name) for f in g.files}
    assert old_a <= released and f"file:{os.path.join(loc['m'], by_hand)}" in released
    parts = {p.values["dt"]: p for p in ms.list_partitions(name)}
    assert len(parts["m"].data_files or []) == 1 and len(parts["a"].data_files or []) == 1
    # every partition recorded now: the next overwrite is planned without a listing, as before
    spark.createDataFrame([(5, "a"), (6, "n")], SCHEMA).writeTo(t).overwritePartitions()
    expect(spark, t, [(5, "a"), (2, "h"), (4, "m"), (6, "n")])
    assert {f.path for f in parts["a"].data_files or []} <= {f.path for g in ms.garbage(name) for f in g.files}


@pytest.mark.slow  # four writes of 60-120 partitions: ~30 s on the loaded 2-core machine
def test_writes_bigger_than_one_transaction_commit_whole(spark: Any, db: str, ms: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """With the chunking threshold and the engine's transaction size limit lowered (the bridge runs in this
    process), an INSERT creating 120 partitions (two partition columns), a dynamic INSERT OVERWRITE of 60 and a
    static one (``PARTITION (h=1)``: every h=1 partition dropped, 60 written) each commit in chunks as ONE
    table version, fenced (COMMITTED once), with every file registered and nothing left pending; an INSERT
    into existing partitions in chunks adds its files to theirs."""
    from ushas_catalog import bulk
    from ushas_catalog.data.write_fence import list_outcomes
    from ushas_catalog.kv.base import Limits
    from ushas_catalog.kv.sqlite import SqliteDatabase

    monkeypatch.setattr(bulk, "WRITE_BULK_AT", 50)
    monkeypatch.setattr(bulk, "WRITE_CHUNK", 16)
    monkeypatch.setattr(SqliteDatabase, "limits", Limits(transaction_bytes=200_000))
    table, name = f"ushas.{db}.many", ("ushas", db, "many")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, dt STRING, h INT) USING parquet PARTITIONED BY (dt, h)")
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id % 40 AS STRING), CAST(id % 3 AS INT) FROM range(0, 240, 1, 1)")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {table} SELECT id, CAST(id % 20 AS STRING), CAST(id % 3 AS INT) "
                  f"FROM range(1000, 1060, 1, 1)")
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    spark.sql(f"INSERT OVERWRITE {table} PARTITION (h = 1) SELECT id, CAST(id % 60 AS STRING) FROM range(5000, 5060, 1, 1)")
    history = ms.history(name)
    assert [(h.operation, h.detail.get("bulk")) for h in history[:3]] == [
        ("OVERWRITE PARTITIONS", True), ("OVERWRITE PARTITIONS", True), ("APPEND", True)]
    assert (history[0].detail["added"], history[0].detail["replaced"], history[0].detail["dropped"]) == (20, 40, 0)
    rows = spark.sql(f"SELECT h, count(*), count(DISTINCT dt), min(id) FROM {table} GROUP BY h ORDER BY h").collect()
    assert [tuple(r) for r in rows] == [(0, 60, 40, 21), (1, 60, 60, 5000), (2, 60, 40, 20)]
    assert len(spark.sql(f"SHOW PARTITIONS {table}").collect()) == 140
    check_registered(ms, name, location_of_table(ms, name))
    assert bulk.pending_work(ms) == []
    mine = [o for o in list_outcomes(ms, 0) if o.table == f"ushas.{db}.many"]
    assert sorted((o.state, o.version) for o in mine) == [("COMMITTED", v) for v in (2, 3, 4)]
    before = spark.sql(f"SELECT count(*) FROM {table}").first()[0]
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id % 40 AS STRING), CAST(id % 3 AS INT) "
              f"FROM range(9000, 9120, 1, 1)")  # into existing partitions too: their files appended in chunks
    h = ms.history(name)[0]
    assert (h.operation, h.detail.get("bulk"), h.detail["replaced"] > 0) == ("APPEND", True, True)
    assert spark.sql(f"SELECT count(*) FROM {table}").first()[0] == before + 120
    check_registered(ms, name, location_of_table(ms, name))
