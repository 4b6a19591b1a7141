"""An example change hook: keep a materialised summary table ("a downstream build") in step with
its source table, partition by partition.

When a partition of the source is added or replaced, the matching partition of the summary is
recomputed (``INSERT OVERWRITE summary PARTITION (...) SELECT ... WHERE <that partition>``); when
one is dropped, the summary's partition is dropped; when the source is replaced (its partitions
cleared), the whole summary is rebuilt. Every step is idempotent, so the hook's at-least-once
delivery is all it needs.

Set up (docs/hooks.md, "Example: refresh a summary table")::

    export USHAS_REFRESH_SUMMARY=/path/summaries.json     # or the JSON itself
    ushas hooks add sales-daily --python conf/hooks/refresh_summary.py:refresh \\
        --on partitions --table ushas.sales.orders
    ushas hooks run sales-daily

``summaries.json``: a list of ``{"source": "ushas.sales.orders", "summary": "ushas.sales.orders_daily",
"query": "SELECT city, SUM(amount) AS total, COUNT(*) AS orders FROM {source} WHERE {where} GROUP BY city"}``.
The summary is partitioned by the source's partition columns; ``query`` selects its other columns
(in order) and gets ``{source}`` and ``{where}`` (the partition's predicate) filled in.

Spark: the session of the process when there is one (a worker started from pyspark), else one
built with ``ushas_catalog.spark.configure`` from ``USHAS_URI``, ``USHAS_PROJECT`` and
``USHAS_WAREHOUSE`` (the catalog is named after the first part of ``summary``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

ENV = "USHAS_REFRESH_SUMMARY"


def summaries() -> list[dict[str, str]]:
    """The configured summaries (``USHAS_REFRESH_SUMMARY``: a JSON file or the JSON text)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        raise RuntimeError(f"{ENV} is not set: a JSON list of {{source, summary, query}}")
    if not text.startswith(("[", "{")):
        text = Path(text).read_text(encoding="utf-8")
    found = json.loads(text)
    return [found] if isinstance(found, dict) else list(found)


def _spark(catalog: str) -> Any:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from ushas_catalog.spark import configure

    builder = SparkSession.builder.appName("ushas-refresh-summary")
    builder = configure(builder, name=catalog, uri=os.environ["USHAS_URI"],
                        project=os.environ.get("USHAS_PROJECT", "default"),
                        warehouse=os.environ.get("USHAS_WAREHOUSE"))
    return builder.getOrCreate()


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _quoted(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def _partition(spec: dict[str, str]) -> tuple[str, str]:
    """The PARTITION clause and the WHERE predicate of one partition."""
    clause = ", ".join(f"{_quoted(k)} = {_literal(v)}" for k, v in spec.items())
    where = " AND ".join(f"{_quoted(k)} = {_literal(v)}" for k, v in spec.items())
    return clause, where


def _same(name: str, event_name: str) -> bool:
    """``ushas.sales.orders`` names the metastore table ``ushas.sales.orders`` (catalog.database.table)."""
    return name.lower() == event_name.lower()


def refresh(event: dict[str, Any]) -> None:
    """The hook: recompute the summary partitions an event of a source table touched."""
    for s in summaries():
        if not _same(s["source"], event["object"]["name"]):
            continue
        spark = _spark(s["summary"].split(".")[0])
        parts = event["partitions"]
        if event.get("partitions_cleared"):
            rebuild(spark, s)
            continue
        for p in parts["added"] + parts["replaced"]:
            refresh_partition(spark, s, p["spec"])
        for p in parts["dropped"]:
            clause, _ = _partition(p["spec"])
            spark.sql(f"ALTER TABLE {s['summary']} DROP IF EXISTS PARTITION ({clause})")


def refresh_partition(spark: Any, s: dict[str, str], spec: dict[str, str]) -> None:
    clause, where = _partition(spec)
    query = s["query"].format(source=s["source"], where=where)
    spark.sql(f"INSERT OVERWRITE {s['summary']} PARTITION ({clause}) {query}")


def rebuild(spark: Any, s: dict[str, str]) -> None:
    """The whole summary from the source's current partitions."""
    spark.sql(f"TRUNCATE TABLE {s['summary']}")
    for row in spark.sql(f"SHOW PARTITIONS {s['source']}").collect():
        spec = {unquote(k): unquote(v) for k, v in (part.split("=", 1) for part in row[0].split("/"))}
        refresh_partition(spark, s, spec)
