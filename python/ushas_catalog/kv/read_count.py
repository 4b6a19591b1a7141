"""Counting the keys a store reads: the test hook behind "a filter is a range read, not a scan".

``with KeyReads.on(db) as reads: ...`` counts, for every transaction ``db`` starts inside the block,
the keys returned by ``get`` (found or not: one each) and by ``get_range`` (one per key-value
returned). Any engine; nothing is counted outside the block.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

from .base import Database, KeyValue


@dataclass
class KeyReads:
    keys: int = 0
    ranges: int = 0
    transactions: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, keys: int = 0, ranges: int = 0) -> None:
        with self._lock:
            self.keys += keys
            self.ranges += ranges

    @classmethod
    @contextlib.contextmanager
    def on(cls, db: Database) -> Iterator["KeyReads"]:
        reads = cls()
        make = db.create_transaction

        def create() -> Any:
            reads.transactions += 1
            return _Counting(make(), reads)

        own = vars(db).get("create_transaction")
        db.create_transaction = create  # type: ignore[method-assign]
        try:
            yield reads
        finally:
            if own is None:
                del db.create_transaction  # back to the class's method
            else:
                db.create_transaction = own  # type: ignore[method-assign]


class _Counting:
    """A transaction that counts its reads (every other call passes through)."""

    def __init__(self, tr: Any, reads: KeyReads) -> None:
        self._tr = tr
        self._reads = reads

    def get(self, key: bytes, **kw: Any) -> bytes | None:
        self._reads.add(keys=1)
        return self._tr.get(key, **kw)

    def get_range(self, begin: bytes, end: bytes, **kw: Any) -> Iterator[KeyValue]:
        self._reads.add(ranges=1)
        for kv in self._tr.get_range(begin, end, **kw):
            self._reads.add(keys=1)
            yield kv

    def get_range_startswith(self, prefix: bytes, **kw: Any) -> Iterator[KeyValue]:
        from .base import strinc

        return self.get_range(prefix, strinc(prefix), **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tr, name)
