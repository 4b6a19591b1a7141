"""API v1, endpoint by endpoint, on a live service over the UI test store (tests/app/uistore.py:
shop.sales.raw partitioned by dt (45 partitions, tag pii), the view shop.sales.fr, and lineage
raw -> spark_catalog.default.cleaned -> file:/data/report)."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from app.uistore import T1, T2

from .live import Live

D = "/api/v1/catalogs/shop/databases/sales"


def auth(live: Live) -> dict[str, str]:
    return {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]


def test_info_and_browse(live: Live) -> None:
    assert live.get("/api/v1/info").json == {"project": "default", "store": "sqlite", "api": "v1",
                                             "auth": {"reads": "open", "writes": "token"}}
    assert [c["name"] for c in live.get("/api/v1/catalogs").json["items"]] == ["shop"]
    assert live.get("/api/v1/catalogs/shop").json["comment"] == "the shop"
    dbs = live.get("/api/v1/catalogs/shop/databases").json
    assert [d["name"] for d in dbs["items"]] == ["sales"] and dbs["total"] == 1
    assert live.get(D).json["comment"] == "sales data"
    rels = live.get(D + "/relations").json["items"]
    assert sorted((r["name"], r["kind"]) for r in rels) == [("fr", "VIEW"), ("raw", "TABLE")]
    assert [r["name"] for r in live.get(D + "/tables").json["items"]] == ["raw"]
    assert [r["name"] for r in live.get(D + "/views").json["items"]] == ["fr"]
    assert [r["name"] for r in live.get(D + "/relations?kind=VIEW").json["items"]] == ["fr"]
    page = live.get(D + "/relations?limit=1").json
    assert len(page["items"]) == 1 and page["has_more"] and page["total"] == 2


def test_table_view_history_as_of(live: Live) -> None:
    raw = live.get(D + "/tables/raw").json
    assert raw["partition_columns"] == ["dt"] and raw["full_name"] == "shop.sales.raw" and raw["lineage"] is True
    assert raw["metadata"]["USER"]["tags"] == ["pii"]
    view = live.get(D + "/views/fr").json
    assert "country = 'FR'" in view["sql"] and view["kind"] == "VIEW"
    assert live.get(D + "/tables/fr").json["error"]["type"] == "NoSuchTable"
    hist = live.get(D + "/tables/raw/history").json
    assert [h["operation"] for h in hist] == ["ADD PARTITIONS", "CREATE TABLE"]
    assert [h["operation"] for h in live.get(D + "/views/fr/history").json] == ["CREATE VIEW"]
    v1 = live.get(D + "/tables/raw/as-of?version=1").json
    assert v1["version"] == 1
    at = live.get(D + "/tables/raw/as-of?time=" + quote(hist[0]["committed_at"])).json
    assert at["version"] == 2
    assert live.get(D + "/tables/raw/as-of?version=9").json["error"]["type"] == "NoSuchVersion"
    assert live.get(D + "/tables/raw/as-of").status == 400


def test_partitions_are_paged(live: Live) -> None:
    first = live.get(D + "/tables/raw/partitions?limit=20").json
    assert len(first["items"]) == 20 and first["has_more"] and first["columns"] == ["dt"]
    last = live.get(D + "/tables/raw/partitions?offset=40&limit=20").json
    assert [p["spec"]["dt"] for p in last["items"]] == [f"2024-02-{i:02d}" for i in range(10, 15)]
    assert not last["has_more"]
    exact = live.get(D + "/tables/raw/partitions?prefix=dt=2024-02-03").json
    assert [p["spec"] for p in exact["items"]] == [{"dt": "2024-02-03"}]
    assert live.get(D + "/tables/raw/partitions?limit=0").status == 400


def test_errors_are_json_with_a_stable_type(live: Live) -> None:
    for path, status, kind in ((D + "/tables/nope", 404, "NoSuchTable"), ("/api/v1/catalogs/nope", 404, "NoSuchCatalog"),
                               ("/api/v1/catalogs/shop/databases/nope", 404, "NoSuchNamespace"),
                               ("/api/v1/search", 400, "InvalidArgument"),
                               ("/api/v1/lineage/graph?node=shop.sales.raw&depth=99", 400, "InvalidArgument"),
                               ("/api/v1/lineage/graph?node=shop.sales.raw.amout", 404, "NoSuchColumn"),
                               ("/api/v1/lineage/impact?node=shop.sales.raw.amout", 404, "NoSuchColumn"),
                               ("/api/v1/lineage/tables?node=shop.sales.raw.amout", 404, "NoSuchColumn"),
                               ("/api/v1/runs/ffff0000", 404, "NoSuchRun"), ("/api/v1/nope", 404, "NotFound")):
        answer = live.get(path)
        assert answer.status == status and answer.json["error"]["type"] == kind, (path, answer.json)
        assert answer.headers["content-type"].startswith("application/json")


def test_names_with_a_slash_and_any_character(live: Live) -> None:
    """New names cannot hold '/' (a directory name), but a path segment keeps any character:
    an encoded '/' reaches the metastore as part of the name, and so do %, ?, #, dots, quotes."""
    from ushas_catalog.metastore import Metastore

    answer = live.get("/api/v1/catalogs/" + quote("a/b", safe=""))
    assert answer.status == 404 and "a/b" in answer.json["error"]["message"]
    odd = "x%2f y?#.`'\"<é>"
    ms = Metastore.open(live.uri, create=False)
    try:
        ms.create_database(("shop", "d.b%"))
        ms.create_table(("shop", "d.b%", odd), "id INT")
    finally:
        ms.close()
    db = "/api/v1/catalogs/shop/databases/" + quote("d.b%", safe="")
    assert live.get(db).json["name"] == "d.b%"
    table = live.get(db + "/tables/" + quote(odd, safe="")).json
    assert table["name"] == odd and table["database"] == "d.b%"
    assert [r["name"] for r in live.get(db + "/relations").json["items"]] == [odd]
    md = live.request("POST", "/api/v1/metadata/tags?catalog=shop&database=" + quote("d.b%", safe="")
                      + "&table=" + quote(odd, safe=""), {"tags": ["gold"]}, headers=auth(live))
    assert md.status == 200 and md.json["USER"]["tags"] == ["gold"]
    # a path dataset (slashes, a scheme) as a lineage node
    graph = live.get("/api/v1/lineage/graph?node=" + quote("file:/data/report", safe="")).json
    assert graph["start"] == "file:/data/report"


def test_search_with_facets(live: Live) -> None:
    headers = auth(live)
    live.request("POST", "/api/v1/metadata/tags?catalog=shop&database=sales&table=fr", {"tags": ["pii", "eu"]},
                 headers=headers)
    page = live.get("/api/v1/search?q=pii").json
    assert sorted(h["name"] for h in page["hits"]) == ["shop.sales.fr", "shop.sales.raw"]
    assert page["facets"]["kind"] == {"table": 1, "view": 1} and page["facets"]["tag"]["eu"] == 1
    raw = next(h for h in page["hits"] if h["name"] == "shop.sales.raw")
    assert raw["format"] == "parquet" and raw["owner"] and raw["tags"] == ["pii"]
    assert [h["name"] for h in live.get("/api/v1/search?q=pii&kind=view").json["hits"]] == ["shop.sales.fr"]
    assert [h["name"] for h in live.get("/api/v1/search?q=pii&tag=eu").json["hits"]] == ["shop.sales.fr"]
    assert [h["name"] for h in live.get("/api/v1/search?q=pii&format=parquet").json["hits"]] == ["shop.sales.raw"]
    owner = raw["owner"]
    assert live.get(f"/api/v1/search?q=pii&owner={quote(owner)}").json["total"] >= 1
    assert live.get("/api/v1/search?q=pii&owner=nobody").json["hits"] == []
    first = live.get("/api/v1/search?q=pii&limit=1").json
    assert len(first["hits"]) == 1 and first["next_cursor"]
    second = live.get("/api/v1/search?q=pii&limit=1&cursor=" + first["next_cursor"]).json
    assert len(second["hits"]) == 1 and second["hits"][0]["name"] != first["hits"][0]["name"]
    assert second["next_cursor"] is None
    assert live.get("/api/v1/search?q=eu&limit=1&cursor=" + first["next_cursor"]).status == 400


def test_metadata_writes_go_through_the_metastore(live: Live) -> None:
    h = auth(live)
    obj = "/api/v1/metadata/{}?catalog=shop&database=sales&table=raw"
    col = obj + "&column=amount"
    assert live.request("POST", col.format("tags"), {"tags": ["money"]}, headers=h).json["USER"]["tags"] == ["money"]
    assert live.request("DELETE", col.format("tags") + "&tag=money", headers=h).json["USER"]["tags"] == []
    props = live.request("POST", obj.format("properties"), {"properties": {"tier": "gold"}}, headers=h).json
    assert props["USER"]["properties"]["tier"] == "gold"
    assert "tier" not in live.request("DELETE", obj.format("properties") + "&key=tier", headers=h).json["USER"][
        "properties"]
    assert live.request("PUT", obj.format("owner"), {"owner": "data-team"}, headers=h).status == 200
    assert live.get(D + "/tables/raw").json["owner"] == "data-team"
    assert live.request("PUT", col.format("description"), {"description": "in cents"}, headers=h).status == 200
    fields = live.get(D + "/tables/raw").json["schema"]["fields"]
    assert next(f for f in fields if f["name"] == "amount")["metadata"]["comment"] == "in cents"
    assert live.request("PUT", obj.format("description"), {"description": "raw sales"}, headers=h).status == 200
    assert live.get(D + "/tables/raw").json["comment"] == "raw sales"
    live.request("PUT", obj.format("description"), {"description": None}, headers=h)
    assert live.get(D + "/tables/raw").json["comment"] is None
    history = live.get("/api/v1/metadata/history?catalog=shop&database=sales&table=raw").json
    assert {"tag", "untag", "set", "unset"} <= {c["action"] for c in history}
    mine = [c for c in history if c["user"] == "test write"]  # the token's name, not the service's login
    assert {"tag", "untag", "set", "unset"} <= {c["action"] for c in mine}
    # the CLI's validation: a reserved key, a SYSTEM write, an owner on a column, nothing written
    bad = live.request("POST", obj.format("properties"), {"properties": {"bad=key": "x"}}, headers=h)
    assert bad.status == 400 and bad.json["error"]["type"] == "InvalidArgument"
    assert live.request("PUT", col.format("owner"), {"owner": "x"}, headers=h).status == 400
    assert live.request("POST", obj.format("tags"), {"tags": []}, headers=h).status == 400
    db = "/api/v1/metadata/owner?catalog=shop&database=sales"
    assert live.request("PUT", db, {"owner": "db-owner"}, headers=h).status == 200
    assert live.get(D).json["owner"] == "db-owner"
    assert live.request("PUT", "/api/v1/metadata/owner?catalog=shop", {"owner": "x"}, headers=h).status == 400


def test_lineage_graphs_place_whole_dataset_nodes(live: Live) -> None:
    graph = live.get("/api/v1/lineage/graph?node=file:/data/report.total&direction=upstream&depth=5").json
    levels = {n["id"]: n["level"] for n in graph["nodes"]}
    assert levels["file:/data/report.total"] == 0 and levels["spark_catalog.default.cleaned.amount"] == -1
    assert levels["shop.sales.raw.amount"] == -2
    # the whole-dataset target of the FILTER edge sits with its dataset, not with the start
    whole = next(n for n in graph["nodes"] if n["whole_dataset"])
    assert whole["id"] == "spark_catalog.default.cleaned" and whole["level"] == -1
    assert any(e["subtype"] == "FILTER" and e["target"] == "spark_catalog.default.cleaned" for e in graph["edges"])
    tables = live.get("/api/v1/lineage/tables?node=spark_catalog.default.cleaned").json
    assert {n["name"]: n["level"] for n in tables["nodes"]} == {"shop.sales.raw": -1,
                                                                  "spark_catalog.default.cleaned": 0,
                                                                  "file:/data/report": 1}
    edge = next(e for e in tables["edges"] if e["source"] == "shop.sales.raw")
    assert edge["direct"] == 3 and edge["whole_dataset"] == 1 and edge["runs"] == 1
    early = live.get(f"/api/v1/lineage/tables?node=spark_catalog.default.cleaned&until={T1}").json
    assert {n["name"] for n in early["nodes"]} == {"shop.sales.raw", "spark_catalog.default.cleaned"}
    impact = live.get("/api/v1/lineage/impact?node=shop.sales.raw.amount").json
    names = {r["name"]: r for r in impact["items"]}
    assert names["file:/data/report.total"]["depth"] == 2
    assert names["file:/data/report.total"]["path"][0] == "shop.sales.raw.amount"
    for row in impact["items"]:  # every path starts at the column and ends at the row, hop by hop
        hops = row["hops"]
        assert hops[0]["source"] == "shop.sales.raw.amount" and hops[-1]["target"] == row["name"], row
    whole = {r["name"] for r in live.get("/api/v1/lineage/impact?node=shop.sales.raw").json["items"]}
    assert set(names) <= whole and "file:/data/report.country" in whole
    csv = live.get("/api/v1/lineage/impact?node=shop.sales.raw.amount&format=csv")
    assert csv.headers["content-type"].startswith("text/csv") and b"file:/data/report.total" in csv.body
    datasets = live.get("/api/v1/lineage/datasets?kind=path").json["items"]
    assert [d["name"] for d in datasets] == ["file:/data/report"]
    every = [d["name"] for d in live.get("/api/v1/lineage/datasets").json["items"]]
    assert every == ["file:/data/report", "shop.sales.raw", "spark_catalog.default.cleaned"]
    paged = [live.get(f"/api/v1/lineage/datasets?limit=1&offset={i}").json for i in range(3)]
    assert [p["items"][0]["name"] for p in paged] == every and [p["has_more"] for p in paged] == [True, True, False]
    assert [d["name"] for d in live.get("/api/v1/lineage/datasets?prefix=shop.").json["items"]] == ["shop.sales.raw"]


def test_runs_and_run_detail(live: Live) -> None:
    runs = live.get("/api/v1/runs").json
    assert [r["end_ms"] for r in runs["items"]] == [T2, T1] and runs["next_cursor"] is None
    first = live.get("/api/v1/runs?limit=1").json
    second = live.get("/api/v1/runs?limit=1&cursor=" + first["next_cursor"]).json
    assert [r["end_ms"] for r in second["items"]] == [T1]
    of = live.get("/api/v1/runs?dataset=shop.sales.raw").json["items"]
    assert [(r["access"], r["end_ms"]) for r in of] == [("read", T1)]
    detail = live.get("/api/v1/runs/" + of[0]["run_id"]).json
    assert detail["run"]["sql"].startswith("INSERT INTO cleaned") and detail["run"]["duration_ms"] == 500
    assert [d["name"] for d in detail["inputs"]] == ["shop.sales.raw"]
    assert [d["name"] for d in detail["outputs"]] == ["spark_catalog.default.cleaned"]
    assert {e["subtype"] for e in detail["edges"]} == {"IDENTITY", "TRANSFORMATION", "FILTER"}
    assert live.get("/api/v1/runs/" + of[0]["run_id"][:8]).json["run"]["run_id"] == of[0]["run_id"]


def test_change_feed_is_cursor_paged(live: Live) -> None:
    first = live.get("/api/v1/changes?limit=2").json
    assert [c["change"] for c in first["items"]] == ["CREATED", "CREATED"]
    rest = live.get("/api/v1/changes?limit=1000&since=" + first["next_cursor"]).json
    assert rest["items"] and rest["items"][0]["cursor"] > first["next_cursor"]
    empty = live.get("/api/v1/changes?since=" + rest["next_cursor"]).json
    assert empty == {"items": [], "next_cursor": rest["next_cursor"]}
    assert live.get("/api/v1/changes?since=garbage").status == 400


@pytest.mark.parametrize("method, path, body, named", [
    ("PUT", "/api/v1/metadata/description", {"catalog": "shop", "database": "sales", "table": "raw",
                                             "description": "x"}, "catalog, database, table"),
    ("PUT", "/api/v1/metadata/owner", {"owner": "bob"}, None),
    ("POST", "/api/v1/metadata/tags", {"tags": ["t"], "table": "raw"}, "table"),
])
def test_metadata_writes_say_the_object_goes_in_the_query_string(live: Live, method: str, path: str,
                                                                 body: dict[str, Any], named: str | None) -> None:
    h = {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]
    answer = live.request(method, path, body, headers=h)
    assert answer.status == 400, answer.json
    message = answer.json["error"]["message"]
    assert message.startswith("the object goes in the query string: ?catalog=C[&database=D[&table=T[&column=X]]]")
    assert (f"the body names {named}: the body holds only the value" in message) is (named is not None)
