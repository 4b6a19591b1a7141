"""Operations bigger than one transaction (ushas_catalog.bulk), at small sizes: the chunk size and
the threshold are lowered so that a few hundred partitions take many chunks."""
from __future__ import annotations

import uuid

import pytest

from ushas_catalog import bulk, bulk_objects
from ushas_catalog.errors import NoSuchPartition, OperationInProgress, PartitionAlreadyExists
from ushas_catalog.metastore import Metastore

T = "main.sales.t"


@pytest.fixture
def small(sales: Metastore, monkeypatch: pytest.MonkeyPatch) -> Metastore:
    for module in (bulk, bulk_objects):  # each reads the limits it uses (ushas_catalog.bulk_work's values)
        monkeypatch.setattr(module, "BULK_AT", 50)
        monkeypatch.setattr(module, "CHUNK_ITEMS", 17)
    monkeypatch.setattr(bulk_objects, "BULK_OBJECTS_AT", 5)
    sales.create_table(T, "id long, dt string, h int", partition_by=["dt", "h"], location="/wh/t")
    return sales


def _specs(lo: int, hi: int) -> list[dict]:
    return [{"dt": f"{i:05d}", "h": i % 3} for i in range(lo, hi)]


def _count(ms: Metastore) -> int:
    return len(ms.list_partition_keys(T)[1])


def test_add_and_drop_in_chunks_make_one_version_each(small: Metastore) -> None:
    r = small.add_partitions(T, _specs(0, 300))
    assert (r.version, r.added) == (2, 300)
    assert _count(small) == 300 == len(list(small.list_partitions(T))) == len(list(small.scan_partitions(T)[1]))
    r = small.drop_partitions(T, _specs(0, 120), release_data=True)
    assert (r.version, r.dropped) == (3, 120)
    r = small.drop_partitions(T, [{"h": 1}])  # a partial spec matching more than the threshold
    assert r.version == 4 and r.dropped == len([s for s in _specs(120, 300) if s["h"] == 1])
    assert _count(small) == 180 - r.dropped
    assert [h.operation for h in small.history(T)] == ["DROP PARTITIONS", "DROP PARTITIONS", "ADD PARTITIONS",
                                                       "CREATE TABLE"]
    assert bulk.pending_work(small) == []
    assert len(small.garbage(T)) > 0  # the released partitions' data is kept until purge
    state = small.metadata.get(T).system.properties
    assert state["partition_count"] == str(_count(small))


def test_a_failed_add_leaves_nothing(small: Metastore) -> None:
    small.add_partitions(T, [{"dt": "00250", "h": 1}])
    with pytest.raises(PartitionAlreadyExists):
        small.add_partitions(T, _specs(0, 300))  # 00250/h=1 exists: found in a late chunk
    assert _count(small) == 1 and small.get_table(T).version == 2
    assert bulk.pending_work(small) == []
    r = small.add_partitions(T, _specs(0, 300), if_not_exists=True)
    assert (r.added, r.skipped) == (299, 1)


def test_a_failed_drop_leaves_everything(small: Metastore) -> None:
    small.add_partitions(T, _specs(0, 100))
    with pytest.raises(NoSuchPartition):
        small.drop_partitions(T, _specs(0, 100) + [{"dt": "nope", "h": 0}])
    assert _count(small) == 100 and small.get_table(T).version == 2
    assert bulk.pending_work(small) == []


def test_staged_partitions_are_invisible_and_block_writers(small: Metastore) -> None:
    """An operation stopped after its staging chunks (its process "died"): readers see nothing of
    it; a writer meeting it finishes it (rolls it back) when its owner is dead."""
    small.add_partitions(T, [{"dt": "x", "h": 0}])
    work, t = bulk._begin(small, small_name(), "ADD PARTITIONS", None, 60, {})
    bulk._stage_adds(small, work, t, [small._partition_input(s) for s in _specs(0, 60)], False)
    assert _count(small) == 1 and len(list(small.list_partitions(T))) == 1
    with pytest.raises(NoSuchPartition):
        small.get_partition(T, {"dt": "00001", "h": 1})
    [w] = bulk.pending_work(small)
    assert (w.kind, w.state, w.done, w.running) == ("ADD PARTITIONS", "STAGING", 60, True)
    with pytest.raises(OperationInProgress):  # its owner (this process) is running it
        small.add_partitions(T, [{"dt": "y", "h": 0}])
    # the owner dies: the next write rolls the staging back and goes on
    small.db.run(lambda tr: _set_owner(tr, small, uuid.UUID(w.operation_id), "elsewhere:1:dead", 0))
    assert small.add_partitions(T, [{"dt": "y", "h": 0}]).version == 3
    assert _count(small) == 2 and bulk.pending_work(small) == []


def test_a_listing_keeps_the_version_it_started_at(small: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing spanning several transactions started before an add is published shows none of it."""
    import ushas_catalog.catalog.partitions as m

    monkeypatch.setattr(m, "PARTITION_BATCH", 10)
    small.add_partitions(T, [{"dt": "a", "h": 0}, {"dt": "zz", "h": 0}])
    listing = small.list_partitions(T)
    first = next(listing)
    small.add_partitions(T, _specs(0, 100))  # published while the listing is open
    rest = list(listing)
    assert [p.values["dt"] for p in [first, *rest]] == ["a", "zz"]
    assert _count(small) == 102


def test_finish_pending_rolls_forward_a_published_drop(small: Metastore) -> None:
    small.add_partitions(T, _specs(0, 100))
    work, t = bulk._begin(small, small_name(), "DROP PARTITIONS", None, 0, {"release_data": False})
    dropped, _ = bulk._mark_drops(small, work, t, _specs(0, 100), False)
    bulk._publish(small, work, t, "DROP PARTITIONS", {"dropped": dropped}, m_result(t.version, dropped))
    assert _count(small) == 0 and small.get_table(T).version == 3  # visible: gone, keys still there
    small.db.run(lambda tr: _set_owner(tr, small, work.op, "elsewhere:1:dead", 0))
    [w] = bulk.pending_work(small)
    assert (w.state, w.running) == ("PUBLISHED", False)
    assert [x.operation_id for x in bulk.finish_pending(small)] == [w.operation_id]
    assert bulk.pending_work(small) == []
    prefix = small.db.run(lambda tr: small.resolver.table(tr, small_name()).path.add("TablePartition").key())
    assert small.db.run(lambda tr: list(tr.get_range(prefix, prefix + b"\xff"))) == []


def test_big_database_drop_undrop_and_purge(small: Metastore, tmp_path) -> None:
    for i in range(12):
        small.create_table(f"main.sales.x{i}", "id long")
    assert small.search("id", limit=50).total == 13
    small.drop_database("main.sales", cascade=True)
    assert small.search("id", limit=50).total == 0 and bulk.pending_work(small) == []
    small.create_database("main.sales")  # the name is free
    small.drop_database("main.sales")
    paths: list[str] = []
    assert small.purge_database("main.sales", data_paths=paths) == 2
    assert "/wh/sales/x0" in paths and bulk.pending_work(small) == []
    assert not {s.subspace for s in small.stats()} & {"TableReference", "TableSchema", "DatabaseRecord"}


def small_name():
    from ushas_catalog.model.names import TableName

    return TableName.parse(T)


def m_result(version: int, dropped: int):
    from ushas_catalog.model.objects import MutationResult

    return MutationResult(version, dropped=dropped)


def _set_owner(tr, ms: Metastore, op: uuid.UUID, owner: str, heartbeat: int) -> None:
    store = bulk.work_store(ms.project_path)
    r = store.load(tr, (op,))
    r.owner, r.heartbeat_micros = owner, heartbeat
    store.save(tr, (op,), r)


@pytest.mark.parametrize("spec", [None, {"h": 1}], ids=["full specs", "partial spec"])
def test_a_bulk_drop_removes_partitions_grown_by_appends(small: Metastore, spec: dict | None) -> None:
    """A partition an append grew is stored over several keys (one chunk per append, however small): a
    bulk drop marks and removes all of them, never leaving the appended chunks behind as a partition."""
    from ushas_catalog.model.data_files import DataFile
    from ushas_catalog.model.partitions import Partition

    specs = _specs(0, 180)
    small.add_partitions(T, [Partition(s, data_files=[]) for s in specs])  # files recorded (none yet)
    for n in range(2):
        grown = [Partition(s, files=1, bytes=1, data_files=[DataFile(f"file:/wh/t/{s['dt']}-{n}", 1, 1)])
                 for s in specs[:150]]
        small.replace_partitions(T, [], grown, operation="APPEND", append=True)
    assert len(small.get_partition(T, specs[0]).data_files or []) == 2
    r = small.drop_partitions(T, specs if spec is None else [spec])
    left = specs if spec is None else [s for s in specs if s["h"] == 1]
    assert r.dropped == len(left)
    assert _count(small) == 180 - len(left) == len(list(small.list_partitions(T)))
    assert bulk.pending_work(small) == []
