"""The key space carries its types: every directory of the tree is declared once in ``ushas_catalog.keyspace.layout``
(a Subspace constant with its codec, a RecordSubspace with its message type and primary key), the registries
are derived from the tree, and every subspace name the code builds a path with is a declared one."""
from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from ushas_catalog.keyspace import layout
from ushas_catalog.errors import KeySpaceError
from ushas_catalog.keyspace.tree import Codec, RecordSubspace, Subspace
from ushas_catalog.records import TableSchema
from ushas_catalog.records.store import RecordStore
from ushas_catalog.records.store import RECORD_TYPES

ROOT = Path(__file__).resolve().parents[2]
TREE = layout.Layout().keyspace
DECLARED = {str(v): v for k, v in vars(layout).items() if isinstance(v, Subspace) and k.isupper()}
#: a name passed where the key space takes a directory name: add / path / value_of / find, walk steps
USE = re.compile(r"\b(?:add|path|value_of|find)\(\s*\"([A-Za-z]+)\"")
WALK = re.compile(r"\bwalk\((.*)")
#: the generic key space module and its unit tests (trees of their own)
OWN_TREES = {"python/ushas_catalog/keyspace/tree.py", "tests/metastore/test_keyspace.py"}


def test_every_directory_of_the_tree_is_a_declared_subspace() -> None:
    directories = list(TREE.directories())
    assert len(directories) >= len(DECLARED) > 0  # the walk reaches every declared subspace (next test: by name)
    for _, names, directory in directories:
        assert directory.subspace is not None, f"{'/'.join(names)} is not built from a layout constant"
        assert DECLARED.get(directory.name) is directory.subspace, "/".join(names)


def test_every_declared_subspace_is_in_the_tree() -> None:
    in_tree = {d.name for _, _, d in TREE.directories()}
    assert sorted(set(DECLARED) - in_tree) == []


def test_every_leaf_declares_what_it_holds() -> None:
    """A directory with no child holds values: it names their codec (and record type for protobuf)."""
    leaves, records = [], []
    for _, names, d in TREE.directories():
        if not d.children and d.is_constant:
            leaves.append(d.name)
            assert d.subspace is not None and d.subspace.codec is not None, "/".join(names)
        if d.subspace is not None and d.subspace.codec is Codec.PROTOBUF and d.name != "ChangeEvent":
            records.append(d.name)
            assert isinstance(d.subspace, RecordSubspace), d.name
    assert "TablePartition" in leaves and "TableSchema" in records  # the walk reached both kinds


def test_the_registries_are_derived_from_the_tree() -> None:
    records = {name: s for name, s in DECLARED.items() if isinstance(s, RecordSubspace)}
    assert RECORD_TYPES == {name: (s.record, s.key) for name, s in records.items()}
    assert layout.HEADS["table"] == (layout.TABLE_REFERENCE, layout.TABLE_HISTORY, layout.TABLE_COMMIT)
    assert set(layout.HEADS) == {"catalog", "database", "view", "table", "function", "object"}


def test_a_store_is_typed_by_its_declaration() -> None:
    table = layout.Layout.table(layout.Layout.database(layout.Layout().catalog("p", uuid.uuid4()), uuid.uuid4()), uuid.uuid4())
    store = RecordStore.of(table, layout.TABLE_SCHEMA)
    assert store.message_type is TableSchema and store.path.directory.name == "TableSchema"
    with pytest.raises(KeySpaceError, match="no record type is declared for subspace 'Table'"):
        RecordStore.at(table.parent)  # type: ignore[arg-type]


def _sources() -> list[Path]:
    files = [*sorted((ROOT / "python").rglob("*.py")), *sorted((ROOT / "tests").rglob("*.py")),
             *sorted((ROOT / "bench").rglob("*.py"))]
    return [p for p in files if not p.name.endswith("_pb2.py") and str(p.relative_to(ROOT)) not in OWN_TREES]


def test_every_subspace_name_used_in_the_code_is_declared() -> None:
    undeclared = []
    for path in _sources():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            names = USE.findall(line)
            for steps in WALK.findall(line):
                names.extend(re.findall(r"\"([A-Za-z]+)\"", steps))
            for name in names:
                if name not in DECLARED and _looks_like_a_subspace(name):
                    undeclared.append(f"{path.relative_to(ROOT)}:{n}: {name}")
    assert undeclared == []


def _looks_like_a_subspace(name: str) -> bool:
    """Tree names are CamelCase constants or camelCase ids (``tableId``): not every quoted word in a call is one."""
    return (bool(re.fullmatch(r"[A-Z][a-z]\w*", name)) or name.endswith("Id")
            or name in {"name", "version", "time", "counter", "source"})


def test_the_printed_tree_shows_every_directory_with_what_it_holds() -> None:
    """``ushas keyspace --json``: every directory, the codec and record type of those that hold values."""
    seen: list[dict[str, object]] = []

    def walk(node: dict[str, object]) -> None:
        for child in node.get("children", []):  # type: ignore[union-attr]
            seen.append(child)
            walk(child)

    walk(TREE.to_json())
    assert len(seen) == sum(1 for _ in TREE.directories())
    schema = next(n for n in seen if n["name"] == "TableSchema")
    assert schema["codec"] == "protobuf" and schema["record"] == "ushas.metastore.TableSchema" and schema["key"] == []
    assert next(n for n in seen if n["name"] == "LineageRun")["codec"] == "json"
