"""Where metadata lives: the keys of states, entries, history and the search index, and the
pending index entries (see :mod:`ushas_catalog.metadata.store`, "Pending index entries")."""
from __future__ import annotations

import uuid
from typing import Any, Iterable, Iterator

import fdb.tuple as fdbtuple

from ..keyspace.tree import KeySpacePath
from ..kv.base import Transaction
from ..model.names import quote, split_name
from .values import (F_FIELD, F_KEY_VALUE, F_TAG, F_VALUE, INDEX_SCOPES, INDEX_TYPES, MERGE_BATCH_BYTES, ObjectType,
                     Scope, fold)
from ..keyspace.layout import (METADATA, METADATA_ENTRY, METADATA_HISTORY, METADATA_INDEX, METADATA_OBJECT,
                               METADATA_PENDING, OBJECT_ID)


# ---- keys --------------------------------------------------------------------------------------
#: per-object key parts cached by a MetadataKeys (cleared when full)
_KEY_CACHE_SIZE = 4096


class MetadataKeys:
    """Key helpers of one project's ``Metadata`` subspace."""

    __slots__ = ("objects", "index", "index_prefix", "pending", "pending_prefix", "_codes", "_entry_prefixes",
                 "_field_prefixes", "_tails")

    def __init__(self, project_path: KeySpacePath) -> None:
        root = project_path.add(METADATA)
        self.objects = root.add(METADATA_OBJECT)
        self.index = root.add(METADATA_INDEX)
        self.index_prefix = self.index.key()
        self.pending = root.add(METADATA_PENDING)
        self.pending_prefix = self.pending.key()
        per_object = self.objects.directory.child("objectId")
        self._codes = {name: pack_element(per_object.child(name).value)
                       for name in ("MetadataState", "MetadataEntry", "MetadataHistory")}
        self._entry_prefixes: dict[uuid.UUID, bytes] = {}
        #: index key prefixes per field: ``index + pack((fld,))``
        self._field_prefixes = {fld: self.index_prefix + pack_element(fld)
                                for fld in (F_KEY_VALUE, F_VALUE, F_TAG, F_FIELD)}
        #: ``pack((type code, scope code, oid))``, the middle of an object's index keys
        self._tails: dict[tuple[ObjectType, Scope, uuid.UUID], bytes] = {}

    def _object_prefix(self, oid: uuid.UUID) -> bytes:
        prefix = self._entry_prefixes.get(oid)
        if prefix is None:
            if len(self._entry_prefixes) >= _KEY_CACHE_SIZE:  # a long-lived MetadataStore: stay bounded
                self._entry_prefixes.clear()
            prefix = self._entry_prefixes[oid] = self.objects.key() + pack_element(oid)
        return prefix

    def entry_prefix(self, oid: uuid.UUID) -> bytes:
        """The key of ``entries(oid)`` (every entry key starts with it)."""
        return self._object_prefix(oid) + self._codes["MetadataEntry"]

    def history_prefix(self, oid: uuid.UUID) -> bytes:
        """The key of ``history(oid)``."""
        return self._object_prefix(oid) + self._codes["MetadataHistory"]

    def obj(self, oid: uuid.UUID) -> KeySpacePath:
        return self.objects.add(OBJECT_ID, oid)

    def state(self, oid: uuid.UUID) -> bytes:
        """Prefix of the state record's keys: ``+ (chunk,)``."""
        return self._object_prefix(oid) + self._codes["MetadataState"]

    def entries(self, oid: uuid.UUID) -> KeySpacePath:
        return self.obj(oid).add(METADATA_ENTRY)

    def history(self, oid: uuid.UUID) -> KeySpacePath:
        return self.obj(oid).add(METADATA_HISTORY)

    def pending_key(self, oid: uuid.UUID) -> bytes:
        """The key of the object's pending index entries."""
        return self.pending_prefix + pack_element(oid)

    def pending_range(self) -> tuple[bytes, bytes]:
        return self.pending_prefix, self.pending_prefix + b"\xff"

    def index_key(self, fld: str, term: str, otype: ObjectType, scope: Scope, oid: uuid.UUID,
                  column: str | None, key: str) -> bytes:
        """``fdb.tuple.pack((fld, term, type code, scope code, oid, column, key))`` under the
        index (codes: :data:`INDEX_TYPES`, :data:`INDEX_SCOPES`)."""
        return self.index_head(fld, term) + self.index_tail(otype, scope, oid) + pack_element(column) + \
            pack_element(key)

    def index_head(self, fld: str, term: str) -> bytes:
        """The start of an index key: ``index + pack((fld, term))``."""
        return self._field_prefixes[fld] + pack_element(term)

    def index_tail(self, otype: ObjectType, scope: Scope, oid: uuid.UUID) -> bytes:
        """``pack((type code, scope code, oid))``: the part of an index key between the term and the
        (column, key) of the entry; computed once per object and writer (the index is
        written for every column of a table)."""
        k = (otype, scope, oid)
        tail = self._tails.get(k)
        if tail is None:
            if len(self._tails) >= _KEY_CACHE_SIZE:
                self._tails.clear()
            tail = self._tails[k] = fdbtuple.pack((INDEX_TYPES.index(otype), INDEX_SCOPES.index(scope))) + \
                pack_element(oid)
        return tail


def versionstamped_key(prefix: bytes, user_version: int) -> bytes:
    """``fdb.tuple.pack_with_versionstamp((Versionstamp(user_version=n),), prefix=prefix)``:
    the incomplete versionstamp element (0x33, 10 placeholder bytes, the 2-byte user version)
    and the 4-byte little-endian offset of the placeholder."""
    return prefix + b"\x33" + b"\xff" * 10 + user_version.to_bytes(2, "big") + (len(prefix) + 1).to_bytes(4, "little")


#: ``pack_element("")``
EMPTY_ELEMENT = b"\x02\x00"


def pack_element(value: str | uuid.UUID | None) -> bytes:
    """One ``fdb.tuple`` element, byte for byte as ``fdb.tuple.pack((value,))``, without its
    generic machinery (strings: 0x02, UTF-8 with NUL escaped, 0x00; UUID: 0x30 + 16 bytes;
    None: 0x00)."""
    if isinstance(value, str):
        return b"\x02" + value.encode("utf-8").replace(b"\x00", b"\x00\xff") + b"\x00"
    if value is None:
        return b"\x00"
    if isinstance(value, uuid.UUID):
        return b"\x30" + value.bytes
    return fdbtuple.pack((value,))


# ---- pending index entries ---------------------------------------------------------------------
def encode_pending(entries: Iterable[tuple[bytes, bytes]]) -> bytes:
    """One object's pending index entries, ``(key without the index prefix, value)``, as one
    value: per entry a 2-byte key length, the key, a 4-byte value length, the value (raw bytes,
    so a search can look for a key prefix in the value before decoding it)."""
    return b"".join(len(k).to_bytes(2, "big") + k + len(v).to_bytes(4, "big") + v for k, v in entries)


def decode_pending(data: bytes) -> list[tuple[bytes, bytes]]:
    """The ``(key without the index prefix, value)`` pairs of :func:`encode_pending`."""
    out, i, n = [], 0, len(data)
    while i < n:
        klen = int.from_bytes(data[i:i + 2], "big")
        key = data[i + 2:i + 2 + klen]
        i += 2 + klen
        vlen = int.from_bytes(data[i:i + 4], "big")
        out.append((key, data[i + 4:i + 4 + vlen]))
        i += 4 + vlen
    return out


def pending_rows(values: Iterable[bytes], begin: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The pending index entries ``(key without the index prefix, value)`` with
    ``begin <= key < end``, out of the pending values ``values``."""
    for data in values:
        if begin in data:  # most hold no such key: decode only those that may
            for key, value in decode_pending(data):
                if begin <= key < end:
                    yield key, value


def pending_values(tr: Transaction, keys: MetadataKeys) -> list[bytes]:
    """Every pending value of the project (a snapshot read: searches and checks)."""
    return [kv.value for kv in tr.get_range(*keys.pending_range(), snapshot=True)]


def write_index(tr: Transaction, keys: MetadataKeys, entries: list[tuple[bytes, bytes]]) -> None:
    """Set index entries given without the index prefix, in key order (neighbouring keys are
    inserted together)."""
    entries.sort()
    prefix = keys.index_prefix
    tr.set_many([(prefix + key, value) for key, value in entries])


def merge_pending(tr: Transaction, keys: MetadataKeys, max_bytes: int = MERGE_BATCH_BYTES) -> tuple[int, bool]:
    """Move pending index entries into the index, up to ``max_bytes`` of them: (objects
    moved, whether some are left). The pending keys are read with a read conflict: a concurrent
    transaction that moves or removes one of them (alter, drop) makes this one retry."""
    merged, size, writes, more = 0, 0, [], False
    for kv in tr.get_range(*keys.pending_range()):
        if merged and size + len(kv.value) > max_bytes:
            more = True
            break
        writes.extend(decode_pending(kv.value))
        tr.clear(kv.key)
        merged += 1
        size += len(kv.value)
    write_index(tr, keys, writes)
    return merged, more


def merge_due(oid: uuid.UUID, merge_at: int) -> bool:
    """Whether creating the object ``oid`` calls for a merge of the pending index entries: one
    random id in ``merge_at`` (ids are random, uuid4) — so about ``merge_at`` objects are
    pending at a merge, without a shared counter."""
    return merge_at <= 1 or oid.int % merge_at == 0


def index_value(fld: str, name: str, value: str) -> bytes:
    """The value of an index entry: ``pack((name,))``, and the entry's value for ``kv`` and
    ``v`` (:func:`shown` derives the rest from the key)."""
    if fld == F_KEY_VALUE or fld == F_VALUE:
        return pack_element(name) + pack_element(value)
    return pack_element(name)


def unpack_index_value(data: bytes) -> tuple[str, str]:
    """(name, the entry's value: "" for ``t`` and ``f``) of an index entry's value."""
    name, *value = fdbtuple.unpack(data)
    return name, value[0] if value else ""


def shown(fld: str, column: str | None, key: str, value: str) -> str:
    """What an index entry shows as matched: ``key=value`` (``kv``), the value (``v``), the
    tag (``t``) or the field path (``f``: its column)."""
    if fld == F_KEY_VALUE:
        return f"{key}={value}"
    if fld == F_FIELD:
        return column or ""
    return key if fld == F_TAG else value


def field_terms(path: str) -> list[str]:
    """Index terms of a schema field path: the path and, for a nested field, its own name."""
    if "." not in path and "`" not in path:
        return [fold(path)]
    parts = split_name(path)
    terms = [fold(path)]
    if len(parts) > 1 and fold(parts[-1]) != terms[0]:
        terms.append(fold(parts[-1]))
    return terms


def schema_paths(schema: Any) -> dict[str, str | None]:
    """Field path (quoted parts, dotted) -> comment, for every field of a StructType."""
    return {".".join(quote(p) for p in path): f.comment for path, f in schema.walk()}
