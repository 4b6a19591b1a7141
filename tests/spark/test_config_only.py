"""Configuration only: spark-submit of an app that never imports ushas_catalog and spark-sql -e; the
shim launches ``python -m ushas_catalog.bridge`` itself. Also: a second session (a subprocess) reads
what the shared session wrote, and the shared session reads fresh what the subprocess wrote."""
from __future__ import annotations

import subprocess
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _confs(spark_dirs: dict[str, Path], **extra: str) -> list[str]:
    return conf_args(spark_dirs["store"], spark_dirs["warehouse"], **extra)


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_spark(cmd, cwd, timeout=300)


def test_spark_submit_config_only_and_fresh_reads(spark: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    db = "cfg_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.t (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.t VALUES (1, 'a')")
    assert spark.sql(f"SELECT count(*) FROM ushas.{db}.t").collect()[0][0] == 1  # cached relation now
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        seen = sorted(r.id for r in spark.sql("SELECT id FROM ushas.{db}.t").collect())
        print("SEEN", seen)
        spark.sql("INSERT INTO ushas.{db}.t VALUES (2, 'b'), (3, 'a')")
        spark.sql("CREATE TABLE ushas.{db}.made_there (x INT) USING orc")
        print("PARTS", [r[0] for r in spark.sql("SHOW PARTITIONS ushas.{db}.t").collect()])
        spark.stop()
    """))
    proc = _run([spark_bin("spark-submit"), "--master", "local[1]", *_confs(spark_dirs), str(app)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "SEEN [1]" in proc.stdout  # the second session reads what this one wrote
    assert "PARTS ['dt=a', 'dt=b']" in proc.stdout
    # and this session sees the other's writes at once: no stale file list, no stale metadata
    ids = sorted(r.id for r in spark.sql(f"SELECT id FROM ushas.{db}.t").collect())
    assert ids == [1, 2, 3]
    assert [r[0] for r in spark.sql(f"SHOW PARTITIONS ushas.{db}.t").collect()] == ["dt=a", "dt=b"]
    assert (db, "made_there", False) in [tuple(r) for r in spark.sql(f"SHOW TABLES IN ushas.{db}").collect()]


def test_spark_sql_e(spark: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    db = "sql_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.t (id INT, v STRING) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.t VALUES (41, 'x')")
    spark.sql(f"CREATE TABLE ushas.{db}.gone (x INT) USING parquet")
    sql = (f"INSERT INTO ushas.{db}.t VALUES (42, 'y'); "
           f"SELECT concat('ROW ', CAST(sum(id) AS STRING)) FROM ushas.{db}.t; "
           f"DROP TABLE ushas.{db}.gone; DROP TABLE IF EXISTS ushas.{db}.gone; "  # the launched bridge's one call
           f"SHOW TABLES IN ushas.{db};")
    proc = _run([spark_bin("spark-sql"), "--master", "local[1]", *_confs(spark_dirs), "-e", sql], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ROW 83" in proc.stdout
    assert spark.sql(f"SELECT count(*) FROM ushas.{db}.t").collect()[0][0] == 2
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN ushas.{db}").collect() if not r.isTemporary] == ["t"]


def test_missing_python_gives_clear_error(spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    proc = _run([spark_bin("spark-sql"), "--master", "local[1]",
                 *_confs(spark_dirs, **{"spark.sql.catalog.ushas.python": "/nonexistent/python3"}),
                 "-e", "SHOW NAMESPACES IN ushas"], tmp_path)
    assert proc.returncode != 0
    assert "cannot start the Python bridge with '/nonexistent/python3'" in proc.stderr
