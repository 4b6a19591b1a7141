"""KeySpace: building paths by name, packing, ranges, parsing back, tree validation."""
from __future__ import annotations

import uuid

import fdb.tuple as fdbtuple
import pytest

from ushas_catalog.keyspace.tree import (Directory, KeySpace, KeySpaceError, KeyType, constant, typed)
from ushas_catalog.keyspace.layout import Layout

U1 = uuid.UUID("11111111-1111-1111-1111-111111111111")
U2 = uuid.UUID("22222222-2222-2222-2222-222222222222")


def small() -> KeySpace:
    return KeySpace(
        typed("project", KeyType.STRING,
              constant("Catalog", "C",
                       constant("Names", "n", typed("name", KeyType.STRING)),
                       typed("catalogId", KeyType.UUID,
                             constant("Record", "r"),
                             constant("Commit", "c", typed("version", KeyType.LONG)),
                             Directory("Nothing", KeyType.NULL)))),
        prefix=b"\x15\x07",
    )


def test_path_key_is_prefix_plus_packed_tuple() -> None:
    ks = small()
    p = ks.path("project", "acme").add("Catalog").add("catalogId", U1).add("Record")
    assert p.key() == b"\x15\x07" + fdbtuple.pack(("acme", "C", U1, "r"))
    assert p.to_tuple() == ("acme", "C", U1, "r")
    assert p.names() == ("project", "Catalog", "catalogId", "Record")
    assert str(p) == f"/project:acme/Catalog/catalogId:{U1}/Record"


def test_uuid_elements_are_16_bytes_not_strings() -> None:
    ks = small()
    base = ks.path("project", "a").add("Catalog").key()
    k = ks.path("project", "a").add("Catalog").add("catalogId", U1).key()
    assert len(k) - len(base) == 17  # type code + 16 bytes
    assert U1.bytes in k and str(U1).encode() not in k


def test_walk_by_name_and_errors() -> None:
    ks = small()
    proj = ks.path("project", "acme")
    assert proj.walk("Catalog", ("catalogId", U1), ("Commit",), ("version", 3)).to_tuple() == \
        ("acme", "C", U1, "c", 3)
    with pytest.raises(KeySpaceError, match="no child 'Tables'"):
        proj.add("Tables")
    with pytest.raises(KeySpaceError, match="holds UUID values"):
        proj.add("Catalog").add("catalogId", str(U1))
    with pytest.raises(KeySpaceError, match="needs a STRING value"):
        ks.path("project")
    with pytest.raises(KeySpaceError, match="constant 'C'"):
        proj.add("Catalog", "X")
    with pytest.raises(KeySpaceError, match="holds LONG values"):
        proj.walk("Catalog", ("catalogId", U1), "Commit", ("version", True))
    assert proj.walk("Catalog", ("catalogId", U1), "Nothing").value is None


@pytest.mark.parametrize("elements", [
    ("acme", "C", U1, "r"),
    ("acme", "C", "n", "orders"),
    ("", "C", U2, "c", -5),
    ("x\x00y", "C", U1, None),
])
def test_parse_round_trip(elements: tuple) -> None:
    ks = small()
    resolved = ks.parse(b"\x15\x07" + fdbtuple.pack(elements))
    assert resolved.path is not None and resolved.path.to_tuple() == elements
    assert resolved.remainder == ()


def test_parse_remainder_and_foreign_keys() -> None:
    ks = small()
    key = ks.path("project", "acme").walk("Catalog", ("catalogId", U1), "Record").pack(("extra", 1))
    resolved = ks.parse(key)
    assert resolved.path.names()[-1] == "Record"
    assert resolved.remainder == ("extra", 1)
    assert resolved.value_of("catalogId") == U1
    with pytest.raises(KeySpaceError, match="outside this key space"):
        ks.parse(b"\x99abc")
    with pytest.raises(KeySpaceError, match="not a tuple-encoded key"):
        ks.parse(b"\x15\x07\xfe")


def test_range_excludes_siblings_sharing_a_string_prefix() -> None:
    """project "a" and project "a\\x00b" (NUL escapes as 00 ff): the range of "a" must not cover "a\\x00b"."""
    ks = small()
    begin, end = ks.path("project", "a").range()
    inside = ks.path("project", "a").add("Catalog").key()
    for other in ("a\x00b", "a\x00", "ab", "b", "a\xff"):
        k = ks.path("project", other).add("Catalog").key()
        assert not (begin <= k < end), other
    assert begin <= inside < end


@pytest.mark.parametrize("children, message", [
    ((constant("A", "x"), constant("B", "x")), "same constant"),
    ((constant("A", "x"), typed("b", KeyType.STRING)), "ambiguous"),
    ((typed("a", KeyType.UUID), typed("b", KeyType.UUID)), "ambiguous"),
    ((Directory("a", KeyType.NULL), Directory("b", KeyType.NULL)), "same constant"),
    ((constant("A", "x"), constant("A", "y")), "two children named"),
])
def test_ambiguous_trees_are_rejected_when_built(children: tuple, message: str) -> None:
    with pytest.raises(KeySpaceError, match=message):
        typed("root", KeyType.STRING, *children)


def test_mixed_types_are_fine() -> None:
    d = typed("root", KeyType.STRING, constant("A", "x"), typed("id", KeyType.UUID),
              Directory("five", KeyType.LONG, 5), Directory("six", KeyType.LONG, 6))
    with pytest.raises(KeySpaceError, match="ambiguous"):
        d.with_children(typed("m", KeyType.LONG))
    with pytest.raises(KeySpaceError, match="is not a LONG"):
        Directory("bad", KeyType.LONG, "5")


def test_metastore_layout_parses_every_declared_directory() -> None:
    layout = Layout(prefix=b"u")
    proj = layout.project("p")
    table = Layout.table(Layout.database(layout.catalog(proj, U1), U2), U1)
    for name in ("TableReference", "TableSchema", "TablePartition", "TableCommit"):
        key = table.add(name).key()
        assert layout.keyspace.parse(key).path.names()[-1] == name
    part = table.add("TablePartition").pack(("2024-01-01", 7))
    r = layout.keyspace.parse(part)
    assert r.remainder == ("2024-01-01", 7) and r.value_of("tableId") == U1
    text = layout.render()
    assert 'TableSchema "Ts"' in text and "tableId (UUID)" in text and "project (STRING)" in text
    names = {path[-1] for _, path, _ in layout.keyspace.directories()}
    assert {"DataLineage", "Metadata", "UsageProfile", "ChangeFeed", "ViewRecord"} <= names
