"""What a reader sees while an operation bigger than one transaction runs (:mod:`ushas_catalog.bulk`).

Partitions a bulk add staged carry the table version that publishes them (``added_version``), those a
bulk drop marked the version that removes them (``dropped_version``); a reader of table version ``v``
sees a record when it was added at or before ``v`` and not dropped at or before ``v``; a partition a bulk
write replaces carries its previous record (``replaced``) until the write's cleanup, and a reader of an
older version sees that one (:func:`as_of`). The table's
reference lists the operations in progress, so a commit of the table waits for them.
"""
from __future__ import annotations

import uuid
from typing import Any, Mapping, Protocol, Sequence

from .. import records as rec
from ..errors import OperationInProgress
from ..keyspace.layout import TABLE_REFERENCE
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..records.store import RecordStore

class TooBig(Exception):
    """Internal: an operation found more items than one transaction takes (go through chunks)."""


def visible(record: rec.Partition, version: int) -> bool:
    """Whether a reader of table version ``version`` sees this partition (the record, or the one a
    staged write replaces: :func:`as_of`)."""
    return as_of(record, version) is not None


def as_of(record: rec.Partition, version: int) -> rec.Partition | None:
    """The partition record a reader of table version ``version`` sees at this key: the record; the
    record a bulk write staged it over (``replaced``) while that write is not published at
    ``version``; None when neither is visible."""
    if record.added_version > version:
        if record.HasField("replaced"):
            return as_of(record.replaced, version)
        return None
    if 0 < record.dropped_version <= version:
        return None
    return record


def visible_raw(data: bytes, version: int) -> bool:
    """:func:`visible` of a serialized record (a piece of a split record counts as visible)."""
    try:
        return visible(rec.Partition.FromString(data), version)
    except Exception:  # noqa: BLE001 - one chunk of a split record: counted as visible
        return True


def bulk_pending(tr: Transaction, partitions: RecordStore[rec.Partition]) -> bool:
    """Whether the table of this partition store has a bulk operation in progress (later batches of
    a listing read it again: one started during the listing must stay invisible too)."""
    ref = RecordStore.of(partitions.path.parent, TABLE_REFERENCE).load(tr, ())
    return ref is not None and bool(ref.pending_operations)


def check_no_pending(head: rec.TableReference, detail: Mapping[str, Any], name: str) -> None:
    """Called by the metastore's commit of a table: :class:`OperationInProgress` while a bulk
    operation is pending on it, unless this is that operation's own commit."""
    mine = detail.get("operation_id")
    others = [op for op in head.pending_operations if str(uuid.UUID(bytes=op)) != mine]
    if others:
        raise OperationInProgress(
            f"table {name} has a bulk operation in progress ({', '.join(str(uuid.UUID(bytes=o)) for o in others)}); "
            f"try again when it is finished (ushas repair --pending finishes one whose process died)",
            table=name, operations=[str(uuid.UUID(bytes=o)) for o in others])


class BigOperations(Protocol):
    """What the catalog operations ask of the module that runs operations bigger than one
    transaction (:mod:`ushas_catalog.bulk`, wired in by the facade as ``Metastore.big``)."""

    #: partition operations with more items than this run in chunks (smaller ones: one transaction)
    BULK_AT: int

    def finish_for(self, ms: Any, operations: Sequence[str]) -> bool: ...

    def big_object(self, ms: Any, tr: Transaction, path: KeySpacePath) -> bool: ...

    def defer_purge(self, ms: Any, tr: Transaction, name: str, kind: str, path: KeySpacePath, version: int,
                    operation: str) -> None: ...

    def defer_unindex(self, ms: Any, tr: Transaction, name: str, path: KeySpacePath, indexed: bool) -> None: ...

    def add_partitions(self, ms: Any, tn: Any, items: Sequence[Any], if_not_exists: bool,
                       expected_version: int | None) -> Any: ...

    def drop_partitions(self, ms: Any, tn: Any, specs: Sequence[Mapping[str, Any]], if_exists: bool,
                        expected_version: int | None, release_data: bool) -> Any: ...

    #: writes (replace_partitions) putting or dropping more partitions than this run in chunks
    WRITE_BULK_AT: int

    def replace_partitions(self, ms: Any, tn: Any, drop_specs: Sequence[Mapping[str, Any]], items: Sequence[Any], *,
                           expected_version: int | None, garbage: Any, operation: str, unchanged_since: int | None,
                           detail: Mapping[str, Any], fence: Any, append: bool = False) -> Any: ...

    def has_after(self, ms: Any) -> bool: ...

    def run_after(self, ms: Any) -> list[str]: ...
