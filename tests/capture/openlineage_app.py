"""A PySpark application for the OpenLineage transport tests (run in a subprocess):
``python openlineage_app.py STORE_DIR URL [scenario]``; prints ``RESULT {json}`` with what
``flush_spark`` answered. Scenario ``full``: CTAS, INSERT INTO, INSERT OVERWRITE, a read, a failing
write, a parquet path write, TRUNCATE, RENAME, DROP; ``small``: a CTAS and an INSERT."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from lineage.capture import flush_spark
from ushas_catalog.spark import configure

store, url = Path(sys.argv[1]), sys.argv[2]
scenario = sys.argv[3] if len(sys.argv) > 3 else "full"
builder = (SparkSession.builder.master("local[1]").appName("nightly")
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "2")
           .config("spark.ushas.lineage.openlineage.url", url)
           .config("spark.ushas.lineage.openlineage.apiKey", "s3cret")
           .config("spark.ushas.lineage.openlineage.timeout", "2"))
spark = configure(builder, uri=f"sqlite:///{store}/ushas.db", warehouse=str(store / "wh")).getOrCreate()
spark.sql("CREATE NAMESPACE ushas.sales")
spark.sql("CREATE TABLE ushas.sales.orders USING parquet PARTITIONED BY (dt) AS "
          "SELECT id, id * 10 AS amount, 'open' AS status, '2024-01-01' AS dt FROM range(5)")
spark.sql("INSERT INTO ushas.sales.orders SELECT id, id * 2, 'done', '2024-01-02' FROM range(3)")
if scenario == "full":
    spark.sql("CREATE TABLE ushas.sales.totals (status STRING, total BIGINT) USING parquet")
    spark.sql("INSERT OVERWRITE ushas.sales.totals SELECT status, sum(amount) FROM ushas.sales.orders "
              "WHERE dt = '2024-01-01' GROUP BY status")
    spark.table("ushas.sales.orders").where("amount > 3").collect()
    try:
        spark.sql("INSERT INTO ushas.sales.totals SELECT status, CAST(raise_error('boom') AS BIGINT) "
                  "FROM ushas.sales.orders")
    except Exception:  # noqa: BLE001 - the failing write is the point
        pass
    spark.table("ushas.sales.orders").where("dt = '2024-01-02'").select("id", "amount") \
        .write.mode("overwrite").parquet(str(store / "export"))
    spark.sql("TRUNCATE TABLE ushas.sales.totals")
    spark.sql("ALTER TABLE ushas.sales.totals RENAME TO sales.sums")
    spark.sql("DROP TABLE ushas.sales.sums")
answer = flush_spark(spark, timeout=60)
print("RESULT " + json.dumps({"flushed": answer.flushed, "listeners": list(answer.listeners),
                              "warehouse": str(store / "wh")}), flush=True)
spark.stop()
