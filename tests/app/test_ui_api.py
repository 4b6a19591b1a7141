"""The UI's JSON endpoints, through Flask's test client."""
from __future__ import annotations

import pytest

from ushas_catalog.ui.app import create_app, parse_time
from ushas_catalog.errors import InvalidArgument

from .uistore import T1, T2, build


@pytest.fixture
def client(store_uri: str):
    build(store_uri)
    app = create_app(store_uri, "default")
    yield app.test_client()
    app.config["USHAS"].close()


def test_browse(client) -> None:
    assert [c["name"] for c in client.get("/api/catalogs").json] == ["shop"]
    dbs = client.get("/api/catalogs/shop/databases").json
    assert [(d["name"], d["comment"]) for d in dbs] == [("sales", "sales data")]
    rels = client.get("/api/databases/shop/sales/relations").json
    assert sorted((r["name"], r["kind"]) for r in rels) == [("fr", "VIEW"), ("raw", "TABLE")]
    raw = client.get("/api/relations/shop/sales/raw").json
    assert raw["kind"] == "TABLE" and raw["partition_columns"] == ["dt"] and raw["properties"]["team"] == "payments"
    assert "pii" in str(raw["metadata"]) and raw["lineage"] is True
    view = client.get("/api/relations/shop/sales/fr").json
    assert view["kind"] == "VIEW" and "country = 'FR'" in view["sql"] and view["lineage"] is False
    hist = client.get("/api/relations/shop/sales/raw/history").json
    assert [h["operation"] for h in hist] == ["ADD PARTITIONS", "CREATE TABLE"]


def test_partitions_are_paged(client) -> None:
    first = client.get("/api/relations/shop/sales/raw/partitions?limit=20").json
    assert len(first["partitions"]) == 20 and first["has_more"]
    assert first["partitions"][0]["spec"] == {"dt": "2024-01-01"}
    last = client.get("/api/relations/shop/sales/raw/partitions?offset=40&limit=20").json
    assert [p["spec"]["dt"] for p in last["partitions"]] == [f"2024-02-{i:02d}" for i in range(10, 15)]
    assert not last["has_more"]
    exact = client.get("/api/relations/shop/sales/raw/partitions?prefix=dt=2024-02-03").json
    assert [p["spec"] for p in exact["partitions"]] == [{"dt": "2024-02-03"}]
    assert client.get("/api/relations/shop/sales/fr/partitions").status_code == 404  # a view has none


@pytest.mark.parametrize("url, status, message", [
    ("/api/relations/shop/sales/nope", 404, "NoSuchTable"),
    ("/api/catalogs/nope/databases", 404, "NoSuchCatalog"),
    ("/api/relations/shop/sales/raw/partitions?limit=0", 400, "limit must be between"),
    ("/api/relations/shop/sales/raw/partitions?prefix=dt", 400, "prefix takes"),
    ("/api/lineage?node=", 400, "lineage needs node"),
    ("/api/lineage?node=shop.sales.raw&direction=sideways", 400, "direction must be"),
    ("/api/lineage?node=shop.sales.raw&since=yesterday", 400, "neither epoch"),
    ("/api/lineage?node=no.such.table", 404, "no captured lineage"),
    ("/api/search?q=", 400, "search needs a query"),
])
def test_errors(client, url: str, status: int, message: str) -> None:
    r = client.get(url)
    assert r.status_code == status
    assert message in f'{r.json["error"]["type"]}: {r.json["error"]["message"]}'


def test_search_uses_the_discovery_index(client) -> None:
    res = client.get("/api/search?q=tag:pii").json
    assert res["source"] == "discovery index"
    assert [h["name"] for h in res["hits"]] == ["shop.sales.raw"]
    cols = client.get("/api/search?q=countr*").json
    assert "shop.sales.raw" in [h["name"] for h in cols["hits"]]


def test_datasets_and_runs(client) -> None:
    datasets = client.get("/api/datasets").json
    assert [(d["name"], d["kind"], d["last_access"], d["last_access_ms"]) for d in datasets] == [
        ("file:/data/report", "path", "write", T2),
        ("shop.sales.raw", "table", "read", T1),
        ("spark_catalog.default.cleaned", "external table", "read", T2)]
    assert datasets[0]["dataset"] == {"kind": "path", "uri": "file:/data/report", "format": "parquet"}
    assert "table_id" in datasets[1] and "table_id" not in datasets[2]
    assert [d["name"] for d in client.get("/api/datasets?kind=path").json] == ["file:/data/report"]
    assert [d["name"] for d in client.get("/api/datasets?kind=external table").json] == [
        "spark_catalog.default.cleaned"]
    bad = client.get("/api/datasets?kind=view")
    assert bad.status_code == 400 and "kind must be one of" in bad.json["error"]["message"]
    path_runs = client.get("/api/runs?dataset=file:/data/report").json["runs"]
    assert [(r["access"], r["execution_id"], r["user"]) for r in path_runs] == [("write", 2, "alice")]
    runs = client.get("/api/runs?dataset=spark_catalog.default.cleaned").json["runs"]
    assert [(r["access"], r["execution_id"]) for r in runs] == [("read", 2), ("write", 1)]  # newest first
    assert client.get(f"/api/runs?dataset=spark_catalog.default.cleaned&until={T1}").json["runs"][0]["access"] == "write"


def test_lineage_graph(client) -> None:
    g = client.get("/api/lineage?node=file:/data/report.total&direction=upstream&depth=5").json
    assert g["start"] == "file:/data/report.total"
    levels = {n["id"]: n["level"] for n in g["nodes"]}
    assert levels["spark_catalog.default.cleaned.amount"] == -1 and levels["shop.sales.raw.amount"] == -2
    edges = {(e["target"], e["source"]): e for e in g["edges"]}
    agg = edges[("file:/data/report.total", "spark_catalog.default.cleaned.amount")]
    assert (agg["kind"], agg["subtype"], agg["expression"]) == ("DIRECT", "AGGREGATION", "sum(amount)")
    trans = edges[("spark_catalog.default.cleaned.amount", "shop.sales.raw.amount")]
    assert trans["expression"] == "(amount * 100)"

    shallow = client.get("/api/lineage?node=file:/data/report.total&direction=upstream&depth=1").json
    assert shallow["truncated"] and "shop.sales.raw.amount" not in {n["id"] for n in shallow["nodes"]}

    down = client.get("/api/lineage?node=shop.sales.raw.amount&direction=downstream&depth=3").json
    assert {n["id"]: n["level"] for n in down["nodes"]}["file:/data/report.total"] == 2

    both = client.get("/api/lineage?node=spark_catalog.default.cleaned.amount&direction=both").json
    levels = {n["id"]: n["level"] for n in both["nodes"]}
    assert levels["shop.sales.raw.amount"] == -1 and levels["file:/data/report.total"] == 1

    # time range: before the report run, cleaned.amount flows nowhere yet
    early = client.get(f"/api/lineage?node=spark_catalog.default.cleaned.amount&direction=downstream"
                       f"&until={T1 + 1}").json
    assert early["edges"] == []
    late = client.get("/api/lineage?node=spark_catalog.default.cleaned.amount&direction=downstream"
                      "&since=2023-11-14T23:00:00").json
    assert {e["target"] for e in late["edges"]} >= {"file:/data/report.total"}
    assert T2 >= parse_time("2023-11-14T23:00:00", "since")


def test_datasets_follow_drops_and_renames(client, store_uri: str) -> None:
    """A metastore table's dataset shows its current name, and ``dropped`` once dropped."""
    from ushas_catalog.metastore import Metastore

    ms = Metastore.open(store_uri)
    try:
        ms.rename_table("shop.sales.raw", "shop.sales.raw_v2")
        renamed = {d["name"]: d for d in client.get("/api/datasets").json}
        assert "shop.sales.raw" not in renamed and renamed["shop.sales.raw_v2"]["dropped"] is False
        ms.drop_table("shop.sales.raw_v2")
        dropped = {d["name"]: d for d in client.get("/api/datasets?kind=table").json}
        assert dropped["shop.sales.raw_v2"]["dropped"] is True
    finally:
        ms.close()


def test_page_and_assets(client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and b"/static/app.js" in page.data
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


def test_parse_time() -> None:
    assert parse_time("1700000000000", "since") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20", "since") == T1
    assert parse_time("", "since") is None
    with pytest.raises(InvalidArgument):
        parse_time("tomorrow", "until")
