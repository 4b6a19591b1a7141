"""Spark data types without a JVM: parse Spark's JSON (``StructType.json()``) and DDL
strings (``"id BIGINT NOT NULL, tags ARRAY<STRING>, s STRUCT<a: INT> COMMENT 'x'"``),
print them back, convert to / from the protobuf records, and decide type widening.

The JSON written by :meth:`StructType.json_value` is exactly Spark's, so the JVM shim
can rebuild a ``StructType`` with ``DataType.fromJson``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

from ..errors import InvalidArgument, SparkError, spark_id
from .names import check_column_name
from ..records import schema_pb2 as pb

# --- the model ---------------------------------------------------------------------

#: Spark's JSON names of the types without parameters
PRIMITIVES: frozenset[str] = frozenset({
    "boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary", "date",
    "timestamp", "timestamp_ntz", "void", "variant",
    "interval year", "interval month", "interval year to month",
    "interval day", "interval hour", "interval minute", "interval second",
    "interval day to hour", "interval day to minute", "interval day to second",
    "interval hour to minute", "interval hour to second", "interval minute to second",
    "calendarinterval",
})
_PARAM = re.compile(r"^(char|varchar)\((\d+)\)$")
_COLLATED = re.compile(r"^string collate ([A-Za-z0-9_]+)$")
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
INTEGRAL_ORDER = ("byte", "short", "integer", "long")
MAX_DECIMAL_PRECISION = 38


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A type without nested types, by Spark's JSON name (``"integer"``, ``"char(10)"``...)."""

    name: str

    def json_value(self) -> str:
        return self.name

    def ddl(self) -> str:
        return _DDL_NAMES.get(self.name, self.name.upper())


@dataclass(frozen=True, slots=True)
class DecimalType:
    precision: int = 10
    scale: int = 0

    def json_value(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def ddl(self) -> str:
        return f"DECIMAL({self.precision},{self.scale})"


@dataclass(frozen=True, slots=True)
class ArrayType:
    element_type: "DataType"
    contains_null: bool = True

    def json_value(self) -> dict[str, Any]:
        return {"type": "array", "elementType": self.element_type.json_value(), "containsNull": self.contains_null}

    def ddl(self) -> str:
        return f"ARRAY<{self.element_type.ddl()}>"


@dataclass(frozen=True, slots=True)
class MapType:
    key_type: "DataType"
    value_type: "DataType"
    value_contains_null: bool = True

    def json_value(self) -> dict[str, Any]:
        return {"type": "map", "keyType": self.key_type.json_value(), "valueType": self.value_type.json_value(),
                "valueContainsNull": self.value_contains_null}

    def ddl(self) -> str:
        return f"MAP<{self.key_type.ddl()}, {self.value_type.ddl()}>"


@dataclass(frozen=True)
class StructField:
    name: str
    data_type: "DataType"
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def comment(self) -> str | None:
        c = self.metadata.get("comment")
        return c if isinstance(c, str) else None

    def with_comment(self, comment: str | None) -> "StructField":
        md = {k: v for k, v in self.metadata.items() if k != "comment"}
        if comment is not None:
            md["comment"] = comment
        return StructField(self.name, self.data_type, self.nullable, md)

    def json_value(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.data_type.json_value(), "nullable": self.nullable,
                "metadata": dict(self.metadata)}

    def ddl(self) -> str:
        out = f"{_quote_ident(self.name)} {self.data_type.ddl()}"
        if not self.nullable:
            out += " NOT NULL"
        if self.comment is not None:
            out += " COMMENT " + _sql_string(self.comment)
        return out


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        seen: dict[str, str] = {}
        for f in self.fields:
            low = f.name.lower()
            if low in seen:
                raise InvalidArgument(f"duplicate column name {f.name!r} (also {seen[low]!r}); "
                                      f"column names are case-insensitive",
                                      spark=SparkError("COLUMN_ALREADY_EXISTS", {"columnName": spark_id(f.name)}))
            seen[low] = f.name

    def json_value(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.json_value() for f in self.fields]}

    def json(self) -> str:
        """Spark's ``StructType.json()``: compact JSON."""
        return json.dumps(self.json_value(), separators=(",", ":"), ensure_ascii=False)

    def ddl(self) -> str:
        """``STRUCT<...>`` when nested; use :meth:`to_ddl` for a top-level column list."""
        return "STRUCT<" + ", ".join(f"{_quote_ident(f.name)}: {f.data_type.ddl()}"
                                     + ("" if f.nullable else " NOT NULL")
                                     + ("" if f.comment is None else " COMMENT " + _sql_string(f.comment))
                                     for f in self.fields) + ">"

    def to_ddl(self) -> str:
        return ", ".join(f.ddl() for f in self.fields)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def index(self, name: str) -> int:
        """The position of field ``name``: exact match first, else the unique case-insensitive one."""
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        matches = [i for i, f in enumerate(self.fields) if f.name.lower() == name.lower()]
        if len(matches) == 1:
            return matches[0]
        raise KeyError(name)

    def field(self, name: str) -> StructField:
        return self.fields[self.index(name)]

    def walk(self, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], StructField]]:
        """Every field, nested ones included, with its path."""
        for f in self.fields:
            path = prefix + (f.name,)
            yield path, f
            t = f.data_type
            while isinstance(t, (ArrayType, MapType)):
                t = t.element_type if isinstance(t, ArrayType) else t.value_type
            if isinstance(t, StructType):
                yield from t.walk(path)


DataType = Union[PrimitiveType, DecimalType, ArrayType, MapType, StructType]

_DDL_NAMES = {"byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT", "void": "VOID",
              "calendarinterval": "INTERVAL"}


def _quote_ident(name: str) -> str:
    if name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --- JSON --------------------------------------------------------------------------
def primitive_from_name(name: str) -> PrimitiveType | DecimalType:
    """A Spark JSON type name (``"integer"``, ``"decimal(10,2)"``, ``"char(5)"``) as a type."""
    low = name.strip().lower()
    if low in PRIMITIVES:
        return PrimitiveType(low)
    if low == "decimal":
        return DecimalType(10, 0)
    m = _DECIMAL.match(low)
    if m:
        return decimal_type(int(m.group(1)), int(m.group(2)))
    m = _PARAM.match(low)
    if m:
        if int(m.group(2)) < 1:
            raise InvalidArgument(f"{m.group(1)} length must be positive in {name!r}")
        return PrimitiveType(f"{m.group(1)}({int(m.group(2))})")
    m = _COLLATED.match(name.strip())
    if m:
        return PrimitiveType(f"string collate {m.group(1).upper()}")
    raise InvalidArgument(f"unknown Spark data type {name!r}")


def decimal_type(precision: int, scale: int) -> DecimalType:
    if not 1 <= precision <= MAX_DECIMAL_PRECISION:
        raise InvalidArgument(f"decimal precision {precision} is outside 1..{MAX_DECIMAL_PRECISION}")
    if not 0 <= scale <= precision:
        raise InvalidArgument(f"decimal scale {scale} is outside 0..precision ({precision})")
    return DecimalType(precision, scale)


def type_from_json(value: Any) -> DataType:
    """A type from Spark's JSON value (a name string or a dict)."""
    if isinstance(value, str):
        return primitive_from_name(value)
    if not isinstance(value, dict):
        raise InvalidArgument(f"a Spark data type must be a JSON string or object, not {type(value).__name__}")
    kind = value.get("type")
    try:
        if kind == "struct":
            return StructType(tuple(_field_from_json(f) for f in value["fields"]))
        if kind == "array":
            return ArrayType(type_from_json(value["elementType"]), bool(value.get("containsNull", True)))
        if kind == "map":
            return MapType(type_from_json(value["keyType"]), type_from_json(value["valueType"]),
                           bool(value.get("valueContainsNull", True)))
    except KeyError as exc:
        raise InvalidArgument(f"Spark {kind} type JSON lacks {exc.args[0]!r}") from None
    if kind == "udt":
        raise InvalidArgument("user-defined types (udt) cannot be stored in a catalog table schema; "
                              "store the underlying sqlType instead")
    raise InvalidArgument(f"unknown Spark data type JSON {json.dumps(value)[:200]}")


def _field_from_json(value: Any) -> StructField:
    if not isinstance(value, dict) or "name" not in value or "type" not in value:
        raise InvalidArgument(f"a struct field needs 'name' and 'type': {json.dumps(value)[:200]}")
    name = value["name"]
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"a struct field name must be a non-empty string: {name!r}")
    metadata = value.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidArgument(f"metadata of field {name!r} must be a JSON object")
    return StructField(name, type_from_json(value["type"]), bool(value.get("nullable", True)), dict(metadata))


def parse_schema(schema: Any) -> StructType:
    """A table schema from a :class:`StructType`, Spark's JSON (string or dict), a DDL
    column list, or a pyspark ``StructType`` (anything with ``.json()``)."""
    if isinstance(schema, StructType):
        return schema
    if hasattr(schema, "json") and callable(schema.json) and not isinstance(schema, (str, dict)):
        schema = schema.json()
    if isinstance(schema, dict):
        t = type_from_json(schema)
    elif isinstance(schema, str):
        text = schema.strip()
        if text.startswith(("{", '"')):
            try:
                t = type_from_json(json.loads(text))
            except json.JSONDecodeError as exc:
                raise InvalidArgument(f"schema is not valid JSON: {exc}") from None
        else:
            t = parse_ddl(text)
    else:
        raise InvalidArgument(f"schema must be a Spark StructType JSON, a DDL string or a StructType, "
                              f"not {type(schema).__name__}")
    if not isinstance(t, StructType):
        raise InvalidArgument(f"a table schema must be a struct, not {t.json_value()!r}")
    return t


def check_column_names(struct: StructType, datasource: str = "parquet") -> StructType:
    """``struct`` if each top-level column name can be part of a directory name (partition
    directories are ``column=value``), else :class:`~ushas_catalog.errors.InvalidColumnName`
    (Spark's ``INVALID_COLUMN_NAME_AS_PATH``). Nested field names are not paths: any is kept."""
    for f in struct.fields:
        check_column_name(f.name, datasource)
    return struct


def parse_type(value: Any) -> DataType:
    """A data type from JSON (value or string) or DDL (``"BIGINT"``, ``"ARRAY<INT>"``)."""
    if isinstance(value, (PrimitiveType, DecimalType, ArrayType, MapType, StructType)):
        return value
    if isinstance(value, dict):
        return type_from_json(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{") or text.startswith('"'):
            try:
                return type_from_json(json.loads(text))
            except json.JSONDecodeError as exc:
                raise InvalidArgument(f"data type is not valid JSON: {exc}") from None
        parser = _DdlParser(text)
        t = parser.data_type()
        parser.expect_end()
        return t
    raise InvalidArgument(f"a data type must be a string or JSON object, not {type(value).__name__}")


# --- DDL ---------------------------------------------------------------------------
_TOKEN = re.compile(r"""\s*(?:
      (?P<ident>`(?:[^`]|``)*`)
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<number>-?\d+)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<punct>[<>(),:])
    )""", re.VERBOSE)

_DDL_TYPES = {
    "boolean": "boolean", "tinyint": "byte", "byte": "byte", "smallint": "short", "short": "short",
    "int": "integer", "integer": "integer", "bigint": "long", "long": "long", "float": "float", "real": "float",
    "double": "double", "string": "string", "binary": "binary", "date": "date", "timestamp": "timestamp",
    "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp_ntz", "void": "void", "variant": "variant",
}


class _DdlParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise InvalidArgument(f"cannot parse DDL {text!r} at position {pos}: {text[pos:pos + 20]!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def next(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise InvalidArgument(f"unexpected end of DDL {self.text!r}")
        self.i += 1
        return tok

    def accept(self, value: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[1].lower() == value.lower() and tok[0] in ("word", "punct"):
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        if not self.accept(value):
            tok = self.peek()
            raise InvalidArgument(f"expected {value!r} in DDL {self.text!r}, found "
                                  f"{tok[1] if tok else 'the end'!r}")

    def expect_end(self) -> None:
        tok = self.peek()
        if tok is not None:
            raise InvalidArgument(f"unexpected {tok[1]!r} in DDL {self.text!r}")

    def identifier(self) -> str:
        kind, value = self.next()
        if kind == "ident":
            return value[1:-1].replace("``", "`")
        if kind == "word":
            return value
        raise InvalidArgument(f"expected a column name in DDL {self.text!r}, found {value!r}")

    def number(self) -> int:
        kind, value = self.next()
        if kind != "number":
            raise InvalidArgument(f"expected a number in DDL {self.text!r}, found {value!r}")
        return int(value)

    def columns(self, *, nested: bool) -> StructType:
        fields: list[StructField] = []
        end = ">" if nested else None
        if nested and self.accept(">"):
            return StructType(())
        while True:
            name = self.identifier()
            if nested:
                self.accept(":")
            t = self.data_type()
            nullable = True
            metadata: dict[str, Any] = {}
            while True:
                if self.accept("not"):
                    self.expect("null")
                    nullable = False
                elif self.accept("comment"):
                    kind, value = self.next()
                    if kind != "string":
                        raise InvalidArgument(f"COMMENT needs a string literal in DDL {self.text!r}")
                    metadata["comment"] = _unquote(value)
                else:
                    break
            fields.append(StructField(name, t, nullable, metadata))
            if self.accept(","):
                continue
            if end is not None:
                self.expect(end)
            else:
                self.expect_end()
            return StructType(tuple(fields))

    def data_type(self) -> DataType:
        kind, value = self.next()
        if kind != "word":
            raise InvalidArgument(f"expected a data type in DDL {self.text!r}, found {value!r}")
        low = value.lower()
        if low == "array":
            self.expect("<")
            element = self.data_type()
            self.expect(">")
            return ArrayType(element, True)
        if low == "map":
            self.expect("<")
            k = self.data_type()
            self.expect(",")
            v = self.data_type()
            self.expect(">")
            return MapType(k, v, True)
        if low == "struct":
            self.expect("<")
            return self.columns(nested=True)
        if low in ("decimal", "dec", "numeric"):
            if self.accept("("):
                p = self.number()
                s = self.number() if self.accept(",") else 0
                self.expect(")")
                return decimal_type(p, s)
            return DecimalType(10, 0)
        if low in ("char", "varchar", "character"):
            self.expect("(")
            n = self.number()
            self.expect(")")
            return primitive_from_name(f"{'char' if low == 'character' else low}({n})")
        if low == "interval":
            words = []
            while True:
                tok = self.peek()
                if tok is None or tok[0] != "word" or tok[1].lower() not in (
                        "year", "month", "day", "hour", "minute", "second", "to"):
                    break
                words.append(self.next()[1].lower())
            return primitive_from_name("interval " + " ".join(words) if words else "calendarinterval")
        if low == "string" and self.accept("collate"):
            return primitive_from_name(f"string collate {self.identifier()}")
        if low in _DDL_TYPES:
            return PrimitiveType(_DDL_TYPES[low])
        raise InvalidArgument(f"unknown data type {value!r} in DDL {self.text!r}")


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def parse_ddl(text: str) -> StructType:
    """A column list in Spark DDL: ``"a INT NOT NULL COMMENT 'x', b ARRAY<STRING>"``;
    ``STRUCT<...>`` is accepted too."""
    if not text.strip():
        raise InvalidArgument("schema DDL is empty")
    parser = _DdlParser(text)
    tok = parser.peek()
    if tok is not None and tok[1].lower() == "struct" and len(parser.tokens) > 1 and parser.tokens[1][1] == "<":
        t = parser.data_type()
        parser.expect_end()
        assert isinstance(t, StructType)
        return t
    return parser.columns(nested=False)


# --- protobuf ------------------------------------------------------------------------
def type_to_proto(t: DataType) -> pb.DataType:
    if isinstance(t, PrimitiveType):
        return pb.DataType(primitive=t.name)
    if isinstance(t, DecimalType):
        return pb.DataType(decimal=pb.DecimalType(precision=t.precision, scale=t.scale))
    if isinstance(t, ArrayType):
        return pb.DataType(array=pb.ArrayType(element_type=type_to_proto(t.element_type),
                                              contains_null=t.contains_null))
    if isinstance(t, MapType):
        return pb.DataType(map=pb.MapType(key_type=type_to_proto(t.key_type),
                                          value_type=type_to_proto(t.value_type),
                                          value_contains_null=t.value_contains_null))
    return pb.DataType(struct=struct_to_proto(t))


def struct_to_proto(s: StructType) -> pb.StructType:
    return pb.StructType(fields=[
        pb.StructField(name=f.name, type=type_to_proto(f.data_type), nullable=f.nullable,
                       metadata_json=json.dumps(f.metadata, separators=(",", ":"), sort_keys=True,
                                                ensure_ascii=False) if f.metadata else "")
        for f in s.fields])


def type_from_proto(p: pb.DataType) -> DataType:
    kind = p.WhichOneof("kind")
    if kind == "primitive":
        return PrimitiveType(p.primitive)
    if kind == "decimal":
        return DecimalType(p.decimal.precision, p.decimal.scale)
    if kind == "array":
        return ArrayType(type_from_proto(p.array.element_type), p.array.contains_null)
    if kind == "map":
        return MapType(type_from_proto(p.map.key_type), type_from_proto(p.map.value_type),
                       p.map.value_contains_null)
    if kind == "struct":
        return struct_from_proto(p.struct)
    raise ValueError("empty DataType record")


def struct_from_proto(p: pb.StructType) -> StructType:
    return StructType(tuple(
        StructField(f.name, type_from_proto(f.type), f.nullable, json.loads(f.metadata_json) if f.metadata_json else {})
        for f in p.fields))


# --- widening ------------------------------------------------------------------------
def widening_error(old: DataType, new: DataType) -> str | None:
    """``None`` if a column of type ``old`` may become ``new`` (same type, integral
    widening, float -> double, decimal precision up without losing integer digits or
    scale), else the reason it may not."""
    if old == new:
        return None
    if isinstance(old, PrimitiveType) and isinstance(new, PrimitiveType):
        if old.name in INTEGRAL_ORDER and new.name in INTEGRAL_ORDER:
            if INTEGRAL_ORDER.index(new.name) > INTEGRAL_ORDER.index(old.name):
                return None
            return f"{new.ddl()} is narrower than {old.ddl()}"
        if old.name == "float" and new.name == "double":
            return None
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        if new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale:
            return None
        return (f"{new.ddl()} cannot hold every {old.ddl()} value (it needs scale >= {old.scale} "
                f"and at least {old.precision - old.scale} integer digits)")
    if isinstance(old, (StructType, ArrayType, MapType)) or isinstance(new, (StructType, ArrayType, MapType)):
        return "nested types change through add / drop / rename of their fields, not by a type update"
    return f"{old.ddl()} cannot be widened to {new.ddl()} (allowed: tinyint < smallint < int < bigint, " \
           f"float -> double, decimal precision up)"
