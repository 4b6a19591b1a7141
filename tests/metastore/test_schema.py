"""Spark types: DDL and JSON parsing, Spark-compatible JSON output, protobuf round trip, widening."""
from __future__ import annotations

import json

import pytest

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.model.schema import (ArrayType, DecimalType, MapType, PrimitiveType, StructField, StructType,
                                  parse_schema, parse_type, struct_from_proto, struct_to_proto, widening_error)

DDL = ("id BIGINT NOT NULL COMMENT 'the id', `a b` ARRAY<STRUCT<x: INT, y: MAP<STRING, DECIMAL(10,2)>>>, "
       "ts TIMESTAMP, tn TIMESTAMP_NTZ, d DATE, c VARCHAR(3), ch CHAR(2), b BINARY, f FLOAT, db DOUBLE, "
       "t TINYINT, s SMALLINT, flag BOOLEAN, i INTERVAL DAY TO SECOND, v VARIANT, "
       "nested STRUCT<inner: STRUCT<deep: ARRAY<MAP<INT, STRING>>>> COMMENT 'it''s nested'")


def test_ddl_json_proto_round_trip() -> None:
    s = parse_schema(DDL.replace("it''s", "it\\'s"))
    assert s.field("id").nullable is False and s.field("id").comment == "the id"
    assert s.field("nested").comment == "it's nested"
    assert parse_schema(s.json()) == s
    assert parse_schema(s.to_ddl()) == s
    assert parse_schema(json.loads(s.json())) == s
    assert struct_from_proto(struct_to_proto(s)) == s


def test_json_is_what_pyspark_reads_and_writes() -> None:
    """pyspark's pure-Python type classes (no JVM) parse our JSON and give it back identically."""
    from pyspark.sql.types import _parse_datatype_json_string

    s = parse_schema(DDL.replace("it''s", "it\\'s").replace(", i INTERVAL DAY TO SECOND", "")
                     .replace(", v VARIANT", ""))
    spark_type = _parse_datatype_json_string(s.json())
    assert json.loads(spark_type.json()) == s.json_value()
    assert parse_schema(spark_type) == s  # anything with .json() is accepted


@pytest.mark.parametrize("text, expected", [
    ("int", PrimitiveType("integer")),
    ("BIGINT", PrimitiveType("long")),
    ("decimal", DecimalType(10, 0)),
    ("NUMERIC(5)", DecimalType(5, 0)),
    ("array<string>", ArrayType(PrimitiveType("string"), True)),
    ("map<string,array<int>>", MapType(PrimitiveType("string"), ArrayType(PrimitiveType("integer")))),
    ("struct<a:int,`b c`:string not null>", StructType((StructField("a", PrimitiveType("integer")),
                                                        StructField("b c", PrimitiveType("string"), False)))),
    ('"long"', PrimitiveType("long")),
    ({"type": "array", "elementType": "double", "containsNull": False}, ArrayType(PrimitiveType("double"), False)),
])
def test_parse_type(text: object, expected: object) -> None:
    assert parse_type(text) == expected


@pytest.mark.parametrize("schema, message", [
    ("a INT, A STRING", "duplicate column name"),
    ("a FOO", "unknown data type 'FOO'"),
    ("a DECIMAL(40,2)", "precision 40"),
    ("a DECIMAL(5,6)", "scale 6"),
    ("a ARRAY<INT", "expected '>'"),
    ("", "empty"),
    ('{"type": "struct", "fields": [{"name": "a"}]}', "needs 'name' and 'type'"),
    ('{"type": "udt", "class": "x"}', "user-defined types"),
    ('"long"', "must be a struct"),
    ("{not json", "not valid JSON"),
    (12, "must be a Spark StructType JSON"),
])
def test_bad_schemas(schema: object, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_schema(schema)


@pytest.mark.parametrize("old, new, ok", [
    ("INT", "BIGINT", True), ("TINYINT", "INT", True), ("SMALLINT", "BIGINT", True),
    ("BIGINT", "INT", False), ("FLOAT", "DOUBLE", True), ("DOUBLE", "FLOAT", False),
    ("INT", "DOUBLE", False), ("INT", "STRING", False), ("STRING", "STRING", True),
    ("DECIMAL(10,2)", "DECIMAL(12,2)", True), ("DECIMAL(10,2)", "DECIMAL(12,4)", True),
    ("DECIMAL(10,2)", "DECIMAL(11,4)", False), ("DECIMAL(10,2)", "DECIMAL(9,2)", False),
    ("ARRAY<INT>", "ARRAY<BIGINT>", False), ("DATE", "TIMESTAMP", False),
])
def test_widening(old: str, new: str, ok: bool) -> None:
    assert (widening_error(parse_type(old), parse_type(new)) is None) is ok
