"""``DESCRIBE EXTENDED / FORMATTED`` of an Ushas table, as Spark's session catalog describes its own
tables: the rows of the detailed section (``describe`` op; the JVM's ``DescribeStrategy`` puts them
after Spark's own column rows).

- a table: Catalog, Database, Table, Owner, Created Time, Last Access, Created By, Type, Provider,
  Comment, Table Properties, Statistics (once ``CALL ushas.system.analyze_table`` stored them), Location,
  Storage Properties (the ``OPTIONS``), Partition Provider;
- a partition (``DESC EXTENDED t PARTITION (…)``): Database, Table, Partition Values, Location, Storage
  Properties, Partition Parameters, Created Time, Last Access, Partition Statistics, then the table's
  storage information;
- a column (``DESC FORMATTED t c``): min, max, num_nulls, distinct_count, avg_col_len, max_col_len,
  histogram, from the statistics ``analyze_table`` stored under Spark's own keys
  (``spark.sql.statistics.colStats.<column>.<stat>``), ``NULL`` before.

Values Spark redacts (keys or values matching ``secret|password|token|access.key|url``) are redacted
the same way.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from .tables import OPTION_PREFIX, SparkCtx, location_of, table_name
from .writes import STATS_PROPERTIES

#: Spark's own property keys of table statistics (``spark.sql.statistics.*``), as ANALYZE stores them
STATISTICS_PREFIX = "spark.sql.statistics."
COLUMN_STATISTICS = STATISTICS_PREFIX + "colStats."
#: Spark's defaults of ``spark.redaction.regex`` and ``spark.sql.redaction.options.regex``
_REDACT = re.compile(r"(?i)secret|password|token|access[.]?key|url")
REDACTED = "*********(redacted)"
#: DESC FORMATTED t c: the statistics rows and the ``colStats`` key each comes from
_COLUMN_ROWS = (("min", "min"), ("max", "max"), ("num_nulls", "nullCount"), ("distinct_count", "distinctCount"),
                ("avg_col_len", "avgLen"), ("max_col_len", "maxLen"), ("histogram", "histogram"))


def describe(ms: Any, r: dict[str, Any]) -> dict[str, Any]:
    """The ``describe`` op: ``what`` is ``table`` (with ``partition``: that partition's values) or
    ``column`` (``column``: its name). Answers ``rows``, each ``[name, value, comment]``
    (``[name, value]`` for a column)."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = ms.get_table(name)
    if r.get("what") == "column":
        return {"rows": column_rows(info.properties, str(r.get("column")))}
    if r.get("partition") is not None:
        return {"rows": partition_rows(ctx, info, ms.get_partition(name, r["partition"]))}
    return {"rows": table_rows(ctx, info, str(r.get("spark_version") or ""))}


def spark_time(t: dt.datetime | None) -> str:
    """A time as Spark's DESCRIBE prints one (``java.util.Date#toString``, in UTC)."""
    if t is None:
        return "UNKNOWN"
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    return t.strftime("%a %b %d %H:%M:%S UTC %Y")


def redact(key: str, value: str) -> str:
    return REDACTED if _REDACT.search(key) or _REDACT.search(value) else value


def _listing(pairs: dict[str, str], sort: bool = True) -> str:
    items = sorted(pairs.items()) if sort else list(pairs.items())
    return "[" + ", ".join(f"{k}={redact(k, v)}" for k, v in items) + "]"


def options(info: Any) -> dict[str, str]:
    """The table's ``OPTIONS`` (kept as ``option.<key>`` properties)."""
    return {k[len(OPTION_PREFIX):]: v for k, v in info.properties.items() if k.startswith(OPTION_PREFIX)}


def table_properties(info: Any) -> dict[str, str]:
    """The properties Spark's session catalog lists as Table Properties: not the options (nor their
    un-prefixed copies Spark also passes), not statistics, not the catalog's write counters."""
    opts = options(info)
    hidden = set(STATS_PROPERTIES.values())
    return {k: v for k, v in info.properties.items()
            if not k.startswith(OPTION_PREFIX) and not k.startswith(STATISTICS_PREFIX) and k not in hidden
            and not (k in opts and opts[k] == v)}


def statistics(props: dict[str, str]) -> str | None:
    """Spark's ``Statistics`` row (``<bytes> bytes[, <rows> rows]``) once the table was analyzed."""
    size = props.get(STATISTICS_PREFIX + "totalSize")
    rows = props.get(STATISTICS_PREFIX + "numRows")
    if size is None and rows is None:
        return None
    text = f"{size or 0} bytes"
    return text + (f", {rows} rows" if rows is not None else "")


def table_rows(ctx: SparkCtx, info: Any, spark_version: str) -> list[list[str]]:
    rows: list[list[str]] = [["", "", ""], ["# Detailed Table Information", "", ""]]

    def add(key: str, value: str | None) -> None:
        if value is not None:
            rows.append([key, value, ""])

    add("Catalog", ctx.spark_catalog)
    add("Database", info.database)
    add("Table", info.name)
    add("Owner", info.owner or None)
    add("Created Time", spark_time(info.created_at))
    add("Last Access", "UNKNOWN")
    add("Created By", f"Spark {spark_version}" if spark_version else None)
    add("Type", "EXTERNAL" if info.external else "MANAGED")
    add("Provider", info.format)
    add("Comment", info.comment)
    props = table_properties(info)
    add("Table Properties", _listing(props) if props else None)
    add("Statistics", statistics(info.properties))
    add("Location", location_of(ctx, info))
    opts = options(info)
    add("Storage Properties", _listing(opts) if opts else None)
    add("Partition Provider", "Catalog" if info.partition_columns else None)
    return rows


def partition_rows(ctx: SparkCtx, info: Any, p: Any) -> list[list[str]]:
    rows: list[list[str]] = [["", "", ""], ["# Detailed Partition Information", "", ""]]

    def add(key: str, value: str | None) -> None:
        if value is not None:
            rows.append([key, value, ""])

    add("Database", info.database)
    add("Table", info.name)
    spec = p.spec or {k: str(v) for k, v in p.values.items()}
    add("Partition Values", "[" + ", ".join(f"{k}={v}" for k, v in spec.items()) + "]")
    add("Location", p.location)
    opts = options(info)
    add("Storage Properties", _listing(opts) if opts else None)
    params = {k: v for k, v in p.properties.items() if k != "location"}
    add("Partition Parameters", _listing(params, sort=False) if params else None)
    add("Created Time", spark_time(p.created_at))
    add("Last Access", "UNKNOWN")
    if p.rows is not None and info.properties.get(STATISTICS_PREFIX + "numRows") is not None:
        add("Partition Statistics", f"{p.bytes or 0} bytes, {p.rows} rows")
    rows += [["", "", ""], ["# Storage Information", "", ""]]
    add("Location", location_of(ctx, info))
    add("Storage Properties", _listing(opts) if opts else None)
    return rows


def column_rows(props: dict[str, str], column: str) -> list[list[str]]:
    """Spark prints ``NULL`` for a statistic it does not have."""
    prefix = f"{COLUMN_STATISTICS}{column}."
    return [[row, props.get(prefix + key, "NULL")] for row, key in _COLUMN_ROWS]
