"""Business (USER) and system (SYSTEM) metadata: properties and tags on catalogs, databases,
tables, views and columns, their history, and the search index kept with them.

Python API: ``Metastore.metadata`` (a :class:`MetadataStore`) and ``Metastore.search(...)``
(:mod:`ushas_catalog.metadata.search`)::

    ms.metadata.set("main.sales.orders", {"owner_team": "growth"})
    ms.metadata.tag("main.sales.orders.customer_id", ["pii"])
    ms.metadata.get("main.sales.orders").to_json()
    ms.metadata.history("main.sales.orders")

Objects are named like everywhere else: ``catalog``, ``catalog.database``,
``catalog.database.table`` (a table or a view) and ``catalog.database.table.column`` (more
parts name a nested field: ``c.d.t.address.city``; backticks quote a part holding a dot).

Scopes
    USER metadata is written by people: this API, the CLI (``ushas meta set / unset / tag /
    untag``) and Spark SQL — table (and catalog / database / view) properties under the
    reserved prefixes :data:`SPARK_PROPERTY_PREFIX` (``'ushas.meta.<key>'='<value>'``) and
    :data:`SPARK_TAG_PREFIX` (``'ushas.tag.<tag>'='<anything>'``), object comments (key
    ``comment``) and column comments (key ``comment`` on the column). Spark-fed values are
    mirrored when the object's properties or schema change: a value changed in Spark
    overwrites the USER value, one removed in Spark removes it; a value changed here stays
    until Spark changes it again.

    SYSTEM metadata is written only by the catalog (:func:`on_commit`, called from
    ``Metastore._commit``) and by the lineage listener (:func:`record_lineage_write`):
    ``created_by``, ``created_at``, ``updated_by``, ``updated_at`` on every object (the
    times are shown, not indexed: :data:`UNINDEXED_SYSTEM_KEYS`);
    ``format``, ``partition_count`` (partitioned tables) and the schema field names on
    tables; the schema field names on views; ``last_writer_run``, ``last_write_at``,
    ``row_count`` and ``file_count`` (where known) on tables written by a captured run.
    Writing SYSTEM metadata through this API raises :class:`ReadOnlyMetadata`.

Storage (``Metadata`` subspace of the project, see :mod:`ushas_catalog.keyspace.layout`): per object
id a JSON state record, its entries ``(column | None, scope, 'p' | 't', key) -> value`` and
its history (versionstamped keys: commit order). The search index ``MetadataIndex`` holds
``(field, term, TYPE, scope, objectId, column | None, key) -> (name[, value])`` with terms
lower-cased, TYPE and scope as small integers (:data:`INDEX_TYPES`, :data:`INDEX_SCOPES`) and
the entry's value only where the key does not hold it (:func:`index_value`): field ``kv``
(``key=value``: serves exact and prefix matches on the key too, keys cannot contain ``=``;
not written for :data:`VALUE_ONLY_SYSTEM_KEYS`), ``v`` (value), ``t`` (tag) and ``f`` (schema
field: its dotted path and, for a nested field, its own name). Index entries are written in
the same transaction as the metadata they index, removed when the object is dropped (restored by
undrop) and everything goes at purge.

Pending index entries (``MetadataPending``): the index entries of an object created in a
transaction (a table's: one per column, its tags, properties, format...) are written as ONE
key, ``objectId -> its entries`` (:func:`encode_pending`), not as scattered index keys; a
search reads the pending entries with the index (:func:`pending_rows`), so they are found as
soon as they commit. About every :data:`INDEX_MERGE_AT` created objects (those whose random
id is a multiple of it: :func:`merge_due`; no counter, so nothing that concurrent creates
contend on, nothing more to read or write per create), the metastore moves every pending
entry into ``MetadataIndex`` in one transaction after the create (:func:`merge_pending`),
where sorted, batched inserts touch each index page once. A transaction that changes a pending
object (alter, tag, rename, drop...) first moves its entries into the index
(:meth:`MetadataWriter.state`), so an object's entries are in one place. Why: a create writes ~30 index keys at unrelated places of the index; on a B-tree
engine (the embedded one, and FoundationDB's storage servers) each dirties its own page, which
made creating a table 1.6x slower with the index than without. Like PostgreSQL GIN's pending
list.

History (:meth:`MetadataStore.history`) records every USER change (API, CLI, Spark-mirrored)
and every change by the lineage listener; the catalog's own SYSTEM bookkeeping (created /
updated / format / partition count / schema) is the object's commit history (``ushas history``).

Limits (bad input is refused with :class:`InvalidArgument`, nothing is written): keys and
tags are 1 to :data:`MAX_KEY_BYTES` UTF-8 bytes without control characters, ``=`` or ``*``;
keys do not start with a reserved prefix (:data:`RESERVED_KEY_PREFIXES`); values are strings
of at most :data:`MAX_VALUE_BYTES` UTF-8 bytes without NUL.
"""
from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import fdb.tuple as fdbtuple

from ..errors import InvalidArgument, InvalidName, NoSuchTable, ReadOnlyMetadata
from ..keyspace.tree import KeySpacePath
from ..kv.base import Transaction
from ..model.names import CatalogName, DatabaseName, TableName, quote, split_name

if TYPE_CHECKING:
    from ..catalog.core import CatalogCore as Metastore

MAX_KEY_BYTES = 256
#: one created object in this many (on average) makes the metastore merge the pending index
#: entries into the index (``Metastore.index_merge_at``: this default; 1 merges after every
#: create, 0 writes index entries straight into the index)
INDEX_MERGE_AT = 256
#: an object's pending entries above this size go straight into the index
PENDING_VALUE_MAX = 64 * 1024
#: pending bytes moved per merge transaction (FoundationDB: at most 10 MB written per transaction)
MERGE_BATCH_BYTES = 2 * 1024 * 1024
MAX_VALUE_BYTES = 4096
#: a state record longer than this is split over several keys
STATE_CHUNK_BYTES = 90_000
#: USER keys may not start with these (case-insensitive): they name catalog-owned things
RESERVED_KEY_PREFIXES: tuple[str, ...] = ("ushas.", "system.")
#: Spark properties mirrored into USER properties: ``'ushas.meta.<key>'='<value>'``
SPARK_PROPERTY_PREFIX = "ushas.meta."
#: Spark properties mirrored into USER tags: ``'ushas.tag.<tag>'='<anything>'``
SPARK_TAG_PREFIX = "ushas.tag."


class Scope(str, Enum):
    USER = "USER"
    SYSTEM = "SYSTEM"

    @classmethod
    def parse(cls, value: "Scope | str") -> "Scope":
        try:
            return cls(value.upper() if isinstance(value, str) else value)
        except ValueError:
            raise InvalidArgument(f"unknown metadata scope {value!r}: expected USER or SYSTEM") from None


class ObjectType(str, Enum):
    CATALOG = "CATALOG"
    DATABASE = "DATABASE"
    TABLE = "TABLE"
    VIEW = "VIEW"
    COLUMN = "COLUMN"

    @classmethod
    def parse(cls, value: "ObjectType | str") -> "ObjectType":
        try:
            return cls(value.upper() if isinstance(value, str) else value)
        except ValueError:
            raise InvalidArgument(f"unknown object type {value!r}: expected one of "
                                  f"{', '.join(t.value.lower() for t in cls)}") from None


#: entry kinds in keys
PROPERTY = "p"
TAG = "t"
#: the USER key of an object's or a column's comment: the metastore record holds it
COMMENT = "comment"
#: index fields
F_KEY_VALUE, F_VALUE, F_TAG, F_FIELD = "kv", "v", "t", "f"
#: the codes of object types and scopes in index keys (position in these tuples): short keys
#: fit more entries in an engine page, so an index write rebalances the B-tree less often
INDEX_TYPES: tuple[ObjectType, ...] = (ObjectType.CATALOG, ObjectType.DATABASE, ObjectType.TABLE, ObjectType.VIEW,
                                       ObjectType.COLUMN)
INDEX_SCOPES: tuple[Scope, ...] = (Scope.USER, Scope.SYSTEM)

#: SYSTEM times: shown, not indexed (unique per commit, they would only cost index writes on
#: every commit; search is for discovery, not time ranges)
UNINDEXED_SYSTEM_KEYS = frozenset({"created_at", "updated_at", "last_write_at"})
#: SYSTEM properties of every object (``format``: of every table), indexed by value only (``v``):
#: a search on their key (``key:created_by``, ``created_by=alice``) reads the value index
#: (:mod:`ushas_catalog.metadata.search`), which saves an index key per property on every commit
VALUE_ONLY_SYSTEM_KEYS = frozenset({"created_by", "updated_by", "format"})
#: SYSTEM keys the catalog maintains (documentation and ``meta show``)
SYSTEM_KEYS: tuple[str, ...] = ("created_by", "created_at", "updated_by", "updated_at", "format", "partition_count",
                                "last_writer_run", "last_write_at", "row_count", "file_count")


# ---- values ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ObjectRef:
    """A resolved object: its type, metastore id and qualified name. A column is its
    table's (or view's) id with ``column`` set (a dotted path, parts quoted)."""

    type: ObjectType
    id: uuid.UUID
    name: str
    column: str | None = None
    #: for a column: TABLE or VIEW
    parent_type: ObjectType | None = None

    @property
    def full_name(self) -> str:
        return self.name if self.column is None else f"{self.name}.{self.column}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type.value, "name": self.full_name, "id": str(self.id)}
        if self.column is not None:
            out["relation"] = self.name
            out["column"] = self.column
        return out


@dataclass
class ScopedMetadata:
    properties: dict[str, str] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"properties": dict(sorted(self.properties.items())), "tags": sorted(self.tags)}


@dataclass
class ObjectMetadata:
    """The metadata of one object, by scope; for a table or view also its columns'."""

    object: ObjectRef
    user: ScopedMetadata
    system: ScopedMetadata
    schema_fields: list[str] = field(default_factory=list)
    columns: dict[str, "ObjectMetadata"] = field(default_factory=dict)

    def scope(self, scope: Scope) -> ScopedMetadata:
        return self.user if scope is Scope.USER else self.system

    def to_json(self) -> dict[str, Any]:
        out = {"object": self.object.to_json(), "USER": self.user.to_json(), "SYSTEM": self.system.to_json()}
        if self.object.type in (ObjectType.TABLE, ObjectType.VIEW):
            out["schema_fields"] = list(self.schema_fields)
            out["columns"] = {c: m.to_json() for c, m in sorted(self.columns.items())}
        return out


@dataclass(frozen=True)
class MetadataChange:
    """One entry of the metadata history: who changed what, when."""

    at: dt.datetime
    user: str
    action: str          # set / unset / tag / untag
    scope: Scope
    key: str             # the property key or the tag
    column: str | None = None
    old: str | None = None
    new: str | None = None
    source: str = "api"  # api (Python, CLI), spark (mirrored), lineage, catalog

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "user": self.user, "action": self.action, "scope": self.scope.value,
                "column": self.column, "key": self.key, "old": self.old, "new": self.new, "source": self.source}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "MetadataChange":
        return MetadataChange(dt.datetime.fromisoformat(d["at"]), d["user"], d["action"], Scope(d["scope"]),
                              d["key"], d.get("column"), d.get("old"), d.get("new"), d.get("source", "api"))


@dataclass
class ObjectState:
    """The per-object state record: what the index and the Spark mirroring need."""

    type: ObjectType
    name: str
    indexed: bool = True
    #: schema field paths (quoted parts, dotted) -> the comment the schema had, last synced
    fields: dict[str, str | None] = field(default_factory=dict)
    #: Spark-mirrored values, last synced: properties and tags
    spark_properties: dict[str, str] = field(default_factory=dict)
    spark_tags: list[str] = field(default_factory=list)
    spark_comment: str | None = None

    def comment_entries(self) -> list["Entry"]:
        """The comments the metastore records hold (the object's and its columns'), as USER
        ``comment`` entries: indexed and shown like stored entries, never stored twice."""
        out = [Entry(path, Scope.USER, PROPERTY, COMMENT, c) for path, c in self.fields.items() if c is not None]
        if self.spark_comment is not None:
            out.append(Entry(None, Scope.USER, PROPERTY, COMMENT, self.spark_comment))
        return out

    def to_bytes(self) -> bytes:
        return json.dumps({"type": self.type.value, "name": self.name, "indexed": self.indexed, "fields": self.fields,
                           "spark_properties": self.spark_properties, "spark_tags": self.spark_tags,
                           "spark_comment": self.spark_comment}, separators=(",", ":"),
                          ensure_ascii=False).encode()

    @staticmethod
    def from_bytes(data: bytes) -> "ObjectState":
        d = json.loads(data)
        return ObjectState(ObjectType(d["type"]), d["name"], d.get("indexed", True), d.get("fields", {}),
                           d.get("spark_properties", {}), d.get("spark_tags", []), d.get("spark_comment"))


# ---- validation --------------------------------------------------------------------------------
def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"metadata {what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"metadata {what} {value[:40]!r} is not valid Unicode") from None
    return value


def validate_key(key: object, what: str = "key", *, reserved: bool = True) -> str:
    """A property key or tag, or :class:`InvalidArgument` saying why not."""
    key = _text(key, what)
    if not key or not key.strip():
        raise InvalidArgument(f"metadata {what} must not be empty")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise InvalidArgument(f"metadata {what} {key[:40]!r}... is {size} UTF-8 bytes; the maximum is {MAX_KEY_BYTES}")
    for ch in key:
        if ord(ch) < 32 or ord(ch) == 127:
            raise InvalidArgument(f"metadata {what} {key[:40]!r} contains the control character {ch!r}")
    for ch in "=*":
        if ch in key:
            raise InvalidArgument(f"metadata {what} {key[:40]!r} contains {ch!r} (reserved for search queries)")
    if reserved:
        low = key.lower()
        for prefix in RESERVED_KEY_PREFIXES:
            if low.startswith(prefix):
                raise InvalidArgument(f"metadata {what} {key[:40]!r} starts with the reserved prefix {prefix!r}")
    return key


def validate_value(value: object, key: str) -> str:
    value = _text(value, f"value of {key!r}")
    size = len(value.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise InvalidArgument(f"metadata value of {key!r} is {size} UTF-8 bytes; the maximum is {MAX_VALUE_BYTES}",
                              key=key, size=size)
    if "\x00" in value:
        raise InvalidArgument(f"metadata value of {key!r} contains a NUL character", key=key)
    return value


def fold(text: str) -> str:
    """The index form of a term: case-insensitive."""
    return text.lower()


def _check_user_scope(scope: Scope | str) -> Scope:
    s = Scope.parse(scope)
    if s is Scope.SYSTEM:
        raise ReadOnlyMetadata("SYSTEM metadata is set only by the catalog and the lineage listener; "
                               "users write USER metadata", scope="SYSTEM")
    return s


def micros_iso(micros: int) -> str:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)).isoformat()


def _now_micros() -> int:
    return time.time_ns() // 1000


# ---- keys --------------------------------------------------------------------------------------
#: per-object key parts cached by a MetadataKeys (cleared when full)
_KEY_CACHE_SIZE = 4096


class MetadataKeys:
    """Key helpers of one project's ``Metadata`` subspace."""

    __slots__ = ("objects", "index", "index_prefix", "pending", "pending_prefix", "_codes", "_entry_prefixes",
                 "_field_prefixes", "_tails")

    def __init__(self, project_path: KeySpacePath) -> None:
        root = project_path.add("Metadata")
        self.objects = root.add("MetadataObject")
        self.index = root.add("MetadataIndex")
        self.index_prefix = self.index.key()
        self.pending = root.add("MetadataPending")
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
        return self.objects.add("objectId", oid)

    def state(self, oid: uuid.UUID) -> bytes:
        """Prefix of the state record's keys: ``+ (chunk,)``."""
        return self._object_prefix(oid) + self._codes["MetadataState"]

    def entries(self, oid: uuid.UUID) -> KeySpacePath:
        return self.obj(oid).add("MetadataEntry")

    def history(self, oid: uuid.UUID) -> KeySpacePath:
        return self.obj(oid).add("MetadataHistory")

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
_EMPTY = b"\x02\x00"


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


def _write_index(tr: Transaction, keys: MetadataKeys, entries: list[tuple[bytes, bytes]]) -> None:
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
    _write_index(tr, keys, writes)
    return merged, more


def merge_due(oid: uuid.UUID, merge_at: int) -> bool:
    """Whether creating the object ``oid`` calls for a merge of the pending index entries: one
    random id in ``merge_at`` (ids are random, uuid4) — so about ``merge_at`` objects are
    pending at a merge, without a shared counter."""
    return merge_at <= 1 or oid.int % merge_at == 0


@dataclass(frozen=True)
class Entry:
    column: str | None
    scope: Scope
    kind: str  # PROPERTY or TAG
    key: str
    value: str

    def search_terms(self) -> list[tuple[str, str]]:
        """(field, term) this entry is found by (none for the SYSTEM times)."""
        if self.scope is Scope.SYSTEM and self.key in UNINDEXED_SYSTEM_KEYS:
            return []
        if self.kind == TAG:
            return [(F_TAG, fold(self.key))]
        if self.key == COMMENT and self.scope is Scope.USER:  # comments: by their text (wide tables have many)
            return [(F_VALUE, fold(self.value))]
        return [(F_KEY_VALUE, fold(f"{self.key}={self.value}")), (F_VALUE, fold(self.value))]

    def index_terms(self) -> list[tuple[str, str]]:
        """(field, term) of the index entries of this entry: its :meth:`search_terms` but the
        ``kv`` one of a :data:`VALUE_ONLY_SYSTEM_KEYS` property."""
        terms = self.search_terms()
        if self.scope is Scope.SYSTEM and self.key in VALUE_ONLY_SYSTEM_KEYS:
            return [t for t in terms if t[0] != F_KEY_VALUE]
        return terms


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


# ---- the writer: one transaction's metadata changes ---------------------------------------------
class MetadataWriter:
    """Writes entries of one project in one transaction, keeping the index and the
    history in step. Made by the API and by the catalog / lineage hooks."""

    def __init__(self, tr: Transaction, keys: MetadataKeys, user: str, *, source: str = "api",
                 now_micros: int | None = None, index: bool = True) -> None:
        self.tr = tr
        #: False only for the write-cost baseline of ``bench/search.py``: every metadata write
        #: as usual, no index key written or cleared (the index is then wrong: never in a store
        #: that is searched)
        self.index = index
        self.keys = keys
        self.user = user
        self.source = source
        self.now_micros = now_micros if now_micros is not None else _now_micros()
        self._history_seq = 0
        #: objects created in this transaction: their index entries (full key -> value), written
        #: by :meth:`finish` as one pending key each
        self._deferred: dict[uuid.UUID, dict[bytes, bytes]] = {}
        self._states: dict[uuid.UUID, ObjectState | None] = {}
        #: the state bytes as stored (b"": none), to skip rewriting an unchanged state
        self._saved: dict[uuid.UUID, bytes] = {}

    # -- state ------------------------------------------------------------------------------
    def state(self, oid: uuid.UUID) -> ObjectState | None:
        """The object's state record (split over several keys when longer than a value may be).
        The first time a stored object is read, its pending index entries (if any) move into
        the index: whatever changes next changes them there."""
        if oid not in self._states:
            key = self.keys.state(oid)
            raw = b"".join(kv.value for kv in self.tr.get_range(key, key + b"\xff"))
            self._saved[oid] = raw
            self._states[oid] = ObjectState.from_bytes(raw) if raw else None
            if raw and self.index:
                self._merge_pending_of(oid)
        return self._states[oid]

    def _merge_pending_of(self, oid: uuid.UUID) -> None:
        pkey = self.keys.pending_key(oid)
        raw = self.tr.get(pkey)
        if raw is None:
            return
        _write_index(self.tr, self.keys, decode_pending(raw))
        self.tr.clear(pkey)

    def finish(self, merge_at: int) -> bool:
        """End of the transaction's metadata writes: the index entries of the objects created
        in it go into ``MetadataPending`` (straight into the index when ``merge_at`` is 0 or they
        are too large for one value). Returns whether a merge is due (:func:`merge_due`: the
        caller then runs :func:`merge_pending`)."""
        due = False
        plen = len(self.keys.index_prefix)
        for oid, entries in self._deferred.items():
            if not entries:
                continue
            items = sorted(entries.items())
            value = encode_pending((k[plen:], v) for k, v in items) if merge_at > 0 else None
            if value is None or len(value) > PENDING_VALUE_MAX:
                self.tr.set_many(items)
                continue
            self.tr.set(self.keys.pending_key(oid), value)
            due = due or merge_due(oid, merge_at)
        self._deferred.clear()
        return due

    def save_state(self, oid: uuid.UUID, state: ObjectState) -> None:
        """Write the state record (nothing when it did not change)."""
        self._states[oid] = state
        data = state.to_bytes()
        if self._saved.get(oid) == data:
            return
        key = self.keys.state(oid)
        if self._saved.get(oid, b"x"):  # something (or, unknown, maybe something) is stored: replace it
            self.tr.clear_range(key, key + b"\xff")
        for i, start in enumerate(range(0, len(data), STATE_CHUNK_BYTES)):
            self.tr.set(key + fdbtuple.pack((i,)), data[start:start + STATE_CHUNK_BYTES])
        self._saved[oid] = data

    def known_new(self, oid: uuid.UUID, state: ObjectState) -> None:
        """A freshly created object: nothing stored yet (skips reads); its index entries wait
        for :meth:`finish`."""
        self._states[oid] = state
        self._saved[oid] = b""
        if self.index:
            self._deferred[oid] = {}

    # -- entries ----------------------------------------------------------------------------
    def _entry_key(self, oid: uuid.UUID, column: str | None, scope: Scope, kind: str, key: str) -> bytes:
        return b"".join((self.keys.entry_prefix(oid), pack_element(column), pack_element(scope.value),
                         pack_element(kind), pack_element(key)))

    def entries(self, oid: uuid.UUID, column: str | None | type = ..., ) -> Iterator[Entry]:
        """Every entry of the object (``column=...``), or of the object itself (None) / one column."""
        base = self.keys.entry_prefix(oid)
        if column is ...:
            begin, end = base + b"\x00", base + b"\xff"
        else:
            begin = base + pack_element(column)  # type: ignore[arg-type]
            end = begin + b"\xff"
        plen = len(base)
        for kv in self.tr.get_range(begin, end):
            col, scope, kind, key = fdbtuple.unpack(kv.key[plen:])
            yield Entry(col, Scope(scope), kind, key, kv.value.decode("utf-8"))

    def get(self, oid: uuid.UUID, column: str | None, scope: Scope, kind: str, key: str) -> str | None:
        raw = self.tr.get(self._entry_key(oid, column, scope, kind, key))
        return raw.decode("utf-8") if raw is not None else None

    def put(self, oid: uuid.UUID, entry: Entry, *, fresh: bool = False, history: bool = True,
            source: str | None = None) -> bool:
        """Write ``entry``; returns whether anything changed. ``fresh``: known absent."""
        state = self.state(oid)
        old = None if fresh else self.get(oid, entry.column, entry.scope, entry.kind, entry.key)
        if old is not None and old == entry.value:
            return False
        if old is not None and state is not None and state.indexed:
            self._unindex_entry(oid, state, Entry(entry.column, entry.scope, entry.kind, entry.key, old))
        self.tr.set(self._entry_key(oid, entry.column, entry.scope, entry.kind, entry.key), entry.value.encode("utf-8"))
        if state is not None and state.indexed:
            self._index_entry(oid, state, entry)
        if history:
            self._history(oid, "tag" if entry.kind == TAG else "set", entry, old,
                          None if entry.kind == TAG else entry.value, source=source)
        return True

    def delete(self, oid: uuid.UUID, column: str | None, scope: Scope, kind: str, key: str, *,
               history: bool = True, source: str | None = None) -> bool:
        old = self.get(oid, column, scope, kind, key)
        if old is None:
            return False
        entry = Entry(column, scope, kind, key, old)
        state = self.state(oid)
        if state is not None and state.indexed:
            self._unindex_entry(oid, state, entry)
        self.tr.clear(self._entry_key(oid, column, scope, kind, key))
        if history:
            self._history(oid, "untag" if kind == TAG else "unset", entry, None if kind == TAG else old, None,
                          source=source)
        return True

    # -- index ------------------------------------------------------------------------------
    @staticmethod
    def _entry_type(state: ObjectState, entry: Entry) -> ObjectType:
        return ObjectType.COLUMN if entry.column is not None else state.type

    def _index_keys(self, oid: uuid.UUID, state: ObjectState, entry: Entry) -> Iterator[tuple[str, bytes]]:
        """(field, index key) of each index entry of ``entry``; none when the index is off."""
        if not self.index:
            return
        keys = self.keys
        tail = keys.index_tail(self._entry_type(state, entry), entry.scope, oid) + pack_element(entry.column) + \
            pack_element(entry.key)
        for fld, term in entry.index_terms():
            yield fld, keys.index_head(fld, term) + tail

    def _set_index(self, oid: uuid.UUID, key: bytes, value: bytes) -> None:
        deferred = self._deferred.get(oid)
        if deferred is None:
            self.tr.set(key, value)
        else:
            deferred[key] = value

    def _clear_index(self, oid: uuid.UUID, key: bytes) -> None:
        deferred = self._deferred.get(oid)
        if deferred is None:
            self.tr.clear(key)
        else:
            deferred.pop(key, None)

    def _index_entry(self, oid: uuid.UUID, state: ObjectState, entry: Entry) -> None:
        for fld, key in self._index_keys(oid, state, entry):
            self._set_index(oid, key, index_value(fld, state.name, entry.value))

    def _unindex_entry(self, oid: uuid.UUID, state: ObjectState, entry: Entry) -> None:
        for _, key in self._index_keys(oid, state, entry):
            self._clear_index(oid, key)

    def set_comment(self, oid: uuid.UUID, state: ObjectState, column: str | None, old: str | None,
                    new: str | None, *, history: bool) -> None:
        """A comment in the metastore record changed (``state`` already updated by the caller
        or about to be): its index entries follow, and the history says so."""
        if old == new:
            return
        if state.indexed:
            if old is not None:
                self._unindex_entry(oid, state, Entry(column, Scope.USER, PROPERTY, COMMENT, old))
            if new is not None:
                self._index_entry(oid, state, Entry(column, Scope.USER, PROPERTY, COMMENT, new))
        if history:
            self._history(oid, "set" if new is not None else "unset",
                          Entry(column, Scope.USER, PROPERTY, COMMENT, new or ""), old, new)

    def index_field(self, oid: uuid.UUID, state: ObjectState, path: str) -> None:
        self.index_fields(oid, state, (path,))

    def index_fields(self, oid: uuid.UUID, state: ObjectState, paths: Iterable[str]) -> None:
        """The ``f`` entries of schema fields: ``(f, term, TYPE, SYSTEM, oid, path, "") ->
        (name,)`` per term of each path (:func:`field_terms`)."""
        if not self.index:
            return
        head = self.keys.index_head
        tail = self.keys.index_tail(state.type, Scope.SYSTEM, oid)
        value = index_value(F_FIELD, state.name, "")
        writes = []
        for path in paths:
            end = tail + pack_element(path) + _EMPTY
            writes.extend((head(F_FIELD, term) + end, value) for term in field_terms(path))
        deferred = self._deferred.get(oid)
        if deferred is not None:
            deferred.update(writes)
            return
        writes.sort()  # in key order: the engine inserts neighbouring keys cheaper
        self.tr.set_many(writes)

    def unindex_field(self, oid: uuid.UUID, state: ObjectState, path: str) -> None:
        if not self.index:
            return
        end = self.keys.index_tail(state.type, Scope.SYSTEM, oid) + pack_element(path) + _EMPTY
        for term in field_terms(path):
            self._clear_index(oid, self.keys.index_head(F_FIELD, term) + end)

    def set_indexed(self, oid: uuid.UUID, indexed: bool) -> None:
        """Remove (drop) or restore (undrop) every index entry of the object."""
        state = self.state(oid)
        if state is None or state.indexed == indexed:
            return
        state.indexed = True  # so _index_entry / _unindex_entry compute the same keys
        for entry in [*self.entries(oid), *state.comment_entries()]:
            (self._index_entry if indexed else self._unindex_entry)(oid, state, entry)
        if indexed:
            self.index_fields(oid, state, state.fields)
        else:
            for path in state.fields:
                self.unindex_field(oid, state, path)
        state.indexed = indexed
        self.save_state(oid, state)

    def rename(self, oid: uuid.UUID, name: str) -> None:
        """The object's name changed: index values carry it, rewrite them."""
        state = self.state(oid)
        if state is None or state.name == name:
            return
        state.name = name
        if state.indexed:
            for entry in [*self.entries(oid), *state.comment_entries()]:
                self._index_entry(oid, state, entry)
            self.index_fields(oid, state, state.fields)
        self.save_state(oid, state)

    def purge(self, oid: uuid.UUID) -> None:
        """Everything of the object: index entries, entries, state, history."""
        state = self.state(oid)
        if state is not None and state.indexed:
            self.set_indexed(oid, False)
        self.tr.clear_range(*self.keys.obj(oid).range())
        self._states[oid] = None
        self._saved[oid] = b""

    # -- history ----------------------------------------------------------------------------
    def _history(self, oid: uuid.UUID, action: str, entry: Entry, old: str | None, new: str | None, *,
                 source: str | None = None) -> None:
        change = MetadataChange(dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
                                + dt.timedelta(microseconds=self.now_micros), self.user, action, entry.scope,
                                entry.key, entry.column, old, new, source or self.source)
        key = versionstamped_key(self.keys.history_prefix(oid), self._history_seq)
        self._history_seq += 1
        self.tr.set_versionstamped_key(key, json.dumps(change.to_json(), separators=(",", ":"),
                                                       ensure_ascii=False).encode())


# ---- the API -----------------------------------------------------------------------------------
class MetadataStore:
    """USER metadata of one metastore's project: ``Metastore.metadata``. Every call is one
    transaction; every write validates all its input before writing anything."""

    def __init__(self, metastore: "Metastore") -> None:
        self.ms = metastore
        self.keys = MetadataKeys(metastore.project_path)

    # -- resolution -------------------------------------------------------------------------
    def resolve(self, tr: Transaction, target: "str | Sequence[str] | ObjectRef") -> ObjectRef:
        """An object by name (1 part: catalog, 2: database, 3: table or view, more: column)."""
        if isinstance(target, ObjectRef):
            return target
        parts = split_name(target) if isinstance(target, str) else list(target)
        if not parts or len(parts) > 3 + 32:
            raise InvalidName(f"object name {target!r} must be catalog[.database[.table[.column...]]]")
        ms = self.ms
        if len(parts) == 1:
            cn = CatalogName.parse(parts)
            cat = ms.resolver.catalog(tr, cn, load=False)
            return ObjectRef(ObjectType.CATALOG, cat.id, str(cn))
        if len(parts) == 2:
            dn = DatabaseName.parse(parts)
            db = ms.resolver.database(tr, dn, load=False)
            return ObjectRef(ObjectType.DATABASE, db.id, str(dn))
        tn = TableName.parse(parts[:3])
        _, entry = ms.resolver.relation(tr, tn)
        if entry is None:
            raise NoSuchTable(f"table or view {tn} does not exist", table=str(tn))
        from ..records import ObjectKind

        rtype = ObjectType.TABLE if entry.kind == ObjectKind.TABLE else ObjectType.VIEW
        rid = uuid.UUID(bytes=entry.id)
        if len(parts) == 3:
            return ObjectRef(rtype, rid, str(tn))
        for p in parts[3:]:
            if not p:
                raise InvalidName(f"column name in {target!r} must not be empty")
        wanted = ".".join(quote(p) for p in parts[3:])
        fields = self._schema_fields(tr, tn, rtype)
        if wanted not in fields:
            by_fold = {fold(f): f for f in fields}
            if fold(wanted) not in by_fold:
                raise NoSuchTable(f"{tn} has no column {wanted}", table=str(tn), column=wanted)
            wanted = by_fold[fold(wanted)]
        return ObjectRef(ObjectType.COLUMN, rid, str(tn), wanted, rtype)

    def _schema_fields(self, tr: Transaction, tn: TableName, rtype: ObjectType) -> dict[str, str | None]:
        from ..model.schema import struct_from_proto

        if rtype is ObjectType.TABLE:
            t = self.ms.resolver.table(tr, tn)
            return schema_paths(struct_from_proto(t.store("TableSchema").load(tr, ()).schema))
        v = self.ms.resolver.view(tr, tn)
        return schema_paths(struct_from_proto(v.record.schema))

    def _writer(self, tr: Transaction) -> MetadataWriter:
        return MetadataWriter(tr, self.keys, self.ms.user)

    # -- writes -----------------------------------------------------------------------------
    def set(self, target: "str | Sequence[str] | ObjectRef", properties: Mapping[str, str],
            scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Set USER properties (one transaction); returns the object's metadata after."""
        s = _check_user_scope(scope)
        if not isinstance(properties, Mapping) or not properties:
            raise InvalidArgument("metadata set needs at least one key=value property")
        props = {validate_key(k): validate_value(v, k) for k, v in properties.items()}
        if COMMENT in props:
            return self._comment(target, props, props[COMMENT])
        return self._write(target, lambda w, ref: [
            w.put(ref.id, Entry(ref.column, s, PROPERTY, k, v)) for k, v in props.items()])

    def unset(self, target: "str | Sequence[str] | ObjectRef", keys: Iterable[str],
              scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Remove USER properties (keys not set are ignored)."""
        s = _check_user_scope(scope)
        names = _names_arg(keys, "key")
        if COMMENT in names:
            return self._comment(target, names, None)
        return self._write(target, lambda w, ref: [w.delete(ref.id, ref.column, s, PROPERTY, k) for k in names])

    def _comment(self, target: Any, given: Any, comment: str | None) -> ObjectMetadata:
        """``comment`` is the object's (or column's) own comment in the metastore: it is
        changed there (one metastore operation, whose commit re-indexes it)."""
        if len(given) != 1:
            raise InvalidArgument("'comment' is the object's own comment in the metastore: set or unset it on its "
                                  "own, not together with other keys")
        from ..model.table_changes import SetComment, UpdateColumnComment

        ref = self.ms.run(lambda tr: self.resolve(tr, target))
        ms = self.ms
        if ref.type is ObjectType.CATALOG:
            ms.alter_catalog(ref.name, comment=comment)
        elif ref.type is ObjectType.DATABASE:
            ms.alter_database(ref.name, comment=comment)
        elif ref.type is ObjectType.TABLE:
            ms.alter_table(ref.name, [SetComment(comment)])
        elif ref.type is ObjectType.VIEW:
            ms.alter_view(ref.name, comment=comment)
        elif ref.parent_type is ObjectType.TABLE:
            assert ref.column is not None
            ms.alter_table(ref.name, [UpdateColumnComment(tuple(split_name(ref.column)), comment)])
        else:
            raise InvalidArgument(f"the comments of view columns come from the view's definition "
                                  f"(CREATE OR REPLACE VIEW); {ref.full_name} cannot be commented on its own")
        return self.get(ref)

    def tag(self, target: "str | Sequence[str] | ObjectRef", tags: Iterable[str],
            scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Add USER tags."""
        s = _check_user_scope(scope)
        names = _names_arg(tags, "tag")
        return self._write(target, lambda w, ref: [w.put(ref.id, Entry(ref.column, s, TAG, t, "")) for t in names])

    def untag(self, target: "str | Sequence[str] | ObjectRef", tags: Iterable[str],
              scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Remove USER tags (tags not there are ignored)."""
        s = _check_user_scope(scope)
        names = _names_arg(tags, "tag")
        return self._write(target, lambda w, ref: [w.delete(ref.id, ref.column, s, TAG, t) for t in names])

    def _write(self, target: Any, apply: Any) -> ObjectMetadata:
        def fn(tr: Transaction) -> ObjectMetadata:
            ref = self.resolve(tr, target)
            w = self._writer(tr)
            if w.state(ref.id) is None:  # an object from before metadata existed: start its state
                w.save_state(ref.id, ObjectState(ref.parent_type or ref.type, ref.name))
            apply(w, ref)
            return self._read(tr, ref)

        return self.ms.run(fn)

    # -- reads ------------------------------------------------------------------------------
    def get(self, target: "str | Sequence[str] | ObjectRef") -> ObjectMetadata:
        """USER and SYSTEM metadata of an object (a table's or view's includes its columns')."""
        return self.ms.run(lambda tr: self._read(tr, self.resolve(tr, target)))

    def _read(self, tr: Transaction, ref: ObjectRef) -> ObjectMetadata:
        w = self._writer(tr)
        out = ObjectMetadata(ref, ScopedMetadata(), ScopedMetadata())
        state = w.state(ref.id)
        if state is not None and ref.column is None:
            out.schema_fields = list(state.fields)
        for e in [*w.entries(ref.id), *(state.comment_entries() if state is not None else ())]:
            if e.column == ref.column:
                target = out
            elif ref.column is None:
                if e.column not in out.columns:
                    out.columns[e.column] = ObjectMetadata(
                        ObjectRef(ObjectType.COLUMN, ref.id, ref.name, e.column, ref.type),
                        ScopedMetadata(), ScopedMetadata())
                target = out.columns[e.column]
            else:
                continue
            sm = target.scope(e.scope)
            if e.kind == TAG:
                sm.tags.append(e.key)
            else:
                sm.properties[e.key] = e.value
        return out

    def history(self, target: "str | Sequence[str] | ObjectRef", limit: int | None = None) -> list[MetadataChange]:
        """Metadata changes of the object (and, for a table / view, of its columns), oldest first;
        ``limit``: the most recent ``limit`` of them."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidArgument(f"limit must be a positive integer, not {limit!r}")

        def fn(tr: Transaction) -> list[MetadataChange]:
            ref = self.resolve(tr, target)
            out = []
            rows = tr.get_range(*self.keys.history(ref.id).range(), reverse=True)
            for kv in rows:
                change = MetadataChange.from_json(json.loads(kv.value))
                if ref.column is not None and change.column != ref.column:
                    continue
                out.append(change)
                if limit is not None and len(out) >= limit:
                    break
            out.reverse()
            return out

        return self.ms.run(fn)


def _names_arg(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, str):
        values = [values]
    out = [validate_key(v, what) for v in values]
    if not out:
        raise InvalidArgument(f"at least one {what} is needed")
    return list(dict.fromkeys(out))


__all__ = ["Scope", "ObjectType", "ObjectRef", "ObjectMetadata", "ScopedMetadata", "MetadataChange", "ObjectState",
           "MetadataStore", "MetadataWriter", "MetadataKeys", "Entry", "validate_key", "validate_value", "fold",
           "field_terms", "schema_paths", "MAX_KEY_BYTES", "MAX_VALUE_BYTES", "RESERVED_KEY_PREFIXES",
           "SPARK_PROPERTY_PREFIX", "SPARK_TAG_PREFIX", "SYSTEM_KEYS", "VALUE_ONLY_SYSTEM_KEYS", "PROPERTY", "TAG",
           "INDEX_MERGE_AT", "encode_pending", "decode_pending", "pending_rows", "pending_values", "merge_pending",
           "merge_due"]
