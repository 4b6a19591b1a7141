"""Row filters and column masks through Spark Connect (docs/governance.md): the server's catalog takes each
client session's user (``user_id``); a client in the exempt role reads every row and raw value, another
reads the filtered rows with the masked column, through SQL, the DataFrame API and a temporary view, and counts
only those rows (a count a parquet table's footers answer included: io.ushas.spark.FooterCount)."""
from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_servers import SparkServer, run_client

from ushas_catalog.metastore import Metastore

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    t = sys.argv[2]
    for statement in sys.argv[3:]:
        spark.sql(statement).collect()
    out = {"sql": sorted([list(r) for r in spark.sql(f"SELECT id, ssn FROM {t}").collect()]),
           "df": sorted([list(r) for r in spark.table(t).select("id", "ssn").collect()])}
    spark.table(t).createOrReplaceTempView("v")
    out["view"] = sorted([list(r) for r in spark.sql("SELECT id, ssn FROM v").collect()])
    # counts, which a parquet table's footers may answer (FooterCount): never of a hidden partition's rows
    out["counts"] = [spark.sql(f"SELECT count(*) FROM {t}").first()[0], spark.table(t).count(),
                     spark.sql(f"SELECT count(*) FROM {t} WHERE region = 'US'").first()[0],
                     spark.table(t).where("region <> 'EU'").count(),
                     spark.sql("SELECT count(*) FROM v WHERE region IN ('EU', 'US')").first()[0]]
    print("RESULT " + json.dumps(out))
""")


def _client(server: SparkServer, tmp: Path, user: str, table: str, *statements: str) -> dict[str, Any]:
    script = tmp / "client.py"
    script.write_text(CLIENT)
    done = run_client(script, f"sc://127.0.0.1:{server.port}/;user_id={user}", table, *statements, cwd=tmp)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:] + server.tail(3000)
    return dict(json.loads(lines[-1][len("RESULT "):]))


def test_connect_clients_read_through_the_policy(connect: SparkServer, tmp_path: Path) -> None:
    db = "rf_" + uuid.uuid4().hex[:6]
    t = f"ushas.{db}.people"
    setup = [f"CREATE NAMESPACE ushas.{db}",
             f"CREATE TABLE {t} (id INT, ssn STRING, region STRING) USING parquet PARTITIONED BY (region)",
             f"INSERT INTO {t} VALUES (1, '111-22-3333', 'EU'), (2, '222-33-4444', 'US')",
             f"CALL ushas.system.set_row_filter('{db}.people', \"region = 'EU'\", 'role:auditors')",
             f"CALL ushas.system.set_column_mask('{db}.people', 'ssn', \"concat('***-', substr(ssn, -4, 4))\", "
             f"'role:auditors')"]
    ms = Metastore.open(f"sqlite:///{connect.cwd / 'ushas.db'}")
    try:
        ms.create_role("auditors")
        ms.grant_role("auditors", "user:carol")
    finally:
        ms.close()
    carol = _client(connect, tmp_path, "carol", t, *setup)
    assert carol["sql"] == carol["df"] == carol["view"] == [[1, "111-22-3333"], [2, "222-33-4444"]]
    assert carol["counts"] == [2, 2, 1, 1, 2]
    bob = _client(connect, tmp_path, "bob", t)
    assert bob["sql"] == bob["df"] == bob["view"] == [[1, "***-3333"]]
    assert bob["counts"] == [1, 1, 0, 0, 1]  # the partition filter's rows only, answered from footers or not
