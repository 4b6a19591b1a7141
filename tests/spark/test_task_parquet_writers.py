"""A catalog table's parquet write sets its writer up once per task (io.ushas.spark.TaskParquetWriters):
a task's first file is Spark's own writer, the later ones reuse its settings, one compressor and the
write supports. The files must be the ones Spark writes: same footers (schema, key-value metadata, codec,
encodings, statistics, sizes) for the same rows and settings, and read back the same."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.spark]

#: many types (nested, decimal, timestamps, binary, nulls), six partitions, two input partitions: each of
#: the two write tasks writes six files, five of them with the shared set-up
ROWS_SQL = """
SELECT CAST(id AS INT) AS id, id * 1000000007 AS l, CONCAT('s', id % 7) AS s,
       CAST(id / 3 AS DECIMAL(10, 2)) AS d, TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id AS INT)) AS ts,
       DATE '2024-01-01' + CAST(id AS INT) AS dd, IF(id % 5 = 0, NULL, id / 7.0D) AS f,
       CAST(CONCAT('b', id) AS BINARY) AS b, array(CAST(id AS INT), NULL) AS arr,
       named_struct('x', CAST(id AS INT), 'y', IF(id % 4 = 0, NULL, 'y')) AS st, map('k', CAST(id AS INT)) AS m,
       CONCAT('p', id % 6) AS dt
FROM range(0, 240, 1, 2)
"""

COLUMNS = ("id INT, l BIGINT, s STRING, d DECIMAL(10,2), ts TIMESTAMP, dd DATE, f DOUBLE, b BINARY, "
           "arr ARRAY<INT>, st STRUCT<x: INT, y: STRING>, m MAP<STRING, INT>, dt STRING")

#: settings Spark's writer reads from the configuration per file, each of which changes the files here: a
#: non-default codec, a page row limit checked every 2 rows (several pages per column chunk), a column's
#: dictionary turned off (parquet-mr's per-column config parser), truncated statistics
OPTIONS = {"compression": "gzip", "parquet.page.size.row.check.min": "2", "parquet.page.size.row.check.max": "2",
           "parquet.page.row.count.limit": "7", "parquet.enable.dictionary#s": "false",
           "parquet.statistics.truncate.length": "1"}
SESSION = {"spark.sql.parquet.writeLegacyFormat": "true", "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


def footer(path: Path) -> tuple[Any, ...]:
    """Everything of a file's footer that does not name the file: the size, the schema, the key-value
    metadata, and per row group and column chunk the codec, encodings, statistics and sizes."""
    meta = pq.ParquetFile(path).metadata
    groups = []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        cols = []
        for c in range(rg.num_columns):
            cc = rg.column(c)
            stats = cc.statistics.to_dict() if cc.is_stats_set else None
            cols.append((cc.path_in_schema, cc.compression, tuple(cc.encodings), stats, cc.num_values,
                         cc.total_compressed_size, cc.total_uncompressed_size, cc.has_dictionary_page))
        groups.append((rg.num_rows, tuple(cols)))
    schema = str(meta.schema).split("\n", 1)[1]  # the first line names the Python object
    return (path.stat().st_size, meta.created_by, meta.num_rows, schema,
            tuple(sorted((meta.metadata or {}).items())), tuple(groups))


def footers(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Partition directory -> the footers of its data files (order-free)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for f in root.glob("dt=*/*.parquet"):
        out.setdefault(f.parent.name, []).append(footer(f))
    return {k: sorted(v, key=repr) for k, v in out.items()}


def probe(spark: Any) -> int:
    return int(spark._jvm.io.ushas.spark.TaskParquetWritersProbe.sharedFiles())


def test_task_set_up_writes_the_files_spark_writes(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    options = ", ".join(f"'option.{k}'='{v}'" for k, v in OPTIONS.items())
    t, name = f"ushas.{db}.tpw", ("ushas", db, "tpw")
    # not clustered: each task writes its rows where they are, as Spark's own path write below
    spark.sql(f"CREATE TABLE {t} ({COLUMNS}) USING parquet PARTITIONED BY (dt) "
              f"TBLPROPERTIES ({options}, 'write.distribution-mode'='none')")
    rows = spark.sql(ROWS_SQL)
    plain = tmp_path / "plain"
    try:
        # session settings the write support reads from the configuration (decimals and lists in the legacy
        # layout, timestamps as INT64 micros): the shared write supports must honour them as Spark's do
        for k, v in SESSION.items():
            spark.conf.set(k, v)
        before = probe(spark)
        spark.sql(f"INSERT INTO {t} {ROWS_SQL}")
        shared = probe(spark) - before
        # Spark's own writer, every file: a path write of the same rows with the same options
        writer = rows.write.partitionBy("dt")
        for k, v in OPTIONS.items():
            writer = writer.option(k, v)
        writer.parquet(str(plain))
    finally:
        for k in SESSION:
            spark.conf.unset(k)

    root = Path(ms.get_table(name).location.removeprefix("file:"))
    ours, theirs = footers(root), footers(plain)
    assert sorted(ours) == [f"dt=p{i}" for i in range(6)] and len(sum(ours.values(), [])) == 12
    # 12 files from 2 tasks: the first of each task is Spark's writer, the other ten the shared set-up
    assert shared == 10
    assert ours == theirs
    codecs = {c[1] for f in sum(ours.values(), []) for g in f[5] for c in g[1]}
    assert codecs == {"GZIP"}
    schema = ours["dt=p0"][0][3]
    assert "int64 field_id=-1 ts (Timestamp(" in schema and "fixed_len_byte_array(5) field_id=-1 d (Decimal(" in schema
    assert sorted(spark.table(t).collect()) == sorted(rows.collect())

    # turned off per table, and a table of another format: Spark's writer for every file
    off = f"ushas.{db}.tpw_off"
    spark.sql(f"CREATE TABLE {off} ({COLUMNS}) USING parquet PARTITIONED BY (dt) "
              "TBLPROPERTIES ('option.ushas.write.taskParquetWriters'='false')")
    orc = f"ushas.{db}.tpw_orc"
    spark.sql(f"CREATE TABLE {orc} ({COLUMNS}) USING orc PARTITIONED BY (dt)")
    before = probe(spark)
    spark.sql(f"INSERT INTO {off} {ROWS_SQL}")
    spark.sql(f"INSERT INTO {orc} {ROWS_SQL}")
    assert probe(spark) == before
    assert sorted(spark.table(off).collect()) == sorted(spark.table(orc).collect()) == sorted(rows.collect())
