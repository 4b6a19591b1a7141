"""A view of the catalog is labelled a view in lineage (the dataset index, the REST datasets and the table
graph), not an "external table" (issue 36)."""
from __future__ import annotations

from lineage.graphs import table_graph
from lineage.model import Dataset, EdgeSubtype
from lineage.query import LineageQueries
from lineage.store import CapturedRun, LineageStore
from lineage.tables import MetastoreTableIds
from ushas_catalog.metastore import Metastore

from .pipeline import T1, col, edge, run

T = Dataset.table("c", "db", "t")
V = Dataset.table("c", "db", "v")
HIVE = Dataset.table("spark_catalog", "default", "h")


def test_views_are_labelled_views(store_uri: str) -> None:
    ms = Metastore.open(store_uri, project="p")
    try:
        ms.create_catalog("c")
        ms.create_database("c.db")
        ms.create_table("c.db.t", "id INT")
        ms.create_view(("c", "db", "v"), "SELECT id FROM c.db.t", "id INT")
        store = LineageStore(ms.db, "p", layout=ms.layout, tables=MetastoreTableIds(ms))
        store.record(CapturedRun(run(1, T1), reads=(V, HIVE), writes=(T,),
                                 edges=(edge(col(T, "id"), col(V, "id"), EdgeSubtype.IDENTITY),
                                        edge(col(T, "id"), col(HIVE, "id"), EdgeSubtype.IDENTITY))))
        kinds = {d.name: d.kind for d in store.captured_datasets()}
        assert kinds == {"c.db.t": "table", "c.db.v": "view", "spark_catalog.default.h": "external table"}
        graph = table_graph(LineageQueries(store), "c.db.t", "upstream", 3)
        assert {n["id"]: n["kind"] for n in graph["nodes"]} == kinds
    finally:
        ms.close()
