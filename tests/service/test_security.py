"""Security of ushas serve: stored markup comes back as JSON text, /static stays in its folder,
writes need a write token (and a browser session its CSRF token), CORS is off, a non-local bind
needs a token in the store, tokens are stored hashed and can be revoked."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import pytest

from app.uistore import build
from ushas_catalog.service.catalog_ops_api import READ_OPS
from ushas_catalog.errors import InvalidArgument
from ushas_catalog.service.spec import document

from .live import Live, running, start, token

XSS = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>&amp;"
D = "/api/v1/catalogs/shop/databases/sales"


def cli(uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, *args], capture_output=True,
                          text=True, timeout=120)


def test_markup_in_every_field_comes_back_as_json_text(live: Live) -> None:
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.model.table_changes import SetOwner

    ms = Metastore.open(live.uri, create=False)
    try:
        ms.create_table(("shop", "sales", "evil"), "id INT", comment=XSS, properties={"note": XSS})
        ms.alter_table(("shop", "sales", "evil"), [SetOwner(XSS)])
        ms.create_view(("shop", "sales", "evil_view"), f"SELECT id, '{XSS}' AS x FROM shop.sales.evil",
                       "id INT, x STRING", comment=XSS)
    finally:
        ms.close()
    h = {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]
    obj = "?catalog=shop&database=sales&table=evil"
    assert live.request("POST", "/api/v1/metadata/tags" + obj, {"tags": ["<b>tag</b>"]}, headers=h).status == 200
    assert live.request("POST", "/api/v1/metadata/properties" + obj + "&column=id", {"properties": {"k": XSS}},
                        headers=h).status == 200
    assert live.request("PUT", "/api/v1/metadata/description" + obj + "&column=id", {"description": XSS},
                        headers=h).status == 200
    run_id = str(uuid.uuid4())
    event = {"eventType": "COMPLETE", "eventTime": "2024-03-01T12:00:00Z", "producer": "https://x.example/p",
             "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
             "run": {"runId": run_id}, "job": {"namespace": "n", "name": XSS, "facets": {"sql": {
                 "_producer": "https://x.example/p", "query": XSS,
                 "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json#/$defs/SQLJobFacet"}}},
             "inputs": [{"namespace": "shop", "name": "sales.evil"}], "outputs": []}
    assert live.request("POST", "/api/v1/lineage", event, headers=h).status == 201
    answers = [live.get(D + "/tables/evil"), live.get(D + "/views/evil_view"), live.get("/api/v1/metadata" + obj),
               live.get("/api/v1/search?q=" + quote("<b>tag</b>")), live.get(f"/api/v1/runs/{run_id}"),
               live.get("/api/v1/metadata/history" + obj), live.get(D + "/tables/evil/history")]
    for answer in answers:
        assert answer.status == 200, answer.body
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert b"<" not in answer.body and b">" not in answer.body  # escaped even inside JSON strings
    table, view, md, search, run = (a.json for a in answers[:5])
    assert table["comment"] == XSS and table["owner"] == XSS and table["properties"]["note"] == XSS
    assert XSS in view["sql"] and view["comment"] == XSS
    assert md["columns"]["id"]["USER"]["properties"] == {"comment": XSS, "k": XSS}
    assert search["hits"][0]["tags"] == ["<b>tag</b>"]
    assert run["run"]["sql"] == XSS and run["run"]["job"] == XSS
    error = live.get("/api/v1/catalogs/" + quote(XSS, safe=""))
    assert error.status == 404 and XSS in error.json["error"]["message"] and b"<" not in error.body


@pytest.mark.parametrize("path", ["/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py",
                                  "/static/%2e%2e%2f%2e%2e%2fmetastore.py", "/static//etc/passwd",
                                  "/static/..\\app.py", "/static/%2e%2e%5capp.py"])
def test_static_cannot_escape_its_folder(live: Live, path: str) -> None:
    answer = live.get(path)
    assert answer.status in (400, 404) and b"import" not in answer.body and b"root:" not in answer.body


def write_operations() -> list[tuple[str, str]]:
    """Every writing route of the OpenAPI document; the catalog ops route with an op that writes (a read op
    is a read: a read token may call it)."""
    return [(method.upper(), path.replace("{op}", "alter_table")) for path, ops in document()["paths"].items()
            for method in ops if method in ("post", "put", "delete", "patch") and path != "/api/v1/session"]


def test_writes_need_a_write_token(live: Live) -> None:
    body = {"tags": ["t"], "properties": {"k": "v"}, "owner": "o", "description": "d"}
    obj = "?catalog=shop&database=sales&table=raw&tag=t&key=k"
    read = {"Authorization": f"Bearer {live.read_token}"}  # type: ignore[attr-defined]
    assert ("POST", "/api/v1/catalog/ops/alter_table") in write_operations()
    assert "alter_table" not in READ_OPS
    for method, path in write_operations():
        # the metastore call route names its method in the body: one that writes
        sent = {"method": "drop_table", "args": ["shop.sales.raw"]} if path == "/api/v1/metastore/call" else body
        assert live.request(method, path + obj, sent).status == 401, (method, path)
        assert live.request(method, path + obj, sent, headers=read).status == 403, (method, path)
        bad = live.request(method, path + obj, sent, headers={"Authorization": "Bearer ushas_nope_nope"})
        assert bad.status == 401 and bad.json["error"]["type"] == "Unauthorized"
    assert live.get(D + "/tables/raw").json["metadata"]["USER"]["tags"] == ["pii"]  # nothing was written


def test_browser_session_writes_need_the_csrf_token(live: Live) -> None:
    assert live.request("POST", "/api/v1/session", {"token": "ushas_x_y"}).status == 401
    login = live.request("POST", "/api/v1/session", {"token": live.write_token})  # type: ignore[attr-defined]
    assert login.status == 200 and login.json["access"] == "write"
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    session = {"Cookie": cookie.split(";", 1)[0]}
    url = "/api/v1/metadata/tags?catalog=shop&database=sales&table=raw"
    assert live.request("POST", url, {"tags": ["a"]}, headers=session).status == 403
    assert live.request("POST", url, {"tags": ["a"]}, headers={**session, "X-CSRF-Token": "guess"}).status == 403
    assert live.get("/api/v1/session", headers=session).json["csrf"] == login.json["csrf"]
    ok = live.request("POST", url, {"tags": ["a"]}, headers={**session, "X-CSRF-Token": login.json["csrf"]})
    assert ok.status == 200 and "a" in ok.json["USER"]["tags"]
    # a form post (no JSON content type) is refused before anything is read
    form = live.request("POST", url, raw=b"tags=a", headers={**session, "X-CSRF-Token": login.json["csrf"],
                                                             "Content-Type": "application/x-www-form-urlencoded"})
    assert form.status == 400
    live.request("DELETE", "/api/v1/session", headers=session)
    assert live.get("/api/v1/session", headers=session).json["access"] == "none"


def test_cors_is_off(live: Live) -> None:
    origin = {"Origin": "https://evil.example"}
    for answer in (live.get("/api/v1/catalogs", headers=origin),
                   live.request("OPTIONS", "/api/v1/metadata/tags", headers={
                       **origin, "Access-Control-Request-Method": "POST"})):
        assert not any(k.startswith("access-control-") for k in answer.headers), answer.headers


def test_tokens_cli_hashes_lists_and_revokes(store_uri: str) -> None:
    build(store_uri)
    made = cli(store_uri, "--json", "tokens", "create", "--write", "--name", "airflow")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    secret = created["token"]
    assert secret.startswith("ushas_") and created["access"] == "write"
    listed = cli(store_uri, "--json", "tokens", "list")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["airflow"] and secret not in listed.stdout
    raw = Path(store_uri.removeprefix("sqlite:///"))
    files = list(raw.parent.glob(raw.name + "*"))
    assert raw in files, files  # the store's file (and its journal, if any) is read
    for path in files:
        assert secret.split("_", 2)[2].encode() not in path.read_bytes()  # only its hash is stored
    for live in running(store_uri):
        url = "/api/v1/metadata/tags?catalog=shop"
        assert live.request("POST", url, {"tags": ["x"]}, headers={"Authorization": f"Bearer {secret}"}).status == 200
        assert cli(store_uri, "tokens", "revoke", created["id"]).returncode == 0
        assert live.request("POST", url, {"tags": ["y"]}, headers={"Authorization": f"Bearer {secret}"}).status == 401
    missing = cli(store_uri, "tokens", "revoke", "nope")
    assert missing.returncode == 1 and missing.stderr.startswith("ushas: NoSuchToken")
    assert cli(store_uri, "tokens", "create").returncode == 2  # --read or --write is required


def test_a_non_local_bind_needs_a_token_in_the_store(store_uri: str) -> None:
    build(store_uri)
    with pytest.raises(InvalidArgument, match="ushas tokens create"):
        start(store_uri, host="0.0.0.0")
    refused = cli(store_uri, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "ushas tokens create" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    read = token(store_uri, "read")
    live = start(store_uri, host="0.0.0.0")
    try:
        assert live.get("/api/v1/catalogs").status == 401  # reads need a token too
        assert live.get("/api/v1/info").json["auth"] == {"reads": "token", "writes": "token"}
        assert live.get("/api/v1/catalogs", headers={"Authorization": f"Bearer {read}"}).status == 200
    finally:
        live.stop()


def test_ui_alias_still_serves(store_uri: str) -> None:
    build(store_uri)
    done = cli(store_uri, "ui", "--port", "99999")
    assert done.returncode == 2 and "--port" in done.stderr


@pytest.fixture
def live(store_uri: str) -> Iterator[Live]:
    build(store_uri)
    write, read = token(store_uri, "write"), token(store_uri, "read")
    for svc in running(store_uri):
        svc.write_token, svc.read_token = write, read  # type: ignore[attr-defined]
        yield svc
