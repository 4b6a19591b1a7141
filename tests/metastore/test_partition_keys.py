"""The Spark partition path's fast metastore reads: keys-only listing (SHOW PARTITIONS) and the
batched existence check of ADD PARTITION, against the record-reading paths they stand in for."""
from __future__ import annotations

import pytest

from ushas_catalog.errors import PartitionAlreadyExists
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.spark.ops import partition_rows

T = "main.sales.events"


def make(ms: Metastore) -> None:
    ms.create_table(T, "id INT, dt DATE, kind STRING, amount DECIMAL(6,2)", partition_by=["dt", "kind", "amount"])


def test_keys_match_the_full_listing(sales: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    import ushas_catalog.catalog.partitions as m

    monkeypatch.setattr(m, "PARTITION_BATCH", 7)  # several batches, one transaction each
    make(sales)
    specs = [{"dt": f"2024-01-{d:02d}", "kind": k, "amount": a}
             for d in (3, 1, 2) for k in ("b", "a", None, "a\x00b") for a in ("1.50", None)]
    big = Partition({"dt": "2024-01-02", "kind": "split", "amount": "9.99"},
                    properties={f"x{i}": "y" * 90_000 for i in range(3)})  # 270 kB: over one value
    sales.add_partitions(T, [*specs, big])  # the big one is split over several keys
    scheme, keys = sales.list_partition_keys(T)
    full = list(sales.list_partitions(T))
    assert len(keys) == len(full) == len(specs) + 1
    assert partition_rows(scheme, keys) == [[p.to_json()["values"][c] for c in scheme.names] for p in full]
    assert partition_rows(scheme, keys)[0] == ["2024-01-01", None, None]  # NULL sorts first; ISO dates
    # a partial spec: leading columns narrow the range, others filter
    _, some = sales.list_partition_keys(T, prefix={"dt": "2024-01-02", "amount": "1.50"})
    assert [list(r) for r in partition_rows(scheme, some)] == [
        ["2024-01-02", k, "1.50"] for k in (None, "a", "a\x00b", "b")]


def test_many_adds_check_existence_in_one_read(sales: Metastore) -> None:
    sales.create_table("main.sales.p", "a INT, k INT", partition_by=["k"])
    sales.add_partitions("main.sales.p", [{"k": i} for i in range(0, 200, 2)])  # evens
    with pytest.raises(PartitionAlreadyExists, match=r"\(k=100\)"):
        sales.add_partitions("main.sales.p", [{"k": i} for i in range(101, 181, 2)] + [{"k": 100}])
    result = sales.add_partitions("main.sales.p", [{"k": i} for i in range(0, 300)], if_not_exists=True)
    assert (result.added, result.skipped) == (200, 100)
    assert [k for (k,) in sales.list_partition_keys("main.sales.p")[1]] == list(range(300))


def test_zero_and_negative_zero_make_one_partition(sales: Metastore) -> None:
    sales.create_table("main.sales.z", "a INT, x DOUBLE", partition_by=["x"])
    sales.add_partitions("main.sales.z", [{"x": "0.0"}])
    with pytest.raises(PartitionAlreadyExists):
        sales.add_partitions("main.sales.z", [{"x": "-0.0"}])
    assert sales.add_partitions("main.sales.z", [{"x": -0.0}], if_not_exists=True).skipped == 1
    assert [p.spec for p in sales.list_partitions("main.sales.z")] == [{"x": "0.0"}]
