"""Remote mode with separate Spark applications (docs/service.md, "Remote mode"): a real ``ushas serve``
on a free port; Spark applications launched with configuration only (``spark-submit``: the shim launches
the bridge, which forwards to the service), each with its own token, and the CLI — at the same time. An
``etl`` application writes and its lineage reaches the service (as ``etl``, whatever Spark's user is);
an ``analyst`` application reads through a row filter and a mask and its runtime
``SET spark.sql.catalog...`` attempts gain nothing."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from remote_service import ServeProcess, make_token
from spark_processes import spark_bin
from ushas_catalog.metastore import Metastore

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TIMEOUT = 400


def _app_confs(url: str, token_file: Path, warehouse: Path) -> list[str]:
    from ushas_catalog.spark.jar import jar_path

    conf = {"spark.jars": str(jar_path()), "spark.sql.catalog.svc": "io.ushas.spark.UshasCatalog",
            "spark.sql.catalog.svc.uri": url, "spark.sql.catalog.svc.token-file": str(token_file),
            "spark.sql.catalog.svc.catalog": "main", "spark.sql.catalog.svc.warehouse": str(warehouse),
            "spark.sql.catalog.svc.bridge.timeout": "120",
            "spark.sql.extensions": "io.ushas.spark.UshasExtensions",
            "spark.sql.queryExecutionListeners": "io.ushas.spark.UshasLineageListener",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2"}
    return [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]


#: the driver of each application: runs its statements, prints one JSON line per statement
DRIVER = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    for sql in json.load(open(sys.argv[1])):
        try:
            rows = [list(r) for r in spark.sql(sql).collect()]
            print("RESULT " + json.dumps({"sql": sql, "rows": rows}, default=str), flush=True)
        except Exception as e:
            print("RESULT " + json.dumps({"sql": sql, "error": str(e)[:600]}), flush=True)
    spark.stop()
""")


def _launch(name: str, url: str, token: str, statements: list[str], root: Path) -> subprocess.Popen[str]:
    import os

    token_file = root / f"{name}.token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    script, driver = root / f"{name}.json", root / "driver.py"
    script.write_text(json.dumps(statements))
    driver.write_text(DRIVER)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("USHAS_TOKEN", None)
    cmd = [spark_bin("spark-submit"), "--master", "local[1]", *_app_confs(url, token_file, root / "warehouse"),
           str(driver), str(script)]
    return subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _results(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-4000:]
    return [json.loads(line[len("RESULT "):]) for line in out.splitlines() if line.startswith("RESULT ")]


def test_two_applications_and_the_cli_with_their_own_tokens(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'service.db'}"
    admin = Metastore.open(uri)
    admin.grant("OWN", "project", "user:admin")
    admin.close()
    tokens = {u: make_token(uri, "write", u)[1] for u in ("admin", "etl", "analyst")}
    serve = ServeProcess(uri, "default", tmp_path / "serve.log").start()
    try:
        adm = Metastore.open(serve.url, token=tokens["admin"])
        adm.create_catalog("main")
        adm.create_database("main.db")
        adm.grant("CREATE", "main.db", "user:etl")
        etl = _results(_launch("etl", serve.url, tokens["etl"], [
            "CREATE TABLE svc.db.people (id INT, name STRING, ssn STRING, region STRING) USING parquet "
            "PARTITIONED BY (region)",
            "INSERT INTO svc.db.people VALUES (1, 'ann', '111-22-3333', 'EU'), (2, 'ben', '222-33-4444', 'US')",
            "CREATE TABLE svc.db.names USING parquet AS SELECT id, name FROM svc.db.people",
        ], tmp_path))
        assert all("error" not in r for r in etl), etl
        adm.set_row_filter("main.db.people", "region = 'EU'", exempt="user:etl")
        adm.set_column_mask("main.db.people", "ssn", "concat('***-', substr(ssn, -4, 4))")
        adm.grant("SELECT", "main.db", "user:analyst")
        # at once: the analyst's application, a second etl application, and the CLI
        analyst_proc = _launch("analyst", serve.url, tokens["analyst"], [
            "SELECT id, name, ssn, region FROM svc.db.people ORDER BY id",
            "INSERT INTO svc.db.people VALUES (9, 'eve', '999-99-9999', 'EU')",
            "SET spark.sql.catalog.evil=io.ushas.spark.UshasCatalog",
            f"SET spark.sql.catalog.evil.uri={serve.url}",
            "SET spark.sql.catalog.evil.catalog=main",
            "SET spark.sql.catalog.evil.user=etl",
            "SELECT * FROM evil.db.people",
            "SET spark.sql.catalog.evil2=io.ushas.spark.UshasCatalog",
            f"SET spark.sql.catalog.evil2.uri={serve.url}",
            "SET spark.sql.catalog.evil2.catalog=main",
            "SELECT * FROM evil2.db.people",
        ], tmp_path)
        etl2_proc = _launch("etl2", serve.url, tokens["etl"], [
            "INSERT INTO svc.db.people VALUES (3, 'cat', '333-44-5555', 'EU')"], tmp_path)
        cli = {u: subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", serve.url, "--token", tokens[u],
                                  "partitions", "main.db.people"], capture_output=True, text=True, timeout=120)
               for u in ("etl", "analyst")}
        analyst, etl2 = _results(analyst_proc), _results(etl2_proc)
        # etl is exempt from the filter and lists the partitions; the filter hides rows from the analyst,
        # so the service refuses the analyst's listing
        assert cli["etl"].returncode == 0 and "EU" in cli["etl"].stdout and "US" in cli["etl"].stdout, \
            cli["etl"].stderr
        assert cli["analyst"].returncode != 0 and cli["analyst"].stdout == "", cli["analyst"].stdout
        assert "RowPolicyRefused: the partition listing of table main.db.people is refused: its row filter " \
            "hides rows from user analyst" in cli["analyst"].stderr, cli["analyst"].stderr
        assert all("error" not in r for r in etl2), etl2
        read = analyst[0]
        assert "error" not in read, read
        assert {tuple(r) for r in read["rows"]} <= {(1, "ann", "***-3333", "EU"), (3, "cat", "***-5555", "EU")}
        assert (1, "ann", "***-3333", "EU") in {tuple(r) for r in read["rows"]}
        assert "INSUFFICIENT_PERMISSIONS" in analyst[1]["error"]  # SELECT does not write
        # this application's configuration does not allow session-defined catalogs (docs/governance.md): the
        # runtime catalogs are refused before the service is reached (test_remote_mode covers the remote-mode
        # rule itself: a claimed user refused, no token of its own -> nothing)
        for i, cat, keys in ((6, "evil", "catalog, uri, user"), (10, "evil2", "catalog, uri")):
            named = ", ".join([f"spark.sql.catalog.{cat}"] + [f"spark.sql.catalog.{cat}.{k}" for k in keys.split(", ")])
            assert f"[USHAS_SessionCatalogOptions] catalog {cat} cannot be initialized: {named} were set in this " \
                "session" in analyst[i]["error"], analyst[i]
        # lineage went to the service, as the token's user
        from lineage.tables import open_lineage_store

        store = open_lineage_store(uri, create=False)
        try:
            runs = store.runs_between()
            users = {r.user for r in runs}
            assert users and users <= {"etl", "analyst"}, users
            ctas = [r for r in runs if "svc.db.names" in (r.sql or "")]
            assert ctas and ctas[0].user == "etl"
        finally:
            store.close()
        check = Metastore.open(uri, create=False)
        try:
            assert {p.spec["region"] for p in check.list_partitions("main.db.people")} == {"EU", "US"}
            assert [h.user for h in check.history("main.db.people")][:1] in (["etl"], ["admin"])
        finally:
            check.close()
    finally:
        serve.stop()
