"""Pending index entries (``MetadataPending``): a created object's index entries as one key,
found by searches at once, merged into the index by count, moved by any later change of the
object, never lost, never twice."""
from __future__ import annotations

import logging
import uuid
from typing import Any, Iterator

import pytest

from ushas_catalog.metadata import store as metadata
from ushas_catalog.errors import Conflict
from ushas_catalog.kv.base import RetryableError
from ushas_catalog.metadata.store import MetadataKeys, decode_pending, encode_pending, merge_pending, pending_rows
from ushas_catalog.metastore import Metastore
from ushas_catalog.metadata.search import check_index
from ushas_catalog.model.table_changes import AddColumn, DeleteColumn, RenameColumn, SetProperty
from ushas_catalog.model.schema import parse_type


def _counts(ms: Metastore) -> tuple[int, int]:
    """(pending objects, index keys)."""
    keys = MetadataKeys(ms.project_path)
    return ms.db.run(lambda tr: (sum(1 for _ in tr.get_range(*keys.pending_range())),
                                 sum(1 for _ in tr.get_range(*keys.index.range()))))


def _ok(ms: Metastore) -> None:
    check = check_index(ms)
    assert check.ok, check.to_json()


def _names(ms: Metastore, query: str, **kw: Any) -> list[str]:
    return sorted(h.name for h in ms.search(query, limit=1000, **kw).hits)


@pytest.fixture
def db(store_uri: str) -> Iterator[Metastore]:
    """A catalog and a database, both pending; no merge but when a test asks (one create in
    10**12 makes one)."""
    ms = Metastore.open(store_uri, project="acme", user="tester")
    ms.index_merge_at = NEVER
    ms.create_catalog("main")
    ms.create_database("main.db")
    yield ms
    ms.close()


NEVER = 10**12

ENCODED: list[list[tuple[bytes, bytes]]] = [
    [],
    [(b"", b"")],
    [(b"\x02f\x00\x02a\x00", b"\x02main.db.t\x00")],
    [(b"k" * 10_000, b"v" * 70_000), (b"\x00\xff", b"\x00")],
]


@pytest.mark.parametrize("pairs", ENCODED)
def test_encode_decode_round_trip(pairs: list[tuple[bytes, bytes]]) -> None:
    assert decode_pending(encode_pending(pairs)) == pairs


def test_pending_rows_filters_by_key_range() -> None:
    values = [encode_pending([(b"a1", b"x"), (b"b1", b"y")]), encode_pending([(b"b2", b"z")]), encode_pending([])]
    assert list(pending_rows(values, b"b", b"b\xff")) == [(b"b1", b"y"), (b"b2", b"z")]
    assert list(pending_rows(values, b"a1", b"a1\xff")) == [(b"a1", b"x")]
    assert list(pending_rows(values, b"c", b"c\xff")) == []


def test_merge_due_for_one_id_in_merge_at() -> None:
    import random

    rng = random.Random(7)
    ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(20_000)]
    for merge_at in (2, 16, 256):
        due = sum(metadata.merge_due(i, merge_at) for i in ids)
        assert abs(due - len(ids) / merge_at) < 5 * (len(ids) / merge_at) ** 0.5 + 1, merge_at
    assert all(metadata.merge_due(i, 1) for i in ids[:100]) and all(metadata.merge_due(i, 0) for i in ids[:100])


def test_created_objects_are_pending_and_found_until_the_merge(db: Metastore) -> None:
    pending, index = _counts(db)
    assert (pending, index) == (2, 0)  # the catalog and the database, nothing in the index yet
    db.create_table("main.db.t1", "customer_id BIGINT, total DOUBLE", properties={"ushas.tag.gold": "1"})
    assert _counts(db)[0] == 3
    assert _names(db, "customer_*") == ["main.db.t1"] and _names(db, "tag:gold") == ["main.db.t1"]
    _ok(db)
    db.index_merge_at = 1
    db.create_table("main.db.t2", "customer_name STRING")  # a merge is due: every pending object merged
    pending, index = _counts(db)
    assert pending == 0 and index > 0
    assert _names(db, "customer_*") == ["main.db.t1", "main.db.t2"]
    _ok(db)
    db.index_merge_at = NEVER
    db.create_table("main.db.t3", "customer_zip STRING")  # pending again, found with the merged ones
    assert _counts(db)[0] == 1
    assert _names(db, "customer_*") == ["main.db.t1", "main.db.t2", "main.db.t3"]
    assert _names(db, "customer_*", types="column") == ["main.db.t1.customer_id", "main.db.t2.customer_name",
                                                          "main.db.t3.customer_zip"]
    _ok(db)


CHANGES: list[tuple[str, Any, list[tuple[str, list[str]]]]] = [
    ("add column", lambda ms: ms.alter_table("main.db.t", [AddColumn(("customer_zip",), parse_type("STRING"))]),
     [("customer_*", ["main.db.t"]), ("field:customer_zip", ["main.db.t"])]),
    ("drop column", lambda ms: ms.alter_table("main.db.t", [DeleteColumn(("customer_id",))]),
     [("customer_*", []), ("field:total", ["main.db.t"])]),
    ("rename column", lambda ms: ms.alter_table("main.db.t", [RenameColumn(("customer_id",), "buyer")]),
     [("customer_*", []), ("buyer", ["main.db.t"])]),
    ("property", lambda ms: ms.alter_table("main.db.t", [SetProperty("ushas.meta.owner", "bob")]),
     [("owner=bob", ["main.db.t"]), ("owner=alice", []), ("tag:gold", ["main.db.t"])]),
    ("tag", lambda ms: ms.metadata.tag("main.db.t", ["pii"]), [("tag:pii", ["main.db.t"]), ("customer_id", ["main.db.t"])]),
    ("rename table", lambda ms: ms.rename_table("main.db.t", "main.db.u"),
     [("customer_*", ["main.db.u"]), ("tag:gold", ["main.db.u"])]),
    ("drop", lambda ms: ms.drop_table("main.db.t"), [("customer_*", []), ("tag:gold", []), ("owner=*", [])]),
    ("drop, undrop", lambda ms: (ms.drop_table("main.db.t"), ms.undrop_table("main.db.t")),
     [("customer_*", ["main.db.t"]), ("owner=alice", ["main.db.t"])]),
    ("purge", lambda ms: ms.drop_table("main.db.t", purge=True), [("customer_*", []), ("gold", [])]),
    ("lineage write", lambda ms: metadata_sync_write(ms), [("customer_*", ["main.db.t"]), ("row_count=7", ["main.db.t"])]),
]


def metadata_sync_write(ms: Metastore) -> None:
    from ushas_catalog.metadata.sync import record_lineage_write

    oid = uuid.UUID(ms.get_table("main.db.t").id)
    ms.db.run(lambda tr: record_lineage_write(tr, ms.project_path, oid, run_id=uuid.uuid4(), at_ms=1, user="x", rows=7))


@pytest.mark.parametrize("change,apply,expected", CHANGES, ids=[c[0] for c in CHANGES])
def test_a_change_of_a_pending_object_moves_its_entries_into_the_index(db: Metastore, change: str, apply: Any,
                                                                       expected: list[tuple[str, list[str]]]) -> None:
    db.create_table("main.db.t", "customer_id BIGINT, total DOUBLE",
                    properties={"ushas.tag.gold": "1", "ushas.meta.owner": "alice"})
    assert _counts(db)[0] == 3
    apply(db)
    assert _counts(db)[0] == 2  # the table's entries left the pending list (catalog, database still there)
    for query, names in expected:
        assert _names(db, query) == names, query
    _ok(db)
    db.merge_index()
    assert _counts(db)[0] == 0
    for query, names in expected:
        assert _names(db, query) == names, query
    _ok(db)


def test_dropping_a_pending_table_clears_its_entries_without_writing_them_into_the_index(
        db: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table dropped before its entries were merged: they are cleared with the pending key, not written
    into the index and cleared again in the same transaction; UNDROP indexes it again."""
    from ushas_catalog.metadata import writer

    db.create_table("main.db.t", "customer_id BIGINT", properties={"ushas.tag.gold": "1"})
    db.create_table("main.db.u", "customer_name STRING")
    merged: list[int] = []
    real = writer.write_index
    monkeypatch.setattr(writer, "write_index", lambda tr, keys, rows: (merged.append(1), real(tr, keys, rows))[1])
    db.drop_table("main.db.t")
    assert merged == []  # nothing of the dropped table went into the index
    assert _counts(db) == (3, 0)  # its pending key is gone (catalog, database, u remain)
    assert _names(db, "customer_*") == ["main.db.u"] and _names(db, "tag:gold") == []
    _ok(db)
    db.alter_table("main.db.u", [SetProperty("ushas.meta.owner", "bob")])  # a change still merges first
    assert merged == [1]
    db.undrop_table("main.db.t")
    assert _names(db, "customer_*") == ["main.db.t", "main.db.u"] and _names(db, "tag:gold") == ["main.db.t"]
    _ok(db)


def test_a_table_too_large_for_one_value_goes_straight_into_the_index(db: Metastore) -> None:
    columns = ", ".join(f"customer_attribute_number_{i:04d} STRING" for i in range(1500))
    db.create_table("main.db.wide", columns)
    pending, index = _counts(db)
    assert pending == 2 and index >= 1500  # catalog and database pending; the table's 1500 fields indexed
    assert len(db.search("customer_attribute_number_1*", types="column", limit=1000).hits) == 500  # 1000-1499
    _ok(db)


def test_merge_at_zero_writes_the_index_directly(db: Metastore) -> None:
    db.merge_index()
    db.index_merge_at = 0
    db.create_table("main.db.t", "customer_id BIGINT")
    pending, index = _counts(db)
    assert pending == 0 and index > 0
    _ok(db)


def test_merge_moves_at_most_a_batch_per_transaction(db: Metastore) -> None:
    for i in range(6):
        db.create_table(f"main.db.t{i}", "customer_id BIGINT, total DOUBLE")
    keys = MetadataKeys(db.project_path)
    first = db.db.run(lambda tr: merge_pending(tr, keys, max_bytes=1))  # one object per transaction
    assert first == (1, True)
    assert db.merge_index() == 7
    assert _counts(db)[0] == 0
    _ok(db)


def test_a_failed_merge_leaves_the_entries_pending_and_the_create_succeeds(db: Metastore, monkeypatch: Any,
                                                                        caplog: Any) -> None:
    def fail(*_: Any, **__: Any) -> Any:
        raise Conflict("merge: too many conflicts")

    monkeypatch.setattr(metadata, "merge_pending", fail)
    db.index_merge_at = 1
    with caplog.at_level(logging.WARNING):
        db.create_table("main.db.t1", "customer_id BIGINT")
        db.create_table("main.db.t2", "customer_name STRING")
    assert "search index merge failed" in caplog.text
    assert _counts(db)[0] == 4
    assert _names(db, "customer_*") == ["main.db.t1", "main.db.t2"]
    _ok(db)
    monkeypatch.undo()
    db.create_table("main.db.t3", "customer_zip STRING")  # the next create merges all of them
    assert _counts(db)[0] == 0
    assert _names(db, "customer_*") == ["main.db.t1", "main.db.t2", "main.db.t3"]
    _ok(db)


def test_a_merge_conflicts_with_a_concurrent_change_of_a_pending_object(db: Metastore) -> None:
    """FoundationDB semantics: the merge reads the pending keys with a read conflict, so a
    transaction that moved one of them first makes the merge retry instead of writing stale
    entries back."""
    db.create_table("main.db.t", "customer_id BIGINT")
    keys = MetadataKeys(db.project_path)
    merge = db.db.create_transaction()
    assert merge_pending(merge, keys)[0] == 3
    db.alter_table("main.db.t", [RenameColumn(("customer_id",), "buyer")])  # commits first
    with pytest.raises(RetryableError):
        merge.commit()
    db.merge_index()
    assert _names(db, "customer_*") == [] and _names(db, "buyer") == ["main.db.t"]
    _ok(db)
