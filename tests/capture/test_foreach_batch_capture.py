"""foreachBatch writes are captured: each batch write a ``writeStream.foreachBatch`` function makes
(``insertInto`` a catalog table, ``save(path)``) is stored as a run with the lineage of the
micro-batch DataFrame (``batch.lineage()``: the stream's sources, DIRECT and INDIRECT edges) and the
stream's query id and batch id, read back through ``ushas --json lineage run`` / ``upstream`` and
``ushas.system.column_lineage`` (docs/lineage.md, foreachBatch)."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from lineage.capture import flush_spark
from lineage.query import LineageQueries
from lineage.store import Access
from lineage.tables import open_lineage_store
from ushas_catalog.cli import main

from .test_capture_equals_dataframe import Edge, cli_edges, expected_edges, system_table_edges

pytestmark = [pytest.mark.spark]


def batch_runs(store: Any, target: str) -> dict[int, Any]:
    """The stored runs that wrote ``target``, by batch id."""
    key = LineageQueries(store).resolve_dataset(target)
    assert key is not None, f"no write of {target} captured"
    runs = [store.get_run(r.run_id) for r in store.accesses(key, access=Access.WRITE)]
    return {r.batch_id: r for r in runs}


def run_edges(store: Any, run: Any, target: str) -> set[Edge]:
    key = LineageQueries(store).resolve_dataset(target)
    names: dict[Any, str] = {}
    for e, _ in store.run_edges(run.run_id):
        names.setdefault(e.source, store.dataset(e.source).name)
    return {(e.target_column, f"{names[e.source]}.{e.source_column}", e.subtype.value)
            for e, _ in store.run_edges(run.run_id) if e.target == key}


@pytest.mark.parametrize("wrapped", [True, False], ids=["python", "no-python-link"])
def test_foreach_batch_writes_are_runs_with_the_batch_lineage(spark: Any, spark_dirs: dict[str, Path], wrapped: bool,
                                                              tmp_path: Path, capsys: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``no-python-link``: as in a Scala job or a configuration-only session's bridge process, the
    micro-batch DataFrame's link to the stream (lineage.dataframe.remember_stream) is not made
    in this process: capture links it from the micro-batch's own plan (lineage.micro_batches.link),
    whose file relation reads the batch's files with the stream's directory as its basePath: the
    source is named by the directory either way, as OpenLineage names it."""
    import lineage.dataframe

    if not wrapped:
        monkeypatch.setattr(lineage.dataframe, "remember_stream", lambda stream: None)
    db = "fb_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    uri = f"sqlite:///{spark_dirs['store']}"
    table, path = f"ushas.{db}.fb_out", tmp_path / "fb_path"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, label STRING) USING parquet")
    src = tmp_path / "in"
    src.mkdir()
    for i, values in enumerate([[1, 2, -3], [4, -5]]):  # one file per micro-batch
        (src / f"f{i}.json").write_text("".join(json.dumps({"value": v, "name": f"n{v}"}) + "\n" for v in values))
    stream = (spark.readStream.schema("value BIGINT, name STRING").option("maxFilesPerTrigger", 1).json(str(src))
              .where("value > 0").selectExpr("value * 10 AS id", "upper(name) AS label"))
    seen: dict[int, Any] = {}

    def write(batch: Any, batch_id: int) -> None:
        if wrapped:
            seen[batch_id] = batch.lineage()
        batch.write.mode("append").insertInto(table)
        batch.write.mode("append").format("parquet").save(str(path))

    q = stream.writeStream.foreachBatch(write).option("checkpointLocation", str(tmp_path / "ck")).start()
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None, q.exception()
    if not wrapped:  # what batch.lineage() says once the wrapper's link is made (after the stream)
        seen = {0: stream.lineage(), 1: stream.lineage()}
    assert sorted(seen) == [0, 1]
    want = expected_edges(seen[0])
    source = f"file:{src}"  # the directory, spelled as a batch read of it is
    assert {(c, s.rsplit(".", 1)[0], t) for c, s, t in want} >= {
        ("id", source, "TRANSFORMATION"), ("label", source, "TRANSFORMATION"), (None, source, "FILTER")}
    assert all(expected_edges(b) == want for b in seen.values())
    assert flush_spark(spark, 60).flushed
    store = open_lineage_store(uri, "default", {"ushas": "ushas"})
    for target in (table, f"file:{path}"):
        runs = batch_runs(store, target)
        assert sorted(runs) == [0, 1], f"{target}: one run per batch"
        for batch_id, run in runs.items():
            assert run.stream_query_id == q.id
            assert run_edges(store, run, target) == want, (target, batch_id)
            assert cli_edges(capsys, uri, run.run_id, target) == want, target
            if target == table:
                assert system_table_edges(spark, run.run_id, target) == want
    for column, origin in (("id", "value"), ("label", "name")):
        assert main(["--uri", uri, "--json", "lineage", "upstream", f"{table}.{column}"]) == 0
        assert f"{source}.{origin}" in {c["name"] for c in json.loads(capsys.readouterr().out)["columns"]}
