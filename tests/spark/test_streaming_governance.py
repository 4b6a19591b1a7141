"""Streaming writes go through the same privilege checks as batch writes (each micro-batch's commit needs
MODIFY on the table), and ``ushas.system.streams`` shows only the streams of tables the caller may SELECT.
Two catalog instances on one fresh project with ``authorization=true``: ``adm`` (OWN) and ``bob``."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.metastore import Metastore
from user_catalogs import user_catalog

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def gov(spark: Any, spark_dirs: dict[str, Path]) -> Any:
    project = "gs_" + uuid.uuid4().hex[:8]
    uri = f"sqlite:///{spark_dirs['store']}"
    store_admin = Metastore.open(uri, project=project)
    store_admin.grant("OWN", "project", "user:admin")
    names = {role: user_catalog(spark, f"s{role}", uri=uri, project=project, warehouse=str(spark_dirs["warehouse"]),
                                user=user) for role, user in (("adm", "admin"), ("bob", "bob"))}
    spark.sql(f"CREATE NAMESPACE {names['adm']}.db")
    yield type("Gov", (), {"adm": names["adm"], "bob": names["bob"], "ms": store_admin})
    store_admin.close()


def stream(spark: Any, tmp_path: Path, table: str) -> Any:
    (tmp_path / "in").mkdir(parents=True, exist_ok=True)
    (tmp_path / "in" / "f.json").write_text(json.dumps({"a": 1, "p": "x"}) + "\n")
    q = (spark.readStream.schema("a INT, p STRING").json(str(tmp_path / "in")).writeStream
         .option("checkpointLocation", str(tmp_path / "ck")).toTable(table))
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    return q


def test_a_stream_needs_modify_and_a_refused_batch_writes_nothing(spark: Any, gov: Any, tmp_path: Path) -> None:
    from pyspark.errors import StreamingQueryException

    spark.sql(f"CREATE TABLE {gov.adm}.db.ro (a INT, p STRING) USING parquet PARTITIONED BY (p)")
    gov.ms.grant("SELECT", ("main", "db", "ro"), "user:bob")
    with pytest.raises(StreamingQueryException, match=r"INSUFFICIENT_PERMISSIONS.*User bob does not have MODIFY"):
        stream(spark, tmp_path / "bob", f"{gov.bob}.db.ro")
    assert list(gov.ms.list_partitions(("main", "db", "ro"))) == []
    assert gov.ms.streams(("main", "db", "ro")) == []
    # the refused batch is visible nowhere: no history entry, no change-feed event of a write
    assert [h.operation for h in gov.ms.history(("main", "db", "ro"))] == ["CREATE TABLE"]
    tid = gov.ms.get_table(("main", "db", "ro")).id
    assert [c.operation for c in gov.ms.changes() if c.object_id == tid and c.operation != "GRANT"] == ["CREATE TABLE"]
    gov.ms.grant("MODIFY", ("main", "db", "ro"), "user:bob")
    q = stream(spark, tmp_path / "bob2", f"{gov.bob}.db.ro")
    assert [p.query_id for p in gov.ms.streams(("main", "db", "ro"))] == [q.id]


def test_system_streams_shows_only_tables_the_caller_may_select(spark: Any, gov: Any, tmp_path: Path) -> None:
    """bob reads system tables of catalog main (SELECT on it); a stream into a table of another catalog of
    the project is not his to see."""
    spark.sql(f"CREATE TABLE {gov.adm}.db.seen (a INT, p STRING) USING parquet PARTITIONED BY (p)")
    q = stream(spark, tmp_path, f"{gov.adm}.db.seen")
    gov.ms.create_catalog("other", if_not_exists=True)
    gov.ms.create_database("other.db", if_not_exists=True)
    gov.ms.create_table("other.db.hidden", "a INT")
    gov.ms.write_table_files("other.db.hidden", [], "APPEND", detail={"query_id": "secret-q", "batch_id": 0})
    gov.ms.grant("SELECT", "main", "user:bob")

    def streams(catalog: str) -> list[tuple[Any, ...]]:
        return sorted((r.table, r.query_id, r.last_batch) for r in
                      spark.sql(f"SELECT * FROM {catalog}.system.streams").collect())

    assert {("main.db.seen", q.id, 0), ("other.db.hidden", "secret-q", 0)} <= set(streams(gov.adm))
    bob = streams(gov.bob)
    assert ("main.db.seen", q.id, 0) in bob and all(t != "other.db.hidden" for t, _, _ in bob)
