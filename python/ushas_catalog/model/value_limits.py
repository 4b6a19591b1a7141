"""Limits on single values, checked where they enter (the API, the CLI, the Spark bridge).

The store enforces FoundationDB's limits (value 100 kB, key 10 kB, transaction 10 MB, 5 s).
Records bigger than a value are split over several keys, so a big comment or property map is
stored; but every later change of the object writes the record again, keeps the old one in its
history and puts both in the change feed, so a record that fills a fifth of a transaction makes
the object impossible to alter, rename or drop. These limits keep every accepted object well
inside that: whatever is accepted can always be altered, renamed, dropped and purged later.

Each refusal is :class:`~ushas_catalog.errors.LimitExceeded` naming the limit (``limit=``), the
size and the maximum; Spark users see ``[USHAS_LimitExceeded]``.
"""
from __future__ import annotations

from typing import Any, Mapping

from google.protobuf.message import Message

from ..errors import LimitExceeded

#: a comment (object or column), UTF-8 bytes: comments are searchable metadata values
#: (:data:`ushas_catalog.metadata.values.MAX_VALUE_BYTES` is this)
MAX_COMMENT_BYTES = 4_096
#: a property key (catalog, database, table, view, partition), UTF-8 bytes
MAX_PROPERTY_KEY_BYTES = 1_000
#: a property value, UTF-8 bytes
MAX_PROPERTY_VALUE_BYTES = 100_000
#: all properties of one object together (keys and values), UTF-8 bytes
MAX_PROPERTIES_BYTES = 1_000_000
#: a location, an owner, a format or another short text, UTF-8 bytes
MAX_TEXT_BYTES = 8_000
#: a view's SQL text, UTF-8 bytes
MAX_VIEW_TEXT_BYTES = 1_000_000
#: one head record (schema, properties, view) serialized: an alter writes it, its predecessor
#: (history) and both again in the change feed, far inside a 10 MB transaction
MAX_RECORD_BYTES = 1_500_000
#: one partition's key (its values, tuple-encoded): it is part of two keys of at most 10 kB
MAX_PARTITION_KEY_BYTES = 2_000

def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _refuse(what: str, limit: str, size: int, maximum: int) -> LimitExceeded:
    return LimitExceeded(f"{what} is {size:,} bytes, over the limit {limit} of {maximum:,} bytes "
                         f"(a bigger value could not be altered or dropped later)",
                         limit=limit, actual=size, maximum=maximum)


def check_text(value: str | None, what: str) -> None:
    """A comment, location, owner, view text...: :class:`LimitExceeded` when too big."""
    if not isinstance(value, str):
        return
    if what.endswith("comment"):
        maximum, limit = MAX_COMMENT_BYTES, "comment_bytes"
    elif what == "view text":
        maximum, limit = MAX_VIEW_TEXT_BYTES, "view_text_bytes"
    else:
        maximum, limit = MAX_TEXT_BYTES, "text_bytes"
    size = _size(value)
    if size > maximum:
        raise _refuse(what, limit, size, maximum)


def check_properties(props: Mapping[str, str], what: str) -> None:
    """A property map: each key, each value and the total."""
    total = 0
    for k, v in props.items():
        ks, vs = _size(k), _size(v)
        if ks > MAX_PROPERTY_KEY_BYTES:
            raise _refuse(f"{what}: the key {k[:40]!r}...", "property_key_bytes", ks, MAX_PROPERTY_KEY_BYTES)
        if vs > MAX_PROPERTY_VALUE_BYTES:
            raise _refuse(f"{what}: the value of {k[:40]!r}", "property_value_bytes", vs, MAX_PROPERTY_VALUE_BYTES)
        total += ks + vs
    if total > MAX_PROPERTIES_BYTES:
        raise _refuse(f"{what} together", "properties_bytes", total, MAX_PROPERTIES_BYTES)


def check_record(record: Message, what: str) -> None:
    """A head record as it will be stored (a schema, a view, the properties of an object)."""
    size = record.ByteSize()
    if size > MAX_RECORD_BYTES:
        raise _refuse(what, "record_bytes", size, MAX_RECORD_BYTES)


def check_head(record: Message, what: str) -> None:
    """A head record: its properties and its size."""
    if "properties" in record.DESCRIPTOR.fields_by_name:
        check_properties(dict(record.properties), f"the properties of {what.removeprefix('the ')}")
    check_record(record, what)


def check_partition_key(packed: bytes, spec: Any) -> None:
    if len(packed) > MAX_PARTITION_KEY_BYTES:
        raise _refuse(f"the values of partition {spec!r}"[:200], "partition_key_bytes", len(packed),
                      MAX_PARTITION_KEY_BYTES)


__all__ = ["MAX_COMMENT_BYTES", "MAX_PROPERTY_KEY_BYTES", "MAX_PROPERTY_VALUE_BYTES", "MAX_PROPERTIES_BYTES",
           "MAX_TEXT_BYTES", "MAX_VIEW_TEXT_BYTES", "MAX_RECORD_BYTES", "MAX_PARTITION_KEY_BYTES", "check_text",
           "check_properties", "check_record", "check_head", "check_partition_key"]
