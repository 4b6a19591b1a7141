"""The system tables of the ``ushas`` catalog: ``ushas.system.<name>`` (ushas_catalog.sql_tables),
joinable with anything in Spark."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from spark_processes import conf_args, run_spark, spark_bin

from tests.spark.sql_tables_support import count_key_reads, flush_lineage


def test_the_system_namespace_is_reserved_and_lists_its_tables(spark: Any, cat: str) -> None:
    from pyspark.errors import AnalysisException

    names = {r.tableName for r in spark.sql(f"SHOW TABLES IN {cat}.system").collect() if not r.isTemporary}
    assert {"tables", "columns", "partitions", "tags", "properties", "changes", "runs", "dataset_access",
            "column_lineage", "table_lineage", "usage"} <= names
    extended = {r.tableName: r.information for r in spark.sql(f"SHOW TABLE EXTENDED IN {cat}.system LIKE 'tab*'")
                .collect() if not r.isTemporary}
    assert {"tables", "table_lineage"} <= set(extended) and "Schema: root" in extended["tables"]
    with pytest.raises(AnalysisException, match="reserved|already exists"):
        spark.sql(f"CREATE NAMESPACE {cat}.system")
    with pytest.raises(AnalysisException, match="reserved"):
        spark.sql(f"CREATE TABLE {cat}.system.mine (id INT) USING parquet")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {cat}.system.nothing").collect()
    with pytest.raises(AnalysisException, match="does not support"):
        spark.sql(f"INSERT INTO {cat}.system.tags SELECT * FROM {cat}.system.tags")


def test_reserved_database_name_in_the_api(ms: Any) -> None:
    from ushas_catalog.errors import InvalidName

    with pytest.raises(InvalidName, match="reserved"):
        ms.create_database("ushas.System")


def test_tables_columns_tags_properties(spark: Any, cat: str, db: str, ms: Any) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.people (id INT, email STRING, dt STRING) USING parquet "
              f"PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {cat}.{db}.people VALUES (1, 'a@x', 'd1'), (2, 'b@x', 'd2')")
    ms.metadata.tag(f"ushas.{db}.people.email", ["pii"])
    ms.metadata.set(f"ushas.{db}.people", {"team": "growth"})
    t = spark.sql(f"SELECT * FROM {cat}.system.tables WHERE database = '{db}'").collect()
    assert [(r.name, r.kind, r.format, r.partition_columns) for r in t] == [("people", "TABLE", "parquet", ["dt"])]
    assert t[0].full_name == f"ushas.{db}.people"
    cols = spark.sql(f"SELECT column, position, type, is_partition, tags FROM {cat}.system.columns "
                     f"WHERE database = '{db}' ORDER BY position").collect()
    assert [(c.column, c.type, c.is_partition) for c in cols] == [("id", "INT", False), ("email", "STRING", False),
                                                                  ("dt", "STRING", True)]
    assert cols[1].tags == ["pii"]
    tags = spark.sql(f"SELECT * FROM {cat}.system.tags WHERE object_name = 'ushas.{db}.people'").collect()
    assert [(r.object_type, r.column, r.tag, r.scope) for r in tags] == [("COLUMN", "email", "pii", "USER")]
    props = spark.sql(f"SELECT key, value FROM {cat}.system.properties WHERE object_name = 'ushas.{db}.people' "
                      f"AND scope = 'USER'").collect()
    assert ("team", "growth") in [(p.key, p.value) for p in props]
    parts = spark.sql(f"SELECT spec['dt'] AS dt, files FROM {cat}.system.partitions WHERE database = '{db}' "
                      f"ORDER BY dt").collect()
    assert [(p.dt, p.files) for p in parts] == [("d1", 1), ("d2", 1)]


def test_lineage_tables_runs_usage_and_the_joins(spark: Any, cat: str, db: str, ms: Any) -> None:
    # the lineage is written through ``ushas`` in both runs: the shared session's lineage goes to its lineage
    # catalog's store (ushas); remote mode's capture is test_remote_apps' and test_remote_mode's. The
    # system tables are read through ``cat``: embedded, and served.
    src, mid, out, idle = (f"ushas.{db}.{n}" for n in ("src", "mid", "out", "idle"))
    spark.sql(f"CREATE TABLE {src} (id INT, email STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {idle} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {src} VALUES (1, 'a@x', 'd1')")
    spark.sql(f"INSERT INTO {src} VALUES (2, 'b@x', 'd2')")
    spark.sql(f"CREATE TABLE {mid} USING parquet AS SELECT id, upper(email) AS contact FROM {src}")
    spark.sql(f"CREATE TABLE {out} USING parquet AS SELECT concat(contact, '!') AS shout FROM {mid}")
    flush_lineage(spark)
    ms.metadata.tag(f"{src}.email", ["pii"])

    edges = spark.sql(f"SELECT source_column, target_column, type, subtype, expression, run_id, time "
                      f"FROM {cat}.system.column_lineage WHERE target_table = '{mid}'").collect()
    assert ("email", "contact") in [(e.source_column, e.target_column) for e in edges]
    email = next(e for e in edges if e.target_column == "contact")
    assert email.type == "DIRECT" and email.subtype == "TRANSFORMATION" and "upper" in email.expression.lower()
    assert email.run_id and isinstance(email.time, dt.datetime)
    if cat == "ushas":  # the reads of this process's store (served, the service reads)
        with count_key_reads(spark) as reads:
            spark.sql(f"SELECT * FROM {cat}.system.column_lineage WHERE target_table = '{out}'").collect()
        total = spark.sql(f"SELECT count(*) AS n FROM {cat}.system.column_lineage").first().n
        assert reads.keys < total + 40  # the edges of one target and name lookups, not every edge

    # every column downstream of a pii-tagged column (the lineage graph walked in SQL, two hops here)
    downstream = spark.sql(f"""
        WITH pii AS (SELECT full_name, column FROM {cat}.system.columns
                     WHERE database = '{db}' AND array_contains(tags, 'pii')),
             hop1 AS (SELECT l.target_table, l.target_column FROM {cat}.system.column_lineage l
                      JOIN pii ON l.source_table = pii.full_name AND l.source_column = pii.column),
             hop2 AS (SELECT l.target_table, l.target_column FROM {cat}.system.column_lineage l
                      JOIN hop1 ON l.source_table = hop1.target_table AND l.source_column = hop1.target_column)
        SELECT * FROM hop1 UNION SELECT * FROM hop2""").collect()
    assert {(r.target_table, r.target_column) for r in downstream} >= {(mid, "contact"), (out, "shout")}

    # tables nobody read in 90 days
    unread = spark.sql(f"""
        SELECT t.full_name FROM {cat}.system.tables t
        LEFT ANTI JOIN (SELECT dataset FROM {cat}.system.usage
                        WHERE day >= date_sub(current_date(), 90) AND reads > 0) u
          ON u.dataset = t.full_name
        WHERE t.database = '{db}'""").collect()
    assert {r.full_name for r in unread} == {out, idle}

    usage = spark.sql(f"SELECT reads, writes FROM {cat}.system.usage WHERE dataset = '{src}'").collect()
    assert sum(u.writes for u in usage) == 2 and sum(u.reads for u in usage) >= 1

    # which runs wrote this partition: the run whose write the partition's commit lies in
    wrote = spark.sql(f"""
        SELECT p.spec['dt'] AS dt, r.run_id, r.kind FROM {cat}.system.partitions p
        JOIN {cat}.system.dataset_access a ON a.dataset = p.full_name AND a.access = 'write'
             AND p.added_at BETWEEN a.run_start AND a.run_end
        JOIN {cat}.system.runs r ON r.run_id = a.run_id
        WHERE p.database = '{db}' AND p.table = 'src'""").collect()
    by_dt = {r.dt: r.run_id for r in wrote}
    assert set(by_dt) == {"d1", "d2"} and by_dt["d1"] != by_dt["d2"] and len(wrote) == 2

    tl = spark.sql(f"SELECT source_table, target_table, type, columns FROM {cat}.system.table_lineage "
                   f"WHERE target_table = '{out}'").collect()
    assert any(t.source_table == mid and "shout <- contact" in t.columns for t in tl)
    runs = spark.sql(f"SELECT kind, status, user FROM {cat}.system.runs WHERE run_id = '{email.run_id}'").collect()
    assert runs and runs[0].status == "COMPLETE"


def test_changes_feed_table(spark: Any, cat: str, db: str) -> None:
    spark.sql(f"CREATE TABLE {cat}.{db}.c (id INT) USING parquet")
    rows = spark.sql(f"SELECT change, kind, name FROM {cat}.system.changes "
                     f"WHERE name = 'ushas.{db}.c'").collect()
    assert ("CREATED", "table") in [(r.change, r.kind) for r in rows]


@pytest.mark.slow  # a spark-sql process with its own JVM and launched bridge (~30 s)
def test_config_only_spark_sql_reads_metadata_and_system_tables(spark: Any, db: str, spark_dirs: dict[str, Any],
                                                               tmp_path: Any) -> None:
    spark.sql(f"CREATE TABLE ushas.{db}.cfg (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.cfg VALUES (1, 'a'), (2, 'b')")
    proc = run_spark([spark_bin("spark-sql"), "--master", "local[1]",
                      *conf_args(spark_dirs["store"], spark_dirs["warehouse"]),
                      "-e", f"SELECT dt, files FROM ushas.{db}.cfg.partitions WHERE dt > 'a'; "
                            f"SELECT full_name FROM ushas.system.tables WHERE database = '{db}';"],
                     tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.split() == ["b", "1", f"ushas.{db}.cfg"]
