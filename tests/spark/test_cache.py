"""The caching catalog through the shared SparkSession: a cached lookup is one version check that keeps
the Table and Spark's cached relation (with its file listing); a change committed by ANOTHER process
(a subprocess using the Metastore API, or a second Spark process) is seen on the next lookup; dropping
and re-creating a table under the same name never serves the old one; ttl, size and cache.enabled=false
on extra catalog instances of the same store."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = pytest.mark.spark


def _uri(spark_dirs: dict[str, Path]) -> str:
    return f"sqlite:///{spark_dirs['store']}"


def status(spark: Any, catalog: str = "ushas") -> dict[str, Any]:
    plugin = spark._jsparkSession.sessionState().catalogManager().catalog(catalog)
    return json.loads(plugin.cacheStatus())


def spark_relation_id(spark: Any, db: str, table: str, catalog: str = "ushas") -> int | None:
    """Identity of the relation Spark caches per session for a V1-path table (None: not cached)."""
    jvm = spark._jvm
    plan = spark._jsparkSession.sessionState().catalog().getCachedTable(
        jvm.org.apache.spark.sql.catalyst.QualifiedTableName(catalog, db, table))
    return None if plan is None else jvm.System.identityHashCode(plan)


def other_process(spark_dirs: dict[str, Path], code: str) -> str:
    """Runs ``code`` in a second Python process with ``ms`` = the Metastore of the test store."""
    script = ("from ushas_catalog.metastore import Metastore\n"
              f"ms = Metastore.open({_uri(spark_dirs)!r}, project='default')\n" + textwrap.dedent(code))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def partitions(spark: Any, table: str) -> list[str]:
    return [r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect()]


def add_catalog(spark: Any, spark_dirs: dict[str, Path], **cache: str) -> str:
    """Another Spark catalog instance on the same store and metastore catalog ``ushas``, with its own
    cache.* options (catalogs are initialized on first use)."""
    name = "ushas_" + uuid.uuid4().hex[:6]
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "io.ushas.spark.UshasCatalog")
    spark.conf.set(f"{prefix}.uri", _uri(spark_dirs))
    spark.conf.set(f"{prefix}.catalog", "ushas")
    spark.conf.set(f"{prefix}.warehouse", str(spark_dirs["warehouse"]))
    for key, value in cache.items():
        spark.conf.set(f"{prefix}.cache.{key}", value)
    return name


# ---- hits keep the Table and Spark's relation -----------------------------------------------------------
def test_hit_is_a_version_check_that_keeps_spark_relation(spark: Any, db: str) -> None:
    t = f"ushas.{db}.t"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    assert spark.table(t).count() == 2  # a fresh load: Spark builds and caches its relation
    before = status(spark)
    relation = spark_relation_id(spark, db, "t")
    assert relation is not None
    for _ in range(3):
        assert spark.table(t).count() == 2
        assert partitions(spark, t) == ["dt=a", "dt=b"]
    after = status(spark)
    assert after["unchanged"] - before["unchanged"] >= 6 and after["loaded"] == before["loaded"]
    assert spark_relation_id(spark, db, "t") == relation  # file listing kept while the version holds
    # a change through this session: a new version, a fresh load, a new relation
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")
    assert spark.table(t).count() == 3
    assert partitions(spark, t) == ["dt=a", "dt=b", "dt=c"]
    assert status(spark)["loaded"] > after["loaded"]
    assert spark_relation_id(spark, db, "t") != relation


def test_refresh_table_forgets_the_entry(spark: Any, db: str) -> None:
    t = f"ushas.{db}.r"
    spark.sql(f"CREATE TABLE {t} (id INT) USING parquet")
    spark.table(t).count()
    loaded = status(spark)["loaded"]
    spark.sql(f"REFRESH TABLE {t}")
    spark.table(t).count()
    assert status(spark)["loaded"] > loaded


# ---- another process changes what this session has cached ---------------------------------------------------
def test_other_process_alters_adds_partitions_with_data(spark: Any, db: str, spark_dirs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    t = f"ushas.{db}.orders"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 'd1')")
    assert spark.table(t).count() == 1 and partitions(spark, t) == ["dt=d1"]
    assert spark.table(t).count() == 1  # cached now
    # data for a partition another process registers: one parquet file, written here, moved there
    staging = tmp_path / "staging"
    spark.createDataFrame([(2, "y")], "id INT, v STRING").coalesce(1).write.parquet(str(staging))
    data_file = next(staging.glob("part-*.parquet"))
    location = spark_dirs["warehouse"] / f"{db}.db" / "orders"
    out = other_process(spark_dirs, f"""
        import os, shutil
        from ushas_catalog.model.table_changes import changes_from_json
        name = ("ushas", {db!r}, "orders")
        ms.alter_table(name, changes_from_json([{{"type": "AddColumn", "fieldNames": ["note"],
                                                  "dataType": "string"}}]))
        os.makedirs({str(location / 'dt=d2')!r}, exist_ok=True)
        shutil.copy({str(data_file)!r}, {str(location / 'dt=d2' / 'part-other.parquet')!r})
        ms.add_partitions(name, [{{"dt": "d2"}}, {{"dt": "d3"}}])
        print("VERSION", ms.get_table(name).version)
    """)
    assert "VERSION" in out
    loaded = status(spark)["loaded"]
    df = spark.table(t)
    assert df.columns == ["id", "v", "note", "dt"]
    expected = spark.createDataFrame([(1, "x", None, "d1"), (2, "y", None, "d2")],
                                     "id INT, v STRING, note STRING, dt STRING")
    assert_df_equality(df, expected, ignore_row_order=True, ignore_nullable=True)
    assert partitions(spark, t) == ["dt=d1", "dt=d2", "dt=d3"]
    assert status(spark)["loaded"] == loaded + 1


def test_drop_and_recreate_in_other_process_never_serves_the_old_table(spark: Any, db: str,
                                                                        spark_dirs: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    t = f"ushas.{db}.events"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'old')")
    for _ in range(2):
        assert partitions(spark, t) == ["dt=old"] and spark.table(t).count() == 1
    new_location = tmp_path / "events-new"
    other_process(spark_dirs, f"""
        name = ("ushas", {db!r}, "events")
        ms.drop_table(name)
        ms.create_table(name, schema="code STRING, amount DOUBLE, day STRING", partition_by=["day"],
                        format="parquet", location={str(new_location)!r})
        ms.add_partitions(name, [{{"day": "2024-01-01"}}])
    """)
    df = spark.table(t)
    expected = spark.createDataFrame([], "code STRING, amount DOUBLE, day STRING")
    assert_df_equality(df, expected, ignore_nullable=True)
    assert partitions(spark, t) == ["day=2024-01-01"]
    # and once more, the same drop + create with the very same schema: the id tells them apart
    other_process(spark_dirs, f"""
        name = ("ushas", {db!r}, "events")
        ms.drop_table(name)
        ms.create_table(name, schema="code STRING, amount DOUBLE, day STRING", partition_by=["day"],
                        format="parquet", location={str(new_location)!r})
    """)
    assert partitions(spark, t) == []
    # a table replaced by a view of the same name
    other_process(spark_dirs, f"""
        name = ("ushas", {db!r}, "events")
        ms.drop_table(name)
        ms.create_view(name, sql="SELECT 7 AS seven", schema="seven INT", current_catalog="ushas",
                       current_namespace=[{db!r}], query_column_names=["seven"])
    """)
    assert [tuple(r) for r in spark.table(t).collect()] == [(7,)]


def test_write_from_a_second_spark_process_is_read_fresh(spark: Any, db: str, spark_dirs: dict[str, Path],
                                                        tmp_path: Path) -> None:
    flat, parted = f"ushas.{db}.flat", f"ushas.{db}.parted"
    spark.sql(f"CREATE TABLE {flat} (id INT) USING parquet")
    spark.sql(f"CREATE TABLE {parted} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {flat} VALUES (1)")
    spark.sql(f"INSERT INTO {parted} VALUES (1, 'a')")
    for _ in range(2):  # cached, with Spark's relation and file listing
        assert spark.table(flat).count() == 1 and spark.table(parted).count() == 1
    sql = f"INSERT INTO {flat} VALUES (2); INSERT INTO {parted} VALUES (2, 'a'), (3, 'b');"
    args = conf_args(spark_dirs["store"], spark_dirs["warehouse"], **{"spark.sql.shuffle.partitions": "1"})
    proc = run_spark([spark_bin("spark-sql"), "--master", "local[1]", *args, "-e", sql], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert_df_equality(spark.table(flat), spark.createDataFrame([(1,), (2,)], "id INT"), ignore_row_order=True,
                       ignore_nullable=True)
    assert_df_equality(spark.table(parted), spark.createDataFrame([(1, "a"), (2, "a"), (3, "b")], "id INT, dt STRING"),
                       ignore_row_order=True, ignore_nullable=True)
    assert partitions(spark, parted) == ["dt=a", "dt=b"]


# ---- settings ---------------------------------------------------------------------------------------------
def test_disabled_cache_loads_every_time(spark: Any, db: str, spark_dirs: dict[str, Path]) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.d (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.d VALUES (1, 'a')")
    name = add_catalog(spark, spark_dirs, enabled="false")
    for _ in range(3):
        assert spark.table(f"{name}.{db}.d").count() == 1
        assert partitions(spark, f"{name}.{db}.d") == ["dt=a"]
    s = status(spark, name)
    assert s["enabled"] is False and s["entries"] == 0 and s["unchanged"] == 0 and s["loaded"] >= 6


def test_size_evicts_least_recently_used(spark: Any, db: str, spark_dirs: dict[str, Path]) -> None:
    for t in ("a", "b", "c"):
        spark.sql(f"CREATE TABLE ushas.{db}.{t} (id INT) USING parquet")
    name = add_catalog(spark, spark_dirs, size="2")
    for t in ("a", "b", "a", "c"):  # c evicts b (a was used after b)
        spark.table(f"{name}.{db}.{t}")
    s = status(spark, name)
    assert s["entries"] == 2 and s["loaded"] == 3 and s["unchanged"] == 1
    spark.table(f"{name}.{db}.a")
    assert status(spark, name)["unchanged"] == 2
    spark.table(f"{name}.{db}.b")
    assert status(spark, name)["loaded"] == 4


def test_ttl_expires_idle_entries(spark: Any, db: str, spark_dirs: dict[str, Path]) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.e (id INT) USING parquet")
    name = add_catalog(spark, spark_dirs, ttl="200ms")
    spark.table(f"{name}.{db}.e")
    time.sleep(0.5)  # idle longer than the ttl: gone
    spark.table(f"{name}.{db}.e")
    assert status(spark, name)["loaded"] == 2
    assert status(spark, name)["ttl_ms"] == 200


def test_unchecked_mode_serves_within_ttl_but_sees_own_changes(spark: Any, db: str,
                                                              spark_dirs: dict[str, Path]) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.u (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    name = add_catalog(spark, spark_dirs, check="false")
    t = f"{name}.{db}.u"
    assert partitions(spark, t) == []
    assert partitions(spark, t) == []
    assert status(spark, name)["unchecked"] >= 1
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='x')")  # through this catalog: its entry is dropped
    assert partitions(spark, t) == ["dt=x"]


def test_bad_cache_option_is_a_clear_error(spark: Any, spark_dirs: dict[str, Path]) -> None:
    name = add_catalog(spark, spark_dirs, ttl="soon")
    with pytest.raises(Exception, match="cache.ttl 'soon' is not a duration"):
        spark.sql(f"SHOW NAMESPACES IN {name}").collect()
