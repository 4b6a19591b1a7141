"""Metadata values: scopes, object types, the reserved keys and limits, the value classes
the API returns and the validation of keys and values (see :mod:`ushas_catalog.metadata.store`)."""
from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping


from ..errors import InvalidArgument, ReadOnlyMetadata
from ..model.value_limits import MAX_COMMENT_BYTES


MAX_KEY_BYTES = 256
#: one created object in this many (on average) makes the metastore merge the pending index
#: entries into the index (``Metastore.index_merge_at``: this default; 1 merges after every
#: create, 0 writes index entries straight into the index)
INDEX_MERGE_AT = 256
#: an object's pending entries above this size go straight into the index
PENDING_VALUE_MAX = 64 * 1024
#: pending bytes moved per merge transaction (FoundationDB: at most 10 MB written per transaction)
MERGE_BATCH_BYTES = 2 * 1024 * 1024
MAX_VALUE_BYTES = MAX_COMMENT_BYTES
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
    OBJECT = "OBJECT"  # a versioned object: volume, model, file (catalog.objects)

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
                                       ObjectType.COLUMN, ObjectType.OBJECT)
INDEX_SCOPES: tuple[Scope, ...] = (Scope.USER, Scope.SYSTEM)

#: SYSTEM times: shown, not indexed (unique per commit, they would only cost index writes on
#: every commit; search is for discovery, not time ranges)
UNINDEXED_SYSTEM_KEYS = frozenset({"created_at", "updated_at", "last_write_at"})
#: SYSTEM properties of every object (``format``: of every table), indexed by value only (``v``):
#: a search on their key (``key:created_by``, ``created_by=alice``) reads the value index
#: (:mod:`ushas_catalog.metadata.search`), which saves an index key per property on every commit
VALUE_ONLY_SYSTEM_KEYS = frozenset({"created_by", "updated_by", "format"})
#: SYSTEM properties of a table that count its rows or partitions: a reader under the table's row filter sees
#: neither (``meta show``, ``GET /metadata``, their history, search), as it sees no row count in the table's own
#: statistics and no partition (docs/governance.md, "Metadata follows the data's policy"); file counts stay
ROW_DATA_SYSTEM_KEYS = frozenset({"row_count", "partition_count"})


def counts_rows(scope: Scope, key: str) -> bool:
    """Whether an entry (of ``scope``, ``key``) is one of a table's :data:`ROW_DATA_SYSTEM_KEYS`."""
    return scope is Scope.SYSTEM and key in ROW_DATA_SYSTEM_KEYS

#: SYSTEM keys the catalog maintains (documentation and ``meta show``)
SYSTEM_KEYS: tuple[str, ...] = ("created_by", "created_at", "updated_by", "updated_at", "format", "partition_count",
                                "last_writer_run", "last_write_at", "row_count", "file_count",
                                "object_kind", "location", "current_version")


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


def check_user_scope(scope: Scope | str) -> Scope:
    s = Scope.parse(scope)
    if s is Scope.SYSTEM:
        raise ReadOnlyMetadata("SYSTEM metadata is set only by the catalog and the lineage listener; "
                               "users write USER metadata", scope="SYSTEM")
    return s


def micros_iso(micros: int) -> str:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)).isoformat()


def micros_now() -> int:
    return time.time_ns() // 1000


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
