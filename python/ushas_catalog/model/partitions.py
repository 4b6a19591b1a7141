"""Typed partition values whose packed key order is their value order.

Each partition column's type decides how its values become ``fdb.tuple`` elements:

=========================== ================================ ==================================
type                        element                          text form (specs, paths)
=========================== ================================ ==================================
string, char(n), varchar(n) str                              as is
tinyint .. bigint           int (range-checked)              decimal digits
boolean                     bool                             ``true`` / ``false``
date                        int: days since 1970-01-01       ``2024-01-31``
timestamp, timestamp_ntz    int: microseconds since epoch    ``2024-01-31 10:00:00[.ffffff]``
decimal(p, s)               int: the unscaled value          ``12.50``
float, double               float (NaN refused)              ``repr``
binary                      bytes                            hex
NULL (any nullable column)  None (sorts first, like Spark)   ``__HIVE_DEFAULT_PARTITION__``
=========================== ================================ ==================================

so a range scan of a table's partitions returns them ordered by value, and a spec of the
leading partition columns is one contiguous key range.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Mapping

import fdb.tuple as fdbtuple

from .data_files import DataFile
from ..errors import InvalidArgument
from .schema import DataType, DecimalType, PrimitiveType, StructType

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: the longest string partition value, in UTF-8 bytes: it is part of the partition's key (FoundationDB: 10 kB)
MAX_VALUE_BYTES = 4_000
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_INT_RANGES = {"byte": 8, "short": 16, "integer": 32, "long": 64}


@dataclass
class Partition:
    """One partition: its values (column -> typed Python value, or the text form on
    input), location and stats when known. The input and the output of the partition
    operations."""

    values: dict[str, Any]
    location: str | None = None
    files: int | None = None
    bytes: int | None = None
    rows: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    created_at: dt.datetime | None = None
    #: the values in their text form (``{"dt": "2024-01-01", "h": "3"}``), set on output
    spec: dict[str, str] = field(default_factory=dict)
    #: the exact data files (a list, possibly empty) or None: not recorded, list the location
    data_files: list[DataFile] | None = None
    #: user tags (``set_partition_tags``), on output
    tags: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec, "values": {k: _json_value(v) for k, v in self.values.items()},
                "location": self.location, "files": self.files, "bytes": self.bytes, "rows": self.rows,
                "properties": self.properties,
                "created_at": self.created_at.isoformat() if self.created_at else None,
                "data_files": None if self.data_files is None else [f.to_json() for f in self.data_files],
                "tags": self.tags}


def _json_value(v: Any) -> Any:
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, float) and math.isinf(v):
        return str(v)
    return v


@dataclass(frozen=True, slots=True)
class PartitionColumn:
    name: str
    data_type: DataType
    nullable: bool = True
    _kind: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_kind", self._compute_kind())

    @property
    def kind(self) -> str:
        return self._kind

    def _compute_kind(self) -> str:
        t = self.data_type
        if isinstance(t, DecimalType):
            return "decimal"
        if not isinstance(t, PrimitiveType):
            return "complex"
        name = t.name
        if name.startswith(("char(", "varchar(", "string")):
            return "string"
        return name

    # --- value -> tuple element --------------------------------------------------------
    def encode(self, raw: Any) -> Any:
        """The tuple element of a value (a typed Python value or its text form)."""
        if raw is None or (isinstance(raw, str) and raw == NULL_PARTITION):
            if not self.nullable:
                raise self._bad(raw, "the column is NOT NULL")
            return None
        kind = self.kind
        try:
            if kind == "string":
                if not isinstance(raw, str):
                    raise self._bad(raw, "expected a string")
                size = len(raw.encode("utf-8", "surrogatepass"))
                if size > MAX_VALUE_BYTES:
                    raise InvalidArgument(f"the value {raw[:40]!r}... of partition column {self.name!r} is {size:,} "
                                          f"UTF-8 bytes; the maximum is {MAX_VALUE_BYTES:,} (it is part of the "
                                          f"partition's key)", column=self.name, value=repr(raw)[:200])
                t = self.data_type
                assert isinstance(t, PrimitiveType)
                if t.name.startswith(("char(", "varchar(")):
                    limit = int(t.name[t.name.index("(") + 1:-1])
                    if len(raw) > limit:
                        raise self._bad(raw, f"longer than {limit} characters")
                return raw
            if kind in _INT_RANGES:
                if isinstance(raw, bool):
                    raise self._bad(raw, "expected an integer")
                value = int(raw.strip()) if isinstance(raw, str) else raw
                if not isinstance(value, int):
                    raise self._bad(raw, "expected an integer")
                bits = _INT_RANGES[kind]
                if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
                    raise self._bad(raw, f"out of range for {self.data_type.ddl()}")
                return value
            if kind == "boolean":
                if isinstance(raw, bool):
                    return raw
                if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
                    return raw.strip().lower() == "true"
                raise self._bad(raw, "expected true or false")
            if kind == "date":
                if isinstance(raw, dt.datetime):
                    raise self._bad(raw, "expected a date, not a timestamp")
                d = raw if isinstance(raw, dt.date) else dt.date.fromisoformat(str(raw).strip())
                return (d - EPOCH_DATE).days
            if kind in ("timestamp", "timestamp_ntz"):
                if isinstance(raw, dt.datetime):
                    ts = raw
                elif isinstance(raw, dt.date):
                    ts = dt.datetime(raw.year, raw.month, raw.day)
                else:
                    ts = dt.datetime.fromisoformat(str(raw).strip())
                if ts.tzinfo is None:
                    ts = ts.replace(tzinfo=dt.timezone.utc)
                delta = ts - EPOCH
                return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
            if kind == "decimal":
                t = self.data_type
                assert isinstance(t, DecimalType)
                if isinstance(raw, (bool, float)):
                    raise self._bad(raw, "give decimals as strings, ints or Decimal")
                number = raw if isinstance(raw, Decimal) else Decimal(str(raw).strip())
                if not number.is_finite():
                    raise self._bad(raw, "not a finite number")
                scaled = number.scaleb(t.scale)
                if scaled != scaled.to_integral_value():
                    raise self._bad(raw, f"more than {t.scale} decimal places")
                unscaled = int(scaled)
                if abs(unscaled) >= 10 ** t.precision:
                    raise self._bad(raw, f"does not fit {t.ddl()}")
                return unscaled
            if kind in ("float", "double"):
                if isinstance(raw, bool):
                    raise self._bad(raw, "expected a number")
                f = float(raw.strip()) if isinstance(raw, str) else float(raw)
                if math.isnan(f):
                    raise self._bad(raw, "NaN cannot be a partition value")
                return 0.0 if f == 0.0 else f  # canonical: -0.0 is 0.0 (one key, one partition)
            if kind == "binary":
                if isinstance(raw, (bytes, bytearray)):
                    return bytes(raw)
                return bytes.fromhex(str(raw))
        except (ValueError, TypeError, InvalidOperation, OverflowError) as exc:
            if isinstance(exc, InvalidArgument):
                raise
            raise self._bad(raw, f"not a valid {self.data_type.ddl()}") from None
        raise InvalidArgument(f"partition column {self.name!r} has type {self.data_type.ddl()}, "
                              f"which cannot be a partition column type")

    def _bad(self, raw: Any, why: str) -> InvalidArgument:
        return InvalidArgument(f"invalid value {raw!r} for partition column {self.name!r} "
                               f"({self.data_type.ddl()}): {why}", column=self.name, value=repr(raw)[:200])

    # --- tuple element -> value ----------------------------------------------------------
    def decode(self, element: Any) -> Any:
        if element is None:
            return None
        kind = self.kind
        if kind == "date":
            return EPOCH_DATE + dt.timedelta(days=element)
        if kind in ("timestamp", "timestamp_ntz"):
            ts = EPOCH + dt.timedelta(microseconds=element)
            return ts if kind == "timestamp" else ts.replace(tzinfo=None)
        if kind == "decimal":
            t = self.data_type
            assert isinstance(t, DecimalType)
            return Decimal(element).scaleb(-t.scale)
        return element

    def json_of(self) -> "Callable[[Any], Any] | None":
        """The function from a stored element to its JSON value (what :meth:`Partition.to_json`
        gives: ISO dates, decimal text, hex bytes), or None where the element already is that
        value (strings, integers, booleans): listings convert only the columns that need it."""
        if self.kind in ("string", "boolean") or self.kind in _INT_RANGES:
            return None
        decode = self.decode
        return lambda element: None if element is None else _json_value(decode(element))

    def text(self, element: Any) -> str:
        """The text form of a stored element (``"2024-01-31"``, ``"12.50"``)."""
        if element is None:
            return NULL_PARTITION
        kind = self.kind
        if kind == "string":
            return element
        if kind == "boolean":
            return "true" if element else "false"
        if kind == "date":
            return (EPOCH_DATE + dt.timedelta(days=element)).isoformat()
        if kind in ("timestamp", "timestamp_ntz"):
            ts = EPOCH + dt.timedelta(microseconds=element)
            return ts.replace(tzinfo=None).isoformat(sep=" ")
        if kind == "decimal":
            t = self.data_type
            assert isinstance(t, DecimalType)
            return str(Decimal(element).scaleb(-t.scale))
        if kind == "binary":
            return element.hex()
        return str(element)


PARTITION_KINDS = frozenset({"string", "byte", "short", "integer", "long", "boolean", "date", "timestamp",
                             "timestamp_ntz", "decimal", "float", "double", "binary"})


@dataclass(frozen=True)
class PartitionScheme:
    """The partition columns of a table, in order, and the spec <-> key conversions."""

    columns: tuple[PartitionColumn, ...]

    @classmethod
    def of(cls, schema: StructType, partition_by: Iterable[str]) -> "PartitionScheme":
        """Partition columns resolved against the schema (case-insensitively when unique);
        each must be a top-level column of a partitionable type, at most once."""
        cols: list[PartitionColumn] = []
        for name in partition_by:
            if not isinstance(name, str) or not name:
                raise InvalidArgument(f"partition column names must be non-empty strings, not {name!r}")
            try:
                f = schema.field(name)
            except KeyError:
                raise InvalidArgument(f"partition column {name!r} is not a column of the schema "
                                      f"({', '.join(schema.names)})", column=name) from None
            col = PartitionColumn(f.name, f.data_type, f.nullable)
            if isinstance(f.data_type, StructType) or not isinstance(f.data_type, (PrimitiveType, DecimalType)) \
                    or col.kind not in PARTITION_KINDS:
                raise InvalidArgument(f"column {f.name!r} of type {f.data_type.ddl()} cannot be a partition column",
                                      column=f.name)
            if any(c.name == col.name for c in cols):
                raise InvalidArgument(f"partition column {f.name!r} is listed twice", column=f.name)
            cols.append(col)
        return cls(tuple(cols))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def __bool__(self) -> bool:
        return bool(self.columns)

    def _resolve(self, spec: Mapping[str, Any]) -> dict[int, Any]:
        if not isinstance(spec, Mapping):
            raise InvalidArgument(f"a partition spec must be a mapping of column -> value, not {type(spec).__name__}")
        out: dict[int, Any] = {}
        for key, value in spec.items():
            index = self._index(key)
            if index in out:
                raise InvalidArgument(f"partition column {self.columns[index].name!r} appears twice in {dict(spec)!r}")
            out[index] = value
        return out

    def _index(self, name: str) -> int:
        for i, c in enumerate(self.columns):
            if c.name == name:
                return i
        matches = [i for i, c in enumerate(self.columns) if isinstance(name, str) and c.name.lower() == name.lower()]
        if len(matches) == 1:
            return matches[0]
        raise InvalidArgument(f"{name!r} is not a partition column (partition columns: "
                              f"{', '.join(self.names) or 'none'})", column=str(name))

    def key(self, spec: Mapping[str, Any]) -> tuple[Any, ...]:
        """The full key of a spec naming every partition column."""
        resolved = self._resolve(spec)
        missing = [c.name for i, c in enumerate(self.columns) if i not in resolved]
        if missing:
            raise InvalidArgument(f"partition spec {dict(spec)!r} lacks partition column(s) {', '.join(missing)}")
        key = tuple(c.encode(resolved[i]) for i, c in enumerate(self.columns))
        if sum(len(e) for e in key if isinstance(e, (str, bytes))) > 400:  # long values: check the size
            import fdb.tuple as fdbtuple

            from .value_limits import check_partition_key
            check_partition_key(fdbtuple.pack(key), dict(spec))
        return key

    def selection(self, spec: Mapping[str, Any] | None) -> tuple[tuple[Any, ...], dict[int, Any]]:
        """A partial spec as (encoded leading prefix, {position: element} of the other
        named columns, to filter on)."""
        if not spec:
            return (), {}
        resolved = {i: self.columns[i].encode(v) for i, v in self._resolve(spec).items()}
        prefix: list[Any] = []
        while len(prefix) in resolved:
            prefix.append(resolved.pop(len(prefix)))
        return tuple(prefix), resolved

    def json_row(self) -> "Callable[[tuple[Any, ...]], list[Any]]":
        """The function from a stored key to its row of JSON values (ISO dates, decimal text...),
        as listings answer them; converting only the columns that need it."""
        converters = [c.json_of() for c in self.columns]
        if not any(converters):
            return list
        return lambda key: [v if f is None else f(v) for f, v in zip(converters, key)]

    def values(self, key: tuple[Any, ...]) -> dict[str, Any]:
        return {c.name: c.decode(e) for c, e in zip(self.columns, key)}

    def spec(self, key: tuple[Any, ...]) -> dict[str, str]:
        return {c.name: c.text(e) for c, e in zip(self.columns, key)}

    def path(self, key: tuple[Any, ...]) -> str:
        """The Hive-style relative directory: ``dt=2024-01-01/h=3`` (escaped like Spark)."""
        return "/".join(f"{escape_path_name(c.name)}={escape_path_name(c.text(e))}"
                        for c, e in zip(self.columns, key))


class KeyDecoder:
    """Decodes partition keys given as raw tuple element slices (see
    :func:`ushas_catalog.records.store.split_elements`), decoding each distinct element
    of each column once: a listing decodes ``dt=2024-01-01`` once for all its hours."""

    __slots__ = ("columns", "names", "memo")

    def __init__(self, scheme: PartitionScheme) -> None:
        self.columns = scheme.columns
        self.names = scheme.names
        self.memo: list[dict[bytes, tuple[Any, Any, str]]] = [{} for _ in scheme.columns]

    def decode(self, elements: list[bytes]) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, str]]:
        """(key elements, values by column, text form by column)."""
        key = []
        values: dict[str, Any] = {}
        spec: dict[str, str] = {}
        for name, column, memo, raw in zip(self.names, self.columns, self.memo, elements):
            hit = memo.get(raw)
            if hit is None:
                element = fdbtuple.unpack(raw)[0]
                hit = memo[raw] = (element, column.decode(element), column.text(element))
            key.append(hit[0])
            values[name] = hit[1]
            spec[name] = hit[2]
        return tuple(key), values, spec


_PATH_ESCAPES = str.maketrans({ch: f"%{ord(ch):02X}" for ch in '"#%\'*/:=?\\\x7f{[]^' + "".join(map(chr, range(0x20)))})


def escape_path_name(text: str) -> str:
    """Spark's ``ExternalCatalogUtils.escapePathName``: %XX for path specials and controls."""
    return text.translate(_PATH_ESCAPES)


__all__ = ["Partition", "PartitionColumn", "PartitionScheme", "KeyDecoder", "NULL_PARTITION", "escape_path_name"]
