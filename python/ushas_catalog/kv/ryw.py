"""Read-your-writes: the pending writes of one transaction and reads merged over them.

An engine that cannot read its own uncommitted writes natively (the embedded engine keeps
them in memory until commit, so the write lock is held only while committing) keeps a
:class:`WriteBuffer` and reads through :func:`merged_get` / :func:`merged_range`:

- a key written in the transaction reads as written (``set``), absent (``clear``), or the
  stored value with the pending atomic adds applied (``add``);
- a key inside a pending ``clear_range`` reads as absent unless written again afterwards;
- range reads merge the stored rows with the pending writes, in key order or reversed,
  fetching stored rows in growing batches and never fetching rows of a cleared range.

Versionstamped keys are not readable before commit (as in FoundationDB: their key is only
known at commit).

Mutations made while a range is being iterated are visible to the part of the range not yet
fetched (the next batch), not to rows already fetched.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from ..errors import InvalidArgument
from .base import KeyValue, Transaction
from .guard import TransactionGuard

MASK64 = (1 << 64) - 1
#: entry kinds
SET, CLEAR, ADD = 0, 1, 2
#: batch sizes of a streamed range read: first batch, then doubling up to the last
FIRST_BATCH = 64
MAX_BATCH = 4096

Entry = tuple[int, "bytes | int | None"]
#: fetch(lo, hi, n, reverse) -> at most n stored (key, value) rows with lo <= key < hi, in order
Fetch = Callable[[bytes, bytes, int, bool], list[tuple[bytes, bytes]]]


def add_le64(existing: bytes | None, delta: int) -> bytes:
    """FoundationDB ``ADD`` with an 8-byte operand: the stored value truncated or zero-padded
    to 8 bytes, read as little-endian, plus ``delta``, wrapping modulo 2**64."""
    base = int.from_bytes((existing or b"")[:8], "little")
    return ((base + delta) & MASK64).to_bytes(8, "little")


def fill_versionstamp(body: bytes, offset: int, stamp: bytes) -> bytes:
    """``body`` with the 10 bytes at ``offset`` replaced by ``stamp``."""
    return body[:offset] + stamp + body[offset + 10:]


@dataclass(slots=True)
class VersionstampedSet:
    body: bytes
    value: bytes
    offset: int


@dataclass(slots=True)
class WriteBuffer:
    """Pending mutations of one transaction, normalised for reads and for commit.

    Invariant: every entry in ``entries`` is newer than every pending clear range covering its
    key (a clear range drops the entries it covers), so commit applies clear ranges first,
    then entries. An ``ADD`` entry only exists for a key no pending clear covers (an add over
    a cleared key becomes a ``SET``), so its base is always the stored value."""

    entries: dict[bytes, Entry] = field(default_factory=dict)
    _sorted: list[bytes] = field(default_factory=list)
    _dirty: bool = False
    #: disjoint, non-touching cleared ranges, sorted
    begins: list[bytes] = field(default_factory=list)
    ends: list[bytes] = field(default_factory=list)
    versionstamped: list[VersionstampedSet] = field(default_factory=list)
    #: (number of versionstamped sets issued before it, begin, end) of each later clear range
    clears_after_versionstamps: list[tuple[int, bytes, bytes]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries or self.begins or self.versionstamped)

    # --- mutations ---------------------------------------------------------------------
    def _put(self, key: bytes, entry: Entry) -> None:
        if key not in self.entries:
            if self._sorted and not self._dirty and key < self._sorted[-1]:
                self._dirty = True
            self._sorted.append(key)
        self.entries[key] = entry

    def set(self, key: bytes, value: bytes) -> None:
        self._put(key, (SET, value))

    def set_many(self, pairs: list[tuple[bytes, bytes]]) -> None:
        for key, value in pairs:
            self._put(key, (SET, value))

    def clear(self, key: bytes) -> None:
        self._put(key, (CLEAR, None))

    def add(self, key: bytes, delta: int) -> None:
        entry = self.entries.get(key)
        if entry is None:
            new: Entry = (SET, add_le64(None, delta)) if self.cleared(key) else (ADD, delta & MASK64)
        elif entry[0] == SET:
            new = (SET, add_le64(entry[1], delta))  # type: ignore[arg-type]
        elif entry[0] == CLEAR:
            new = (SET, add_le64(None, delta))
        else:
            new = (ADD, (entry[1] + delta) & MASK64)  # type: ignore[operator]
        self._put(key, new)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        if begin >= end:
            return
        keys = self.sorted_keys()
        lo, hi = bisect_left(keys, begin), bisect_left(keys, end)
        if lo < hi:
            for k in keys[lo:hi]:
                del self.entries[k]
            del keys[lo:hi]
        # merge [begin, end) into the cleared ranges (touching ranges are joined)
        i = bisect_left(self.ends, begin)        # first range ending at or after begin
        j = bisect_right(self.begins, end)       # ranges before j start at or before end
        if i < j:
            begin = min(begin, self.begins[i])
            end = max(end, self.ends[j - 1])
        self.begins[i:j] = [begin]
        self.ends[i:j] = [end]
        if self.versionstamped:
            self.clears_after_versionstamps.append((len(self.versionstamped), begin, end))

    def set_versionstamped_key(self, body: bytes, value: bytes, offset: int) -> None:
        self.versionstamped.append(VersionstampedSet(body, value, offset))

    # --- lookups ---------------------------------------------------------------------------
    def sorted_keys(self) -> list[bytes]:
        if self._dirty:
            self._sorted.sort()
            self._dirty = False
        return self._sorted

    def cleared(self, key: bytes) -> bool:
        i = bisect_right(self.begins, key) - 1
        return i >= 0 and key < self.ends[i]

    def between(self, lo: bytes, hi: bytes) -> list[bytes]:
        keys = self.sorted_keys()
        return keys[bisect_left(keys, lo):bisect_left(keys, hi)]

    # --- commit ------------------------------------------------------------------------------
    def final_versionstamped(self, stamp: bytes) -> list[tuple[bytes, bytes]]:
        """The versionstamped sets as (key, value) with ``stamp`` filled in, minus those a later
        clear range of the same transaction removed."""
        out = []
        for index, op in enumerate(self.versionstamped):
            key = fill_versionstamp(op.body, op.offset, stamp)
            if any(n > index and b <= key < e for n, b, e in self.clears_after_versionstamps):
                continue
            out.append((key, op.value))
        return out


def resolve(entry: Entry, stored: bytes | None) -> bytes | None:
    kind, arg = entry
    if kind == SET:
        return arg  # type: ignore[return-value]
    if kind == CLEAR:
        return None
    return add_le64(stored, arg)  # type: ignore[arg-type]


def merged_get(buffer: WriteBuffer, key: bytes, read: Callable[[bytes], bytes | None]) -> bytes | None:
    entry = buffer.entries.get(key)
    if entry is not None:
        return resolve(entry, read(key) if entry[0] == ADD else None)
    if buffer.cleared(key):
        return None
    return read(key)


def merged_range(buffer: WriteBuffer, fetch: Fetch, begin: bytes, end: bytes, *, limit: int = 0,
                 reverse: bool = False, before_batch: Callable[[], None] | None = None) -> Iterator[KeyValue]:
    """Stored rows in ``[begin, end)`` merged with ``buffer``; see the module docstring."""
    remaining = limit if limit > 0 else -1
    batch = FIRST_BATCH
    lo, hi = begin, end          # the part of the range not yet produced
    while lo < hi and remaining != 0:
        if before_batch is not None:
            before_batch()
        begins, ends = buffer.begins, buffer.ends
        if not reverse:
            i = bisect_right(begins, lo) - 1
            if i >= 0 and lo < ends[i]:                      # lo is inside a cleared range
                upper = min(ends[i], hi)
                rows: list[tuple[bytes, bytes]] = []
            else:
                seg_end = min(begins[i + 1], hi) if i + 1 < len(begins) else hi
                n = batch if remaining < 0 else min(batch, remaining)
                rows = fetch(lo, seg_end, n, False)
                upper = rows[-1][0] + b"\x00" if len(rows) == n else seg_end
            part = _merge(buffer, rows, buffer.between(lo, upper), False)
            lo = upper
        else:
            i = bisect_left(begins, hi) - 1
            if i >= 0 and ends[i] >= hi:                     # keys just below hi are cleared
                lower = max(begins[i], lo)
                rows = []
            else:
                seg_begin = max(ends[i], lo) if i >= 0 else lo
                n = batch if remaining < 0 else min(batch, remaining)
                rows = fetch(seg_begin, hi, n, True)
                lower = rows[-1][0] if len(rows) == n else seg_begin
            part = _merge(buffer, rows, buffer.between(lower, hi)[::-1], True)
            hi = lower
        for kv in part:
            yield kv
            if remaining > 0:
                remaining -= 1
                if remaining == 0:
                    return
        batch = min(batch * 2, MAX_BATCH)


def _merge(buffer: WriteBuffer, rows: list[tuple[bytes, bytes]], keys: list[bytes],
           reverse: bool) -> list[KeyValue]:
    """Merge stored ``rows`` and pending ``keys`` (both in iteration order)."""
    if not keys:
        return [KeyValue(k, v) for k, v in rows]
    entries = buffer.entries
    out: list[KeyValue] = []
    i = j = 0
    while i < len(rows) or j < len(keys):
        if j == len(keys):
            out.extend(KeyValue(k, v) for k, v in rows[i:])
            break
        bk = keys[j]
        if i < len(rows):
            rk = rows[i][0]
            if rk == bk:
                value = resolve(entries[bk], rows[i][1])
                i += 1
                j += 1
                if value is not None:
                    out.append(KeyValue(bk, value))
                continue
            if (rk < bk) != reverse:
                out.append(KeyValue(rk, rows[i][1]))
                i += 1
                continue
        value = resolve(entries[bk], None)
        j += 1
        if value is not None:
            out.append(KeyValue(bk, value))
    return out


class BufferedTransaction(Transaction):
    """The front of a transaction whose writes wait in a :class:`WriteBuffer` until commit (the embedded
    and PostgreSQL engines): reads merged over the buffer, writes checked by the guard and buffered.
    A subclass sets ``_guard``, ``_writes`` and ``_versionstamp`` (None until a write committed) and
    implements :meth:`_check_live` (raises when the transaction ended or ran out of time),
    :meth:`_read` and :meth:`_fetch` (the stored rows), ``commit`` and ``cancel``."""

    _guard: TransactionGuard
    _writes: WriteBuffer
    _versionstamp: bytes | None

    def _check_live(self) -> None:
        raise NotImplementedError

    def _read(self, key: bytes) -> bytes | None:
        raise NotImplementedError

    def _fetch(self, lo: bytes, hi: bytes, n: int, reverse: bool) -> list[tuple[bytes, bytes]]:
        raise NotImplementedError

    # --- reads -----------------------------------------------------------------------------------
    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        self._check_live()
        return merged_get(self._writes, self._guard.key(key), self._read)

    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[KeyValue]:
        self._check_live()
        b, e = self._guard.range(begin, end)
        if not isinstance(limit, int) or limit < 0:
            raise InvalidArgument(f"range limit must be an int >= 0 (0 = no limit), not {limit!r}")
        return merged_range(self._writes, self._fetch, b, e, limit=limit, reverse=reverse,
                            before_batch=self._check_live)

    # --- writes ----------------------------------------------------------------------------------
    def set(self, key: bytes, value: bytes) -> None:
        self._check_live()
        self._writes.set(*self._guard.on_set(key, value))

    def set_many(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        self._check_live()
        self._writes.set_many(self._guard.on_set_many(pairs))

    def clear(self, key: bytes) -> None:
        self._check_live()
        self._writes.clear(self._guard.on_clear(key))

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self._check_live()
        self._writes.clear_range(*self._guard.on_clear_range(begin, end))

    def add(self, key: bytes, delta: int) -> None:
        self._check_live()
        self._writes.add(*self._guard.on_add(key, delta))

    def set_versionstamped_key(self, key: bytes, value: bytes) -> None:
        self._check_live()
        body, value, offset = self._guard.on_versionstamped_key(key, value)
        self._writes.set_versionstamped_key(body, value, offset)

    def get_versionstamp(self) -> bytes:
        if self._versionstamp is None:
            raise InvalidArgument("no versionstamp: the transaction has not committed a write")
        return self._versionstamp
