"""Names: parsing, normalization, validation, and tenant isolation on a real store."""
from __future__ import annotations

import pytest

from ushas_catalog.errors import InvalidName, NoSuchCatalog
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import DatabaseName, TableName, parse_any, quote, split_name

from .conftest import raw_keys


@pytest.mark.parametrize("text, parts", [
    ("a.b.c", ["a", "b", "c"]),
    ("`a.b`.c", ["a.b", "c"]),
    ("`a``b`.`c d`", ["a`b", "c d"]),
    ("`.`.``", [".", ""]),
    ("ü.日本", ["ü", "日本"]),
    ("a", ["a"]),
])
def test_split(text: str, parts: list[str]) -> None:
    assert split_name(text) == parts


@pytest.mark.parametrize("text, message", [
    ("`abc", "unterminated backtick"),
    ("`a`b.c", "after a quoted part"),
    ("a`b`.c", "backtick may only open"),
])
def test_split_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidName, match=message):
        split_name(text)


def test_table_names_normalize_and_round_trip() -> None:
    tn = TableName.parse("Main.SALES.`Or.Ders`")
    assert (tn.catalog, tn.database, tn.name) == ("main", "sales", "or.ders")
    assert str(tn) == "main.sales.`or.ders`"
    assert TableName.parse(str(tn)) == tn
    assert TableName.parse(("Main", "Sales", "x.y")) == TableName("main", "sales", "x.y")
    assert quote("a`b") == "`a``b`"
    assert isinstance(parse_any("a.b"), DatabaseName)
    assert parse_any(tn) is tn and parse_any(DatabaseName("a", "b")) == DatabaseName("a", "b")


@pytest.mark.parametrize("name, message", [
    ("a.b", "must have 3 parts"),
    ("a.b.c.d", "must have 3 parts"),
    ("a..c", "must not be empty"),
    (("a", "b", "c\x00d"), "control character"),
    (("a", "b", "x" * 256), "is 256 UTF-8 bytes"),
    (("a", "b", "é" * 128), "is 256 UTF-8 bytes"),
    (("a", "b", "\ud800"), "not valid Unicode"),
    (("a", "b", 5), "must be a string"),
    (42, "string or a tuple"),
])
def test_invalid_table_names(name: object, message: str) -> None:
    with pytest.raises(InvalidName, match=message):
        TableName.parse(name)  # type: ignore[arg-type]


HOSTILE = ["a.b", "`x`", "'quoted'", '"dq"', "a\xffb", "\u00e9t\u00e9", "日本語", "a b", "a:b*c%2F",
           "\U0001f600", "ä" * 127, "x" * 255, "B"]


def test_tenant_isolation(store_uri: str) -> None:
    """Whatever names project A uses, every key it writes is inside A's range and B sees nothing."""
    a = Metastore.open(store_uri, project="a")
    b = Metastore.open(store_uri, project="a\xff")  # shares A's bytes as a prefix
    ab = Metastore.open(store_uri, project="ab")
    try:
        for i, name in enumerate(HOSTILE):
            cat = f"c{i}"
            a.create_catalog((cat,))
            a.create_database((cat, name))
            a.create_table((cat, name, name), "x INT, p STRING", partition_by=["p"])
            a.add_partitions((cat, name, name), [{"p": name}, {"p": "\x00"}])
        for bad in ["", "a\x00b", "x" * 10_000, "\n"]:
            with pytest.raises(InvalidName):
                a.create_catalog((bad,))
            with pytest.raises(InvalidName):
                Metastore.open(store_uri, project=bad)
        begin, end = a.project_path.range()
        keys = raw_keys(a)
        assert keys and all(begin <= k < end for k in keys)
        for other in (b, ab):
            assert other.list_catalogs() == []
            with pytest.raises(NoSuchCatalog):
                other.get_catalog("c0")
            ob, oe = other.project_path.range()
            assert not any(ob <= k < oe for k in keys)
        # dropping the other projects leaves A whole
        b.drop_project()
        ab.drop_project()
        assert raw_keys(a) == keys
        a.drop_project()
        assert raw_keys(a) == []
    finally:
        a.close(), b.close(), ab.close()
