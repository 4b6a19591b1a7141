"""One lineage, whichever way it is asked for: every query of the lineage case table
(tests/lineage/test_plan_lineage.py ``CASES``, imported, not copied) is written for real, in one of
the write forms a user has (``saveAsTable`` of an unqualified name into Spark's session catalog,
SQL CTAS / INSERT, ``insertInto``, ``save(path)``, ``writeTo().create()`` and RTAS into the ``ushas``
catalog), and the run the listener stored for that write must carry exactly the edges of
``df.lineage()`` of the written DataFrame (same DIRECT and INDIRECT edges, same subtypes) and ONE
output dataset with its catalog identity.

The written DataFrame's columns are renamed ``c0, c1, …`` first (``toDF``): the case table has
repeated and unwritable names; the rename is part of both lineages."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lineage"))

from test_plan_lineage import CASES, PlanCase, create_case_tables  # noqa: E402

from lineage.capture import flush_spark  # noqa: E402
from lineage.model import DatasetKind, LineageResult  # noqa: E402
from lineage.query import LineageQueries  # noqa: E402
from lineage.store import Access, LineageStore  # noqa: E402
from lineage.tables import open_lineage_store  # noqa: E402
from lineage.views import view_edges  # noqa: E402

pytestmark = pytest.mark.spark

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


def insert_into(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    name = f"spark_catalog.{DB}.{_name(case)}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.createDataFrame([], df.schema).write.saveAsTable(name)
    df.write.insertInto(name)
    return name


def sql_insert(spark: Any, df: Any, case: PlanCase, tmp: Path) -> str:
    name = f"ushas.{UDB}.{_name(case)}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.createDataFrame([], df.schema).writeTo(name).create()
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


def stored_run(store: LineageStore, target: str) -> tuple[set[Edge], list[str]]:
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
    return edges, writes


@pytest.fixture(scope="module")
def written(spark: Any, spark_dirs: dict[str, Path]) -> Any:
    create_case_tables(spark)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS spark_catalog.{DB}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS ushas.{UDB}")
    return open_lineage_store(f"sqlite:///{spark_dirs['store']}", "default", {"ushas": "ushas"})


@pytest.mark.parametrize("case", QUERIES, ids=[c.id for c in QUERIES])
def test_captured_write_equals_dataframe_lineage(spark: Any, written: LineageStore, case: PlanCase,
                                                 tmp_path: Path) -> None:
    form = FORMS[QUERIES.index(case) % len(FORMS)]
    df = dataframe_of(spark, case)
    want = expected_edges(df.lineage())
    target = form(spark, df, case, tmp_path)
    assert flush_spark(spark, 60).flushed
    got, writes = stored_run(written, target)
    assert writes == [target], f"{form.__name__}: one output dataset, named as the catalog names it"
    assert got == want, f"{form.__name__}: stored {sorted(got - want, key=str)}, " \
                        f"missing {sorted(want - got, key=str)}"


def test_every_write_form_is_used() -> None:
    assert len(QUERIES) >= 7 * len(FORMS)
    assert {FORMS[i % len(FORMS)] for i in range(len(QUERIES))} == set(FORMS)
