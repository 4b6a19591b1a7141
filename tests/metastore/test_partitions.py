"""Typed partition values: key order = value order; bad values named precisely."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import fdb.tuple as fdbtuple
import pytest
from hypothesis import given, settings, strategies as st

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.model.partitions import NULL_PARTITION, PartitionColumn, PartitionScheme, escape_path_name
from ushas_catalog.model.schema import parse_schema, parse_type


def col(ddl: str, nullable: bool = True) -> PartitionColumn:
    return PartitionColumn("c", parse_type(ddl), nullable)


VALUES = {
    "STRING": st.text(),
    "INT": st.integers(-2**31, 2**31 - 1),
    "BIGINT": st.integers(-2**63, 2**63 - 1),
    "TINYINT": st.integers(-128, 127),
    "BOOLEAN": st.booleans(),
    "DATE": st.dates(),
    "TIMESTAMP_NTZ": st.datetimes(),
    "DECIMAL(12,3)": st.decimals(min_value=Decimal("-999999999.999"), max_value=Decimal("999999999.999"),
                                 places=3, allow_nan=False, allow_infinity=False),
    "DOUBLE": st.floats(allow_nan=False),
    "BINARY": st.binary(),
}


@pytest.mark.parametrize("ddl", sorted(VALUES))
def test_key_order_is_value_order(ddl: str) -> None:
    c = col(ddl)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(VALUES[ddl], min_size=2, max_size=8))
    def check(values: list) -> None:
        keys = [fdbtuple.pack((c.encode(v),)) for v in values]
        by_key = [v for _, v in sorted(zip(keys, values), key=lambda kv: kv[0])]
        by_value = sorted(values, key=lambda v: (v, ) if not isinstance(v, str) else (v.encode("utf-8"),))
        if ddl == "DOUBLE":  # -0.0 == 0.0 as values but not as keys; compare ordering only
            assert [float(v) for v in by_key] == sorted(by_key)
        else:
            assert [c.decode(c.encode(v)) for v in by_key] == [c.decode(c.encode(v)) for v in by_value]
        for v in values:  # text form round trip
            assert c.encode(c.text(c.encode(v))) == c.encode(v)

    check()


def test_null_sorts_first_and_reads_back() -> None:
    c = col("INT")
    assert fdbtuple.pack((c.encode(None),)) < fdbtuple.pack((c.encode(-2**31),))
    assert c.encode(NULL_PARTITION) is None and c.text(None) == NULL_PARTITION


@pytest.mark.parametrize("ddl, value, why", [
    ("INT", "abc", "not a valid INT"),
    ("INT", 2**31, "out of range for INT"),
    ("TINYINT", "200", "out of range"),
    ("INT", True, "expected an integer"),
    ("DATE", "2024-13-01", "not a valid DATE"),
    ("DATE", dt.datetime(2024, 1, 1), "not a timestamp"),
    ("DECIMAL(5,2)", "1.234", "more than 2 decimal places"),
    ("DECIMAL(5,2)", "12345", "does not fit"),
    ("DECIMAL(5,2)", 1.5, "give decimals as strings"),
    ("DOUBLE", "nan", "NaN"),
    ("BOOLEAN", "yes", "expected true or false"),
    ("VARCHAR(3)", "abcd", "longer than 3"),
    ("STRING", 5, "expected a string"),
])
def test_bad_values_name_column_and_value(ddl: str, value: object, why: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        col(ddl).encode(value)
    assert why in err.value.message and "'c'" in err.value.message and repr(value) in err.value.message


def test_not_null_column_refuses_null() -> None:
    with pytest.raises(InvalidArgument, match="NOT NULL"):
        col("INT", nullable=False).encode(None)


def test_scheme_specs_prefixes_paths() -> None:
    schema = parse_schema("x INT, dt DATE, h INT, region STRING")
    scheme = PartitionScheme.of(schema, ["DT", "h", "region"])
    assert scheme.names == ("dt", "h", "region")
    key = scheme.key({"dt": "2024-01-31", "H": 3, "region": "eu/west"})
    assert scheme.spec(key) == {"dt": "2024-01-31", "h": "3", "region": "eu/west"}
    assert scheme.path(key) == "dt=2024-01-31/h=3/region=eu%2Fwest"
    assert scheme.values(key)["dt"] == dt.date(2024, 1, 31)
    assert scheme.selection({"dt": "2024-01-31", "region": "x"}) == ((19753,), {2: "x"})
    with pytest.raises(InvalidArgument, match="lacks partition column"):
        scheme.key({"dt": "2024-01-31"})
    with pytest.raises(InvalidArgument, match="'x' is not a partition column"):
        scheme.key({"x": 1})
    for bad, message in ((["nope"], "not a column"), (["x", "x"], "listed twice")):
        with pytest.raises(InvalidArgument, match=message):
            PartitionScheme.of(schema, bad)
    with pytest.raises(InvalidArgument, match="cannot be a partition column"):
        PartitionScheme.of(parse_schema("a ARRAY<INT>"), ["a"])
    assert escape_path_name("a:b=c%") == "a%3Ab%3Dc%25"


@pytest.mark.parametrize("ddl", ["DOUBLE", "FLOAT"])
def test_negative_zero_is_canonical_zero(ddl: str) -> None:
    c = col(ddl)
    for raw in (-0.0, "-0.0", "-0", " -0.0 "):
        element = c.encode(raw)
        assert fdbtuple.pack((element,)) == fdbtuple.pack((0.0,)), raw  # one key for both zeros
        assert c.text(element) == c.text(c.encode(0.0))
