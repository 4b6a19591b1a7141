"""``df.lineage()`` for PySpark (classic, non-Connect) DataFrames.

Importing this module installs ``DataFrame.lineage`` on ``pyspark.sql.classic.dataframe.DataFrame``
(idempotent); ``ushas_catalog.spark`` imports it. In the pyspark shell::

    $ pyspark --jars "$(python -m ushas_catalog jar)"
    >>> import lineage.dataframe
    >>> print(spark.sql("select 1 as a").lineage())

The plan walker (``io.ushas.spark.PlanWriter``) runs in the JVM. In a session started without
the shim jar (a notebook, a shared cluster's shell), the jar is loaded into the running driver
the first time it is needed (``lineage.shim_loader``, one WARNING line): no restart.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from ushas_catalog.errors import LineageUnavailable

from . import checkpoints
from .model import LineageResult
from .plan import PlanDocument, ShimUnavailable, fetch_dataset_json, fetch_json, fetch_sql_json, gc_paused, parse
from .resolve import resolve

log = logging.getLogger("ushas.lineage")


def _fetch(fetch: Callable[..., str], *args: Any) -> PlanDocument:
    try:
        return parse(fetch(*args))
    except ShimUnavailable as e:
        raise LineageUnavailable(str(e)) from e


def _resolved(fetch: Callable[..., str], *args: Any) -> LineageResult:
    """Fetch, parse and resolve under ONE pause of Python's cyclic GC. The parsed document (a few
    thousand objects) is garbage once resolved and is freed, by reference counting, before the GC
    is re-enabled, so it never reaches a collection: with separate pauses a collection ran
    between parse and resolve, scanned the whole live document and promoted it to the older
    generations, whose collections then re-scan everything the process holds."""
    with gc_paused():
        return resolve(_fetch(fetch, *args))


def plan_document(spark: Any, jplan: Any) -> PlanDocument:
    """The parsed plan document of a JVM ``LogicalPlan`` (the analyzed plan); one Py4J round trip."""
    return _fetch(fetch_json, spark._jvm, jplan)


def lineage_of_plan(spark: Any, jplan: Any) -> LineageResult:
    return _resolved(fetch_json, spark._jvm, jplan)


def lineage_of_dataframe(df: Any) -> LineageResult:
    """Column lineage of a DataFrame's analyzed plan (nothing is executed). One Py4J round trip
    (``PlanWriter.exportDataset``: analyzed plan, walk, answer), then parse and resolve."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise LineageUnavailable("df.lineage() needs a classic (non-Connect) DataFrame")
    return _resolved(fetch_dataset_json, jdf)


def analyze_sql(spark: Any, sql: str) -> Any:
    """The analyzed JVM plan of ``sql`` WITHOUT executing it (commands included: INSERT, CTAS,
    MERGE... are analyzed with ``CommandExecutionMode.SKIP``)."""
    jss = spark._jsparkSession
    state = jss.sessionState()
    parsed = state.sqlParser().parsePlan(sql)
    skip = spark._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
    return state.executePlan(parsed, skip).analyzed()


def lineage_of_sql(spark: Any, sql: str) -> LineageResult:
    """Column lineage of a SQL statement, analyzed but not executed (one Py4J round trip:
    ``PlanWriter.exportSql``)."""
    return _resolved(fetch_sql_json, spark._jsparkSession, sql)


def _lineage(self: Any) -> LineageResult:
    """Column lineage of this DataFrame: ``str()`` prints one tree per output column;
    ``.edges``, ``.to_dict()``, ``.to_json()``, ``.to_openlineage()``, ``.to_dot()``,
    ``.to_mermaid()``; notebooks render it as HTML. A path that lies in a table's location of
    the session's ushas catalogs is shown as that table (lineage.session_paths)."""
    from .session_paths import link_session_paths

    return link_session_paths(self.sparkSession, lineage_of_dataframe(self))


def remember_checkpoint(source: Any, checkpointed: Any) -> None:
    """Remember the lineage of ``source`` for the rows of ``checkpointed``, a DataFrame over a
    ``LogicalRDD`` of them (lineage.checkpoints); never fails the user's call."""
    try:
        ids = tuple(a.expr_id for a in plan_document(
            checkpointed.sparkSession, checkpointed._jdf.queryExecution().analyzed()).root_node.output)
        checkpoints.remember(ids, lineage_of_dataframe(source))
    except Exception as exc:  # noqa: BLE001 - lineage is an extra: the checkpoint is the user's
        log.debug("lineage: checkpoint not remembered: %s", exc)


def remember_stream(stream: Any) -> None:
    """``writeStream.foreachBatch(f)``: each micro-batch ``f`` gets is a DataFrame over a
    ``LogicalRDD`` with the streaming query's output attributes; remember the streaming
    DataFrame's lineage for them, so ``batch.lineage()`` and the captured writes of the batch
    reach the stream's sources."""
    remember_checkpoint(stream, stream)


def _for_each_batch(method: Callable[..., Any]) -> Callable[..., Any]:
    def for_each_batch(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        remember_stream(self._df)
        return out

    for_each_batch.__wrapped__ = method  # type: ignore[attr-defined]
    for_each_batch.__doc__ = method.__doc__
    for_each_batch.ushas_lineage = True  # type: ignore[attr-defined]
    return for_each_batch


def install() -> None:
    """Adds ``lineage()`` to pyspark's classic DataFrame, and has ``checkpoint()`` /
    ``localCheckpoint()`` remember what they save and ``writeStream.foreachBatch`` what its
    batches are (idempotent)."""
    from pyspark.sql.classic.dataframe import DataFrame
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    if getattr(DataFrame, "lineage", None) is not _lineage:
        DataFrame.lineage = _lineage  # type: ignore[attr-defined]
    for name in ("checkpoint", "localCheckpoint"):
        method = getattr(DataFrame, name)
        if not getattr(method, "ushas_lineage", False):
            setattr(DataFrame, name, checkpoints.remembering(method, remember_checkpoint))
    if not getattr(DataStreamWriter.foreachBatch, "ushas_lineage", False):
        DataStreamWriter.foreachBatch = _for_each_batch(DataStreamWriter.foreachBatch)  # type: ignore[method-assign]


install()
