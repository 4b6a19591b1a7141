"""Versioned objects over API v1 (docs/objects.md, "REST"): create, read, versions, as-of, rollback,
history, drop and undrop on a live service, writes with a write token, errors with their types."""
from __future__ import annotations

from urllib.parse import quote

from .live import Live

D = "/api/v1/catalogs/shop/databases/sales"


def test_objects_over_the_api(live: Live) -> None:
    h = {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]
    body = {"name": "churn", "kind": "model", "location": "s3://m/churn", "properties": {"fw": "sklearn"}}
    assert live.request("POST", D + "/objects", body).status == 401  # writes need a write token
    created = live.request("POST", D + "/objects", body, headers=h)
    assert created.status == 200 and created.json["kind"] == "model" and created.json["current_version"] == 0
    assert live.request("POST", D + "/objects", body, headers=h).json["error"]["type"] == "ObjectAlreadyExists"
    clash = live.request("POST", D + "/objects", {**body, "name": "raw"}, headers=h)
    assert clash.status == 409 and clash.json["error"]["type"] == "TableAlreadyExists"
    bad = live.request("POST", D + "/objects", {**body, "name": "x", "kind": "Not A Kind"}, headers=h)
    assert bad.status == 400 and bad.json["error"]["type"] == "InvalidArgument"
    o = D + "/objects/churn"
    v1 = live.request("POST", o + "/versions", {"location": "s3://m/churn/1", "properties": {"auc": "0.8"}},
                      headers=h).json
    assert (v1["version"], v1["dataset"], v1["current"]) == (1, "shop.sales.churn@v1", True)
    assert live.request("POST", o + "/versions", {}, headers=h).json["location"] == "s3://m/churn"
    back = live.request("POST", o + "/rollback", {"version": 1}, headers=h).json
    assert (back["version"], back["rolled_back_from"], back["location"]) == (3, 1, "s3://m/churn/1")
    assert [v["version"] for v in live.get(o + "/versions").json] == [3, 2, 1]
    assert live.get(o + "/versions/2").json["location"] == "s3://m/churn"
    assert live.get(o + "/versions/9").json["error"]["type"] == "NoSuchVersion"
    assert live.get(o + "/as-of?time=" + quote(v1["created_at"])).json["version"] == 1
    assert live.get(o).json["current_version"] == 3
    assert [x["name"] for x in live.get(D + "/objects?kind=model").json["items"]] == ["churn"]
    assert [x["operation"] for x in live.get(o + "/history").json][:2] == ["ROLLBACK", "ADD VERSION"]
    assert live.request("DELETE", o, headers=h).json == {"dropped": "shop.sales.churn"}
    assert live.get(o).status == 404 and live.get(o).json["error"]["type"] == "NoSuchObject"
    assert [x["name"] for x in live.get(D + "/objects?dropped=true").json["items"]] == ["churn"]
    assert live.request("POST", o + "/undrop", headers=h).json["current_version"] == 3


def test_objects_are_tagged_and_found_over_the_api(live: Live) -> None:
    h = {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]
    live.request("POST", D + "/objects", {"name": "docs", "kind": "volume", "location": "/v"}, headers=h)
    tagged = live.request("POST", "/api/v1/metadata/tags?catalog=shop&database=sales&table=docs",
                          {"tags": ["handbook"]}, headers=h)
    assert tagged.status == 200 and tagged.json["object"]["type"] == "OBJECT"
    found = live.get("/api/v1/search?q=handbook&kind=object").json
    assert [(x["type"], x["name"]) for x in found["hits"]] == [("OBJECT", "shop.sales.docs")]
    assert found["hits"][0]["owner"] == "test write" and found["facets"]["kind"] == {"object": 1}


def test_subspace_records_over_the_api(live: Live) -> None:
    import base64
    import json
    from urllib.parse import quote as q

    from ushas_catalog.catalog.object_types import descriptor_set
    from ushas_catalog.records.object_pb2 import ObjectVersion

    h = {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]
    live.request("POST", D + "/objects", {"name": "runs", "kind": "model", "location": "/r"}, headers=h)
    s = D + "/objects/runs/subspaces"
    body = {"name": "versions", "descriptor_set": base64.b64encode(descriptor_set(ObjectVersion)).decode(),
            "message_type": "ushas.metastore.ObjectVersion", "primary_key": ["version"]}
    made = live.request("POST", s, body, headers=h)
    assert made.status == 200 and made.json["primary_key"] == ["version"]
    assert [t["name"] for t in live.get(s).json] == ["versions"]
    for v in (3, 1, 2):
        put = live.request("PUT", s + "/versions/records", {"record": {"version": v, "location": f"/r/{v}"}},
                           headers=h)
        assert put.json == {"key": [v]}
    bad = live.request("PUT", s + "/versions/records", {"record": {"version": 4, "colour": "red"}}, headers=h)
    assert bad.status == 400 and bad.json["error"]["type"] == "InvalidArgument"
    rows = live.get(s + "/versions/records?from=" + q(json.dumps([2]))).json
    assert [(r["key"], r["record"]["location"]) for r in rows] == [([2], "/r/2"), ([3], "/r/3")]
    assert live.get(s + "/versions/record?key=1").json["record"]["location"] == "/r/1"
    assert live.request("DELETE", s + "/versions/record?key=1", headers=h).json == {"deleted": [1]}
    assert live.get(s + "/versions/record?key=1").status == 404
    assert live.get(s + "/nope/records").json["error"]["type"] == "NoSuchObject"
    assert live.request("POST", s, {**body, "descriptor_set": "!!"}, headers=h).status == 400
