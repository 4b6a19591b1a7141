"""``df.lineage()`` for Spark Connect DataFrames (``SparkSession.builder.remote("sc://…")`` or
``spark.api.mode=connect``).

A Connect client has no JVM, so the plan travels over Connect itself: the DataFrame's relation
is wrapped in a relation ``extension`` (a protobuf ``Any``) that the server's plugin
``io.ushas.spark.connect.LineageRelationPlugin`` (``spark.connect.extensions.relation.classes``)
analyses in the client's own server-side session, answering one row with the plan JSON. The
client parses and resolves it exactly as a classic session does (``lineage.plan`` →
``lineage.resolve``), so the result is the same :class:`~lineage.model.LineageResult`. Nothing
is executed, and no second channel is opened.

Importing this module installs ``DataFrame.lineage`` on ``pyspark.sql.connect.dataframe.DataFrame``
and has its ``checkpoint()`` / ``localCheckpoint()`` remember what they save (lineage.checkpoints),
idempotently; ``ushas_catalog.spark`` does it when pyspark's Connect DataFrame is loaded.
"""
from __future__ import annotations

import logging
from typing import Any

from ushas_catalog.errors import LineageUnavailable

from .model import LineageResult
from .plan import gc_paused, parse
from .resolve import resolve

log = logging.getLogger("ushas.lineage")

#: the plugin class to configure on the server (``spark.connect.extensions.relation.classes``)
PLUGIN_CLASS = "io.ushas.spark.connect.LineageRelationPlugin"
#: type URLs of the extension payloads (LineageRelationPlugin.OF_RELATION / OF_SQL)
OF_RELATION = "type.googleapis.com/io.ushas.lineage.LineageOfRelation"
OF_SQL = "type.googleapis.com/io.ushas.lineage.LineageOfSql"
#: the one column of the plugin's answer
COLUMN = "plan_json"


def _extension_frame(session: Any, type_url: str, value: bytes) -> Any:
    """A Connect DataFrame whose relation is the extension ``Any(type_url, value)``."""
    from google.protobuf import any_pb2
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import LogicalPlan

    payload = any_pb2.Any(type_url=type_url, value=value)

    class _Extension(LogicalPlan):
        def __init__(self) -> None:
            super().__init__(None)

        def plan(self, client: Any) -> Any:
            rel = self._create_proto_relation()
            rel.extension.CopyFrom(payload)
            return rel

    return DataFrame(_Extension(), session)


def _plan_json(session: Any, type_url: str, value: bytes) -> str:
    try:
        rows = _extension_frame(session, type_url, value).collect()
    except Exception as exc:  # noqa: BLE001 - Spark's own errors (parse, analysis) pass as they are
        text = str(exc)
        if "NO_HANDLER_FOR_EXTENSION" in text or "no handler found for extension" in text.lower():
            raise LineageUnavailable(
                "df.lineage() over Spark Connect needs the server to load the ushas lineage plugin: "
                f"start it with spark.connect.extensions.relation.classes={PLUGIN_CLASS} "
                f"(and the shim jar in spark.jars); the server said: {text.splitlines()[0] if text else exc!r}"
            ) from exc
        raise
    if len(rows) != 1:
        raise LineageUnavailable(f"the ushas lineage plugin answered {len(rows)} rows, expected one")
    return str(rows[0][COLUMN])


def _resolved(text: str) -> LineageResult:
    with gc_paused():
        return resolve(parse(text))


def is_connect_dataframe(df: Any) -> bool:
    try:
        from pyspark.sql.connect.dataframe import DataFrame
    except ImportError:  # the Connect client's dependencies are not installed
        return False
    return isinstance(df, DataFrame)


def dataframe_plan_json(df: Any) -> str:
    """The plan JSON (docs/internals/plan-json.md) of a Connect DataFrame's analyzed plan: one round trip."""
    rel = df._plan.plan(df.sparkSession.client)
    return _plan_json(df.sparkSession, OF_RELATION, rel.SerializeToString())


def sql_plan_json(spark: Any, sql: str) -> str:
    """The plan JSON of ``sql`` analysed (NOT executed) in ``spark``'s server-side session."""
    from google.protobuf import wrappers_pb2

    return _plan_json(spark, OF_SQL, wrappers_pb2.StringValue(value=sql).SerializeToString())


def lineage_of_connect_dataframe(df: Any) -> LineageResult:
    """Column lineage of a Connect DataFrame's analyzed plan (analysed on the server, resolved here)."""
    return _resolved(dataframe_plan_json(df))


def lineage_of_connect_sql(spark: Any, sql: str) -> LineageResult:
    """Column lineage of a SQL statement over Connect, analysed on the server and NOT executed
    (``spark.sql()`` over Connect runs a command such as INSERT at once)."""
    return _resolved(sql_plan_json(spark, sql))


def _lineage(self: Any) -> LineageResult:
    """Column lineage of this Connect DataFrame (see ``lineage.dataframe``): the same result as in
    a classic session; a path in a table's location of the session's ushas catalogs is shown as
    that table when this client can open the catalog's store."""
    from .session_paths import link_session_paths

    return link_session_paths(self.sparkSession, lineage_of_connect_dataframe(self))


def remember_checkpoint(source: Any, checkpointed: Any) -> None:
    """``checkpoint()`` / ``localCheckpoint()`` of a Connect DataFrame: the server keeps the saved
    rows as a ``LogicalRDD`` with the checkpointed plan's output attributes; remember the lineage
    of ``source`` for them in this process (lineage.checkpoints), so ``df.lineage()`` of the
    checkpointed DataFrame reaches the source tables here as in a classic session. Two plan round
    trips, nothing executed; never fails the user's call."""
    from . import checkpoints

    try:
        ids = tuple(a.expr_id for a in parse(dataframe_plan_json(checkpointed)).root_node.output)
        checkpoints.remember(ids, lineage_of_connect_dataframe(source))
    except Exception as exc:  # noqa: BLE001 - lineage is an extra: the checkpoint is the user's
        log.debug("lineage: Connect checkpoint not remembered: %s", exc)


def install() -> None:
    """Adds ``lineage()`` to pyspark's Connect DataFrame, and has its ``checkpoint()`` /
    ``localCheckpoint()`` remember what they save (idempotent)."""
    from pyspark.sql.connect.dataframe import DataFrame

    from . import checkpoints

    if getattr(DataFrame, "lineage", None) is not _lineage:
        DataFrame.lineage = _lineage  # type: ignore[attr-defined]
    for name in ("checkpoint", "localCheckpoint"):
        method = getattr(DataFrame, name)
        if not getattr(method, "ushas_lineage", False):
            setattr(DataFrame, name, checkpoints.remembering(method, remember_checkpoint))


install()
