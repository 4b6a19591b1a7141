"""One lineage, whichever way it is asked for: every query of the lineage case table
(tests/lineage/test_plan_lineage.py ``CASES``, imported, not copied) is written for real, in one of
the write forms a user has (``saveAsTable`` of an unqualified name into Spark's session catalog,
SQL CTAS / INSERT, ``insertInto``, ``save(path)``, ``writeTo().create()`` and RTAS into the ``ushas``
catalog; a streaming query through ``writeStream.foreachBatch``), and the run the listener stored for that write must carry exactly the edges of
``df.lineage()`` of the written DataFrame (same DIRECT and INDIRECT edges, same subtypes) and ONE
output dataset with its catalog identity.

The written DataFrame's columns are renamed ``c0, c1, …`` first (``toDF``): the case table has
repeated and unwritable names; the rename is part of both lineages."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lineage"))

from plan_cases import PlanCase, create_case_tables  # noqa: E402
from test_plan_lineage import CASES  # noqa: E402  (the queries: the write cases have targets of their own)

from lineage.capture import flush_spark  # noqa: E402
from lineage.model import DatasetKind, LineageResult  # noqa: E402
from lineage.query import LineageQueries  # noqa: E402
from lineage.store import Access, LineageStore  # noqa: E402
from lineage.tables import open_lineage_store  # noqa: E402
from lineage.views import view_edges  # noqa: E402
from ushas_catalog.cli import main  # noqa: E402

from .openlineage_schema import validate_event  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # ~120 real writes: about 6 minutes

DB = "linw"  # spark_catalog database of the written tables
UDB = "linw"  # namespace of the ushas catalog's written tables

#: cases that are queries (no write of their own), built in a classic session
QUERIES = [c for c in CASES if c.target is None and c.mode in ("sql", "dataframe") and c.direct]

Edge = tuple[str | None, str, str]  # (target column or None: dataset-wide, source column, subtype)


def _name(case: PlanCase) -> str:
    return "w_" + re.sub(r"\W", "_", case.id)


def save_as_table(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    spark.sql(f"USE spark_catalog.{DB}")  # the name as a user types it: unqualified
    try:
        df.write.mode("overwrite").saveAsTable(_name(case))
    finally:
        spark.sql("USE spark_catalog.default")
    return f"spark_catalog.{DB}.{_name(case)}"


def sql_ctas(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    df.createOrReplaceTempView("linw_q")
    spark.sql(f"DROP TABLE IF EXISTS spark_catalog.{DB}.{_name(case)}")
    spark.sql(f"CREATE TABLE spark_catalog.{DB}.{_name(case)} USING parquet AS SELECT * FROM linw_q")
    return f"spark_catalog.{DB}.{_name(case)}"


def create_like(spark: Any, name: str, df: Any) -> None:
    """An empty table with ``df``'s columns, by DDL (no write job: the test stays cheap)."""
    ddl = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(df.schema.json()).toDDL()
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} ({ddl}) USING parquet")


def insert_into(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    name = f"spark_catalog.{DB}.{_name(case)}"
    create_like(spark, name, df)
    df.write.insertInto(name)
    return name


def sql_insert(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    name = f"ushas.{UDB}.{_name(case)}"
    create_like(spark, name, df)
    df.createOrReplaceTempView("linw_q")
    spark.sql(f"INSERT INTO {name} SELECT * FROM linw_q")
    return name


def save_path(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    df.write.mode("overwrite").parquet(str(tmp / _name(case)))
    return "file:" + str(tmp / _name(case))


def write_to(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    name = f"ushas.{UDB}.{_name(case)}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    df.writeTo(name).create()
    return name


def rtas(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    name = f"ushas.{UDB}.{_name(case)}"
    df.createOrReplaceTempView("linw_q")
    spark.sql(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM linw_q")
    return name


def for_each_batch(spark: Any, df: Any, case: PlanCase, tmp: Path) -> list[LineageResult]:
    """A streaming DataFrame: each micro-batch written by ``foreachBatch``; the lineage of each
    batch DataFrame, asked inside the batch as a user would (a batch is a DataFrame over the
    batch's rows: lineage.checkpoints links it to the stream's plan)."""
    name = f"spark_catalog.{DB}.{_name(case)}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    seen: list[LineageResult] = []

    def write(batch: Any, _: int) -> None:
        seen.append(batch.lineage())
        batch.write.mode("append").saveAsTable(name)

    query = (df.writeStream.foreachBatch(write).option("checkpointLocation", str(tmp / "checkpoint"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120), "the stream did not end"
    finally:
        query.stop()
    return seen


FORMS: list[Callable[[Any, Any, PlanCase, Path], str]] = [
    save_as_table, sql_ctas, insert_into, save_path, write_to, rtas, sql_insert]


def dataframe_of(spark: Any, case: PlanCase) -> Any:
    df = spark.sql(case.query) if case.mode == "sql" else case.query(spark)  # type: ignore[operator]
    return df.toDF(*[f"c{i}" for i in range(len(df.columns))])


def expected_edges(result: LineageResult) -> set[Edge]:
    """The edges of ``df.lineage()``, and to the columns of the persistent views it reads (those
    are stored too: docs/lineage.md, views)."""
    out: set[Edge] = set()
    for e in (*result.edges, *view_edges(result)):
        if e.source.dataset is None or e.source.dataset.kind is DatasetKind.INLINE:
            continue  # in-query sources are not datasets of the store
        out.add((e.target.name if e.target is not None else None, f"{e.source.dataset.name}.{e.source.name}",
                 e.subtype.value))
    return out


def stored_run(store: LineageStore, target: str) -> tuple[set[Edge], list[str], Any]:
    q = LineageQueries(store)
    key = q.resolve_dataset(target)
    assert key is not None, f"no write of {target} captured"
    rows = store.accesses(key, access=Access.WRITE)
    assert rows, f"no write of {target} captured"
    run_id = max(rows, key=lambda r: r.time_ms).run_id
    names: dict[Any, str] = {}

    def name(k: Any) -> str:
        if k not in names:
            ref = store.dataset(k)
            names[k] = ref.name if ref is not None else str(k)
        return names[k]

    edges = {(e.target_column, f"{name(e.source)}.{e.source_column}", e.subtype.value)
             for e, _ in store.run_edges(run_id) if e.target == key}
    writes = [ref.name for access, ref in store.run_datasets(run_id) if access is Access.WRITE]
    return edges, writes, run_id


def cli_edges(capsys: Any, uri: str, run_id: Any, target: str) -> set[Edge]:
    """``ushas --json lineage run RUN_ID``: the run's edges into ``target``."""
    assert main(["--uri", uri, "--json", "lineage", "run", str(run_id)]) == 0
    out: set[Edge] = set()
    for e in json.loads(capsys.readouterr().out)["edges"]:
        if e["target"] == target or e["target"].startswith(target + "."):
            column = e["target"][len(target) + 1:] or None
            out.add((column, e["source"], e["subtype"]))
    return out


def system_table_edges(spark: Any, run_id: Any, target: str) -> set[Edge]:
    """``ushas.system.column_lineage``: the run's edges into ``target``."""
    rows = spark.sql("SELECT target_column, source_table, source_column, subtype FROM ushas.system.column_lineage "
                     f"WHERE target_table = '{target}' AND run_id = '{run_id}'").collect()
    return {(r.target_column, f"{r.source_table}.{r.source_column}", r.subtype) for r in rows}


def openlineage_edges(store: LineageStore, run_id: Any, columns: list[str]) -> set[Edge]:
    """The exported COMPLETE event (validated against the spec): its output's columnLineage facet,
    which lists every written column (those without a source with empty inputFields)."""
    from lineage.openlineage import run_events
    from lineage.openlineage_events import to_json

    complete = json.loads(to_json(run_events(store, store.get_run(run_id))[1]))
    validate_event(complete)
    (output,) = complete["outputs"]
    facet = output["facets"]["columnLineage"]
    assert sorted(facet["fields"]) == sorted(columns), "every written column, with or without a source"

    def source(f: dict[str, Any]) -> str:
        ns, name = f["namespace"], f["name"]
        return f"{ns}.{name}.{f['field']}" if ":" not in ns and not name.startswith("/") else \
            f"{ns}:{name}.{f['field']}"

    out: set[Edge] = set()
    for column, field in facet["fields"].items():
        for f in field["inputFields"]:
            out.update((column, source(f), t["subtype"]) for t in f["transformations"])
    for f in facet.get("dataset", ()):
        out.update((None, source(f), t["subtype"]) for t in f["transformations"])
    return out


@pytest.fixture(scope="module")
def written(spark: Any, spark_dirs: dict[str, Path]) -> Any:
    create_case_tables(spark)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS spark_catalog.{DB}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS ushas.{UDB}")
    spark.sql("INSERT INTO lin.u VALUES (1, 2.0, 'a')")  # a row for the streaming cases' one batch
    return open_lineage_store(f"sqlite:///{spark_dirs['store']}", "default", {"ushas": "ushas"})


@pytest.mark.parametrize("case", QUERIES, ids=[c.id for c in QUERIES])
def test_captured_write_equals_dataframe_lineage(spark: Any, written: LineageStore, case: PlanCase,
                                                 tmp_path: Path, capsys: Any, spark_dirs: dict[str, Path]) -> None:
    store_uri = f"sqlite:///{spark_dirs['store']}"
    df = dataframe_of(spark, case)
    want = expected_edges(df.lineage())
    if df.isStreaming:
        # each micro-batch written by foreachBatch (saveAsTable): the batch's lineage asked inside
        # the batch, and the run the listener stored for the batch's write (docs/lineage.md)
        batches = for_each_batch(spark, df, case, tmp_path)
        assert batches and all(expected_edges(b) == want for b in batches), [str(b) for b in batches]
        target = f"spark_catalog.{DB}.{_name(case)}"
        assert flush_spark(spark, 60).flushed
        got, writes, run_id = stored_run(written, target)
        assert writes == [target], "foreachBatch: one output dataset, named as the catalog names it"
        assert got == want, f"foreachBatch: stored {sorted(got - want, key=str)}, missing {sorted(want - got, key=str)}"
        assert written.get_run(run_id).batch_id == 0
        assert cli_edges(capsys, store_uri, run_id, target) == want
        assert system_table_edges(spark, run_id, target) == want
        assert openlineage_edges(written, run_id, df.columns) == want
        return
    form = FORMS[QUERIES.index(case) % len(FORMS)]
    target = form(spark, df, case, tmp_path)
    assert flush_spark(spark, 60).flushed
    got, writes, run_id = stored_run(written, target)
    assert writes == [target], f"{form.__name__}: one output dataset, named as the catalog names it"
    assert got == want, f"{form.__name__}: stored {sorted(got - want, key=str)}, " \
                        f"missing {sorted(want - got, key=str)}"
    assert cli_edges(capsys, store_uri, run_id, target) == want
    assert system_table_edges(spark, run_id, target) == want
    assert openlineage_edges(written, run_id, df.columns) == want


def test_every_write_form_is_used() -> None:
    assert len(QUERIES) >= 7 * len(FORMS)
    assert any(c.operator.startswith("Streaming source") for c in QUERIES)  # written by foreachBatch
    assert {FORMS[i % len(FORMS)] for i in range(len(QUERIES))} == set(FORMS)
