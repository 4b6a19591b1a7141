"""Lineage keyed by metastore table ids: renames keep lineage, drops show as dropped (no Spark)."""
from __future__ import annotations

from lineage.model import Dataset, EdgeSubtype
from lineage.query import LineageQueries
from lineage.store import CapturedRun
from lineage.tables import open_lineage_store
from ushas_catalog.metastore import Metastore

from .pipeline import REPORT, T1, col, edge, run

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "amount", "type": "double", "nullable": True, "metadata": {}}]}


def test_rename_and_drop_through_the_metastore(store_uri: str) -> None:
    ms = Metastore.open(store_uri, project="p")
    ms.create_catalog("ushas")
    ms.create_database("ushas.sales")
    ms.create_table("ushas.sales.orders", SCHEMA)
    orders = Dataset.table("ushas", "sales", "orders")
    store = open_lineage_store(store_uri, "p", {"ushas": "ushas"})
    store.record(CapturedRun(run(1, T1), reads=(orders,), writes=(REPORT,),
                             edges=(edge(col(REPORT, "total"), col(orders, "amount"), EdgeSubtype.AGGREGATION),)))
    q = LineageQueries(store)
    key = q.resolve("ushas.sales.orders").dataset
    assert str(key) == ms.get_table("ushas.sales.orders").id

    ms.rename_table("ushas.sales.orders", "ushas.sales.orders_v2")
    up = q.answer_json(q.upstream("file:/data/report.total"))
    assert [c["name"] for c in up["columns"]] == ["ushas.sales.orders_v2.amount"]
    assert q.resolve("ushas.sales.orders_v2.amount").dataset == key
    assert [r.execution_id for _, r in q.runs("ushas.sales.orders_v2")] == [1]

    ms.drop_table("ushas.sales.orders_v2")
    up = q.answer_json(q.upstream("file:/data/report.total"))
    assert up["datasets"] == [{"name": "ushas.sales.orders_v2", "table_id": str(key), "dropped": True, "depth": 1}]
    # a table that is not in the metastore is keyed by name
    other = Dataset.table("ushas", "sales", "missing")
    store.record(CapturedRun(run(2, T1), reads=(other,), writes=()))
    assert q.resolve("ushas.sales.missing").dataset == "ushas.sales.missing"
    store.close()
    ms.close()


def test_a_stored_write_sets_the_tables_system_metadata(store_uri: str) -> None:
    ms = Metastore.open(store_uri, project="p")
    ms.create_catalog("ushas")
    ms.create_database("ushas.sales")
    ms.create_table("ushas.sales.orders", SCHEMA)
    ms.create_table("ushas.sales.daily", SCHEMA)
    orders, daily = Dataset.table("ushas", "sales", "orders"), Dataset.table("ushas", "sales", "daily")
    store = open_lineage_store(store_uri, "p", {"ushas": "ushas"})
    captured = CapturedRun(run(7, T1), reads=(orders,), writes=(daily,),
                           edges=(edge(col(daily, "amount"), col(orders, "amount"), EdgeSubtype.IDENTITY),))
    store.record(captured)
    written = ms.metadata.get("ushas.sales.daily").system.properties
    assert written["last_writer_run"] == str(captured.run.run_id)
    assert "last_writer_run" not in ms.metadata.get("ushas.sales.orders").system.properties  # only read
    assert [h.name for h in ms.search(f"last_writer_run={captured.run.run_id}", scope="SYSTEM").hits] == \
        ["ushas.sales.daily"]
    store.close()
    ms.close()
