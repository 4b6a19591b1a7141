"""``spark.api.mode=connect`` with a local master, built with the session helper (ushas_catalog.spark.configure):
pyspark runs a Connect server in this process and this session is its client. Catalog, writes, reads,
``df.lineage()`` and a captured run. Prints one JSON line ``RESULT {...}``
(tests/remote/test_api_mode_connect.py).

    python client_api_mode.py STORE_URI WAREHOUSE
"""
from __future__ import annotations

import json
import sys
from typing import Any


def main(uri: str, warehouse: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from ushas_catalog.spark import configure

    builder = (SparkSession.builder.master("local[1]").appName("api_mode_nb").config("spark.api.mode", "connect")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    spark: Any = configure(builder, name="ushas", uri=uri, warehouse=warehouse).getOrCreate()
    out: dict[str, Any] = {"session_class": type(spark).__module__ + "." + type(spark).__name__}
    spark.sql("CREATE NAMESPACE ushas.am")
    spark.sql("CREATE TABLE ushas.am.t (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql("INSERT INTO ushas.am.t VALUES (1, 'x', 'a'), (2, 'y', 'b')")
    spark.createDataFrame([(3, "z", "a")], "id int, v string, dt string").writeTo("ushas.am.t").append()
    out["rows"] = sorted([r.id, r.dt] for r in spark.table("ushas.am.t").where("dt = 'a'").collect())
    df = spark.table("ushas.am.t").where("dt = 'a'").selectExpr("id * 2 AS id2", "upper(v) AS uv")
    result = df.lineage()
    out["lineage"] = str(result)
    out["edges"] = sorted(f"{e.target.name} <- {e.source}" for e in result.edges if e.target is not None)
    out["session_id"] = spark.session_id
    spark.stop()
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1], sys.argv[2])), flush=True)
