"""The shim op behind ``io.ushas.spark.ViewSchemaSync``: Spark found that a view ``WITH SCHEMA
EVOLUTION`` / ``TYPE EVOLUTION`` no longer matches its query and gives its new schema; the catalog
stores it as a new version of the view (one transaction) and answers the view as stored."""
from __future__ import annotations

from typing import Any

from .tables import SparkCtx, table_name, view_answer

Request = dict[str, Any]
Answer = dict[str, Any]


def sync_view_schema(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    view = ms.evolve_view_schema(table_name(ctx, r), r["schema"], r.get("query_column_names"),
                                 mode=r.get("schema_mode"))
    return {"view": view_answer(view), "version": view.version}


OPS = {"sync_view_schema": sync_view_schema}
