"""The metadata tables of a table, read with Spark SQL: ``ushas.<db>.<table>.<name>``
(ushas_catalog.sql_tables, io.ushas.spark.UshasRowsTable)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.spark.sql_tables_support import count_key_reads, flush_lineage


def test_partitions_table_has_typed_partition_columns_and_counts(spark: Any, db: str) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.orders (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.orders VALUES (1, 'a', '2024-04-01'), (2, 'b', '2024-05-01'), "
              f"(3, 'c', '2024-05-01'), (4, 'd', '2024-06-01')")
    df = spark.sql(f"SELECT * FROM ushas.{db}.orders.partitions ORDER BY dt")
    assert df.columns[:2] == ["dt", "location"]
    rows = df.collect()
    assert [r.dt for r in rows] == ["2024-04-01", "2024-05-01", "2024-06-01"]
    assert all(r.files >= 1 and r.location.endswith(f"dt={r.dt}") for r in rows)
    picked = spark.sql(f"SELECT dt FROM ushas.{db}.orders.partitions WHERE dt >= '2024-05'").collect()
    assert sorted(r.dt for r in picked) == ["2024-05-01", "2024-06-01"]


def test_partition_filter_reads_only_the_selected_keys(spark: Any, db: str, ms: Any) -> None:
    name = f"ushas.{db}.wide"
    spark.sql(f"CREATE TABLE {name} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    ms.add_partitions(name, [{"dt": f"2024-{m:02d}-{d:02d}"} for m in range(1, 13) for d in range(1, 29)])
    with count_key_reads(spark) as reads:
        got = spark.sql(f"SELECT dt FROM {name}.partitions WHERE dt >= '2024-12'").collect()
    assert len(got) == 28
    # the 28 partition keys of December and a few point reads (table, schema), not the 336 partitions
    assert reads.keys < 28 + 40, reads
    with count_key_reads(spark) as everything:
        assert spark.sql(f"SELECT count(*) AS n FROM {name}.partitions").first().n == 336
    assert everything.keys >= 336


def test_history_by_version_is_a_range(spark: Any, db: str) -> None:
    name = f"ushas.{db}.h"
    spark.sql(f"CREATE TABLE {name} (id INT) USING parquet")
    for i in range(5):
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('k' = '{i}')")
    rows = spark.sql(f"SELECT version, operation, user FROM {name}.history ORDER BY version").collect()
    assert [r.version for r in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[0].operation and rows[0].user
    with count_key_reads(spark) as reads:
        two = spark.sql(f"SELECT version FROM {name}.history WHERE version BETWEEN 3 AND 4").collect()
    assert [r.version for r in two] == [3, 4]
    everything = spark.sql(f"SELECT time FROM {name}.history ORDER BY version").collect()
    since = everything[4].time
    late = spark.sql(f"SELECT version FROM {name}.history WHERE time >= TIMESTAMP '{since.isoformat()}'").collect()
    assert {r.version for r in late} >= {5, 6} and 1 not in {r.version for r in late}
    assert reads.keys < 30, reads


def test_schemas_files_changes_and_lineage(spark: Any, db: str) -> None:
    name = f"ushas.{db}.s"
    spark.sql(f"CREATE TABLE {name} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'x')")
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS (extra STRING)")
    schemas = spark.sql(f"SELECT schema_id, columns, is_current FROM {name}.schemas ORDER BY schema_id").collect()
    assert len(schemas) == 2 and schemas[-1].is_current
    assert [c.name for c in schemas[-1].columns] == ["id", "extra", "dt"]  # partition columns last
    files = spark.sql(f"SELECT dt, path, size FROM {name}.files").collect()
    assert files and all(f.dt == "x" and f.path.endswith(".parquet") and f.size > 0 for f in files)
    changes = spark.sql(f"SELECT change, version FROM {name}.changes ORDER BY version").collect()
    assert changes and changes[0].change == "CREATED"
    spark.sql(f"CREATE TABLE ushas.{db}.d USING parquet AS SELECT id * 2 AS twice FROM {name}")
    flush_lineage(spark)
    edges = spark.sql(f"SELECT direction, column, other_table, other_column FROM {name}.lineage "
                      f"WHERE direction = 'downstream'").collect()
    assert any(e.column == "id" and e.other_table == f"ushas.{db}.d" and e.other_column == "twice" for e in edges)


def test_unknown_metadata_table_and_writes_are_refused(spark: Any, db: str) -> None:
    from pyspark.errors import AnalysisException

    spark.sql(f"CREATE TABLE ushas.{db}.w (id INT) USING parquet")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM ushas.{db}.w.nothing").collect()
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM ushas.{db}.missing.history").collect()
    with pytest.raises(AnalysisException, match="does not support"):
        spark.sql(f"INSERT INTO ushas.{db}.w.history SELECT * FROM ushas.{db}.w.history")
