"""The example hook conf/hooks/refresh_summary.py keeps a summary table in step with its source:
partitions written, overwritten and dropped in Spark reach the summary through the hook worker."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.hooks import HookStore, HookWorker

EXAMPLE = Path(__file__).resolve().parents[2] / "conf" / "hooks" / "refresh_summary.py"


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT city, total, orders, dt FROM {table}").collect())


def _expected(spark: Any, source: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(
        f"SELECT city, SUM(amount), COUNT(*), dt FROM {source} GROUP BY city, dt").collect())


def test_summary_follows_its_source(spark: Any, db: str, ms: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    source, summary = f"ushas.{db}.orders", f"ushas.{db}.orders_daily"
    spark.sql(f"CREATE TABLE {source} (city STRING, amount BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {summary} (city STRING, total BIGINT, orders BIGINT, dt STRING) USING parquet "
              f"PARTITIONED BY (dt)")
    monkeypatch.setenv("USHAS_REFRESH_SUMMARY", json.dumps([{
        "source": source, "summary": summary,
        "query": "SELECT city, SUM(amount) AS total, COUNT(*) AS orders FROM {source} WHERE {where} GROUP BY city"}]))
    hooks = HookStore(ms)
    name = f"summary-{db}"
    hooks.add(name, python=f"{EXAMPLE}:refresh", on="partitions", table=f"{db}.orders", backoff_s=0.01)
    worker = HookWorker(ms, jitter=False)
    try:
        spark.sql(f"INSERT INTO {source} VALUES ('pune', 10, 'd1'), ('pune', 5, 'd1'), ('goa', 7, 'd1'), "
                  f"('goa', 1, 'd2')")
        result = worker.run_once([name])
        assert result.delivered >= 1 and result.failed == 0, result
        assert _rows(spark, summary) == _expected(spark, source) == [
            ("goa", 1, 1, "d2"), ("goa", 7, 1, "d1"), ("pune", 15, 2, "d1")]

        # a partition overwritten and one added; the summary's own writes are not the hook's events
        spark.sql(f"INSERT OVERWRITE {source} PARTITION (dt = 'd1') VALUES ('pune', 100)")
        spark.sql(f"INSERT INTO {source} VALUES ('goa', 3, 'd3')")
        result = worker.run_once([name])
        assert result.delivered == 2 and result.failed == 0, result
        assert _rows(spark, summary) == _expected(spark, source) == [
            ("goa", 1, 1, "d2"), ("goa", 3, 1, "d3"), ("pune", 100, 1, "d1")]

        spark.sql(f"ALTER TABLE {source} DROP PARTITION (dt = 'd2')")
        assert worker.run_once([name]).delivered == 1
        assert _rows(spark, summary) == _expected(spark, source) == [("goa", 3, 1, "d3"), ("pune", 100, 1, "d1")]
        status = hooks.status(name)[0]
        assert (status.state, status.behind, status.dead_letters) == ("up to date", 0, 0)
        assert [d.type for d in hooks.all_deliveries(name)] == [
            "partitions_added", "partitions_replaced", "partitions_added", "partitions_dropped"]
    finally:
        hooks.remove(name)
