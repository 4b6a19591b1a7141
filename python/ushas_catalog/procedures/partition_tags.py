"""``set_partition_tags`` and ``unset_partition_tags``: user tags on partitions
(:mod:`ushas_catalog.catalog.partition_tags`), as ``ushas partition-tags set / unset``."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from .registry import ACTION, DETAIL, OBJECT, TABLE, VERSION, Call, Column, Outcome, Param, procedure

PARTITION = Param("partition", "STRING", "the partitions: a spec 'dt=2024-01-01/city=Pune' (any of the partition "
                                         "columns), a filter \"city IN ('Pune', 'Nagpur') AND dt >= '2024-01-01'\", "
                                         "or '' (every partition)")
RESULT = [ACTION, OBJECT, DETAIL, VERSION, Column("matched", "BIGINT", "partitions the spec or filter named"),
          Column("changed", "BIGINT", "partitions whose tags changed")]


def _answer(call: Call, action: str, name: tuple[str, str, str], result: Any, detail: str) -> Outcome:
    return Outcome([[action, ".".join(name), detail, result.version, result.matched, result.changed]],
                   refresh=[list(name[1:])] if result.version is not None else [])


@procedure("set_partition_tags", "Tag partitions (key -> value; a key already there takes the new value): "
                                 "map('province', 'MH', 'size', 'large'); one commit of the table", [
    TABLE, PARTITION, Param("tags", "MAP<STRING, STRING>", "the tags: map('key', 'value', ...)")], RESULT)
def set_partition_tags(call: Call) -> Outcome:
    name, where, tags = call.table(), call.required("partition"), call.required("tags")
    result = call.ms.set_partition_tags(".".join(name), where, tags)
    return _answer(call, "SET PARTITION TAGS", name, result,
                   ", ".join(f"{k}={v}" for k, v in sorted(tags.items())))


@procedure("unset_partition_tags", "Remove tags (by key) from partitions; a key a partition does not carry is "
                                   "ignored; one commit of the table", [
    TABLE, PARTITION, Param("keys", "ARRAY<STRING>", "the tag keys: array('province', ...)")], RESULT)
def unset_partition_tags(call: Call) -> Outcome:
    name, where, keys = call.table(), call.required("partition"), call.required("keys")
    if not isinstance(keys, list) or not keys or any(not isinstance(k, str) for k in keys):
        raise InvalidArgument("keys must be a non-empty array of tag keys: array('province', ...)")
    result = call.ms.unset_partition_tags(".".join(name), where, keys)
    return _answer(call, "UNSET PARTITION TAGS", name, result, ", ".join(sorted(keys)))
