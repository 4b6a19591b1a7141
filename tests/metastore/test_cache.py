"""ushas_catalog.spark.cache without Spark: settings, the LRU/TTL map, and the coherent lookups the shim's
load_table / load_relation / list_partitions use (one transaction reading the name chain and the head
record when nothing changed; the decoded answer reused when only partitions or data changed)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ushas_catalog.spark.cache import (BridgeCache, CacheSettings, Known, LruTtlCache, list_partition_values, lookup,
                                 parse_duration)
from ushas_catalog.errors import InvalidArgument, NoSuchTable
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import TableName
from ushas_catalog.spark.tables import SparkCtx
from ushas_catalog.model.table_changes import changes_from_json

CTX = SparkCtx("sqlite:///unused", "acme", "main", "main", "file:/wh")
T = TableName("main", "sales", "orders")


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


# ---- settings & the map ---------------------------------------------------------------------------------
def test_settings_defaults_and_parsing() -> None:
    assert CacheSettings.of(None) == CacheSettings(True, 600.0, 1000, True)
    s = CacheSettings.of({"cache.enabled": "false", "cache.TTL": "5min", "cache.size": "7", "check": "off"})
    assert s == CacheSettings(False, 300.0, 7, False)
    assert s.to_json() == {"enabled": False, "ttl_ms": 300_000, "size": 7, "check": False}
    assert [parse_duration(x) for x in ("30", "500ms", "2h", "1.5s")] == [30.0, 0.5, 7200.0, 1.5]


@pytest.mark.parametrize("options, message", [
    ({"cache.ttl": "soon"}, "not a duration"), ({"cache.size": "0"}, "at least 1"),
    ({"cache.size": "many"}, "number of entries"), ({"cache.enabled": "maybe"}, "true or false"),
    ({"cache.sise": "3"}, "unknown cache option"),
])
def test_settings_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        CacheSettings.of(options)


def test_lru_evicts_least_recently_used() -> None:
    c: LruTtlCache[int] = LruTtlCache(2, 0)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # a is now the most recent
    c.put("c", 3)
    assert c.get("b") is None and c.get("a") == 1 and c.get("c") == 3
    assert c.stats.evictions == 1 and len(c) == 2
    c.resize(1, 0)
    assert len(c) == 1 and c.get("c") == 3


def test_ttl_expires_idle_entries_only() -> None:
    clock = Clock()
    c: LruTtlCache[str] = LruTtlCache(10, 5.0, clock)
    c.put("k", "v")
    c.put("idle", "w")
    for _ in range(3):  # used every 4 s: stays
        clock.now += 4
        assert c.get("k") == "v"
    assert c.get("idle") is None  # unused for 12 s: gone
    assert c.stats.expirations == 1 and len(c) == 1


def test_disabled_bridge_cache_keeps_nothing() -> None:
    b = BridgeCache(CacheSettings(enabled=False))
    b.put("k", 1, {"x": 1})
    assert b.get("k", 1) is None and len(b.entries) == 0
    b.configure(CacheSettings())
    b.put("k", 1, {"x": 1})
    assert b.get("k", 1) == {"x": 1} and b.get("k", 2) is None
    b.configure(CacheSettings(enabled=False))
    assert len(b.entries) == 0


# ---- coherent lookups on a real store -------------------------------------------------------------------
@dataclass
class Reads:
    transactions: int = 0
    ranges: list[bytes] = field(default_factory=list)


def count_reads(ms: Metastore) -> Reads:
    """Counts transactions and range reads of ``ms`` from now on."""
    reads = Reads()
    make = ms.db.create_transaction

    class Counting:
        def __init__(self, tr: Any) -> None:
            self._tr = tr

        def get_range(self, begin: bytes, end: bytes, **kw: Any) -> Any:
            reads.ranges.append(begin)
            return self._tr.get_range(begin, end, **kw)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._tr, name)

    def create() -> Any:
        reads.transactions += 1
        return Counting(make())

    ms.db.create_transaction = create  # type: ignore[method-assign]
    return reads


@pytest.fixture
def orders(sales: Metastore) -> Metastore:
    sales.create_table(T, schema="id INT, v STRING, dt STRING", partition_by=["dt"], format="parquet")
    sales.add_partitions(T, [{"dt": "a"}])
    return sales


def test_unchanged_is_one_transaction_of_four_point_reads(orders: Metastore) -> None:
    cache = BridgeCache()
    first = lookup(orders, cache, CTX, T, None, views=False)
    assert first["kind"] == "table" and first["version"] == 2 and first["table"]["partition_by"] == ["dt"]
    reads = count_reads(orders)
    again = lookup(orders, cache, CTX, T, Known(first["id"], first["version"]), views=True)
    assert again == {"unchanged": True}
    assert reads.transactions == 1 and len(reads.ranges) == 4  # catalog, database and relation names, head


def test_partition_and_data_changes_reuse_the_decoded_answer(orders: Metastore,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache = BridgeCache()
    first = lookup(orders, cache, CTX, T, None, views=False)
    known = Known(first["id"], first["version"])
    orders.add_partitions(T, [{"dt": "b"}])
    orders.touch_table(T, "WRITE")
    monkeypatch.setattr("ushas_catalog.spark.cache.table_info", lambda *a: pytest.fail("decoded again"))
    changed = lookup(orders, cache, CTX, T, known, views=False)
    assert changed["version"] == 4 and changed["table"]["version"] == 4
    assert {k: v for k, v in changed["table"].items() if k != "version"} == \
        {k: v for k, v in first["table"].items() if k != "version"}
    monkeypatch.undo()
    orders.alter_table(T, changes_from_json([{"type": "AddColumn", "fieldNames": ["note"], "dataType": "string"}]))
    altered = lookup(orders, cache, CTX, T, Known(changed["id"], changed["version"]), views=False)
    assert altered["version"] == 5 and '"note"' in altered["table"]["schema"]


def test_drop_and_recreate_is_a_new_id(orders: Metastore) -> None:
    cache = BridgeCache()
    first = lookup(orders, cache, CTX, T, None, views=False)
    orders.drop_table(T)
    with pytest.raises(NoSuchTable):
        lookup(orders, cache, CTX, T, Known(first["id"], first["version"]), views=False)
    orders.create_table(T, schema="id INT, v STRING, dt STRING", partition_by=["dt"], format="parquet")
    # the new table may even reach the old version number: the id tells them apart
    orders.add_partitions(T, [{"dt": "a"}])
    again = lookup(orders, cache, CTX, T, Known(first["id"], first["version"]), views=False)
    assert again["id"] != first["id"] and again["version"] == first["version"]


def test_views_and_kind_changes(sales: Metastore) -> None:
    cache = BridgeCache()
    sales.create_view(T, sql="SELECT 1 AS one", schema="one INT", query_column_names=["one"])
    v = lookup(sales, cache, CTX, T, None, views=True)
    assert v["kind"] == "view" and v["view"]["sql"] == "SELECT 1 AS one"
    assert lookup(sales, cache, CTX, T, Known(v["id"], v["version"]), views=True) == {"unchanged": True}
    with pytest.raises(NoSuchTable, match="is a view"):
        lookup(sales, cache, CTX, T, Known(v["id"], v["version"]), views=False)
    sales.alter_view(T, sql="SELECT 2 AS one", schema="one INT")
    v2 = lookup(sales, cache, CTX, T, Known(v["id"], v["version"]), views=True)
    assert v2["view"]["sql"] == "SELECT 2 AS one" and v2["version"] > v["version"]


def test_partition_listing_cached_by_version(orders: Metastore) -> None:
    cache = BridgeCache()
    assert list_partition_values(orders, cache, T, None) == [{"dt": "a"}]
    reads = count_reads(orders)
    assert list_partition_values(orders, cache, T, None) == [{"dt": "a"}]
    assert reads.transactions == 1  # the version check only
    orders.add_partitions(T, [{"dt": "b"}])
    assert list_partition_values(orders, cache, T, None) == [{"dt": "a"}, {"dt": "b"}]
    assert list_partition_values(orders, cache, T, {"dt": "b"}) == [{"dt": "b"}]
    off = BridgeCache(CacheSettings(enabled=False))
    assert list_partition_values(orders, off, T, None) == [{"dt": "a"}, {"dt": "b"}]
    assert len(off.entries) == 0


def test_touch_table_is_a_commit(orders: Metastore) -> None:
    v = orders.touch_table(T, "WRITE", {"files": 1})
    assert v == orders.get_table(T).version == 3
    assert orders.history("main.sales.orders")[0].operation == "WRITE"


def test_a_long_gap_decodes_again(orders: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    import ushas_catalog.spark.cache as cache_module

    monkeypatch.setattr(cache_module, "MAX_HISTORY_GAP", 2)
    cache = BridgeCache()
    first = lookup(orders, cache, CTX, T, None, views=False)
    for _ in range(3):
        orders.touch_table(T, "WRITE")
    decoded: list[int] = []
    real = cache_module.table_info
    monkeypatch.setattr("ushas_catalog.spark.cache.table_info", lambda *a: decoded.append(1) or real(*a))
    again = lookup(orders, cache, CTX, T, Known(first["id"], first["version"]), views=False)
    assert again["version"] == first["version"] + 3 and decoded == [1]
