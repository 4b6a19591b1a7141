"""Spark in remote mode through several ``ushas serve`` replicas on one PostgreSQL store (docs/engines.md,
"Several ``ushas serve`` replicas"): two catalogs of the shared session, each on its own replica with its own
token, and the CLI through the second replica. What one writes the others see at their next statement (the
catalog's cache checks versions in the store, whichever replica answers), fenced writes through both at the
same time all land, and a replica killed -9 in the middle of a write's commit loses nothing: a commit that
reached the store is there, whole, through the other replica; one that did not is not there at all."""
from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from remote_service import KillingProxy, ServeProcess, make_token, remote_catalog
from ushas_catalog.check import check_store
from ushas_catalog.cli import main as ushas
from ushas_catalog.metastore import Metastore

pytestmark = [pytest.mark.spark, pytest.mark.postgresql, pytest.mark.slow]


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:6]}"


def _count(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) AS n FROM {table}").collect()[0].n)


def test_spark_through_two_replicas_on_one_postgresql(spark: Any, postgres: Any, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    uri = postgres.fresh_uri()
    with Metastore.open(uri) as ms:
        ms.grant("OWN", "project", "user:etl")
        ms.grant("OWN", "project", "user:ops")
    etl, ops = make_token(uri, "write", "etl")[1], make_token(uri, "write", "ops")[1]
    a = ServeProcess(uri, "default", tmp_path / "a.log").start()
    b = ServeProcess(uri, "default", tmp_path / "b.log").start()
    proxy = KillingProxy(b, "/commit_write", after_forwarding=True)
    warehouse = str(tmp_path / "warehouse")
    try:
        ca = remote_catalog(spark, _name("ra"), a.url, etl, warehouse)
        cb = remote_catalog(spark, _name("rb"), b.url, ops, warehouse)
        spark.sql(f"CREATE NAMESPACE {ca}.db")
        spark.sql(f"CREATE TABLE {ca}.db.t (id INT, region STRING) USING parquet PARTITIONED BY (region)")
        spark.sql(f"CREATE TABLE {ca}.db.tmp (id INT) USING parquet")
        # each catalog caches what it read; the other replica's commits are seen at the next statement
        assert _count(spark, f"{cb}.db.t") == 0
        spark.sql(f"INSERT INTO {ca}.db.t VALUES (1, 'EU')")
        assert _count(spark, f"{cb}.db.t") == 1
        spark.sql(f"INSERT INTO {cb}.db.t VALUES (2, 'US')")
        assert _count(spark, f"{ca}.db.t") == 2
        assert {r.partition for r in spark.sql(f"SHOW PARTITIONS {ca}.db.t").collect()} == {"region=EU", "region=US"}
        # the CLI through replica b: Spark through replica a sees its drop and its undrop
        assert ushas(["--uri", b.url, "--token", ops, "drop", "main.db.tmp"]) == 0
        assert "tmp" not in {r.tableName for r in spark.sql(f"SHOW TABLES IN {ca}.db").collect()}
        assert ushas(["--uri", b.url, "--token", ops, "undrop", "main.db.tmp"]) == 0
        assert "tmp" in {r.tableName for r in spark.sql(f"SHOW TABLES IN {ca}.db").collect()}
        capsys.readouterr()

        # fenced writes through both replicas at the same time: all of them land, one version each
        errors: list[BaseException] = []

        def write(cat: str, first: int) -> None:
            try:
                for i in range(2):
                    spark.sql(f"INSERT INTO {cat}.db.t VALUES ({first + i}, 'EU')")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        with Metastore.open(uri, create=False) as ms:
            before = ms.get_table("main.db.t").version
        threads = [threading.Thread(target=write, args=(cat, first)) for cat, first in ((ca, 10), (cb, 20))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        assert _count(spark, f"{cb}.db.t") == _count(spark, f"{ca}.db.t") == 6
        with Metastore.open(uri, create=False) as ms:
            info = ms.get_table("main.db.t")
            assert info.version == before + 4
            assert [h.version for h in ms.history("main.db.t")] == list(range(info.version, 0, -1))
            assert {h.user for h in ms.history("main.db.t")[:4]} == {"etl", "ops"}

        # replica b killed -9 after the commit reached the store, before its answer left: the statement
        # fails saying its outcome is unknown, the commit is in the store, whole, seen through replica a
        ck = remote_catalog(spark, _name("rk"), proxy.url, ops, warehouse)
        with pytest.raises(Exception, match=r"may or may not have been registered: .*OutcomeUnknown: "
                                            r"ushas service at http://127.0.0.1:[0-9]+ unreachable"):
            spark.sql(f"INSERT INTO {ck}.db.t VALUES (99, 'APAC')")
        assert proxy.killed == 1
        assert _count(spark, f"{ca}.db.t WHERE id = 99") == 1
        assert "region=APAC" in {r.partition for r in spark.sql(f"SHOW PARTITIONS {ca}.db.t").collect()}
        b.start()   # same port: the catalog on it works again without restarting Spark
        spark.sql(f"INSERT INTO {cb}.db.t VALUES (100, 'APAC')")
        assert _count(spark, f"{ca}.db.t") == 8
        report = check_store(uri, "default")
        assert report.ok, report.lines()
    finally:
        proxy.close()
        a.stop()
        b.stop()
        postgres.drop_schema(uri)
