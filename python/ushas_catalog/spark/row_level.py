"""DELETE, UPDATE and MERGE INTO through Spark (docs/row-level.md).

Copy-on-write: Spark plans the statement as a ``ReplaceData`` over ``io.ushas.spark.UshasRowLevel``,
whose scan reads the partitions the condition's partition predicates select, as of the version the
statement loaded, and whose write replaces exactly those partitions (``commit_write``, mode
``overwrite``, with ``base_version``: a change to them since is a ``WriteConflict``), recorded under the
statement's name (:func:`row_level_operation`). A DELETE whose condition uses only partition columns
is metadata-only: :func:`delete_where` drops the partitions it selects in one commit.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..data.garbage import Garbage
from ..errors import Conflict, InvalidArgument, WriteConflict
from .one_transaction import in_one_transaction
from .tables import SparkCtx, table_name
from .writes import matches

Request = dict[str, Any]
Answer = dict[str, Any]

#: the history names of row-level statements (the shim's RowLevelOperation.Command)
OPERATIONS = {"DELETE": "DELETE", "UPDATE": "UPDATE", "MERGE": "MERGE"}


def row_level_operation(command: Any) -> str | None:
    """The history name of a write made for a row-level statement (None: a plain write)."""
    if command is None:
        return None
    name = OPERATIONS.get(str(command).upper())
    if name is None:
        raise InvalidArgument(f"unknown row-level operation {command!r}")
    return name


def delete_where(ms: Any, r: Request) -> Answer:
    """``DELETE FROM t WHERE <partition predicates>``: the partitions every filter holds for are dropped
    in ONE commit (``DELETE``), their files kept until purge; nothing is read or written. A partition
    changed since ``base_version`` (the version the statement planned with) is a WriteConflict naming it.
    The shim's op runs it in one transaction (:data:`OPS`): the table, its partitions and the commit read one
    snapshot, so the retries below only matter when it runs call by call (too big for one transaction)."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    filters = list(r.get("filters") or [])
    base = r.get("base_version")
    for attempt in range(5):
        info = ms.get_table(name)
        if not info.partition_columns:
            raise InvalidArgument(f"{'.'.join(name)} is not partitioned: a DELETE cannot be metadata-only")
        gone = [p for p in ms.list_partitions(name, prefix=partition_prefix(info, filters))
                if all(matches(f, p.values) is True for f in filters)]
        garbage = Garbage()
        if not info.external:
            for p in gone:
                garbage.add_partition(p)
        try:
            result = ms.replace_partitions(name, [dict(p.values) for p in gone], [], expected_version=info.version,
                                           garbage=garbage, operation="DELETE",
                                           unchanged_since=None if base is None else int(base),
                                           detail={"partitions_deleted": len(gone), "metadata_only": True})
        except WriteConflict:
            raise
        except Conflict:
            if attempt == 4:
                raise
            continue
        return {"deleted": len(gone), "version": result.version}
    raise AssertionError("unreachable")


def partition_prefix(info: Any, filters: list[dict[str, Any]]) -> dict[str, str] | None:
    """A partial spec every partition the filters select has, for :meth:`list_partitions` to read only those keys:
    a filter ``column = 'value'`` on a partition column of type ``string`` whose value is not a number (for such a
    value :func:`matches` is exact string equality; a number's text also matches its other spellings, ``'1'`` and
    ``'1.0'``). None: every partition is read. The filters are still evaluated on each partition read."""
    types = {f.name: f.data_type for f in info.schema.fields}
    for f in filters:
        column, value = f.get("column"), f.get("value")
        if f.get("op") != "eq" or not isinstance(column, str) or column not in info.partition_columns \
                or not isinstance(value, str):
            continue
        if getattr(types.get(column), "name", None) != "string":
            continue
        try:
            Decimal(value)
        except ArithmeticError:
            return {column: value}
    return None


#: one transaction for the whole DELETE (the table, its partitions, the commit): one snapshot, one commit
OPS = {"delete_where": in_one_transaction(delete_where)}

__all__ = ["OPS", "OPERATIONS", "delete_where", "partition_prefix", "row_level_operation"]
