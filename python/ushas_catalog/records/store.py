"""A record store: one subspace of the key space, one protobuf message type, one primary key.

Keys are ``<subspace path key> + fdb.tuple.pack(primary key)``. A record whose
serialized size exceeds the engine's value limit (100 kB) is split: its bytes go to
``pk + (1,)``, ``pk + (2,)`` ... (no key at ``pk`` itself) and reading it back joins
them. Writing a message of another type than the store's raises
:class:`RecordTypeError`; so a TableProperties record can never land in TableSchema. The message type
and primary key of each subspace are declared once, in :mod:`ushas_catalog.keyspace.layout`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Iterator, TypeVar

import fdb.tuple as fdbtuple
from google.protobuf.message import Message

from ..errors import KeySpaceError, RecordTypeError
from ..keyspace.tree import KeySpacePath, RecordSubspace
from ..kv.base import FDB_LIMITS, Transaction

M = TypeVar("M", bound=Message)



def __getattr__(name: str) -> Any:
    """``RECORD_TYPES``: the registry derived from the key space declarations (``layout.RECORD_TYPES``)."""
    if name == "RECORD_TYPES":
        from ..keyspace.layout import RECORD_TYPES

        return RECORD_TYPES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: chunks :meth:`RecordStore.append` adds are numbered after this (chunks of a record split by size before it)
APPENDED_CHUNKS = 1 << 32


@dataclass(frozen=True, slots=True)
class StoredRecord(Generic[M]):
    key: tuple[Any, ...]
    record: M
    #: read back from several keys (split, or grown by :meth:`RecordStore.append`)
    joined: bool = False


class RecordStore(Generic[M]):
    """Records of one type under one key space path."""

    __slots__ = ("path", "prefix", "message_type", "key_names", "arity", "chunk_bytes")

    def __init__(self, path: KeySpacePath, message_type: type[M], key_names: tuple[str, ...],
                 *, chunk_bytes: int = FDB_LIMITS.value_bytes) -> None:
        self.path = path
        self.prefix = path.key()
        self.message_type = message_type
        self.key_names = tuple(key_names)
        self.arity = len(self.key_names)
        self.chunk_bytes = chunk_bytes

    @classmethod
    def at(cls, path: KeySpacePath, key_names: tuple[str, ...] | None = None) -> "RecordStore[Any]":
        """The store of the subspace ``path`` names, with the message type its declaration names
        (``layout.TABLE_SCHEMA``...). ``key_names`` is required for subspaces whose key arity varies
        (partitions)."""
        name = path.directory.name
        declared = path.directory.record
        if declared is None:
            raise KeySpaceError(f"no record type is declared for subspace {name!r}")
        names = declared.key
        if names is None:
            if key_names is None:
                raise KeySpaceError(f"subspace {name!r} needs key_names")
            names = key_names
        elif key_names is not None and tuple(key_names) != names:
            raise KeySpaceError(f"subspace {name!r} has primary key {names}, not {tuple(key_names)}")
        return cls(path, declared.record, names)

    @classmethod
    def of(cls, parent: KeySpacePath, subspace: "RecordSubspace[M]",
           key_names: tuple[str, ...] | None = None) -> "RecordStore[M]":
        """The store of ``subspace`` under ``parent``, typed by its declaration:
        ``RecordStore.of(table_path, layout.TABLE_SCHEMA)`` is a ``RecordStore[TableSchema]``."""
        return cls.at(parent.add(subspace), key_names)

    # --- keys ----------------------------------------------------------------------
    def key(self, pk: tuple[Any, ...]) -> bytes:
        if len(pk) != self.arity:
            raise ValueError(f"{self.path.directory.name}: primary key {self.key_names} needs "
                             f"{self.arity} elements, got {pk!r}")
        return self.prefix + fdbtuple.pack(pk) if pk else self.prefix

    def range(self) -> tuple[bytes, bytes]:
        """Every key of this store (records and chunks)."""
        if self.arity == 0:
            return self.prefix, self.prefix + b"\xff"
        return self.path.range()

    def prefix_range(self, prefix: tuple[Any, ...]) -> tuple[bytes, bytes]:
        """Keys whose primary key starts with ``prefix``."""
        if len(prefix) > self.arity:
            raise ValueError(f"prefix {prefix!r} is longer than the primary key {self.key_names}")
        if not prefix:
            return self.range()
        k = self.prefix + fdbtuple.pack(prefix)
        return (k, k + b"\xff") if len(prefix) == self.arity else (k + b"\x00", k + b"\xff")

    # --- writes --------------------------------------------------------------------
    def _check(self, record: Message) -> None:
        if type(record) is not self.message_type:
            raise RecordTypeError(f"subspace {self.path.directory.name} holds "
                                  f"{self.message_type.DESCRIPTOR.full_name} records, not "
                                  f"{type(record).DESCRIPTOR.full_name if isinstance(record, Message) else type(record).__name__}")

    def save(self, tr: Transaction, pk: tuple[Any, ...], record: M, *, new: bool = False) -> None:
        """Write ``record`` at ``pk`` (replacing what was there). ``new=True`` promises
        nothing is stored at ``pk`` yet (skips clearing old split chunks)."""
        self._write(tr, self.key(pk), record, new)

    def save_packed(self, tr: Transaction, packed_pk: bytes, record: M, *, new: bool = False) -> None:
        """:meth:`save` with the primary key already packed (``fdb.tuple.pack(pk)``): tuple
        encoding concatenates, so hot paths pack a key once and reuse its bytes."""
        self._write(tr, self.prefix + packed_pk, record, new)

    def exists_packed(self, tr: Transaction, packed_pk: bytes, *, snapshot: bool = False) -> bool:
        key = self.prefix + packed_pk
        for _ in tr.get_range(key, key + b"\xff", limit=1, snapshot=snapshot):
            return True
        return False

    def _write(self, tr: Transaction, key: bytes, record: M, new: bool) -> None:
        self._check(record)
        data = record.SerializeToString(deterministic=True)
        if not new:
            tr.clear_range(key + b"\x00", key + b"\xff")
        if len(data) <= self.chunk_bytes:
            tr.set(key, data)
            return
        if not new:
            tr.clear(key)
        step = self.chunk_bytes
        for i, start in enumerate(range(0, len(data), step), start=1):
            tr.set(key + fdbtuple.pack((i,)), data[start:start + step])

    def append(self, tr: Transaction, pk: tuple[Any, ...], deltas: "list[M]") -> None:
        """Merge ``deltas`` into the record at ``pk`` without rewriting it: each one's bytes become one more
        chunk of the record. Reading joins the chunks, and protobuf parses concatenated messages as one
        merged message (repeated fields extend, fields set in a delta replace, maps merge by key), so the
        record read back is the old one with the deltas merged in. A record stored whole moves to chunk 1
        first (once; after that an append writes only its own bytes). Each delta is one key of its own
        (at most the value limit: split bigger ones yourself), numbered from :data:`APPENDED_CHUNKS` on,
        so that :meth:`last_appended` can read the newest alone. ``KeyError`` if nothing is at ``pk``."""
        key = self.key(pk)
        last = None
        for kv in tr.get_range(key, key + b"\xff", reverse=True, limit=1):
            last = kv
        if last is None:
            raise KeyError(f"no record at {pk!r} to append to")
        if last.key == key:
            tr.clear(key)
            tr.set(key + fdbtuple.pack((1,)), last.value)
            index = 1
        else:
            index = fdbtuple.unpack(last.key[len(key):])[0]
        index = max(index, APPENDED_CHUNKS)
        for delta in deltas:
            self._check(delta)
            data = delta.SerializeToString(deterministic=True)
            if len(data) > self.chunk_bytes:
                raise ValueError(f"an appended chunk of {len(data)} bytes is over the value limit {self.chunk_bytes}")
            index += 1
            tr.set(key + fdbtuple.pack((index,)), data)

    def last_appended(self, tr: Transaction, pk: tuple[Any, ...]) -> M | None:
        """The newest chunk :meth:`append` added to the record at ``pk``, parsed alone (one key read), or
        None when the record has none (stored whole, or split by size, or absent)."""
        key = self.key(pk)
        for kv in tr.get_range(key, key + b"\xff", reverse=True, limit=1):
            if kv.key != key and fdbtuple.unpack(kv.key[len(key):])[0] > APPENDED_CHUNKS:
                return self.message_type.FromString(kv.value)
        return None

    def delete(self, tr: Transaction, pk: tuple[Any, ...]) -> None:
        key = self.key(pk)
        tr.clear_range(key, key + b"\xff")

    def clear(self, tr: Transaction) -> None:
        tr.clear_range(*self.range())

    # --- reads ---------------------------------------------------------------------
    def load(self, tr: Transaction, pk: tuple[Any, ...], *, snapshot: bool = False) -> M | None:
        """The record at ``pk`` or ``None`` (one range read whether split or not)."""
        key = self.key(pk)
        parts: list[bytes] = []
        for kv in tr.get_range(key, key + b"\xff", snapshot=snapshot):
            if kv.key == key:
                return self.message_type.FromString(kv.value)
            parts.append(kv.value)
        if not parts:
            return None
        return self.message_type.FromString(b"".join(parts))

    def exists(self, tr: Transaction, pk: tuple[Any, ...], *, snapshot: bool = False) -> bool:
        key = self.key(pk)
        for _ in tr.get_range(key, key + b"\xff", limit=1, snapshot=snapshot):
            return True
        return False

    def scan_raw(self, tr: Transaction, begin: bytes | None = None, end: bytes | None = None, *,
                 snapshot: bool = False) -> Iterator[tuple[list[bytes], bytes]]:
        """Like :meth:`scan` but yields (primary key elements as raw byte slices,
        serialized record) without decoding either: the hot path of partition listing."""
        rb, re_ = self.range()
        begin = rb if begin is None else begin
        end = re_ if end is None else end
        plen = len(self.prefix)
        arity = self.arity
        pending_pk: list[bytes] | None = None
        pending: list[tuple[int, bytes]] = []
        for kv in tr.get_range(begin, end, snapshot=snapshot):
            elements = split_elements(kv.key[plen:])
            if len(elements) == arity:
                if pending_pk is not None:
                    yield pending_pk, _join(pending)
                    pending_pk, pending = None, []
                yield elements, kv.value
                continue
            pk = elements[:arity]
            if pending_pk is not None and pk != pending_pk:
                yield pending_pk, _join(pending)
                pending = []
            pending_pk = pk
            pending.append((fdbtuple.unpack(elements[arity])[0], kv.value))
        if pending_pk is not None:
            yield pending_pk, _join(pending)

    def scan(self, tr: Transaction, begin: bytes | None = None, end: bytes | None = None, *,
             limit: int = 0, reverse: bool = False, snapshot: bool = False) -> Iterator[StoredRecord[M]]:
        """Records with keys in ``[begin, end)`` (default: the whole store) in key
        order, split records joined. ``limit`` counts records."""
        rb, re_ = self.range()
        begin = rb if begin is None else begin
        end = re_ if end is None else end
        plen = len(self.prefix)
        arity = self.arity
        parse = self.message_type.FromString
        unpack = fdbtuple.unpack
        count = 0
        pending_pk: tuple[Any, ...] | None = None
        pending: list[tuple[int, bytes]] = []
        for kv in tr.get_range(begin, end, reverse=reverse, snapshot=snapshot):
            elements = unpack(kv.key[plen:])
            if len(elements) == arity:
                if pending_pk is not None:  # a split record's chunks were followed by something else
                    yield StoredRecord(pending_pk, parse(_join(pending)), True)
                    count += 1
                    pending_pk, pending = None, []
                    if limit and count >= limit:
                        return
                yield StoredRecord(elements, parse(kv.value))
                count += 1
                if limit and count >= limit:
                    return
                continue
            pk, index = elements[:arity], elements[arity]
            if pending_pk is not None and pk != pending_pk:
                yield StoredRecord(pending_pk, parse(_join(pending)), True)
                count += 1
                pending = []
                if limit and count >= limit:
                    return
            pending_pk = pk
            pending.append((index, kv.value))
        if pending_pk is not None:
            yield StoredRecord(pending_pk, parse(_join(pending)), True)


#: payload sizes of the fixed-size tuple element types (null, false, true, float, double, uuid, versionstamp)
_FIXED_SIZES = {0x00: 0, 0x26: 0, 0x27: 0, 0x20: 4, 0x21: 8, 0x30: 16, 0x33: 12}


def split_elements(data: bytes) -> list[bytes]:
    """The top-level elements of a packed tuple as raw byte slices, without decoding
    them (``b"".join(result) == data``). Used by hot listing paths that decode each
    distinct element once."""
    out: list[bytes] = []
    i, n = 0, len(data)
    while i < n:
        code = data[i]
        if 0x0C <= code <= 0x1C:  # the common cases inline: small ints ...
            j = i + 1 + (code - 0x14 if code >= 0x14 else 0x14 - code)
        elif code == 0x02:  # ... and strings without NUL
            j = data.index(0, i + 1) + 1
            if j < n and data[j] == 0xFF:
                j = _element_end(data, i)
        else:
            j = _element_end(data, i)
        out.append(data[i:j])
        i = j
    return out


def _element_end(data: bytes, i: int) -> int:
    """The index just past the tuple element starting at ``i`` (the tuple layer's encoding)."""
    code = data[i]
    i += 1
    if code in (0x01, 0x02):  # bytes, string: up to a \x00 not followed by \xff
        while True:
            j = data.index(0, i)
            if j + 1 < len(data) and data[j + 1] == 0xFF:
                i = j + 2
                continue
            return j + 1
    if code == 0x05:  # nested tuple: elements up to a bare \x00 (\x00\xff is a null inside)
        while True:
            if data[i] == 0x00:
                if i + 1 < len(data) and data[i + 1] == 0xFF:
                    i += 2
                    continue
                return i + 1
            i = _element_end(data, i)
    if 0x0C <= code <= 0x1C:
        return i + abs(code - 0x14)
    if code in (0x0B, 0x1D):
        return i + 1 + (data[i] ^ (0xFF if code == 0x0B else 0))
    fixed = _FIXED_SIZES.get(code)
    if fixed is None:
        raise ValueError(f"unknown tuple type code {code:#x} at {i - 1} in {data!r}")
    return i + fixed


class Joined(bytes):
    """A serialized record read back from several keys (split over the value limit, or grown by
    :meth:`RecordStore.append`): whoever rewrites or removes it in place must clear all of them, whatever
    its size."""


def _join(chunks: list[tuple[int, bytes]]) -> bytes:
    return Joined(b"".join(v for _, v in sorted(chunks)))
