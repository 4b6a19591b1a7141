"""A Spark Connect client in its own process (it never imports ushas_catalog): namespaces, a partitioned
table, every write form that works in a classic session (also of a checkpointed DataFrame), reads with
pruning, Spark's errors. Prints one
JSON line ``RESULT {...}`` for the test (tests/remote/test_connect_server.py).

    python client_catalog.py sc://127.0.0.1:PORT/;user_id=alice DB APP_NAME
"""
from __future__ import annotations

import json
import sys
from typing import Any, Callable


def main(url: str, db: str, app: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.remote(url).appName(app).getOrCreate()
    out: dict[str, Any] = {"session_id": spark.session_id}
    t = f"ushas.{db}.t"
    schema = "id int, dt string"
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'b') VALUES (3)")  # static: b replaced
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    spark.sql(f"INSERT OVERWRITE {t} SELECT 4, 'c'")  # dynamic: c new, a and b kept
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    spark.createDataFrame([(5, "a")], schema).writeTo(t).append()
    spark.createDataFrame([(6, "d")], schema).write.insertInto(t)
    spark.createDataFrame([(7, "d")], schema).writeTo(t).overwritePartitions()  # d replaced
    spark.createDataFrame([(8, "e")], schema).writeTo(t).overwrite(F.col("dt") == "e")
    spark.sql(f"CREATE TABLE ushas.{db}.ctas USING parquet PARTITIONED BY (dt) AS SELECT * FROM {t} WHERE dt = 'a'")
    spark.createDataFrame([(9, "f")], schema).write.partitionBy("dt").saveAsTable(f"ushas.{db}.sat")
    spark.createDataFrame([(10, "g")], schema).writeTo(f"ushas.{db}.wc").partitionedBy(F.col("dt")).create()
    # a locally checkpointed DataFrame written: the server's capture links the saved rows to t
    (spark.table(t).where("id > 1").select(F.upper("dt").alias("udt"), "id").localCheckpoint()
     .writeTo(f"ushas.{db}.ck").create())
    out["rows"] = sorted([r.id, r.dt] for r in spark.table(t).collect())
    out["partitions"] = [r[0] for r in spark.sql(f"SHOW PARTITIONS {t}").collect()]
    out["ctas"] = sorted([r.id, r.dt] for r in spark.table(f"ushas.{db}.ctas").collect())
    out["sat"] = [[r.id, r.dt] for r in spark.table(f"ushas.{db}.sat").collect()]
    out["wc"] = [[r.id, r.dt] for r in spark.table(f"ushas.{db}.wc").collect()]
    out["tables"] = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN ushas.{db}").collect())
    out["pruned"] = sorted(r.id for r in spark.table(t).where("dt = 'a'").collect())
    out["explain"] = spark.sql(f"EXPLAIN SELECT id FROM {t} WHERE dt = 'a'").collect()[0][0]
    out["errors"] = {name: condition(fn) for name, fn in {
        "missing_table": lambda: spark.table(f"ushas.{db}.nope").collect(),
        "missing_namespace": lambda: spark.sql("SHOW TABLES IN ushas.no_such_db_here").collect(),
        "table_exists": lambda: spark.sql(f"CREATE TABLE {t} (id INT) USING parquet"),
        "namespace_exists": lambda: spark.sql(f"CREATE NAMESPACE ushas.{db}"),
        "bad_column": lambda: spark.table(t).select("no_such_column").collect(),
    }.items()}
    # a DELETE of whole partitions: planned at analysis by the server's extension (MetadataOnlyDelete), metadata-only
    dd = f"ushas.{db}.dd"
    spark.sql(f"CREATE TABLE {dd} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {dd} VALUES (1, 'a'), (2, 'b')")
    out["delete_plan"] = spark.sql(f"EXPLAIN EXTENDED DELETE FROM {dd} WHERE dt = 'b'").collect()[0][0]
    spark.sql(f"DELETE FROM {dd} WHERE dt = 'b'")
    out["deleted"] = sorted([r.id, r.dt] for r in spark.table(dd).collect())
    last = spark.sql(f"SELECT operation, detail FROM {dd}.history ORDER BY version DESC LIMIT 1").collect()[0]
    out["delete_commit"] = [last.operation, '"metadata_only":true' in (last.detail or "")]
    out["ushas_catalog_imported"] = "ushas_catalog" in sys.modules
    spark.stop()
    return out


def condition(fn: Callable[[], Any]) -> str | None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the error condition is what the test checks
        get = getattr(exc, "getCondition", None)
        return str(get() if get is not None else type(exc).__name__)
    return None


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:4])), flush=True)
