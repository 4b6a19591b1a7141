"""Every mutation appends one event, with before / after, in the mutation's transaction."""
from __future__ import annotations

import pytest

from ushas_catalog.changes.feed import Change
from ushas_catalog.errors import NoSuchTable, TableAlreadyExists
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn, SetProperty

T = "main.sales.orders"


def _new(ms: Metastore, cursor: str | None) -> list[Change]:
    return list(ms.changes(since=cursor))


def _last(ms: Metastore) -> str | None:
    return ms.change_feed.latest_cursor()


def test_catalog_and_database_events(ms: Metastore) -> None:
    events = _new(ms, None)
    assert [(e.change, e.kind, e.name, e.version, e.operation) for e in events] == [
        ("CREATED", "catalog", "main", 1, "CREATE CATALOG"),
        ("CREATED", "database", "main.sales", 1, "CREATE DATABASE")]
    assert events[1].after["location"] == "/wh/sales" and events[1].before == {}
    assert events[0].user == "tester" and events[0].object_id == ms.get_catalog("main").id
    c = _last(ms)
    ms.alter_database("main.sales", set_properties={"team": "a"}, comment="sales")
    ms.alter_catalog("main", set_properties={"k": "v"})
    (db, cat) = _new(ms, c)
    assert (db.change, db.version, db.before["version"]) == ("ALTERED", 2, 1)
    assert "properties" not in db.before and db.after["properties"] == {"team": "a"}
    assert db.after["comment"] == "sales" and db.after["version"] == 2
    assert (cat.change, cat.kind, cat.after["properties"]) == ("ALTERED", "catalog", {"k": "v"})
    c = _last(ms)
    ms.drop_database("main.sales")
    ms.undrop_database("main.sales")
    assert [(e.change, e.version, e.purged) for e in _new(ms, c)] == [("DROPPED", 3, False), ("UNDROPPED", 4, False)]


def test_table_lifecycle_events_with_before_and_after(ms: Metastore) -> None:
    c = _last(ms)
    info = ms.create_table(T, "id INT, amount DOUBLE, day STRING", partition_by=["day"], properties={"a": "1"})
    ms.alter_table(T, [SetProperty("a", "2"), AddColumn(("note",), parse_type("STRING"))])
    ms.rename_table(T, "main.sales.orders2")
    ms.drop_table("main.sales.orders2")
    ms.undrop_table("main.sales.orders2")
    ms.replace_table("main.sales.orders2", "id BIGINT", format="orc")
    ev = _new(ms, c)
    assert [(e.change, e.operation, e.version, e.name) for e in ev] == [
        ("CREATED", "CREATE TABLE", 1, T), ("ALTERED", "ALTER TABLE", 2, T),
        ("RENAMED", "RENAME TABLE", 3, "main.sales.orders2"), ("DROPPED", "DROP TABLE", 4, "main.sales.orders2"),
        ("UNDROPPED", "UNDROP TABLE", 5, "main.sales.orders2"), ("REPLACED", "REPLACE TABLE", 6, "main.sales.orders2")]
    assert {e.object_id for e in ev} == {info.id}
    created, altered, renamed, dropped, undropped, replaced = ev
    assert created.before == {} and created.after["TableStorage"]["format"] == "parquet"
    assert created.after["TableSchema"]["partition_columns"] == ["day"]
    assert created.after["TableProperties"]["properties"] == {"a": "1"}
    # before: the records the change replaced; after: as written
    assert altered.before["TableProperties"]["properties"] == {"a": "1"}
    assert altered.after["TableProperties"]["properties"] == {"a": "2"}
    assert (altered.before["schema_id"], altered.after["schema_id"]) == (1, 2)
    assert [f["name"] for f in altered.after["TableSchema"]["schema"]["fields"]] == ["id", "amount", "note", "day"]
    assert "TableStorage" not in altered.before and "TableStorage" not in altered.after
    assert (renamed.before["name"], renamed.after["name"]) == (T, "main.sales.orders2")
    assert (dropped.before["version"], dropped.after["version"]) == (3, 4) and not dropped.purged
    assert replaced.partitions_cleared and replaced.after["TableStorage"]["format"] == "orc"
    assert replaced.before["TableStorage"]["format"] == "parquet"


def test_partition_events_carry_values_and_locations(ms: Metastore) -> None:
    ms.create_table(T, "id INT, day STRING, h INT", partition_by=["day", "h"])
    c = _last(ms)
    ms.add_partitions(T, [{"day": "2024-01-01", "h": 1}, Partition({"day": "2024-01-02", "h": 2}, location="/x/2")])
    ms.add_partitions(T, [{"day": "2024-01-01", "h": 1}], if_not_exists=True)  # nothing to do: no event
    ms.drop_partitions(T, [{"day": "2024-01-01"}])
    ms.replace_partitions(T, [{"day": "2024-01-02"}], [Partition({"day": "2024-01-02", "h": 2}, location="/y/2"),
                                                       {"day": "2024-01-03", "h": 3}])
    added, dropped, replaced = _new(ms, c)
    assert (added.change, added.version, dropped.change, replaced.change) == (
        "PARTITIONS_ADDED", 2, "PARTITIONS_DROPPED", "PARTITIONS_REPLACED")
    assert [(p.spec, p.location) for p in added.added] == [
        ({"day": "2024-01-01", "h": "1"}, "/wh/sales/orders/day=2024-01-01/h=1"),
        ({"day": "2024-01-02", "h": "2"}, "/x/2")]
    assert added.dropped == [] and added.detail == {"added": 2, "skipped": 0}
    assert [(p.spec, p.location) for p in dropped.dropped] == [
        ({"day": "2024-01-01", "h": "1"}, "/wh/sales/orders/day=2024-01-01/h=1")]
    assert dropped.version == 3 and replaced.version == 4
    assert [(p.spec, p.location) for p in replaced.dropped] == [({"day": "2024-01-02", "h": "2"}, "/x/2")]
    assert sorted((p.spec["day"], p.location) for p in replaced.added) == [
        ("2024-01-02", "/y/2"), ("2024-01-03", "/wh/sales/orders/day=2024-01-03/h=3")]
    # the table's version (the cache's coherence check) moved with every partition change
    assert ms.get_table(T).version == 4


def test_views_and_removals(ms: Metastore) -> None:
    c = _last(ms)
    v = ms.create_view("main.sales.v", "SELECT 1 AS a", "a INT")
    ms.alter_view("main.sales.v", set_properties={"p": "q"})
    ms.create_view("main.sales.v", "SELECT 2 AS a", "a INT", replace=True)
    ms.rename_view("main.sales.v", "main.sales.w")
    ms.drop_view("main.sales.w")
    ms.create_table(T, "id INT")
    ms.drop_table(T, purge=True)
    ms.create_table(T, "id INT")
    ms.drop_table(T)
    ms.purge_table(T)
    ev = _new(ms, c)
    assert [(e.change, e.kind, e.version, e.purged) for e in ev] == [
        ("CREATED", "view", 1, False), ("ALTERED", "view", 2, False), ("REPLACED", "view", 3, False),
        ("RENAMED", "view", 4, False), ("DROPPED", "view", 4, True),
        ("CREATED", "table", 1, False), ("DROPPED", "table", 1, True),
        ("CREATED", "table", 1, False), ("DROPPED", "table", 2, False), ("PURGED", "table", 2, True)]
    assert ev[0].after["sql"] == "SELECT 1 AS a" and ev[2].before["sql"] == "SELECT 1 AS a"
    assert ev[2].after["sql"] == "SELECT 2 AS a"
    assert ev[4].before["sql"] == "SELECT 2 AS a" and ev[4].object_id == v.id
    assert ev[6].object_id == ev[5].object_id != ev[7].object_id == ev[9].object_id


def test_a_failed_mutation_appends_nothing(ms: Metastore) -> None:
    ms.create_table(T, "id INT")
    c = _last(ms)
    with pytest.raises(TableAlreadyExists):
        ms.create_table(T, "id INT")
    with pytest.raises(NoSuchTable):
        ms.drop_table("main.sales.nope")
    assert _new(ms, c) == [] and _last(ms) == c


def test_a_big_event_is_split_and_read_back_whole(ms: Metastore) -> None:
    ms.create_table(T, "id INT, k STRING", partition_by=["k"])
    c = _last(ms)
    parts = [Partition({"k": f"key-{i:05d}"}, location="/" + "l" * 200 + f"/{i}") for i in range(1500)]
    ms.add_partitions(T, parts)
    ms.alter_table(T, [SetProperty("after", "big")])
    raw = ms.run(lambda tr: [kv.key for kv in tr.get_range(ms.change_feed.events_prefix,
                                                              ms.change_feed.events_prefix + b"\xff")])
    assert len(raw) > 5  # the partition event took several keys
    for batch in (1, 2, 500):
        ev = list(ms.changes(since=c, batch=batch))
        assert [e.change for e in ev] == ["PARTITIONS_ADDED", "ALTERED"]
        assert [p.spec["k"] for p in ev[0].added] == [f"key-{i:05d}" for i in range(1500)]
