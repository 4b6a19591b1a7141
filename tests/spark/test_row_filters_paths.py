"""Paths to a table's files under a row filter and column masks: bob cannot place a table or partition in
governed storage, nor read, write or stream the table's files by path; external locations need READ FILES /
WRITE FILES / CREATE EXTERNAL TABLE.
Shared set-up: :mod:`tests.spark.row_filters_support`."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.spark.row_filters_support import people_with_policies, ALL, RAW_SSNS, rows, files_under, insufficient, denied


@pytest.fixture(scope="module")
def rm(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Any]:
    yield from people_with_policies(spark, spark_dirs)


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


def test_no_partition_outside_its_table_in_no_declared_location(spark: Any, rm: Any, tmp_path: Path) -> None:
    """Before any location is declared, bob's partitions still stay in his table: ADD PARTITION … LOCATION into
    another user's directory (outside governed storage) is refused, naming the path, and writes nothing (on the old
    code it went through, and a purge of the partition deleted files there). Spark refuses PARTITION … SET LOCATION
    for v2 tables itself; the metastore's move of a partition is tested in tests/service/test_partition_locations.py."""
    assert rm.ms.list_locations() == []
    others = tmp_path / "others"
    spark.sql(f"CREATE TABLE {rm.bob}.db.own2 (id INT, p STRING) USING parquet PARTITIONED BY (p) "
              f"LOCATION '{tmp_path / 'mine2'}'")
    spark.sql(f"ALTER TABLE {rm.bob}.db.own2 ADD PARTITION (p = 'y')")
    version = rm.ms.get_table(("main", "db", "own2")).version
    with pytest.raises(Exception, match="INSUFFICIENT_PERMISSIONS") as e:
        spark.sql(f"ALTER TABLE {rm.bob}.db.own2 ADD PARTITION (p = 'x') LOCATION '{others}'").collect()
    assert str(others) in str(e.value) and "in no declared external location" in str(e.value)
    assert rm.ms.get_table(("main", "db", "own2")).version == version
    assert [p.values["p"] for p in rm.ms.list_partitions(("main", "db", "own2"))] == ["y"]


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
