"""Catalog tables as Structured Streaming sources: ``spark.readStream.table("ushas.db.t")`` reads the files
each commit added, in commit order (ushas_catalog.spark.stream_source), from the table as it is, the latest,
the earliest or a given version; ``maxFilesPerTrigger``; recovery from the checkpoint; change commits fail
the query or are skipped (``skipChangeCommits``); a dropped or replaced table stops it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark]


def drain(spark: Any, table: str, ck: Path, **options: str) -> tuple[list[tuple[Any, ...]], Any]:
    """Run a stream of ``table`` into a parquet path (``ck``/out) until its input is read (Trigger.AvailableNow);
    the rows the path holds and the stopped query."""
    reader = spark.readStream
    for k, v in options.items():
        reader = reader.option(k, v)
    q = (reader.table(table).writeStream.format("parquet").option("path", str(ck / "out"))
         .option("checkpointLocation", str(ck / "ck")).trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
    finally:
        q.stop()
    return [tuple(r) for r in spark.read.parquet(str(ck / "out")).collect()], q


def test_stream_reads_the_table_then_each_append_once(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    t = f"ushas.{db}.src"
    spark.sql(f"CREATE TABLE {t} (v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    rows, q = drain(spark, t, tmp_path / "ck1")
    assert sorted(rows) == [(1, "a"), (2, "b")]
    spark.sql(f"INSERT INTO {t} VALUES (3, 'a')")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'c')")
    rows, q = drain(spark, t, tmp_path / "ck1")  # the same checkpoint: the new commits, once
    assert sorted(rows) == [(1, "a"), (2, "b"), (3, "a"), (4, "c")]
    assert q.exception() is None


def batches(q: Any) -> list[int]:
    """The input rows of each micro-batch the query ran."""
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"] > 0]


@pytest.mark.slow
def test_starting_points_and_max_files_per_trigger(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    t = f"ushas.{db}.src"
    spark.sql(f"CREATE TABLE {t} (v BIGINT) USING parquet")  # version 1
    for v in (1, 2, 3):  # versions 2, 3, 4: a file each
        spark.sql(f"INSERT INTO {t} VALUES ({v})")
    rows, q = drain(spark, t, tmp_path / "v3", startingVersion="3")
    assert sorted(rows) == [(2,), (3,)]
    rows, q = drain(spark, t, tmp_path / "early", startingVersion="earliest", maxFilesPerTrigger="1")
    assert sorted(rows) == [(1,), (2,), (3,)] and batches(q) == [1, 1, 1]
    rows, q = drain(spark, t, tmp_path / "latest", startingVersion="latest")
    assert rows == []
    spark.sql(f"INSERT INTO {t} VALUES (4), (5)")
    rows, q = drain(spark, t, tmp_path / "latest", startingVersion="latest")
    assert sorted(rows) == [(4,), (5,)]  # what came after the query's start, though it first ran empty
    import datetime as dt

    since = [h for h in ms.history(("ushas", db, "src")) if h.version == 4][0].committed_at
    stamp = since.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()
    rows, q = drain(spark, t, tmp_path / "ts", startingTimestamp=stamp)
    assert sorted(rows) == [(3,), (4,), (5,)]
    from pyspark.errors import StreamingQueryException, IllegalArgumentException, AnalysisException

    with pytest.raises((StreamingQueryException, IllegalArgumentException, AnalysisException),
                       match="startingVersion must be latest, earliest or a version number"):
        drain(spark, t, tmp_path / "bad", startingVersion="soon")


@pytest.mark.slow
def test_change_commits_fail_or_are_skipped_and_a_replaced_table_stops(spark: Any, db: str, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    t = f"ushas.{db}.src"
    spark.sql(f"CREATE TABLE {t} (v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') VALUES (10)")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'b')")
    with pytest.raises(StreamingQueryException, match=r"changed at version \d+ by OVERWRITE.*skipChangeCommits"):
        drain(spark, t, tmp_path / "fail", startingVersion="earliest")
    rows, _ = drain(spark, t, tmp_path / "skip", startingVersion="earliest", skipChangeCommits="true")
    assert sorted(rows) == [(1, "a"), (2, "b"), (3, "b")]  # the overwrite's commit skipped whole
    # the table replaced by another of its name: the stream stops rather than read another table
    rows, _ = drain(spark, t, tmp_path / "live")
    spark.sql(f"DROP TABLE {t}")
    spark.sql(f"CREATE TABLE {t} (v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (7, 'z')")
    with pytest.raises(StreamingQueryException, match="dropped and replaced by another table"):
        drain(spark, t, tmp_path / "live")
    # a running stream whose table is dropped stops with the error naming it
    q = (spark.readStream.table(t).writeStream.format("parquet").option("path", str(tmp_path / "run" / "out"))
         .option("checkpointLocation", str(tmp_path / "run" / "ck")).trigger(processingTime="200 milliseconds").start())
    try:
        q.processAllAvailable()
        spark.sql(f"DROP TABLE {t}")
        with pytest.raises(StreamingQueryException, match=r"TABLE_OR_VIEW_NOT_FOUND.*src cannot be found"):
            q.awaitTermination(60)
    finally:
        q.stop()


@pytest.mark.slow
def test_compaction_under_a_running_stream(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    """Small files of a partition become one in a COMPACT commit; a stream reading the table meanwhile
    reads no row twice (compactions are skipped), and later appends still reach it."""
    t = f"ushas.{db}.ev"
    name = ("ushas", db, "ev")
    spark.sql(f"CREATE TABLE {t} (v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    for v in range(4):
        spark.sql(f"INSERT INTO {t} VALUES ({v}, 'a')")
    spark.sql(f"INSERT INTO {t} VALUES (9, 'b')")
    out = tmp_path / "out"
    q = (spark.readStream.table(t).writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds").start())
    try:
        q.processAllAvailable()
        before = {p.spec["dt"]: p.data_files for p in ms.list_partitions(name)}
        [row] = spark.sql(f"CALL ushas.system.compact(table => '{db}.ev', where => \"dt = 'a'\")").collect()
        assert (row.partitions, row.files_removed, row.files_added) == (1, 4, 1)
        after = {p.spec["dt"]: p.data_files for p in ms.list_partitions(name)}
        assert len(after["a"]) == 1 and after["b"] == before["b"]
        assert sorted(r.v for r in spark.sql(f"SELECT v FROM {t}").collect()) == [0, 1, 2, 3, 9]
        assert ms.history(name)[0].operation == "COMPACT"
        replaced = {f.path for f in before["a"]}
        assert replaced <= {f.path for g in ms.garbage() for f in g.files}  # purge removes them
        spark.sql(f"INSERT INTO {t} VALUES (5, 'a')")
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None
    assert sorted(r.v for r in spark.read.parquet(str(out)).collect()) == [0, 1, 2, 3, 5, 9]
    # no file under the target size: no commit
    version = ms.get_table(name).version
    [row] = spark.sql(f"CALL ushas.system.compact(table => '{db}.ev', target_file_size => 1)").collect()
    assert (row.partitions, row.version) == (0, None) and ms.get_table(name).version == version


@pytest.mark.slow
def test_ushas_compact_command(spark: Any, db: str, ms: Any, spark_dirs: dict[str, Path]) -> None:
    """``ushas compact`` runs the procedure in a Spark session of its own, on the CLI's store."""
    import json
    import subprocess
    import sys

    t = f"ushas.{db}.u"
    spark.sql(f"CREATE TABLE {t} (v BIGINT) USING parquet")
    for v in range(3):
        spark.sql(f"INSERT INTO {t} VALUES ({v})")
    cmd = [sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{spark_dirs['store']}", "--json", "compact", t]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert (out["partitions"], out["files_removed"], out["files_added"]) == (1, 3, 1)
    assert len(ms.table_data_files(("ushas", db, "u")) or []) == 1
    assert sorted(r.v for r in spark.sql(f"SELECT v FROM {t}").collect()) == [0, 1, 2]
    done = subprocess.run(cmd[:-2] + ["compact", f"ushas.{db}.missing"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "missing" in done.stderr and "Traceback" not in done.stderr


def test_lineage_of_a_stream_between_two_catalog_tables(spark: Any, db: str, tmp_path: Path) -> None:
    """Each micro-batch of a stream reading one catalog table into another is a run whose column lineage
    names the source table (the batch's relation carries the table's description, as a batch read's)."""
    from tests.spark.sql_tables_support import flush_lineage

    src, dst = f"ushas.{db}.src", f"ushas.{db}.dst"
    spark.sql(f"CREATE TABLE {src} (v BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {dst} (w BIGINT, dt STRING) USING parquet")
    spark.sql(f"INSERT INTO {src} VALUES (1, 'a'), (2, 'b')")
    q = (spark.readStream.table(src).selectExpr("v * 10 AS w", "dt").writeStream
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).toTable(dst))
    try:
        q.awaitTermination(120)
    finally:
        q.stop()
    assert sorted(tuple(r) for r in spark.table(dst).collect()) == [(10, "a"), (20, "b")]
    flush_lineage(spark)
    edges = {(r.source_table, r.source_column, r.target_column) for r in spark.sql(
        f"SELECT source_table, source_column, target_column FROM ushas.system.column_lineage "
        f"WHERE target_table = '{dst}'").collect()}
    assert (src, "v", "w") in edges and (src, "dt", "dt") in edges, edges
