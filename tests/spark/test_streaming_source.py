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
