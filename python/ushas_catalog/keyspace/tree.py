"""A typed key space, the Python counterpart of the FoundationDB Record Layer's
``KeySpace`` / ``KeySpaceDirectory`` / ``KeySpacePath``.

A :class:`Directory` is one level of a key tree: a *typed* directory holds any value of
its :class:`KeyType` (``STRING``, ``UUID``, ``LONG``, ``NULL``, ``BYTES``), a *constant*
directory holds one fixed value (a short code such as ``"Ts"``). A :class:`KeySpace`
is a tree of directories under an optional raw root prefix. Paths are built by walking
the tree by name::

    ks.path("project", "acme").add("Catalog").add("catalogId", uuid).add("CatalogRecord").key()

Keys are ``root_prefix + fdb.tuple.pack(values)``, so the bytes are the same on every
engine, a path's subtree is one contiguous range (:meth:`KeySpacePath.range`) and a raw
key parses back into its named path (:meth:`KeySpace.parse`).

The tree is checked when it is built: sibling names are unique, no two siblings can
produce the same tuple element (two constants with one value, a constant and a typed
directory of the same type, two typed directories of one type), so every key parses
back to exactly one path.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, Iterator, Self, TypeVar

import fdb.tuple as fdbtuple

from ..errors import KeySpaceError


class KeyType(Enum):
    """The tuple element type a directory holds."""

    STRING = "STRING"
    UUID = "UUID"
    LONG = "LONG"
    NULL = "NULL"
    BYTES = "BYTES"

    def accepts(self, value: Any) -> bool:
        if self is KeyType.STRING:
            return isinstance(value, str)
        if self is KeyType.UUID:
            return isinstance(value, uuid.UUID)
        if self is KeyType.LONG:
            return isinstance(value, int) and not isinstance(value, bool)
        if self is KeyType.NULL:
            return value is None
        return isinstance(value, bytes)


class _AnyValue:
    """Marker: a typed (variable) directory, not a constant."""

    def __repr__(self) -> str:
        return "ANY_VALUE"


ANY_VALUE: Any = _AnyValue()


class Codec(str, Enum):
    """How the values under a directory are encoded."""

    PROTOBUF = "protobuf"  # one message type (RecordSubspace.record) through records.RecordStore
    JSON = "json"  # UTF-8 JSON (split over numbered keys where it may pass the value limit)
    TEXT = "text"  # UTF-8 text
    COUNTER = "counter"  # little-endian int64, changed by atomic adds
    EMPTY = "empty"  # the key is the datum, the value is empty
    BYTES = "bytes"  # the owning module's own encoding (packed tuples, versionstamps): see the doc


class Subspace(str):
    """The declared name of a key space directory (``layout.TABLE_SCHEMA``), with the encoding of the values
    stored directly under it. A ``str``, so ``path.add(layout.TABLE_SCHEMA)`` costs what ``add("TableSchema")``
    did, but a misspelt constant fails the type check and the import, and the tree is built from these
    declarations: the name, the codec and the record type are declared once."""

    codec: Codec | None

    def __new__(cls, name: str, *, codec: Codec | None = None) -> Self:
        self = super().__new__(cls, name)
        self.codec = codec
        return self


M = TypeVar("M")


class RecordSubspace(Subspace, Generic[M]):
    """A subspace of records of ONE protobuf message type ``record`` under the primary key ``key`` (element
    names; ``None``: the arity varies per store, e.g. one element per partition column). The record store of
    it (``records.RecordStore.of``) is typed by it, and refuses any other message."""

    record: type[M]
    key: tuple[str, ...] | None
    #: the role of a head subspace's siblings in a versioned object: "head", "history" or "commit"
    role: str | None

    def __new__(cls, name: str, record: type[M], key: tuple[str, ...] | None = (), *,
                role: str | None = None) -> "RecordSubspace[M]":
        self = super().__new__(cls, name, codec=Codec.PROTOBUF)
        self.record = record
        self.key = key
        self.role = role
        return self


@dataclass(frozen=True)
class Directory:
    """One level of the key tree.

    ``Directory("tableId", KeyType.UUID)`` is typed; ``Directory("TableSchema",
    KeyType.STRING, "Ts")`` (or :func:`constant`) is a constant with its short code.
    A ``NULL`` directory is always the constant ``None``.
    """

    name: str
    key_type: KeyType
    value: Any = ANY_VALUE
    children: tuple["Directory", ...] = ()
    doc: str = ""
    #: the declaration this directory was built from (its codec, its record type)
    subspace: Subspace | None = field(default=None, compare=False, repr=False)
    _by_name: dict[str, "Directory"] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise KeySpaceError("a directory needs a name")
        if isinstance(self.name, Subspace):  # the declaration is kept aside; the name is a plain str
            object.__setattr__(self, "subspace", self.subspace or self.name)
            object.__setattr__(self, "name", str(self.name))
        if self.key_type is KeyType.NULL and self.value is ANY_VALUE:
            object.__setattr__(self, "value", None)
        if self.value is not ANY_VALUE and not self.key_type.accepts(self.value):
            raise KeySpaceError(f"directory {self.name!r}: constant {self.value!r} is not a {self.key_type.value}")
        object.__setattr__(self, "children", tuple(self.children))
        by_name: dict[str, Directory] = {}
        for child in self.children:
            if child.name in by_name:
                raise KeySpaceError(f"directory {self.name!r}: two children named {child.name!r}")
            for other in by_name.values():
                _check_siblings(self.name, other, child)
            by_name[child.name] = child
        object.__setattr__(self, "_by_name", by_name)

    @property
    def record(self) -> RecordSubspace[Any] | None:
        """The record declaration of this directory (``None``: it holds no protobuf records)."""
        return self.subspace if isinstance(self.subspace, RecordSubspace) else None

    @property
    def is_constant(self) -> bool:
        return self.value is not ANY_VALUE

    def child(self, name: str) -> "Directory":
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name) or "none"
            raise KeySpaceError(f"directory {self.name!r} has no child {name!r} (children: {known})") from None

    def with_children(self, *children: "Directory") -> "Directory":
        """A copy with ``children`` appended (validated like any tree)."""
        return Directory(self.name, self.key_type, self.value, self.children + tuple(children), self.doc,
                         self.subspace)

    def match(self, element: Any) -> bool:
        """Whether a tuple element belongs to this directory."""
        if not self.key_type.accepts(element):
            return False
        return not self.is_constant or self.value == element

    def label(self) -> str:
        if self.key_type is KeyType.NULL:
            return f"{self.name} (NULL)"
        if self.is_constant:
            return f"{self.name} {self.value!r}".replace("'", '"')
        return f"{self.name} ({self.key_type.value})"


def _check_siblings(parent: str, a: Directory, b: Directory) -> None:
    if a.key_type is not b.key_type:
        return
    if a.is_constant and b.is_constant:
        if a.value == b.value:
            raise KeySpaceError(f"directory {parent!r}: children {a.name!r} and {b.name!r} "
                                f"have the same constant {a.value!r}")
        return
    raise KeySpaceError(f"directory {parent!r}: children {a.name!r} and {b.name!r} are both "
                        f"{a.key_type.value} and at least one is not a constant, so keys would be ambiguous")


def constant(name: str, code: str, *children: Directory, doc: str = "") -> Directory:
    """A STRING constant directory with a short code."""
    return Directory(name, KeyType.STRING, code, tuple(children), doc)


def typed(name: str, key_type: KeyType, *children: Directory, doc: str = "") -> Directory:
    """A typed (variable) directory."""
    return Directory(name, key_type, ANY_VALUE, tuple(children), doc)


class KeySpacePath:
    """A path in a :class:`KeySpace`: a directory with its value, and its parent path.

    Immutable; the packed key is computed once."""

    __slots__ = ("keyspace", "directory", "value", "parent", "_key")

    def __init__(self, keyspace: "KeySpace", directory: Directory, value: Any,
                 parent: "KeySpacePath | None") -> None:
        self.keyspace = keyspace
        self.directory = directory
        self.value = value
        self.parent = parent
        base = parent._key if parent is not None else keyspace.prefix
        self._key: bytes = base + fdbtuple.pack((value,))

    def add(self, name: str, value: Any = ANY_VALUE) -> "KeySpacePath":
        """The child directory ``name`` with ``value`` (omit it for a constant)."""
        return self.keyspace._make(self.directory.child(name), value, self)

    def walk(self, *steps: str | tuple[str, Any]) -> "KeySpacePath":
        """Several :meth:`add` at once: ``walk("Catalog", ("catalogId", cid), "CatalogRecord")``."""
        path = self
        for step in steps:
            path = path.add(*step) if isinstance(step, tuple) else path.add(step)
        return path

    def key(self) -> bytes:
        """The packed key of this path."""
        return self._key

    def range(self) -> tuple[bytes, bytes]:
        """``[begin, end)`` of every key strictly below this path (as ``fdb.tuple.range``).
        It never covers a sibling whose value merely starts with this one."""
        return self._key + b"\x00", self._key + b"\xff"

    def pack(self, suffix: tuple[Any, ...]) -> bytes:
        """The key of this path followed by the tuple elements ``suffix`` (a record's primary key)."""
        return self._key + fdbtuple.pack(suffix) if suffix else self._key

    def to_tuple(self) -> tuple[Any, ...]:
        return tuple(p.value for p in self.lineage())

    def names(self) -> tuple[str, ...]:
        return tuple(p.directory.name for p in self.lineage())

    def lineage(self) -> list["KeySpacePath"]:
        """Root first."""
        out: list[KeySpacePath] = []
        node: KeySpacePath | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        out.reverse()
        return out

    def find(self, name: str) -> "KeySpacePath":
        """The ancestor (or self) of directory ``name``."""
        node: KeySpacePath | None = self
        while node is not None:
            if node.directory.name == name:
                return node
            node = node.parent
        raise KeySpaceError(f"path {self} has no directory {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeySpacePath) and other._key == self._key and other.keyspace is self.keyspace

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        parts = []
        for p in self.lineage():
            d = p.directory
            parts.append(d.name if d.is_constant else f"{d.name}:{p.value}")
        return "/" + "/".join(parts)

    __repr__ = __str__


@dataclass(frozen=True)
class ResolvedKey:
    """A raw key parsed back: the deepest matching path and the tuple elements after it."""

    path: KeySpacePath | None
    remainder: tuple[Any, ...]

    def value_of(self, name: str) -> Any:
        assert self.path is not None
        return self.path.find(name).value

    @property
    def directory_names(self) -> tuple[str, ...]:
        return self.path.names() if self.path is not None else ()


class KeySpace:
    """A key tree with its raw root prefix (``b""`` by default)."""

    def __init__(self, *roots: Directory, prefix: bytes = b"") -> None:
        self.prefix = bytes(prefix)
        # the roots are siblings: validate them as the children of an anonymous root
        self.root = Directory("/", KeyType.NULL, None, roots)

    def path(self, name: str, value: Any = ANY_VALUE) -> KeySpacePath:
        return self._make(self.root.child(name), value, None)

    def _make(self, directory: Directory, value: Any, parent: KeySpacePath | None) -> KeySpacePath:
        if directory.is_constant:
            if value is not ANY_VALUE and value != directory.value:
                raise KeySpaceError(f"directory {directory.name!r} is the constant {directory.value!r}, "
                                    f"not {value!r}")
            value = directory.value
        elif value is ANY_VALUE:
            raise KeySpaceError(f"directory {directory.name!r} needs a {directory.key_type.value} value")
        elif not directory.key_type.accepts(value):
            raise KeySpaceError(f"directory {directory.name!r} holds {directory.key_type.value} values, "
                                f"not {type(value).__name__} {value!r}")
        return KeySpacePath(self, directory, value, parent)

    def range(self) -> tuple[bytes, bytes]:
        """Every key of this key space."""
        if not self.prefix:
            return b"", b"\xff"
        from ..kv.base import strinc

        return self.prefix, strinc(self.prefix)

    def parse(self, key: bytes) -> ResolvedKey:
        """Parse a raw key back into its named path; elements past the declared tree
        (a record's primary key, a split-record chunk index) are the ``remainder``."""
        if not key.startswith(self.prefix):
            raise KeySpaceError(f"key {key!r} is outside this key space (prefix {self.prefix!r})")
        try:
            elements = fdbtuple.unpack(key[len(self.prefix):])
        except Exception as exc:  # noqa: BLE001 - any decoding failure means "not a tuple key"
            raise KeySpaceError(f"key {key!r} is not a tuple-encoded key: {exc}") from None
        return self.resolve(elements)

    def resolve(self, elements: tuple[Any, ...]) -> ResolvedKey:
        directory = self.root
        path: KeySpacePath | None = None
        for i, element in enumerate(elements):
            nxt = next((c for c in directory.children if c.match(element)), None)
            if nxt is None:
                return ResolvedKey(path, tuple(elements[i:]))
            path = KeySpacePath(self, nxt, element, path)
            directory = nxt
        return ResolvedKey(path, ())

    def directories(self) -> Iterator[tuple[int, tuple[str, ...], Directory]]:
        """Every directory, depth first: (depth, names from the root, directory)."""

        def walk(d: Directory, depth: int, names: tuple[str, ...]) -> Iterator[tuple[int, tuple[str, ...], Directory]]:
            for c in d.children:
                yield depth, names + (c.name,), c
                yield from walk(c, depth + 1, names + (c.name,))

        return walk(self.root, 0, ())

    def render(self) -> str:
        """The tree as text, like DESIGN.md's diagram: names, codes and types."""
        lines = [f"/ (root prefix {self.prefix!r})"]

        def walk(d: Directory, indent: str) -> None:
            for i, c in enumerate(d.children):
                last = i == len(d.children) - 1
                line = f"{indent} +- {c.label()}"
                if c.doc:
                    line = f"{line:<64} {c.doc}"
                lines.append(line)
                walk(c, indent + ("    " if last else " |  "))

        walk(self.root, "")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        def node(d: Directory) -> dict[str, Any]:
            out: dict[str, Any] = {"name": d.name, "type": d.key_type.value}
            if d.is_constant and d.key_type is not KeyType.NULL:
                out["code"] = d.value
            if d.doc:
                out["doc"] = d.doc
            if d.subspace is not None and d.subspace.codec is not None:
                out["codec"] = d.subspace.codec.value
            if d.record is not None:
                out["record"] = getattr(getattr(d.record.record, "DESCRIPTOR", None), "full_name", d.record.record.__name__)
                out["key"] = list(d.record.key) if d.record.key is not None else None
            if d.children:
                out["children"] = [node(c) for c in d.children]
            return out

        return {"prefix": self.prefix.hex(), "children": [node(c) for c in self.root.children]}
