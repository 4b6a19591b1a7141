"""Lineage of versioned objects (docs/objects.md, "Lineage"): a Spark job that writes files under a volume's
location is attributed to the volume, and a Python training step that registers a model version with
``lineage.record`` shows in upstream / downstream / impact."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

import lineage
from lineage.query import LineageQueries
from lineage.store import Access
from lineage.tables import open_lineage_store
from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument, NoSuchVersion, NotFound
from ushas_catalog.metastore import Metastore

from .test_capture_spark import wait_for, written


@pytest.mark.spark
def test_a_spark_write_under_a_volume_is_the_volume(spark, spark_dirs: dict[str, Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import lineage.tables as tables
    from ushas_catalog.spark.bridge import REGISTRY

    monkeypatch.setattr(tables, "LOCATIONS_TTL_S", -1.0)  # the capture sees the volume made just now
    uri = f"sqlite:///{spark_dirs['store']}"
    tag = uuid.uuid4().hex[:8]
    db = f"vol_{tag}"
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.docs_src (id BIGINT, body STRING) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.docs_src VALUES (1, 'a'), (2, 'b')")
    volume = spark_dirs["root"] / f"volume_{tag}"
    ms = Metastore.open(uri, project="default")
    try:
        ms.objects.create(f"ushas.{db}.docs", "volume", str(volume))
    finally:
        ms.close()
    spark.table(f"ushas.{db}.docs_src").selectExpr("id", "upper(body) AS text") \
        .write.mode("overwrite").parquet(str(volume / "batch=1"))
    REGISTRY.lineage().flush(30)
    store = open_lineage_store(uri, "default", {"ushas": "ushas"})
    try:
        rows = wait_for(lambda: written(store, f"ushas.{db}.docs"), "the write under the volume")
        assert [r.access for r in rows] == [Access.WRITE]
        q = LineageQueries(store)
        up = q.answer_json(q.upstream(f"ushas.{db}.docs.text"))
        assert f"ushas.{db}.docs_src.body" in {e["source"] for e in up["edges"]}
        impact = q.answer_json(q.impact(f"ushas.{db}.docs_src.body"))
        assert f"ushas.{db}.docs.text" in {e["target"] for e in impact["edges"]}
        run = store.get_run(rows[0].run_id)
        written_uris = [ref.dataset.uri for acc, ref in store.run_datasets(run.run_id) if acc is Access.WRITE]
        assert written_uris and written_uris[0].endswith(f"volume_{tag}/batch=1")  # the path stays on it
        shown = spark.sql(f"SELECT name, kind FROM ushas.system.objects WHERE database = '{db}'").collect()
        assert [tuple(r) for r in shown] == [("docs", "volume")]
    finally:
        store.close()


@pytest.fixture
def trained(tmp_path: Path) -> dict[str, Any]:
    uri = f"sqlite:///{tmp_path / 'u.db'}"
    ms = Metastore.open(uri, project="acme", user="trainer")
    ms.create_catalog("main")
    ms.create_database("main.ml")
    ms.create_table("main.ml.customers", "id INT, age INT, spend DOUBLE, country STRING")
    ms.objects.create("main.ml.churn", "model", "s3://models/churn")
    v1 = ms.objects.add_version("main.ml.churn", "s3://models/churn/1")
    run1 = lineage.record(inputs=["main.ml.customers.age", "main.ml.customers.spend"], output=v1, metastore=ms,
                          job="train_churn")
    v2 = ms.objects.add_version("main.ml.churn", "s3://models/churn/2")
    run2 = lineage.record(inputs=["main.ml.customers"], output="main.ml.churn", metastore=ms)  # current: v2
    yield {"uri": uri, "ms": ms, "v1": v1, "v2": v2, "runs": (run1, run2)}
    ms.close()


def test_lineage_record_of_a_model_version(trained: dict[str, Any]) -> None:
    ms = trained["ms"]
    from lineage.store import LineageStore
    from lineage.tables import MetastoreTableIds

    q = LineageQueries(LineageStore(ms.db, ms.project, layout=ms.layout, tables=MetastoreTableIds(ms)))
    up = q.upstream("main.ml.churn@v1")
    assert {q.node_name(h.source) for h in up.hops.values()} == {"main.ml.customers.age", "main.ml.customers.spend"}
    up2 = q.upstream("main.ml.churn@v2")
    assert {q.node_name(h.source) for h in up2.hops.values()} == {
        f"main.ml.customers.{c}" for c in ("id", "age", "spend", "country")}
    impact = q.answer_json(q.impact("main.ml.customers.age"))
    assert {d["name"] for d in impact["datasets"]} == {"main.ml.churn@v1", "main.ml.churn@v2"}
    runs = q.runs("main.ml.churn@v1")
    assert [r.run_id for _, r in runs] == [trained["runs"][0]] and runs[0][1].job == "train_churn"


def test_lineage_record_refuses_bad_input_and_writes_nothing(trained: dict[str, Any]) -> None:
    ms = trained["ms"]
    before = ms.db.run(lambda tr: [kv.key for kv in tr.get_range(b"", b"\xff")])
    with pytest.raises(InvalidArgument, match="no column 'nope'"):
        lineage.record(inputs=["main.ml.customers.nope"], output=trained["v1"], metastore=ms)
    with pytest.raises(NoSuchVersion):
        lineage.record(inputs=["main.ml.customers.age"], output="main.ml.churn@v9", metastore=ms)
    with pytest.raises(NotFound):
        lineage.record(inputs=["main.ml.customers.age"], output="main.ml.nothing@v1", metastore=ms)
    with pytest.raises(NotFound):
        lineage.record(inputs=["main.ml.missing.age"], output=trained["v1"], metastore=ms)
    with pytest.raises(InvalidArgument):
        lineage.record(inputs=[], output=trained["v1"], metastore=ms)
    assert ms.db.run(lambda tr: [kv.key for kv in tr.get_range(b"", b"\xff")]) == before


def test_cli_lineage_of_a_model_version(trained: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--uri", trained["uri"], "--project", "acme", "--json", "lineage"]
    assert main([*args, "upstream", "main.ml.churn@v1"]) == 0
    assert {e["source"] for e in json.loads(capsys.readouterr().out)["edges"]} == {
        "main.ml.customers.age", "main.ml.customers.spend"}
    assert main([*args, "downstream", "main.ml.customers.spend"]) == 0
    assert {d["name"] for d in json.loads(capsys.readouterr().out)["datasets"]} == {
        "main.ml.churn@v1", "main.ml.churn@v2"}


def test_usage_counts_reads_and_writes_of_object_versions(trained: dict[str, Any]) -> None:
    ms = trained["ms"]
    from lineage.store import LineageStore
    from lineage.tables import MetastoreTableIds

    ms.create_table("main.ml.scores", "id INT, score DOUBLE")
    lineage.record(inputs=["main.ml.churn@v1", "main.ml.customers.id"], output="main.ml.scores", metastore=ms,
                   job="score")
    store = LineageStore(ms.db, ms.project, layout=ms.layout, tables=MetastoreTableIds(ms))
    assert [(u.reads, u.writes) for u in store.usage("main.ml.churn@v1")] == [(1, 1)]
    assert [(u.reads, u.writes) for u in store.usage("main.ml.churn@v2")] == [(0, 1)]
    q = LineageQueries(store)
    assert [r.job for acc, r in q.runs("main.ml.churn@v1") if acc is Access.READ] == ["score"]


def test_df_lineage_names_a_path_under_a_volume_as_the_volume(tmp_path: Path) -> None:
    """``df.lineage()`` (lineage.session_paths) links a path leaf under a volume to the volume, named by the
    metastore catalog (objects are not Spark tables), and one under a table to the table."""
    import lineage.session_paths as sp
    from lineage.model import Dataset

    uri = f"sqlite:///{tmp_path / 'u.db'}"
    ms = Metastore.open(uri, project="default")
    ms.create_catalog("main")
    ms.create_database("main.ml")
    ms.create_table("main.ml.t", "a INT", location=str(tmp_path / "t"))
    ms.objects.create("main.ml.docs", "volume", str(tmp_path / "docs"))
    ms.close()

    class Conf:
        getAll = {"spark.sql.catalog.cat": sp.CATALOG_CLASS, "spark.sql.catalog.cat.uri": uri,
                  "spark.sql.catalog.cat.catalog": "main"}

    class Session:
        conf = Conf()

    find = sp.session_finder(Session())
    docs = find(Dataset.path(f"file:{tmp_path}/docs/batch=1"))
    assert docs is not None and (docs.name, docs.uri) == ("main.ml.docs", f"file:{tmp_path}/docs/batch=1")
    table = find(Dataset.path(f"file:{tmp_path}/t"))
    assert table is not None and table.name == "cat.ml.t"
    assert find(Dataset.path(f"file:{tmp_path}/elsewhere")) is None
