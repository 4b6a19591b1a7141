"""Protobuf records and the record store: type checking, keys, splitting of big records."""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ushas_catalog.keyspace.layout import Layout
from ushas_catalog.records import DataType, Partition, StructField, StructType, TableProperties, TableSchema
from ushas_catalog.records.store import RECORD_TYPES, RecordStore, RecordTypeError

from .memkv import MemoryTransaction

LAYOUT = Layout()
TABLE = Layout.table(Layout.database(LAYOUT.catalog("p", uuid.uuid4()), uuid.uuid4()), uuid.uuid4())


def wide_schema(columns: int) -> TableSchema:
    fields = [StructField(name=f"column_number_{i:05d}", type=DataType(primitive="decimal(38,18)" if i % 2 else "string"),
                          nullable=True, metadata_json='{"comment":"a column comment long enough to matter"}')
              for i in range(columns)]
    return TableSchema(schema_id=1, schema=StructType(fields=fields), partition_columns=["column_number_00000"])


def test_every_table_subspace_has_a_record_type() -> None:
    checked = []
    for _, names, directory in LAYOUT.keyspace.directories():
        if names[:2] != ("project", "Catalog") or not directory.is_constant:
            continue
        if names[-2:-1] == ("tableId",) or names[-1].endswith(("Record", "ObjectName", "Commit")):
            checked.append(directory.name)
            assert directory.name in RECORD_TYPES, directory.name
    assert {"CatalogRecord", "DatabaseObjectName", "TableSchema", "TablePartition", "TableCommit"} <= set(checked)


def test_wrong_record_type_is_refused() -> None:
    tr = MemoryTransaction()
    schema_store = RecordStore.at(TABLE.add("TableSchema"))
    with pytest.raises(RecordTypeError, match="holds ushas.metastore.TableSchema records, not "
                                              "ushas.metastore.TableProperties"):
        schema_store.save(tr, (), TableProperties(properties={"a": "b"}))
    with pytest.raises(RecordTypeError):
        schema_store.save(tr, (), {"schema_id": 1})  # type: ignore[arg-type]
    assert tr.keys == []


def test_primary_key_arity_is_checked() -> None:
    store = RecordStore.at(TABLE.add("TableCommit"))
    with pytest.raises(ValueError, match="needs 1 elements"):
        store.key(())
    with pytest.raises(ValueError, match="needs key_names"):
        RecordStore.at(TABLE.add("TablePartition"))


def test_small_record_is_one_key_at_its_path() -> None:
    tr = MemoryTransaction()
    store = RecordStore.at(TABLE.add("TableSchema"))
    rec = wide_schema(3)
    store.save(tr, (), rec)
    assert tr.keys == [TABLE.add("TableSchema").key()]
    assert store.load(tr, ()) == rec


def test_five_thousand_column_schema_is_split_and_read_back_whole() -> None:
    tr = MemoryTransaction()
    store = RecordStore.at(TABLE.add("TableSchemaHistory"))
    rec = wide_schema(5000)
    size = rec.ByteSize()
    assert size > 300_000
    store.save(tr, (7,), rec)
    store.save(tr, (8,), wide_schema(2))
    assert len(tr.keys) == -(-size // 100_000) + 1
    assert all(len(v) <= 100_000 for v in tr.data.values())
    assert store.load(tr, (7,)) == rec
    assert [(r.key, len(r.record.schema.fields)) for r in store.scan(tr)] == [((7,), 5000), ((8,), 2)]
    # overwrite the split record with a small one: no chunk is left behind
    store.save(tr, (7,), wide_schema(1))
    assert len(tr.keys) == 2
    assert len(store.load(tr, (7,)).schema.fields) == 1
    # and back to big, then delete
    store.save(tr, (8,), rec)
    assert store.load(tr, (8,)) == rec
    store.delete(tr, (8,))
    assert store.load(tr, (8,)) is None and len(tr.keys) == 1


def test_partition_store_scan_orders_by_values_and_prefix() -> None:
    tr = MemoryTransaction()
    store = RecordStore.at(TABLE.add("TablePartition"), key_names=("dt", "h"))
    for dt in ("2024-01-02", "2024-01-01"):
        for h in (10, 2, -1):
            store.save(tr, (dt, h), Partition(location=f"/{dt}/{h}"), new=True)
    assert [r.key for r in store.scan(tr)][:3] == [("2024-01-01", -1), ("2024-01-01", 2), ("2024-01-01", 10)]
    begin, end = store.prefix_range(("2024-01-02",))
    assert [r.key[1] for r in store.scan(tr, begin, end)] == [-1, 2, 10]
    assert [r.key for r in store.scan(tr, limit=2, reverse=True)] == [("2024-01-02", 10), ("2024-01-02", 2)]
    assert store.exists(tr, ("2024-01-01", 2)) and not store.exists(tr, ("2024-01-01", 3))


def test_generated_code_is_reproducible(tmp_path: Path) -> None:
    """The checked-in *_pb2.py equal what `python -m ushas_catalog.records.generate` makes."""
    import ushas_catalog.records as records

    here = Path(records.__file__).parent
    before = {p.name: p.read_bytes() for p in here.glob("*_pb2.py*")}
    assert len(before) == 2 * len(list(here.glob("*.proto")))
    subprocess.run([sys.executable, "-m", "ushas_catalog.records.generate"], check=True, capture_output=True)
    after = {p.name: p.read_bytes() for p in here.glob("*_pb2.py*")}
    assert after == before


def test_split_elements_matches_the_tuple_layer() -> None:
    import fdb.tuple as fdbtuple
    from hypothesis import given, settings, strategies as st

    from ushas_catalog.records.store import split_elements

    scalar = st.one_of(st.none(), st.integers(-2**80, 2**80), st.text(), st.binary(), st.booleans(),
                       st.floats(allow_nan=False), st.uuids())
    element = st.recursive(scalar, lambda c: st.lists(c, max_size=3).map(tuple), max_leaves=6)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(element, max_size=5))
    def check(values: list) -> None:
        data = fdbtuple.pack(tuple(values))
        parts = split_elements(data)
        assert b"".join(parts) == data
        assert [fdbtuple.unpack(p)[0] for p in parts] == list(fdbtuple.unpack(data))

    check()
