"""A checkpointed DataFrame's captured writes reach the source tables without the Python wrapper.

``checkpoint()`` / ``localCheckpoint()`` return a DataFrame over a ``LogicalRDD`` of the saved rows.
In a ``configure()`` session the wrapper of ``lineage.dataframe`` remembers the checkpointed plan;
in a configuration-only session (the bridge is another process), a Spark Connect server or a Java /
Scala job nothing calls it: capture learns the plan from the checkpoint action itself, which the
listener reports (``lineage.checkpoints.link``). Here the wrapper is switched off in-process, as in
those sessions; ``tests/capture/test_jvm_job.py`` runs the same through ``spark-submit`` of a Java job."""
from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from lineage.capture import flush_spark
from lineage.tables import open_lineage_store

from .test_capture_equals_dataframe import expected_edges, openlineage_edges, stored_run, system_table_edges

pytestmark = [pytest.mark.spark]


def checkpointed(df: Any) -> Any:
    return df.checkpoint()


def local_checkpointed(df: Any) -> Any:
    return df.localCheckpoint(eager=False)  # not even run: Spark still reports the action


@pytest.mark.parametrize("save", [checkpointed, local_checkpointed], ids=["checkpoint", "localCheckpoint"])
def test_checkpointed_write_reaches_the_sources_without_the_wrapper(
        spark: Any, spark_dirs: dict[str, Path], save: Callable[[Any], Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import lineage.dataframe
    from pyspark.sql import functions as F

    monkeypatch.setattr(lineage.dataframe, "remember_checkpoint", lambda source, out: None)
    spark.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="ushas-checkpoint-capture-"))
    db = "ck_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{db}")
    spark.sql(f"CREATE TABLE ushas.{db}.src (k INT, v DOUBLE, w STRING) USING parquet")
    spark.sql(f"INSERT INTO ushas.{db}.src VALUES (1, 2.0, 'a'), (2, -1.0, 'b')")
    source = spark.table(f"ushas.{db}.src").where("v > 0").select("k", F.upper("w").alias("uw"))
    want = expected_edges(source.select("uw", "k").lineage())  # the same query, not checkpointed
    assert want == {("uw", f"ushas.{db}.src.w", "TRANSFORMATION"), ("k", f"ushas.{db}.src.k", "IDENTITY"),
                    (None, f"ushas.{db}.src.v", "FILTER")}

    saved = save(source).select("uw", "k")
    target = f"ushas.{db}.dst"
    saved.writeTo(target).create()
    assert flush_spark(spark, 60).flushed
    store = open_lineage_store(f"sqlite:///{spark_dirs['store']}", "default", {"ushas": "ushas"})
    got, writes, run_id = stored_run(store, target)
    assert writes == [target]
    assert got == want, f"stored {sorted(got - want, key=str)}, missing {sorted(want - got, key=str)}"
    assert system_table_edges(spark, run_id, target) == want
    assert openlineage_edges(store, run_id, ["uw", "k"]) == want
    # and df.lineage() in this process: the capture's link serves it too (the same registry)
    assert expected_edges(saved.lineage()) == want
    assert sorted(r.uw for r in spark.table(target).collect()) == ["A"]
