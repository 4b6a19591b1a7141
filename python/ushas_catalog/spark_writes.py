"""Writes through Spark: which partitions an overwrite replaces, and registering what Spark's
file writer committed (values, location, files, bytes) in one metadata transaction."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from .errors import InvalidArgument
from .partitions import NULL_PARTITION


def parse_partition_path(path: str) -> dict[str, str]:
    """``dt=2024-01-01/h=3`` (Spark-escaped) -> {"dt": "2024-01-01", "h": "3"} (text form)."""
    spec: dict[str, str] = {}
    for part in path.strip("/").split("/"):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise InvalidArgument(f"not a partition directory: {part!r} in {path!r}")
        spec[unquote(name)] = unquote(value)
    return spec


def _plain(value: Any) -> Any:
    """A partition value as JSON compares it: dates as ISO text, decimals as text."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _same(a: Any, b: Any) -> bool:
    a, b = _plain(a), _plain(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, str):
        try:
            return a == type(a)(b)
        except ValueError:
            return False
    if isinstance(b, (int, float)) and isinstance(a, str):
        return _same(b, a)
    if isinstance(a, str) and isinstance(b, str):
        try:
            return Decimal(a) == Decimal(b)
        except ArithmeticError:
            return a == b
    return a == b


def matches(filter_: dict[str, Any], values: dict[str, Any]) -> bool | None:
    """Evaluates a data source filter (as the shim sends it) on partition values, with SQL's
    three-valued logic (``None`` = unknown). Filters on data columns are refused."""
    op = filter_["op"]
    if op == "true":
        return True
    if op == "false":
        return False
    if op in ("and", "or", "not"):
        args = [matches(a, values) for a in filter_["args"]]
        if op == "not":
            return None if args[0] is None else not args[0]
        if op == "and":
            return False if False in args else (None if None in args else True)
        return True if True in args else (None if None in args else False)
    if op == "unsupported":
        raise InvalidArgument(f"cannot overwrite by the filter {filter_['text']}: overwrite by partition values")
    column = filter_["column"]
    if column not in values:
        raise InvalidArgument(f"cannot overwrite by a filter on {column!r}, which is not a partition column "
                              f"(partition columns: {', '.join(values) or 'none'})")
    value = values[column]
    if op == "is_null":
        return value is None
    if op == "is_not_null":
        return value is not None
    if op == "eq_null_safe":
        return (value is None and filter_["value"] is None) or (
            value is not None and filter_["value"] is not None and _same(value, filter_["value"]))
    if value is None:
        return None
    if op == "eq":
        return None if filter_["value"] is None else _same(value, filter_["value"])
    if op == "in":
        return any(v is not None and _same(value, v) for v in filter_["values"])
    raise InvalidArgument(f"unknown filter operation {op!r}")


def overwritten(partitions: list[Any], filters: list[dict[str, Any]]) -> list[Any]:
    """The partitions an ``overwrite(filters)`` replaces: those every filter holds for."""
    return [p for p in partitions if all(matches(f, p.values) is True for f in filters)]


def committed(table_location: str, partition_by: list[str], deleted: list[str],
              written: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[Any]]:
    """What Spark's commit did -> (partition specs to drop, partitions to put).

    ``deleted`` are the paths the write cleared first (relative to the table location; ``""`` is
    the whole table, ``dt=x`` a partition prefix); ``written`` the partition directories it
    committed, with their files and bytes listed after the commit."""
    from .partitions import Partition

    drop: list[dict[str, str]] = []
    for path in deleted:
        if path == "":
            drop.append({})
        elif "://" in path or path.startswith("/"):
            continue  # a custom partition location: its partition is re-put below when written
        else:
            drop.append(parse_partition_path(path))
    put: list[Partition] = []
    for w in written:
        spec = parse_partition_path(w["path"])
        if sorted(spec) != sorted(partition_by):
            raise InvalidArgument(f"written directory {w['path']!r} does not name the partition columns "
                                  f"{', '.join(partition_by)}")
        values = {k: (None if v == NULL_PARTITION else v) for k, v in spec.items()}
        put.append(Partition(values=values, location=f"{table_location.rstrip('/')}/{w['path'].strip('/')}",
                             files=int(w["files"]), bytes=int(w["bytes"])))
    return drop, put
