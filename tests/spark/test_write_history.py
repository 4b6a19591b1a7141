"""History names what each Spark write did (APPEND, OVERWRITE PARTITIONS, OVERWRITE, TRUNCATE), and a
write keeps the table's partition_count metadata right."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _history_cli(store: Path, table: str) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", f"sqlite:///{store}", "history", table,
                           "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_history_names_each_write(spark: Any, db: str, ms: Any, spark_dirs: dict[str, Path]) -> None:
    t, name = f"ushas.{db}.h", f"ushas.{db}.h"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') VALUES (10)")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (20, 'c')")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    spark.sql(f"INSERT OVERWRITE {t} VALUES (30, 'd')")  # static, no partition: the whole table
    spark.sql(f"TRUNCATE TABLE {t}")
    spark.createDataFrame([(4, "e")], "id INT, dt STRING").writeTo(t).append()
    ops = [h.operation for h in reversed(ms.history(name))]
    assert ops == ["CREATE TABLE", "APPEND", "OVERWRITE PARTITIONS", "OVERWRITE PARTITIONS", "OVERWRITE",
                   "TRUNCATE", "APPEND"]
    assert [h["operation"] for h in _history_cli(spark_dirs["store"], name)][0] == "APPEND"
    # partitions d and e: the writes moved the count (it stayed 0 when only ADD / DROP PARTITIONS counted)
    assert len(list(ms.list_partitions(name))) == 2
    assert ms.metadata.get(name).system.properties["partition_count"] == "2"

    u = f"ushas.{db}.hu"
    spark.sql(f"CREATE TABLE {u} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {u} VALUES (1)")
    spark.sql(f"INSERT OVERWRITE {u} VALUES (2)")
    spark.sql(f"TRUNCATE TABLE {u}")
    assert [h.operation for h in reversed(ms.history(u))] == ["CREATE TABLE", "APPEND", "OVERWRITE", "TRUNCATE"]
