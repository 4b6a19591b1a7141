"""A minimal in-memory Transaction for record-store unit tests that must not depend on
an engine (the engines have their own contract suite). Sorted keys, read-your-writes,
no concurrency: good enough to check key layout and record splitting."""
from __future__ import annotations

import bisect
from typing import Iterator

from ushas_catalog.kv.base import KeyValue, Transaction


class MemoryTransaction(Transaction):
    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.data: dict[bytes, bytes] = {}

    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        return self.data.get(key)

    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[KeyValue]:
        lo = bisect.bisect_left(self.keys, begin)
        hi = bisect.bisect_left(self.keys, end)
        keys = self.keys[lo:hi]
        if reverse:
            keys.reverse()
        if limit:
            keys = keys[:limit]
        return iter([KeyValue(k, self.data[k]) for k in keys])

    def set(self, key: bytes, value: bytes) -> None:
        if key not in self.data:
            bisect.insort(self.keys, key)
        self.data[key] = value

    def clear(self, key: bytes) -> None:
        if key in self.data:
            del self.data[key]
            self.keys.remove(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        lo = bisect.bisect_left(self.keys, begin)
        hi = bisect.bisect_left(self.keys, end)
        for k in self.keys[lo:hi]:
            del self.data[k]
        del self.keys[lo:hi]

    def add(self, key: bytes, delta: int) -> None:
        old = int.from_bytes(self.data.get(key, b"\0" * 8), "little", signed=True)
        self.set(key, ((old + delta) & (2**64 - 1)).to_bytes(8, "little"))

    def set_versionstamped_key(self, key: bytes, value: bytes) -> None:
        raise NotImplementedError("not needed by these tests")

    def get_versionstamp(self) -> bytes:
        raise NotImplementedError("not needed by these tests")

    def commit(self) -> None:
        pass

    def cancel(self) -> None:
        pass
