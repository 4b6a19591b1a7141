"""Atomic CTAS / RTAS, CREATE TABLE LIKE and bucketed tables from ``spark-sql -e`` (configuration only:
the shim launches its own Python bridge); the shared session then sees the result."""
from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_ctas_like_and_buckets_from_spark_sql(spark: Any, spark_dirs: dict[str, Path], tmp_path: Path,
                                              ms: Any) -> None:
    from ushas_catalog.model.bucketing import Bucketing

    db = "cfgc_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.old USING parquet AS SELECT 1 AS id")
    sql = (f"CREATE TABLE ushas.{db}.b USING parquet CLUSTERED BY (id) INTO 2 BUCKETS "
           f"AS SELECT id, CAST(id AS STRING) AS s FROM range(10); "
           f"CREATE OR REPLACE TABLE ushas.{db}.old USING orc AS SELECT 'x' AS v; "
           f"CREATE TABLE ushas.{db}.l LIKE ushas.{db}.b TBLPROPERTIES ('k'='v'); "
           f"SELECT concat('ROWS ', CAST(count(*) AS STRING)) FROM ushas.{db}.b;")
    proc: subprocess.CompletedProcess[str] = run_spark(
        [spark_bin("spark-sql"), "--master", "local[1]",
         *conf_args(spark_dirs["store"], spark_dirs["warehouse"]), "-e", sql], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ROWS 10" in proc.stdout
    assert ms.get_table(("ushas", db, "b")).bucketing == Bucketing(2, ["id"], [])
    assert ms.get_table(("ushas", db, "l")).bucketing == Bucketing(2, ["id"], [])
    assert ms.get_table(("ushas", db, "l")).properties.get("k") == "v"
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM ushas.{db}.old").collect()] == [("x",)]
    assert spark.table(f"ushas.{db}.b").count() == 10
    spark.sql(f"DROP NAMESPACE ushas.{db} CASCADE")
