"""Reading and writing partition records in bulk, for the chunks of :mod:`ushas_catalog.bulk` and
:mod:`ushas_catalog.bulk_ctas`: which keys of a batch are stored, their serialized records (one range read
over a dense span, else point reads; records split over several keys joined), and rewriting or removing a
record with one ``set`` / ``clear`` when it is not split (a ``clear_range`` per key would make the write
buffer sort itself each time)."""
from __future__ import annotations

from . import records as rec
from .kv import Transaction
from .kv.base import FDB_LIMITS
from .records.store import Joined, RecordStore, split_elements


def existing(tr: Transaction, store: RecordStore[rec.Partition], packed: list[bytes]) -> set[bytes]:
    """Which of these packed keys are stored: one key-range read over their span when it is
    dense, else point reads."""
    if not packed:
        return set()
    if len(packed) < 32:
        return {k for k in packed if store.exists_packed(tr, k)}
    wanted = set(packed)
    plen, limit = len(store.prefix), 4 * len(packed)
    found: set[bytes] = set()
    count = 0
    for kv in tr.get_range(store.prefix + min(packed), store.prefix + max(packed) + b"\xff", limit=limit + 1):
        count += 1
        suffix = kv.key[plen:]
        if suffix in wanted:
            found.add(suffix)
        else:
            for k in wanted:  # a split record's chunk key: (pk..., i)
                if suffix.startswith(k) and k not in found:
                    found.add(k)
                    break
    if count > limit:
        return {k for k in packed if store.exists_packed(tr, k)}
    return found



def values(tr: Transaction, store: RecordStore[rec.Partition], packed: list[bytes]) -> dict[bytes, bytes]:
    """The serialized records at these packed keys (absent: not stored): one range read over their
    span when it is dense, else point reads."""
    if not packed:
        return {}
    wanted = set(packed)
    plen, limit, arity = len(store.prefix), 4 * len(packed) + 64, store.arity
    out: dict[bytes, bytes] = {}
    split: set[bytes] = set()
    count = 0
    for kv in tr.get_range(store.prefix + min(packed), store.prefix + max(packed) + b"\xff", limit=limit + 1):
        count += 1
        suffix = kv.key[plen:]
        if suffix in wanted:
            out[suffix] = kv.value
        else:
            k = b"".join(split_elements(suffix)[:arity])
            if k in wanted:
                split.add(k)
    if count > limit:
        found = {k: load_packed(tr, store, k) for k in packed}
        return {k: v for k, v in found.items() if v is not None}
    for k in split:  # a record split over several keys (big file lists): joined
        data = load_packed(tr, store, k)
        if data is not None:
            out[k] = data
    return out


def put(tr: Transaction, store: RecordStore[rec.Partition], packed: bytes, record: rec.Partition,
         old_size: int) -> None:
    """Rewrite a partition record: one set when neither it nor the one it replaces is split
    (a clear_range per key would make the write buffer sort itself each time)."""
    data = record.SerializeToString(deterministic=True)
    if old_size <= store.chunk_bytes and len(data) <= store.chunk_bytes:
        tr.set(store.prefix + packed, data)
    else:
        store.save_packed(tr, packed, record)


def remove(tr: Transaction, key: bytes, size: int) -> None:
    if size <= FDB_LIMITS.value_bytes:
        tr.clear(key)
    else:
        tr.clear_range(key, key + b"\xff")


def load_packed(tr: Transaction, store: RecordStore[rec.Partition], packed: bytes) -> bytes | None:
    key = store.prefix + packed
    parts: list[bytes] = []
    for kv in tr.get_range(key, key + b"\xff"):
        if kv.key == key:
            return kv.value
        parts.append(kv.value)
    return Joined(b"".join(parts)) if parts else None


def size(data: bytes) -> int:
    """The size :func:`put` / :func:`remove` go by: a joined record counts as split."""
    return FDB_LIMITS.value_bytes + 1 + len(data) if isinstance(data, Joined) else len(data)



__all__ = ["existing", "load_packed", "put", "remove", "size", "values"]
