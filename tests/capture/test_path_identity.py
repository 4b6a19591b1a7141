"""One identity per dataset, without Spark: paths in any spelling, paths under a table's location
(and partition directories) keyed by the table, paths captured before the table existed linked
at query time (lineage.identity, lineage.links)."""
from __future__ import annotations

import pytest

from lineage.identity import TableLocation, TableLocations, canonical_uri, looks_like_path
from lineage.model import Dataset, EdgeSubtype
from lineage.query import LineageQueries
from lineage.store import Access, CapturedRun
from lineage.tables import open_lineage_store
from ushas_catalog.metastore import Metastore

from .pipeline import T1, col, edge, run

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]}


@pytest.mark.parametrize("spelling", ["/tmp/x/users", "file:/tmp/x/users", "file:///tmp/x/users",
                                      "file:///tmp/x/users/", "/tmp/x/users/", "file://localhost/tmp/x/users"])
def test_one_spelling_per_location(spelling: str) -> None:
    assert looks_like_path(spelling)
    assert canonical_uri(spelling) == "file:/tmp/x/users"


def test_not_paths() -> None:
    assert not looks_like_path("ushas.sales.orders") and not looks_like_path("db.t.col")
    assert canonical_uri("s3a://bucket/a/") == "s3a://bucket/a"


def test_nearest_table_and_partition() -> None:
    import uuid

    a, b = uuid.uuid4(), uuid.uuid4()
    locs = TableLocations.of([TableLocation(a, "ushas", "s", "orders", "file:/w/s.db/orders"),
                              TableLocation(b, "ushas", "s", "inner", "file:/w/s.db/orders/sub")])
    found = locs.find("file:///w/s.db/orders/dt=2024-01-01/part-0.parquet")
    assert found is not None and found.table.table_id == a
    assert found.partition == (("dt", "2024-01-01"),)
    assert locs.find("/w/s.db/orders/sub/x").table.table_id == b  # type: ignore[union-attr]
    assert locs.find("file:/w/s.db/orders_other") is None and locs.find("file:/w") is None
    assert locs.find("file:/w/s.db/orders,file:/w/s.db/orders/dt=1").table.table_id == a  # type: ignore[union-attr]


def test_paths_are_the_table_in_the_store_and_in_queries(store_uri: str, tmp_path) -> None:
    ms = Metastore.open(store_uri, project="p")
    ms.create_catalog("ushas")
    ms.create_database("ushas.sales")
    loc = tmp_path / "orders"
    ms.create_table("ushas.sales.orders", SCHEMA, location=str(loc))
    store = open_lineage_store(store_uri, "p", {"ushas": "ushas"})
    q = LineageQueries(store)
    table_id = q.resolve_dataset("ushas.sales.orders")
    # a partition directory read by path, written to a report: keyed by the table
    part = Dataset.path(f"file://{loc}/dt=2024-01-01", "parquet")
    report = Dataset.path("file:/data/report", "parquet")
    store.record(CapturedRun(run(1, T1), reads=(part,), writes=(report,),
                             edges=(edge(col(report, "id"), col(part, "id"), EdgeSubtype.IDENTITY),)))
    up = q.answer_json(q.upstream("/data/report/.id"))
    assert [c["name"] for c in up["columns"]] == ["ushas.sales.orders.id"]
    for spelling in (str(loc), f"file:{loc}", f"file://{loc}/", f"{loc}/dt=2024-01-01"):
        assert q.resolve_dataset(spelling) == table_id, spelling
    assert [acc for acc, _ in q.runs(f"file:///{str(loc).lstrip('/')}")] == [Access.READ]
    detail = q.run(run(1, T1).run_id)
    assert detail["inputs"] == [{"name": "ushas.sales.orders", "table_id": str(table_id), "dropped": False,
                                 "path": f"file:{loc}/dt=2024-01-01", "partition": {"dt": "2024-01-01"}}]
    (ref,) = [r for acc, r in store.run_datasets(run(1, T1).run_id) if acc is Access.READ]
    assert ref.key == table_id and ref.dataset.name == "ushas.sales.orders"
    assert ref.dataset.uri == f"file:{loc}/dt=2024-01-01"  # the path it was read by: a symlink

    # a path written before a table existed there: a path dataset, linked once the table exists
    early = tmp_path / "early"
    staged = Dataset.path(f"file:{early}", "parquet")
    store.record(CapturedRun(run(2, T1), reads=(Dataset.table("ushas", "sales", "orders"),), writes=(staged,),
                             edges=(edge(col(staged, "id"), col(Dataset.table("ushas", "sales", "orders"), "id"),
                                         EdgeSubtype.TRANSFORMATION),)))
    assert isinstance(q.resolve_dataset(str(early)), str)
    ms.create_table("ushas.sales.early", SCHEMA, location=str(early))
    early_id = q.resolve_dataset("ushas.sales.early")
    assert q.resolve_dataset(f"{early}/") == early_id
    assert [c["name"] for c in q.answer_json(q.upstream("ushas.sales.early.id"))["columns"]] == ["ushas.sales.orders.id"]
    down = q.answer_json(q.downstream("ushas.sales.orders.id"))
    assert {c["name"] for c in down["columns"]} == {"file:/data/report.id", "ushas.sales.early.id"}
    assert [acc for acc, _ in q.runs("ushas.sales.early")] == [Access.WRITE]
    store.close()
    ms.close()


def test_cli_takes_a_path_in_any_spelling(capsys, store_uri: str, tmp_path) -> None:
    import json

    from ushas_catalog.cli import main

    users = Dataset.path(f"file:{tmp_path}/users", "parquet")
    report = Dataset.path("file:/data/report", "parquet")
    store = open_lineage_store(store_uri, "p")
    store.record(CapturedRun(run(1, T1), reads=(users,), writes=(report,),
                             edges=(edge(col(report, "n"), col(users, "name"), EdgeSubtype.TRANSFORMATION),)))
    store.close()
    for spelling in (f"{tmp_path}/users", f"file:{tmp_path}/users", f"file://{tmp_path}/users/"):
        assert main(["--uri", store_uri, "--project", "p", "--json", "lineage", "runs", spelling]) == 0
        assert [r["access"] for r in json.loads(capsys.readouterr().out)] == ["read"]
        assert main(["--uri", store_uri, "--project", "p", "--json", "lineage", "downstream", f"{spelling}.name"]) == 0
        assert [c["name"] for c in json.loads(capsys.readouterr().out)["columns"]] == ["file:/data/report.n"]
