"""API v1 on the UI app, through Flask's test client (no socket): lineage datasets, runs and graphs
with kind and time filters, datasets after drops and renames, the page, and the retired
unversioned endpoints (410 naming their replacement)."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from app.uistore import T1, T2, build
from ushas_catalog.service.api import register_api
from ushas_catalog.ui.app import RETIRED, create_app


@pytest.fixture
def client(store_uri: str) -> Iterator[Any]:
    build(store_uri)
    app = create_app(store_uri, "default")
    register_api(app, app.config["USHAS"])
    yield app.test_client()
    app.config["USHAS"].close()


def _items(client: Any, url: str) -> list[dict[str, Any]]:
    r = client.get(url)
    assert r.status_code == 200, r.data[:300]
    return r.json["items"]


def test_datasets_and_runs(client: Any) -> None:
    datasets = _items(client, "/api/v1/lineage/datasets")
    assert [(d["name"], d["kind"], d["last_access"], d["last_access_ms"]) for d in datasets] == [
        ("file:/data/report", "path", "write", T2),
        ("shop.sales.raw", "table", "read", T1),
        ("spark_catalog.default.cleaned", "external table", "read", T2)]
    assert datasets[0]["dataset"] == {"kind": "path", "uri": "file:/data/report", "format": "parquet"}
    assert "table_id" in datasets[1] and "table_id" not in datasets[2]
    assert [d["name"] for d in _items(client, "/api/v1/lineage/datasets?kind=path")] == ["file:/data/report"]
    assert [d["name"] for d in _items(client, "/api/v1/lineage/datasets?kind=external table")] == [
        "spark_catalog.default.cleaned"]
    assert _items(client, "/api/v1/lineage/datasets?kind=view") == []  # a kind since views are labelled views
    bad = client.get("/api/v1/lineage/datasets?kind=index")
    assert bad.status_code == 400 and "kind must be one of table, view, external table, path" in \
        bad.json["error"]["message"]
    path_runs = _items(client, "/api/v1/runs?dataset=file:/data/report")
    assert [(r["access"], r["execution_id"], r["user"]) for r in path_runs] == [("write", 2, "alice")]
    runs = _items(client, "/api/v1/runs?dataset=spark_catalog.default.cleaned")
    assert [(r["access"], r["execution_id"]) for r in runs] == [("read", 2), ("write", 1)]  # newest first
    early = _items(client, f"/api/v1/runs?dataset=spark_catalog.default.cleaned&until={T1}")
    assert [r["access"] for r in early] == ["write"]


def test_lineage_graph_depth_and_time(client: Any) -> None:
    g = client.get("/api/v1/lineage/graph?node=file:/data/report.total&direction=upstream&depth=5").json
    levels = {n["id"]: n["level"] for n in g["nodes"]}
    assert levels["spark_catalog.default.cleaned.amount"] == -1 and levels["shop.sales.raw.amount"] == -2
    shallow = client.get("/api/v1/lineage/graph?node=file:/data/report.total&direction=upstream&depth=1").json
    assert shallow["truncated"] and "shop.sales.raw.amount" not in {n["id"] for n in shallow["nodes"]}
    # time range: before the report run, cleaned.amount flows nowhere yet
    early = client.get("/api/v1/lineage/graph?node=spark_catalog.default.cleaned.amount&direction=downstream"
                       f"&until={T1 + 1}").json
    assert early["edges"] == []
    late = client.get("/api/v1/lineage/graph?node=spark_catalog.default.cleaned.amount&direction=downstream"
                      "&since=2023-11-14T23:00:00").json
    assert {e["target"] for e in late["edges"]} >= {"file:/data/report.total"}
    bad = client.get("/api/v1/lineage/graph?node=shop.sales.raw&since=yesterday")
    assert bad.status_code == 400 and "neither epoch" in bad.json["error"]["message"]


def test_datasets_follow_drops_and_renames(client: Any, store_uri: str) -> None:
    """A metastore table's dataset shows its current name, and ``dropped`` once dropped."""
    from ushas_catalog.metastore import Metastore

    with Metastore.open(store_uri) as ms:
        ms.rename_table("shop.sales.raw", "shop.sales.raw_v2")
        renamed = {d["name"]: d for d in _items(client, "/api/v1/lineage/datasets")}
        assert "shop.sales.raw" not in renamed and renamed["shop.sales.raw_v2"]["dropped"] is False
        ms.drop_table("shop.sales.raw_v2")
        dropped = {d["name"]: d for d in _items(client, "/api/v1/lineage/datasets?kind=table")}
        assert dropped["shop.sales.raw_v2"]["dropped"] is True


def test_page_and_assets(client: Any) -> None:
    page = client.get("/")
    assert page.status_code == 200 and b"/static/app.js" in page.data
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


@pytest.mark.parametrize("first", sorted(RETIRED))
def test_retired_endpoints_say_where_to_go(client: Any, first: str) -> None:
    r = client.get(f"/api/{first}/shop/sales/raw")
    assert r.status_code == 410
    assert r.json["error"]["type"] == "Gone" and RETIRED[first] in r.json["error"]["message"]
    assert "shop" not in r.json["error"]["message"]  # nothing was read


def test_unknown_paths_are_404(client: Any) -> None:
    assert client.get("/api/nope").status_code == 404
    assert client.get("/api/v1/nope").status_code == 404
    assert client.get("/api/v1/catalogs").status_code == 200
