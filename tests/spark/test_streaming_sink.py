"""Structured Streaming into catalog tables: ``writeStream.toTable("ushas.db.t")`` commits each
micro-batch as one fenced write keyed by (query id, batch id), so a batch that Spark runs again after
a restart registers nothing twice; complete mode; foreachBatch's idempotent batch writes
(``ushas.streamId`` / ``ushas.batchId``). The kill -9 test is in tests/faults/test_kill_stream.py."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark]


def feed(directory: Path, batches: list[list[int]]) -> None:
    """One JSON file per future micro-batch (read with maxFilesPerTrigger 1)."""
    directory.mkdir(parents=True, exist_ok=True)
    start = len(list(directory.glob("*.json")))
    for i, values in enumerate(batches):
        (directory / f"f{start + i:04d}.json").write_text("".join(json.dumps({"value": v}) + "\n" for v in values))


def source(spark: Any, directory: Path) -> Any:
    return (spark.readStream.schema("value BIGINT").option("maxFilesPerTrigger", 1).json(str(directory))
            .selectExpr("value", "CAST(value % 3 AS STRING) AS dt"))


def run_available(writer: Any, table: str) -> Any:
    """Run the query until its input is consumed (a file per batch), return the stopped query."""
    q = writer.trigger(processingTime="0 seconds").toTable(table)
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None, q.exception()
    return q


def values(spark: Any, table: str) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"SELECT value FROM {table}").collect())


def test_stream_into_partitioned_table_commits_each_batch_with_its_ids(spark: Any, db: str, ms: Any,
                                                                      tmp_path: Path) -> None:
    t = f"ushas.{db}.ev"
    spark.sql(f"CREATE TABLE {t} (value BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    feed(tmp_path / "in", [[0, 1, 2], [3, 4], [5]])
    q = run_available(source(spark, tmp_path / "in").writeStream.option("checkpointLocation", str(tmp_path / "ck")), t)
    assert values(spark, t) == [0, 1, 2, 3, 4, 5]
    assert sorted(p.spec["dt"] for p in ms.list_partitions(("ushas", db, "ev"))) == ["0", "1", "2"]
    appends = sorted((h for h in ms.history(("ushas", db, "ev")) if h.operation == "APPEND"), key=lambda h: h.version)
    assert [(h.detail["query_id"], h.detail["batch_id"]) for h in appends] == [(q.id, 0), (q.id, 1), (q.id, 2)]
    [progress] = ms.streams(("ushas", db, "ev"))
    assert (progress.query_id, progress.last_batch, progress.batches) == (q.id, 2, 3)
    assert progress.version == appends[-1].version
    # the same through Spark: the table's history and ushas.system.streams
    ids = [(r[0], int(r[1])) for r in spark.sql(
        f"SELECT get_json_object(detail, '$.query_id'), get_json_object(detail, '$.batch_id') FROM {t}.history "
        "WHERE operation = 'APPEND' ORDER BY version").collect()]
    assert ids == [(q.id, 0), (q.id, 1), (q.id, 2)]
    rows = spark.sql(f"SELECT query_id, last_batch, batches, version FROM ushas.system.streams "
                     f"WHERE table = '{t}'").collect()
    assert [tuple(r) for r in rows] == [(q.id, 2, 3, progress.version)]


def test_batch_rerun_after_restart_commits_nothing_twice(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    """The crash window: the catalog committed batch N but the driver died before Spark wrote N to its
    commit log. Removing the commit log's last entry recreates it: the restarted query runs N again."""
    t = f"ushas.{db}.ev"
    spark.sql(f"CREATE TABLE {t} (value BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    ck = tmp_path / "ck"
    feed(tmp_path / "in", [[0, 1], [2, 3]])
    writer = lambda: source(spark, tmp_path / "in").writeStream.option("checkpointLocation", str(ck))  # noqa: E731
    run_available(writer(), t)
    (ck / "commits" / "1").unlink()  # Spark never learnt that batch 1 committed
    for crc in (ck / "commits").glob(".1.crc"):
        crc.unlink()
    version = ms.get_table(("ushas", db, "ev")).version
    feed(tmp_path / "in", [[4]])
    q = run_available(writer(), t)
    assert values(spark, t) == [0, 1, 2, 3, 4]  # batch 1 once, batch 2 once
    info = ms.get_table(("ushas", db, "ev"))
    assert info.version == version + 1  # only batch 2 committed
    [progress] = ms.streams(("ushas", db, "ev"))
    assert (progress.query_id, progress.last_batch) == (q.id, 2)
    root = Path(info.location.removeprefix("file:"))
    on_disk = {f"file:{p}" for p in root.glob("dt=*/*") if not p.name.startswith((".", "_"))}
    listed = {f.path for p in ms.list_partitions(("ushas", db, "ev")) for f in p.data_files or []}
    assert on_disk == listed  # the re-run's files were taken back out


def test_complete_mode_replaces_the_rows_each_batch(spark: Any, db: str, tmp_path: Path) -> None:
    t = f"ushas.{db}.counts"
    spark.sql(f"CREATE TABLE {t} (dt STRING, n BIGINT) USING parquet")
    feed(tmp_path / "in", [[0, 1, 2], [3, 4, 6]])
    agg = source(spark, tmp_path / "in").groupBy("dt").count().selectExpr("dt", "count AS n")
    run_available(agg.writeStream.outputMode("complete").option("checkpointLocation", str(tmp_path / "ck")), t)
    assert sorted(tuple(r) for r in spark.sql(f"SELECT dt, n FROM {t}").collect()) == [("0", 3), ("1", 2), ("2", 1)]


def test_update_mode_is_refused_clearly(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    t = f"ushas.{db}.counts"
    spark.sql(f"CREATE TABLE {t} (dt STRING, n BIGINT) USING parquet")
    feed(tmp_path / "in", [[0]])
    agg = source(spark, tmp_path / "in").groupBy("dt").count().selectExpr("dt", "count AS n")
    from pyspark.errors import StreamingQueryException

    # Spark's own refusal (as for its file sink): the query stops before any batch is written
    with pytest.raises(StreamingQueryException, match="does not support Update mode"):
        q = agg.writeStream.outputMode("update").option("checkpointLocation", str(tmp_path / "ck")).toTable(t)
        try:
            q.processAllAvailable()
        finally:
            q.stop()
    assert ms.streams(("ushas", db, "counts")) == []


def test_foreach_batch_writes_commit_once_per_stream_and_batch_id(spark: Any, db: str, ms: Any,
                                                                  tmp_path: Path) -> None:
    t = f"ushas.{db}.ev"
    spark.sql(f"CREATE TABLE {t} (value BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    feed(tmp_path / "in", [[0, 1], [2]])

    def write(df: Any, batch_id: int) -> None:
        for _ in range(2):  # a retried foreachBatch body: the second write of the same batch id commits nothing
            df.writeTo(t).option("ushas.streamId", "etl-1").option("ushas.batchId", str(batch_id)).append()

    q = (source(spark, tmp_path / "in").writeStream.foreachBatch(write)
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert values(spark, t) == [0, 1, 2]
    [progress] = ms.streams(("ushas", db, "ev"))
    assert (progress.query_id, progress.last_batch, progress.batches) == ("etl-1", 1, 2)


@pytest.mark.parametrize("options, message", [
    ({"ushas.streamId": "etl"}, "needs ushas.batchId"),
    ({"ushas.batchId": "1"}, "needs ushas.streamId"),
    ({"ushas.streamId": "etl", "ushas.batchId": "x"}, "non-negative integer"),
    ({"ushas.streamId": "etl", "ushas.batchId": "-1"}, "non-negative integer"),
    ({"ushas.streamId": "e\ttl", "ushas.batchId": "1"}, "invalid streaming query id"),
])
def test_bad_stream_options_are_refused_before_anything_is_written(spark: Any, db: str, ms: Any,
                                                                   options: dict[str, str], message: str) -> None:
    t = f"ushas.{db}.ev"
    spark.sql(f"CREATE TABLE {t} (value BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    w = spark.createDataFrame([(1, "a")], "value bigint, dt string").writeTo(t)
    for k, v in options.items():
        w = w.option(k, v)
    with pytest.raises(Exception, match=message):  # noqa: PT011 - matched by message
        w.append()
    assert list(ms.list_partitions(("ushas", db, "ev"))) == []
    assert ms.streams(("ushas", db, "ev")) == []


def test_stream_into_unpartitioned_table(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    t = f"ushas.{db}.plain"
    spark.sql(f"CREATE TABLE {t} (value BIGINT) USING parquet")
    feed(tmp_path / "in", [[7], [8, 9], [10], [11]])
    src = spark.readStream.schema("value BIGINT").option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    run_available(src.writeStream.option("checkpointLocation", str(tmp_path / "ck")), t)
    assert values(spark, t) == [7, 8, 9, 10, 11]
    assert len(ms.table_data_files(("ushas", db, "plain"))) == 4
    # the first batch writes the list and the table's file stats whole (a new table has none); no later
    # batch rewrote the list: each added one chunk holding its own files, and its history entry names
    # them without a copy of the list (so batch N writes what batch 2 does)
    from ushas_catalog.keyspace.layout import TABLE_DATA_FILES_HISTORY
    from ushas_catalog.model.names import TableName
    from ushas_catalog.records.store import RecordStore

    def stored(tr: Any) -> tuple[int, list[Any]]:
        table = ms.resolver.table(tr, TableName.parse(f"ushas.{db}.plain"))
        begin, end = table.store("TableDataFiles").prefix_range(())
        history = [sr.record for sr in RecordStore.of(table.path, TABLE_DATA_FILES_HISTORY).scan(tr)]
        return len(list(tr.get_range(begin, end))), history

    keys, history = ms.db.run(stored)
    appends = [c for c in history if c.appended]
    assert [len(c.appended) for c in appends] == [1, 1, 1] and all(not c.previous.files for c in appends)
    assert keys == 1 + 3  # the list as the first batch wrote it, then one chunk per later batch


def test_lineage_of_a_streaming_aggregation_is_a_run_per_micro_batch(spark: Any, db: str, tmp_path: Path) -> None:
    from tests.spark.sql_tables_support import flush_lineage

    t = f"ushas.{db}.agg"
    spark.sql(f"CREATE TABLE {t} (dt STRING, n BIGINT, total BIGINT) USING parquet")
    feed(tmp_path / "in", [[0, 1], [2]])
    agg = source(spark, tmp_path / "in").groupBy("dt").agg({"value": "count", "*": "count"}) \
        .selectExpr("dt", "`count(1)` AS n", "`count(value)` AS total")
    q = run_available(agg.writeStream.outputMode("complete").option("checkpointLocation", str(tmp_path / "ck")), t)
    flush_lineage(spark)
    runs = spark.sql(f"SELECT run_id, job, kind, stream_query_id, batch_id FROM ushas.system.runs "
                     f"WHERE stream_query_id = '{q.id}' ORDER BY batch_id").collect()
    assert [r.batch_id for r in runs] == [0, 1]  # one run per micro-batch, one job for the query
    assert {r.job for r in runs} == {f"{spark.sparkContext.appName}.streaming_write.ushas_{db}_agg"}
    assert {r.kind for r in runs} == {"STREAMING WRITE"}
    edges = {(r.target_column, r.source_column, r.subtype) for r in spark.sql(
        f"SELECT target_column, source_column, subtype FROM ushas.system.column_lineage "
        f"WHERE target_table = '{t}' AND run_id = '{runs[-1].run_id}'").collect()}
    assert ("total", "value", "AGGREGATION") in edges and ("dt", "value", "TRANSFORMATION") in edges


def test_format_ushas_writes_each_batch_once_into_the_named_table(spark: Any, db: str, ms: Any,
                                                                 tmp_path: Path) -> None:
    """``writeStream.format("ushas").start("ushas.db.t")``: each batch an idempotent write keyed by the query
    id and the batch id, so a batch Spark runs again after a restart commits nothing twice; a name that
    is not an ushas catalog's table is refused before anything runs."""
    t = f"ushas.{db}.ev"
    spark.sql(f"CREATE TABLE {t} (value BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    ck = tmp_path / "ck"
    feed(tmp_path / "in", [[0, 1], [2]])

    def run() -> Any:
        q = (source(spark, tmp_path / "in").writeStream.format("ushas").option("checkpointLocation", str(ck))
             .trigger(processingTime="0 seconds").start(t))
        try:
            q.processAllAvailable()
        finally:
            q.stop()
        assert q.exception() is None, q.exception()
        return q

    q = run()
    assert values(spark, t) == [0, 1, 2]
    # each micro-batch is a streaming-write run of the table, as a toTable one is, with the stream's ids and
    # column lineage from the streaming plan (the batch write inside the sink is that run, not one of its own)
    from tests.spark.sql_tables_support import flush_lineage

    flush_lineage(spark)
    runs = spark.sql(f"SELECT run_id, job, kind, batch_id FROM ushas.system.runs WHERE stream_query_id = '{q.id}' "
                     f"ORDER BY batch_id").collect()
    assert [r.batch_id for r in runs] == [0, 1]
    assert {(r.job, r.kind) for r in runs} == {(f"{spark.sparkContext.appName}.streaming_write.ushas_{db}_ev",
                                                "STREAMING WRITE")}
    edges = {(r.target_column, r.source_column, r.subtype) for r in spark.sql(
        f"SELECT target_column, source_column, subtype FROM ushas.system.column_lineage "
        f"WHERE target_table = '{t}' AND run_id = '{runs[-1].run_id}'").collect()}
    assert {("value", "value", "IDENTITY"), ("dt", "value", "TRANSFORMATION")} <= edges
    (ck / "commits" / "1").unlink()  # Spark never learnt that batch 1 committed: it runs it again
    for crc in (ck / "commits").glob(".1.crc"):
        crc.unlink()
    feed(tmp_path / "in", [[3]])
    run()
    assert values(spark, t) == [0, 1, 2, 3]
    appends = [h for h in ms.history(("ushas", db, "ev")) if h.operation == "APPEND"]
    assert len(appends) == 3 and all(q.id in str(h.detail) for h in appends)
    from pyspark.errors import IllegalArgumentException, AnalysisException

    with pytest.raises((IllegalArgumentException, AnalysisException), match="a table of an ushas catalog"):
        (source(spark, tmp_path / "in").writeStream.format("ushas")
         .option("checkpointLocation", str(tmp_path / "ck2")).start("spark_catalog.default.nope"))


def test_schema_changes_under_running_streams(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    """An ALTER TABLE while streams run (docs/streaming.md, schema changes): a sink's batches go on after a
    column is added (NULL in it); after a column is dropped the next batch fails naming the table, the
    version and the change, and commits nothing; a stream reading the table stops on the change."""
    from pyspark.errors import StreamingQueryException

    t = f"ushas.{db}.evolving"
    spark.sql(f"CREATE TABLE {t} (value BIGINT, note STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    feed(tmp_path / "in", [[0], [1]])
    src = source(spark, tmp_path / "in").selectExpr("value", "CAST(value AS STRING) AS note", "dt")
    sink = src.writeStream.option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="0 seconds") \
        .toTable(t)
    copy = f"ushas.{db}.evolving_copy"
    spark.sql(f"CREATE TABLE {copy} (value BIGINT, note STRING, dt STRING) USING parquet")
    reader = spark.readStream.table(t).writeStream.option("checkpointLocation", str(tmp_path / "ck_read")) \
        .trigger(processingTime="0 seconds").toTable(copy)
    try:
        sink.processAllAvailable()
        reader.processAllAvailable()
        assert values(spark, copy) == [0, 1]
        spark.sql(f"ALTER TABLE {t} ADD COLUMNS (extra INT)")
        feed(tmp_path / "in", [[2]])
        sink.processAllAvailable()  # a column added: the batch fits, its rows have NULL there
        assert sorted(tuple(r) for r in spark.sql(f"SELECT value, extra FROM {t}").collect()) == [
            (0, None), (1, None), (2, None)]
        with pytest.raises(StreamingQueryException, match=rf"table {t} changed its schema at version \d+ "
                                                          rf"\(ALTER TABLE\).*column extra added.*restart the query"):
            reader.processAllAvailable()
        spark.sql(f"ALTER TABLE {t} DROP COLUMN note")
        version = ms.get_table(("ushas", db, "evolving")).version
        feed(tmp_path / "in", [[3]])
        with pytest.raises(StreamingQueryException, match=rf"table {t} changed its schema at version {version} "
                                                          rf"\(ALTER TABLE\).*column note dropped.*not committed"):
            sink.processAllAvailable()
        assert values(spark, t) == [0, 1, 2]  # nothing of the refused batch
        assert ms.get_table(("ushas", db, "evolving")).version == version
    finally:
        sink.stop()
        reader.stop()
