"""One Spark call, one transaction.

A shim operation (``spark_ops.OPS``) often makes several metastore calls: it reads the table, its
partitions, then writes (``DROP PARTITION … PURGE``, ``TRUNCATE``, a write commit, a rename). Run
one by one, each is its own transaction, so what the write decides on may have changed by the time
it commits, and a crash between them leaves a half-answered call. :func:`in_one_transaction` runs
the whole operation in ONE transaction (FoundationDB's way: the operation is the transactional
function, retried as a whole on a conflict): every metastore call the operation makes joins that
transaction, so it reads one snapshot and commits atomically.

Two cases fall back to running the operation call by call (each call its own transaction, each
write still conditional on the version it read), so nothing that works today stops working:

- the operation does not fit one transaction (FoundationDB's 5 s / 10 MB: the planning of a write
  into a table of several hundred thousand partitions reads them all; a bulk operation,
  :mod:`ushas_catalog.bulk`, runs in chunks by design, and a write's commit of more partitions
  than ``bulk.WRITE_BULK_AT`` says so at once: ``LimitExceeded`` of ``transaction_items``);
- a fenced write that ended (aborted, expired): its end must be recorded in a transaction of its
  own, which the ending transaction's rollback would undo.

Work the transaction defers (the search index merge, a big drop's chunks) runs after its commit.
"""
from __future__ import annotations

import copy
import logging
from typing import Any, Callable, TypeVar

from ..errors import LimitExceeded, UshasError, WriteEnded
from ..kv.base import Database, Transaction

T = TypeVar("T")

#: the limits whose excess sends an operation back to one transaction per call
TOO_BIG = ("transaction_seconds", "transaction_bytes", "transaction_items")


class _Joined(Database):
    """A :class:`Database` whose every ``run`` joins one open transaction."""

    nested = True

    def __init__(self, base: Database, tr: Transaction) -> None:
        self.base = base
        self.tr = tr
        self.uri = base.uri
        self.limits = base.limits

    def run(self, fn: Callable[[Transaction], T]) -> T:
        return fn(self.tr)

    def create_transaction(self) -> Transaction:  # pragma: no cover - never used
        raise TypeError("a joined transaction cannot start another one")

    def close(self) -> None:
        pass


def run_in_one_transaction(ms: Any, fn: Callable[[Any], T], *, per_call: bool = True) -> T:
    """``fn(metastore)`` with every metastore call it makes in one transaction (see the module
    docstring for when it falls back to a transaction per call). ``per_call=False``: an operation that
    does not fit fails with the ``LimitExceeded`` instead (one that must stay atomic)."""
    if getattr(ms.db, "nested", False):
        return fn(ms)
    merges: list[bool] = []
    joined: list[Any] = []

    def attempt(tr: Transaction) -> T:
        inner = copy.copy(ms)
        inner.db = _Joined(ms.db, tr)
        inner._merge_due = False
        def merge_later() -> int:  # after the commit, not inside it
            merges.append(True)
            return 0

        inner.merge_index = merge_later
        joined[:] = [inner]
        return fn(inner)

    try:
        result = ms.db.run(attempt)
    except LimitExceeded as e:
        if e.limit not in TOO_BIG or not per_call:
            raise
        return fn(ms)
    except WriteEnded:
        return fn(ms)  # records the write's end in its own transaction, raises the same error
    if joined:
        from ..bulk import has_after, run_after

        if has_after(joined[0]):  # a big drop or purge: its chunks, now that it is committed
            joined[0].db = ms.db
            paths = run_after(joined[0], background=True)
            if isinstance(result, dict) and isinstance(result.get("delete_paths"), list):
                result["delete_paths"].extend(paths)
    if merges:
        try:
            ms.merge_index()
        except UshasError as e:  # committed: the caller must not see this; the next commit retries
            logging.getLogger(__name__).warning("search index merge failed, left pending: %s", e)
    return result


def in_one_transaction(op: Callable[[Any, dict[str, Any]], T]) -> Callable[[Any, dict[str, Any]], T]:
    """A shim operation ``op(ms, request)`` run in one transaction (:func:`run_in_one_transaction`)."""

    def run(ms: Any, request: dict[str, Any]) -> T:
        return run_in_one_transaction(ms, lambda m: op(m, request))

    run.__name__ = getattr(op, "__name__", "op")
    run.__doc__ = op.__doc__
    run.__wrapped__ = op  # type: ignore[attr-defined]
    return run


__all__ = ["TOO_BIG", "in_one_transaction", "run_in_one_transaction"]
