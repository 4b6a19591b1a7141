"""Catalog options are the deployer's through Spark Connect too (docs/governance.md): a client cannot
define a ushas catalog nor re-point the server's, neither with ``spark.conf.set`` nor with session configs
given to the builder (``SparkSession.builder.remote(...).config(...)``) nor with ``SET``; the server's own
catalog still works for it. The server of this directory does not opt in (``spark.ushas.session.catalogs``)."""
from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest
from spark_servers import SparkServer, run_client

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    remote, uri, new = sys.argv[1:4]
    out = {}

    def attempt(case, configs, statements, query):
        builder = SparkSession.builder.remote(remote)
        for k, v in configs.items():
            builder = builder.config(k, v)
        spark = builder.create()
        try:
            for s in statements:
                spark.sql(s).collect()
            spark.sql(query).collect()
            out[case] = "allowed"
        except Exception as e:  # what the server answered
            out[case] = str(e)
        finally:
            spark.stop()

    cls = "io.ushas.spark.UshasCatalog"
    attempt("session configs", {f"spark.sql.catalog.{new}": cls, f"spark.sql.catalog.{new}.uri": uri}, [],
            f"SHOW NAMESPACES IN {new}")
    attempt("user by session config", {"spark.sql.catalog.ushas.user": "admin"}, [], "SHOW NAMESPACES IN ushas")
    attempt("SET", {}, [f"SET spark.sql.catalog.{new}={cls}", f"SET spark.sql.catalog.{new}.uri={uri}"],
            f"SHOW NAMESPACES IN {new}")
    spark = SparkSession.builder.remote(remote).create()
    spark.conf.set("spark.sql.catalog.ushas.authorization", "false")
    try:
        spark.sql("SHOW NAMESPACES IN ushas").collect()
        out["spark.conf.set"] = "allowed"
    except Exception as e:
        out["spark.conf.set"] = str(e)
    spark.stop()
    attempt("deployed catalog", {}, [], "SHOW NAMESPACES IN ushas")
    print("RESULT " + json.dumps(out))
""")


def test_connect_clients_cannot_define_or_repoint_catalogs(connect: SparkServer, tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    new = "evil_" + uuid.uuid4().hex[:6]
    done = run_client(script, f"sc://127.0.0.1:{connect.port}/;user_id=mallory",
                      f"sqlite:///{connect.cwd / 'ushas.db'}", new, cwd=tmp_path, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:] + connect.tail(3000)
    out = json.loads(lines[-1][len("RESULT "):])
    assert out.pop("deployed catalog") == "allowed"
    named = {"session configs": f"spark.sql.catalog.{new}", "user by session config": "spark.sql.catalog.ushas.user",
             "SET": f"spark.sql.catalog.{new}", "spark.conf.set": "spark.sql.catalog.ushas.authorization"}
    assert set(out) == set(named)
    for case, message in out.items():
        assert "USHAS_SessionCatalogOptions" in message and named[case] in message, (case, message)
