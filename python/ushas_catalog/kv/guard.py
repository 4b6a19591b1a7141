"""Argument checks and FoundationDB limits, enforced identically by every engine.

A :class:`TransactionGuard` belongs to one transaction attempt. Every operation of an
engine's transaction calls it *before* touching the store, so a limit is reported at the
same operation, with the same :class:`~ushas_catalog.errors.LimitExceeded` error, on
``sqlite://`` and ``fdb://``:

==================== ========================================================================
limit (``.limit``)   rule
==================== ========================================================================
``key_bytes``        a key longer than ``Limits.key_bytes`` (10,000) in get/set/clear/add
``value_bytes``      a value longer than ``Limits.value_bytes`` (100,000) in set
``transaction_bytes`` the mutations of one transaction, counted like FDB (key + value per
                     set or atomic op, begin + end per clear range, a single-key clear being
                     the range ``[key, key + b"\\x00")``), above ``Limits.transaction_bytes``
``transaction_seconds`` an operation or the commit more than ``Limits.transaction_seconds``
                     (5) after the transaction started
==================== ========================================================================

Keys at or above ``b"\\xff"`` are FoundationDB's system keyspace; reading or writing them
(or a range ending beyond ``b"\\xff"``) is refused with
:class:`~ushas_catalog.errors.InvalidArgument` on every engine.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import InvalidArgument, LimitExceeded
from .base import Limits

SYSTEM_PREFIX = b"\xff"


def as_bytes(value: object, what: str) -> bytes:
    """``value`` as ``bytes``; anything that is not bytes-like is an :class:`InvalidArgument`."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgument(f"{what} must be bytes, not {type(value).__name__}")


@dataclass(slots=True)
class TransactionGuard:
    """Limit accounting of one transaction attempt."""

    limits: Limits
    started: float = field(default_factory=time.monotonic)
    mutation_bytes: int = 0

    # --- time --------------------------------------------------------------------
    def check_time(self) -> None:
        elapsed = time.monotonic() - self.started
        if elapsed > self.limits.transaction_seconds:
            raise LimitExceeded(
                f"transaction is {elapsed:.2f} s old, over the FoundationDB transaction time limit "
                f"(transaction_seconds) of {self.limits.transaction_seconds:g} s; split the work into "
                f"smaller transactions",
                limit="transaction_seconds", actual=round(elapsed, 3),
                maximum=self.limits.transaction_seconds)

    # --- keys and values -------------------------------------------------------------
    def key(self, key: object, what: str = "key") -> bytes:
        """A key for get/set/clear/add: bytes, within the key size limit, not a system key."""
        k = as_bytes(key, what)
        if len(k) > self.limits.key_bytes:
            raise LimitExceeded(
                f"{what} of {len(k):,} bytes exceeds the FoundationDB key size limit (key_bytes) "
                f"of {self.limits.key_bytes:,} bytes",
                limit="key_bytes", actual=len(k), maximum=self.limits.key_bytes)
        if k.startswith(SYSTEM_PREFIX):
            raise InvalidArgument(f"{what} {k[:32]!r} lies in the FoundationDB system keyspace (\\xff...)")
        return k

    def value(self, value: object) -> bytes:
        v = as_bytes(value, "value")
        if len(v) > self.limits.value_bytes:
            raise LimitExceeded(
                f"value of {len(v):,} bytes exceeds the FoundationDB value size limit (value_bytes) "
                f"of {self.limits.value_bytes:,} bytes",
                limit="value_bytes", actual=len(v), maximum=self.limits.value_bytes)
        return v

    def range(self, begin: object, end: object) -> tuple[bytes, bytes]:
        """Bounds of a range read or clear: bytes, ending at or below ``b"\\xff"``."""
        b = as_bytes(begin, "range begin")
        e = as_bytes(end, "range end")
        if e > SYSTEM_PREFIX or b > SYSTEM_PREFIX:
            bad = e if e > SYSTEM_PREFIX else b
            raise InvalidArgument(f"range bound {bad[:32]!r} lies beyond b'\\xff', in the FoundationDB "
                                  f"system keyspace")
        return b, e

    # --- size ------------------------------------------------------------------------
    def count(self, nbytes: int) -> None:
        """Account one mutation of ``nbytes`` toward the transaction size limit."""
        total = self.mutation_bytes + nbytes
        if total > self.limits.transaction_bytes:
            raise LimitExceeded(
                f"transaction would write {total:,} bytes of mutations, over the FoundationDB "
                f"transaction size limit (transaction_bytes) of {self.limits.transaction_bytes:,} bytes; "
                f"split the work into smaller transactions",
                limit="transaction_bytes", actual=total, maximum=self.limits.transaction_bytes)
        self.mutation_bytes = total

    # --- one call per operation kind ---------------------------------------------------
    def on_set(self, key: object, value: object) -> tuple[bytes, bytes]:
        self.check_time()
        k, v = self.key(key), self.value(value)
        self.count(len(k) + len(v))
        return k, v

    def on_set_many(self, pairs: Iterable[tuple[object, object]]) -> list[tuple[bytes, bytes]]:
        """:meth:`on_set` of each pair with one clock read: the pairs checked, or the error
        of the first bad one."""
        self.check_time()
        out = []
        key_max, value_max = self.limits.key_bytes, self.limits.value_bytes
        total = self.mutation_bytes
        for key, value in pairs:
            if type(key) is not bytes or type(value) is not bytes or len(key) > key_max or \
                    len(value) > value_max or key.startswith(SYSTEM_PREFIX):
                key, value = self.key(key), self.value(value)  # the error, or a bytes-like converted
            total += len(key) + len(value)
            out.append((key, value))
        self.count(total - self.mutation_bytes)
        return out

    def on_clear(self, key: object) -> bytes:
        self.check_time()
        k = self.key(key)
        self.count(2 * len(k) + 1)
        return k

    def on_clear_range(self, begin: object, end: object) -> tuple[bytes, bytes]:
        self.check_time()
        b, e = self.range(begin, end)
        if b > e:
            raise InvalidArgument(f"inverted range: begin {b[:32]!r} is after end {e[:32]!r}")
        self.count(len(b) + len(e))
        return b, e

    def on_add(self, key: object, delta: object) -> tuple[bytes, int]:
        self.check_time()
        k = self.key(key)
        if not isinstance(delta, int) or isinstance(delta, bool):
            raise InvalidArgument(f"add delta must be an int, not {type(delta).__name__}")
        self.count(len(k) + 8)
        return k, delta

    def on_versionstamped_key(self, key: object, value: object) -> tuple[bytes, bytes, int]:
        """Checks a ``SET_VERSIONSTAMPED_KEY`` and returns (key without its offset, value, offset)."""
        self.check_time()
        raw = as_bytes(key, "versionstamped key")
        if len(raw) < 4:
            raise InvalidArgument("versionstamped key must end with a 4-byte little-endian offset "
                                  "(use fdb.tuple.pack_with_versionstamp)")
        body, offset = raw[:-4], int.from_bytes(raw[-4:], "little")
        if offset + 10 > len(body):
            raise InvalidArgument(f"versionstamp offset {offset} does not leave room for a 10-byte "
                                  f"versionstamp in a {len(body)}-byte key")
        # the placeholder is filled at commit; check the key as it will be stored
        self.key(body[:offset] + bytes(10) + body[offset + 10:], "versionstamped key")
        v = self.value(value)
        self.count(len(raw) + len(v))
        return body, v, offset
