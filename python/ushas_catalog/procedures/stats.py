"""``analyze_table``: what ``ANALYZE TABLE … COMPUTE STATISTICS [FOR COLUMNS …]`` does for Spark's session
catalog, which Spark refuses for V2 catalogs (``NOT_SUPPORTED_COMMAND_FOR_V2_TABLE``).

The JVM runs the aggregation queries (the data is read by Spark, as ANALYZE does); Python stores the
results in one commit (``ANALYZE TABLE``, :meth:`ushas_catalog.catalog.statistics.StatisticsOps.set_statistics`):

- the table: ``numRows`` and ``spark.sql.statistics.numRows`` (and ``spark.sql.statistics.totalSize``,
  the bytes the catalog recorded: an unpartitioned table's ``totalSize``, the sum over the partitions);
- each analyzed column, under Spark's own keys ``spark.sql.statistics.colStats.<column>.<stat>``:
  ``nullCount``, ``distinctCount`` (approximate, as ANALYZE's), ``min`` / ``max`` (numeric, date and
  timestamp columns), ``avgLen``, ``maxLen``, ``version``;
- each partition (of the ``partition`` spec, or all): its row count.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidArgument
from .registry import TABLE, Call, Column, Outcome, Param, procedure

#: the property prefix of column statistics (Spark's, as its Hive catalog stores them)
COL_STATS = "spark.sql.statistics.colStats."
#: Spark's column statistics format version
STATS_VERSION = "2"
#: types with min / max statistics (as Spark's ANALYZE)
ORDERED = ("byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz")
#: types whose length varies (avgLen / maxLen measured)
VARIABLE = ("string", "binary")
#: bytes of the fixed-width types (Spark's defaultSize)
FIXED = {"boolean": 1, "byte": 1, "short": 2, "integer": 4, "long": 8, "float": 4, "double": 8, "date": 4,
         "timestamp": 8, "timestamp_ntz": 8}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _kind(data_type: Any) -> str:
    text = data_type if isinstance(data_type, str) else data_type.get("type", "complex") \
        if isinstance(data_type, dict) else "complex"
    return "decimal" if text.startswith("decimal") else text


@procedure("analyze_table", "Compute and store a table's statistics (row count; per column nulls, distinct values, "
                            "min, max, average and maximum length) or its partitions' row counts: what ANALYZE "
                            "TABLE does, which Spark refuses for V2 catalogs. DESCRIBE shows them; the optimizer "
                            "uses the table's size and row count",
           [TABLE, Param("columns", "ARRAY<STRING>", "the columns (default: every column of an atomic type)", "NULL"),
            Param("partition", "MAP<STRING, STRING>", "only the partitions of this spec (partition row counts)",
                  "NULL")],
           [Column("table", "STRING"), Column("rows", "BIGINT", "rows counted"),
            Column("columns", "ARRAY<STRING>", "columns whose statistics were stored"),
            Column("partitions", "BIGINT", "partitions whose row count was stored"),
            Column("version", "BIGINT", "the table version made")])
def analyze_table(call: Call) -> Outcome:
    name = call.table()
    info = call.ms.get_table(name)
    fields = {f["name"]: f for f in json.loads(info.schema.json())["fields"]}
    spec: dict[str, str] | None = call.args.get("partition")
    wanted = call.args.get("columns")
    if spec is not None:
        if wanted is not None:
            raise InvalidArgument("analyze_table computes column statistics for the whole table: give columns or "
                                  "partition, not both")
        if not info.partition_columns:
            raise InvalidArgument(f"{'.'.join(name)} is not partitioned", table=".".join(name))
        by_fold = {c.lower(): c for c in info.partition_columns}
        unknown = [k for k in spec if k.lower() not in by_fold]
        if unknown:
            raise InvalidArgument(f"{', '.join(unknown)} is not a partition column of {'.'.join(name)} "
                                  f"(partition columns: {', '.join(info.partition_columns)})", table=".".join(name))
        spec = {by_fold[k.lower()]: v for k, v in spec.items()}
    columns = _columns(fields, wanted, name) if spec is None else []
    if call.jvm_result is None:
        return Outcome.ask_jvm("sql", {"columns": columns}, queries=_queries(call, name, info, fields, columns, spec))
    return _store(call, name, info, fields, list(call.state["columns"]), spec, call.jvm_result)


def _columns(fields: dict[str, Any], wanted: list[str] | None, name: tuple[str, ...]) -> list[str]:
    if wanted is None:
        return [c for c, f in fields.items() if _kind(f["type"]) in FIXED or _kind(f["type"]) in VARIABLE
                or _kind(f["type"]) == "decimal"]
    by_fold = {c.lower(): c for c in fields}
    out = []
    for c in wanted:
        real = by_fold.get(str(c).lower())
        if real is None:
            raise InvalidArgument(f"{'.'.join(name)} has no column {c!r}", table=".".join(name), column=c)
        if _kind(fields[real]["type"]) not in FIXED and _kind(fields[real]["type"]) not in VARIABLE \
                and _kind(fields[real]["type"]) != "decimal":
            raise InvalidArgument(f"column {real} of {'.'.join(name)} is of a complex type: no statistics "
                                  f"(as ANALYZE TABLE … FOR COLUMNS)", table=".".join(name), column=real)
        out.append(real)
    return list(dict.fromkeys(out))


def _queries(call: Call, name: tuple[str, str, str], info: Any, fields: dict[str, Any], columns: list[str],
             spec: dict[str, str] | None) -> list[str]:
    table = ".".join(_quote(p) for p in (call.ctx.spark_catalog, name[1], name[2]))
    where = ""
    if spec:
        where = " WHERE " + " AND ".join(f"CAST({_quote(k)} AS STRING) = {_literal(v)}" for k, v in spec.items())
    aggregates = ["count(1) AS n"]
    for i, c in enumerate(columns):
        q, kind = _quote(c), _kind(fields[c]["type"])
        aggregates += [f"count({q}) AS nn{i}", f"approx_count_distinct({q}) AS d{i}"]
        if kind in ORDERED or kind == "decimal":
            aggregates += [f"CAST(min({q}) AS STRING) AS min{i}", f"CAST(max({q}) AS STRING) AS max{i}"]
        if kind in VARIABLE:
            aggregates += [f"CAST(avg(length({q})) AS DOUBLE) AS al{i}", f"max(length({q})) AS ml{i}"]
    queries = [f"SELECT {', '.join(aggregates)} FROM {table}{where}"]
    if info.partition_columns:
        parts = ", ".join(f"CAST({_quote(p)} AS STRING) AS {_quote(p)}" for p in info.partition_columns)
        group = ", ".join(_quote(p) for p in info.partition_columns)
        queries.append(f"SELECT {parts}, count(1) AS n FROM {table}{where} GROUP BY {group}")
    return queries


def _store(call: Call, name: tuple[str, str, str], info: Any, fields: dict[str, Any], columns: list[str],
           spec: dict[str, str] | None, results: list[list[dict[str, Any]]]) -> Outcome:
    from ..model.partitions import NULL_PARTITION

    totals = results[0][0] if results and results[0] else {"n": 0}
    n = int(totals.get("n") or 0)
    props: dict[str, str] = {}
    remove: list[str] = []
    if spec is None:
        props.update({"numRows": str(n), "spark.sql.statistics.numRows": str(n)})
        size = info.properties.get("totalSize")
        if size is not None:
            props["spark.sql.statistics.totalSize"] = size
        for i, c in enumerate(columns):
            kind = _kind(fields[c]["type"])
            prefix = f"{COL_STATS}{c}."
            remove.append(prefix)
            stats = {"nullCount": n - int(totals.get(f"nn{i}") or 0), "distinctCount": int(totals.get(f"d{i}") or 0),
                     "version": STATS_VERSION}
            if kind in ORDERED or kind == "decimal":
                for key, field in (("min", f"min{i}"), ("max", f"max{i}")):
                    if totals.get(field) is not None:
                        stats[key] = totals[field]
            if kind in VARIABLE:
                stats["avgLen"] = round(float(totals.get(f"al{i}") or 0))
                stats["maxLen"] = int(totals.get(f"ml{i}") or 0)
            else:
                size_of = FIXED.get(kind, 16)
                stats["avgLen"] = size_of
                stats["maxLen"] = size_of
            props.update({prefix + k: str(v) for k, v in stats.items()})
    partition_rows: list[tuple[dict[str, Any], int]] = []
    if info.partition_columns and len(results) > 1:
        for row in results[1]:
            values = {p: row.get(p) if row.get(p) is not None else NULL_PARTITION for p in info.partition_columns}
            partition_rows.append((values, int(row["n"])))
    version = call.ms.set_statistics(name, props, remove, partition_rows,
                                     size_property="spark.sql.statistics.totalSize" if spec is None else None,
                                     detail={"columns": columns, "partition": spec, "rows": n})
    return Outcome([[".".join(name), n, columns, len(partition_rows), version]], refresh=[list(name[1:])])
