"""Remote mode's transport (docs/service.md, "Remote mode"): the shim's op table over HTTP
(``POST /api/v1/catalog/ops/<op>``), run by a live ``ushas serve`` as the token's user with authorization
always on, and the Python forwarder (:mod:`ushas_catalog.spark.remote`) that the bridge uses for an
``http(s)://`` catalog. No Spark here: the requests are the ones the shim sends."""
from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from ushas_catalog.errors import InvalidArgument, ServiceUnreachable
from ushas_catalog.metastore import Metastore
from ushas_catalog.service.tokens import TokenStore
from ushas_catalog.spark import remote
from ushas_catalog.spark.remote import READ_OPS

from .live import Live, running


def _token(uri: str, access: str, name: str) -> tuple[str, str]:
    ms = Metastore.open(uri, create=False)
    try:
        info, text = TokenStore(ms).create(access, name)
        return info.id, text
    finally:
        ms.close()


@pytest.fixture
def svc(store_uri: str) -> Iterator[Any]:
    ms = Metastore.open(store_uri)
    ms.grant("OWN", "project", "user:admin")
    ms.close()
    tokens = {name: _token(store_uri, access, name) for name, access in
              (("admin", "write"), ("bob", "write"), ("reader", "read"))}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        yield live


def ctx(svc: Live, **extra: Any) -> dict[str, Any]:
    return {"uri": svc.base, "project": "default", "catalog": "main", "spark_catalog": "rem", "branch": "main",
            "warehouse": "file:/tmp/wh", **extra}


def op(svc: Live, name: str, body: dict[str, Any], who: str | None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {svc.tokens[who][1]}"} if who else {}  # type: ignore[attr-defined]
    answer = svc.request("POST", f"/api/v1/catalog/ops/{name}", body, headers=headers)
    return answer.status, answer.json


def test_the_token_is_the_caller_and_authorization_is_always_on(svc: Live) -> None:
    assert op(svc, "open", {"ctx": ctx(svc)}, "admin")[0] == 200
    # bob says he is admin and turns authorization off: the service runs it as bob, checked
    status, answer = op(svc, "create_namespace", {"ctx": ctx(svc, user="admin", authorization=False),
                                                  "namespace": ["sales"]}, "bob")
    assert status == 403 and answer["error"]["type"] == "PermissionDenied"
    assert answer["error"]["errorClass"] == "INSUFFICIENT_PERMISSIONS" and "bob" in answer["error"]["message"]
    assert op(svc, "create_namespace", {"ctx": ctx(svc), "namespace": ["sales"]}, "admin") == (200, {})
    # the client's uri and project are not the store the service serves
    status, answer = op(svc, "list_namespaces", {"ctx": ctx(svc, uri="sqlite:////tmp/other.db", project="x")},
                        "admin")
    assert status == 200 and ["sales"] in answer["namespaces"]


@pytest.mark.parametrize("who, header, status, error", [
    (None, None, 401, "Unauthorized"),
    (None, "Bearer ushas_abc_notavalidsecret", 401, "Unauthorized"),
    (None, "Basic YWRtaW46eA==", 401, "Unauthorized"),
    ("reader", None, 403, "Forbidden"),  # a read token runs only the ops that change nothing
])
def test_refused_callers(svc: Live, who: str | None, header: str | None, status: int, error: str) -> None:
    headers = {"Authorization": header} if header else {}
    if who:
        headers = {"Authorization": f"Bearer {svc.tokens[who][1]}"}  # type: ignore[attr-defined]
    answer = svc.request("POST", "/api/v1/catalog/ops/create_namespace",
                         {"ctx": ctx(svc), "namespace": ["x"]}, headers=headers)
    assert (answer.status, answer.json["error"]["type"]) == (status, error)


def test_a_browser_session_is_not_enough(svc: Live) -> None:
    signed = svc.request("POST", "/api/v1/session", {"token": svc.tokens["admin"][1]})  # type: ignore[attr-defined]
    cookie = signed.headers["set-cookie"].split(";", 1)[0]
    answer = svc.request("POST", "/api/v1/catalog/ops/list_namespaces", {"ctx": ctx(svc)},
                         headers={"Cookie": cookie, "X-CSRF-Token": signed.json["csrf"]})
    assert (answer.status, answer.json["error"]["type"]) == (401, "Unauthorized")


@pytest.mark.parametrize("raw, error", [
    (b'"@/etc/passwd"', "InvalidArgument"),  # never a file of the service's host
    (b"{not json", "InvalidArgument"),
    (b'{"ctx": {"uri": "x"}}', "InvalidArgument"),  # no catalog
])
def test_bad_requests(svc: Live, raw: bytes, error: str) -> None:
    answer = svc.request("POST", "/api/v1/catalog/ops/list_namespaces", raw=raw,
                         headers={"Authorization": f"Bearer {svc.tokens['admin'][1]}"})  # type: ignore[attr-defined]
    assert (answer.status, answer.json["error"]["type"]) == (400, error)
    assert "passwd" not in answer.body.decode() or error == "InvalidArgument"


def test_unknown_op_and_reader_reads(svc: Live) -> None:
    status, answer = op(svc, "lineage.event", {"ctx": ctx(svc)}, "admin")
    assert status == 400 and "unknown catalog operation" in answer["error"]["message"]
    op(svc, "open", {"ctx": ctx(svc)}, "admin")
    # a read token passes the read-op gate; then the grants decide (reader holds none)
    status, answer = op(svc, "load_namespace", {"ctx": ctx(svc), "namespace": ["default"]}, "reader")
    assert (status, answer["error"]["type"]) == (403, "PermissionDenied")


def test_a_revoked_token_is_refused_on_its_next_call(svc: Live, store_uri: str) -> None:
    assert op(svc, "open", {"ctx": ctx(svc)}, "admin")[0] == 200
    assert op(svc, "open", {"ctx": ctx(svc)}, "bob")[0] == 200  # anyone opens an existing catalog
    ms = Metastore.open(store_uri, create=False)
    TokenStore(ms).revoke(svc.tokens["bob"][0])  # type: ignore[attr-defined]
    ms.close()
    status, answer = op(svc, "list_namespaces", {"ctx": ctx(svc)}, "bob")
    assert (status, answer["error"]["type"]) == (401, "Unauthorized")


# ---- the forwarder ---------------------------------------------------------------------------------------
def shim_request(svc: Live, token: str | None = None, **remote_fields: Any) -> dict[str, Any]:
    fields = {"token": token, **remote_fields} if token else remote_fields
    return {"ctx": ctx(svc, user="sparkuser", user_source="spark", authorization=False, remote=fields),
            "deadline_ms": int(time.time() * 1000) + 20_000}


def test_forward_answers_as_the_service(svc: Live) -> None:
    admin = svc.tokens["admin"][1]  # type: ignore[attr-defined]
    assert remote.forward("open", shim_request(svc, admin))["catalog"] == "main"
    answer = remote.forward("create_namespace", {**shim_request(svc, svc.tokens["bob"][1]),  # type: ignore[attr-defined]
                                                 "namespace": ["nope"]})
    assert answer["error"]["type"] == "PermissionDenied"  # the error as the shim gets it locally
    missing = remote.forward("load_table", {**shim_request(svc, admin), "namespace": ["default"], "name": "t"})
    assert missing["error"]["type"] == "NoSuchTable"


def test_forward_token_sources(svc: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = svc.tokens["admin"][1]  # type: ignore[attr-defined]
    file = tmp_path / "token"
    file.write_text(admin + "\n")
    assert "catalog" in remote.forward("open", shim_request(svc, token_file=str(file)))
    monkeypatch.setenv("USHAS_TOKEN", admin)
    assert "catalog" in remote.forward("open", shim_request(svc))
    monkeypatch.delenv("USHAS_TOKEN")
    with pytest.raises(InvalidArgument, match="needs a token"):
        remote.forward("open", shim_request(svc))
    secret = tmp_path / "not-a-token"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(InvalidArgument, match="does not hold an ushas token"):
        remote.forward("open", shim_request(svc, token_file=str(secret)))


def test_a_retried_direct_call_hands_back_the_token_that_worked(svc: Live, tmp_path: Path) -> None:
    """The shim's direct transport asks Python again when the service refuses its token (a rotated
    ``token-file``): the answer carries the token read anew, unless the service refused that one too."""
    admin, bob = svc.tokens["admin"][1], svc.tokens["bob"][1]  # type: ignore[attr-defined]
    file = tmp_path / "token"
    file.write_text(admin + "\n")
    assert "catalog" in remote.forward("open", shim_request(svc, admin))
    retried = {**shim_request(svc, token_file=str(file)), remote.RETRIED: True}
    assert remote.forward("list_namespaces", retried)[remote.TOKEN_FIELD] == admin
    assert remote.forward("create_namespace", {**retried, "namespace": ["made"]}) == {remote.TOKEN_FIELD: admin}
    file.write_text(bob + "\n")  # an error answer: the token worked, the grants refused
    answer = remote.forward("create_namespace", {**retried, "namespace": ["nope"]})
    assert (answer["error"]["type"], answer[remote.TOKEN_FIELD]) == ("PermissionDenied", bob)
    file.write_text("ushas_abc_notavalidsecret\n")
    answer = remote.forward("list_namespaces", retried)
    assert (answer["error"]["type"], answer[remote.TOKEN_FIELD]) == ("Unauthorized", "")
    assert remote.TOKEN_FIELD not in remote.forward("list_namespaces", shim_request(svc, admin))  # not retried


@pytest.mark.parametrize("option", ["user", "authorization"])
def test_forward_refuses_identity_options(svc: Live, option: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"spark.sql.catalog.rem.{option}: not allowed"):
        remote.forward("open", shim_request(svc, svc.tokens["admin"][1], set=[option]))  # type: ignore[attr-defined]


def test_open_hands_the_shim_its_direct_transport(svc: Live) -> None:
    """``open`` (through Python, which checks the options and resolves the token) answers the shim's direct
    transport: the service's ops URL, that token, and the read ops only; ``direct=false`` turns it off."""
    admin, reader = svc.tokens["admin"][1], svc.tokens["reader"][1]  # type: ignore[attr-defined]
    transport = remote.forward("open", shim_request(svc, admin))["transport"]
    assert transport["ops_url"] == svc.base.rstrip("/") + remote.OPS_PATH and transport["token"] == admin
    assert set(transport["ops"]) == remote.DIRECT_OPS
    assert remote.DIRECT_OPS < READ_OPS and not {"open", "commit_write", "create_table"} & remote.DIRECT_OPS
    # the JVM sends these with a read token too: the service lets them through its read-op gate, grants decide
    for name in ("load_table", "list_partitions", "list_files"):
        status, answer = op(svc, name, {"ctx": ctx(svc), "namespace": ["default"], "name": "t"}, "reader")
        assert (status, answer["error"]["type"]) != (403, "Forbidden"), answer
    assert "transport" not in remote.forward("open", shim_request(svc, admin, direct="false"))
    assert "transport" in remote.forward("open", shim_request(svc, admin, direct="TRUE"))
    with pytest.raises(InvalidArgument, match="spark.sql.catalog.rem.direct must be true or false, not 'maybe'"):
        remote.forward("open", shim_request(svc, admin, direct="maybe"))
    # a refused identity option is refused before any transport is handed out
    with pytest.raises(InvalidArgument, match="spark.sql.catalog.rem.user: not allowed"):
        remote.forward("open", shim_request(svc, reader, set=["user"]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_and_silent_services_are_errors_not_hangs(svc: Live) -> None:
    admin = svc.tokens["admin"][1]  # type: ignore[attr-defined]
    port = _free_port()
    request = shim_request(svc, admin)
    request["ctx"]["uri"] = f"http://127.0.0.1:{port}"
    with pytest.raises(ServiceUnreachable, match=rf"ushas service at http://127.0.0.1:{port} unreachable"):
        remote.forward("open", request)
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        request["ctx"]["uri"] = f"http://127.0.0.1:{silent.getsockname()[1]}"
        request["deadline_ms"] = int(time.time() * 1000) + 500
        with pytest.raises(ServiceUnreachable, match="unreachable: no answer within"):
            remote.forward("open", request)


def test_the_bridge_forwards_an_http_catalog(svc: Live) -> None:
    from ushas_catalog.spark.bridge import handle

    answer = json.loads(handle("open", json.dumps(shim_request(svc, svc.tokens["admin"][1]))))  # type: ignore[attr-defined]
    assert answer["catalog"] == "main"


def test_a_commit_the_service_may_have_taken_is_a_failed_call_not_an_answer(svc: Live) -> None:
    """The service dies after reading a request: for a fenced commit the bridge call fails (the shim then
    asks what became of the write and keeps its files), for anything else it answers the error."""
    import threading

    from ushas_catalog.errors import OutcomeUnknown
    from ushas_catalog.spark.bridge import handle

    dying = socket.socket()
    dying.bind(("127.0.0.1", 0))
    dying.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = dying.accept()
            except OSError:
                return
            conn.recv(65536)  # the request arrives; no answer
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        request = shim_request(svc, svc.tokens["admin"][1])  # type: ignore[attr-defined]
        request["ctx"]["uri"] = f"http://127.0.0.1:{dying.getsockname()[1]}"
        with pytest.raises(OutcomeUnknown, match="the request was sent; the service gave no answer"):
            handle("commit_write", json.dumps(request))
        answer = json.loads(handle("load_table", json.dumps({**request, "namespace": ["db"], "name": "t"})))
        assert answer["error"]["type"] == "OutcomeUnknown"
    finally:
        dying.close()


def test_many_clients_at_once(svc: Live) -> None:
    """8 clients (threads, each its own keep-alive connection) create and fill their own tables and read each
    other's at once: every call answers, nothing is lost."""
    import threading

    admin = svc.tokens["admin"][1]  # type: ignore[attr-defined]
    assert "catalog" in remote.forward("open", shim_request(svc, admin))
    assert remote.forward("create_namespace", {**shim_request(svc, admin), "namespace": ["many"]}) == {}
    errors: list[str] = []

    def client(i: int) -> None:
        try:
            base = {**shim_request(svc, admin), "namespace": ["many"], "name": f"t{i}"}
            schema = json.dumps({"type": "struct", "fields": [
                {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
                {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]})
            made = remote.forward("create_table", {**base, "schema": schema, "properties": {"provider": "parquet"},
                                                   "partitioning": [{"transform": "identity", "columns": ["dt"]}]})
            assert "table" in made, made
            for round_ in range(5):
                added = remote.forward("add_partitions", {**base, "partitions": [
                    {"values": {"dt": f"{round_}-{k}"}, "properties": {}} for k in range(20)]})
                assert "error" not in added, added
                other = remote.forward("relation_exists", {**base, "name": f"t{(i + 1) % 8}", "kind": "table"})
                assert "exists" in other, other
        except Exception as exc:  # reported below
            errors.append(f"client {i}: {exc}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    for i in range(8):
        parts = remote.forward("list_partitions", {**shim_request(svc, admin), "namespace": ["many"], "name": f"t{i}"})
        assert len(parts["rows"]) == 100, parts


def test_a_client_cannot_make_a_chosen_location_the_catalogs_own(svc: Live, tmp_path: Path, store_uri: str) -> None:
    """A table's default location skips the check of a chosen one, so what makes it default is the catalog's: on the
    old code a client placed a managed table in external location ``lake`` without CREATE EXTERNAL TABLE on it by
    marking its LOCATION ``is_managed_location`` (Spark's mark of a derived location), or by stating a ``warehouse``
    inside the lake (the managed location derives from it). Both are refused now; nothing is created."""
    admin = admin_with_bob(store_uri, own=False)
    admin.create_location("lake", str(tmp_path / "lake"))
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True,
                                                         "metadata": {}}]})
    base = {"namespace": ["db"], "schema": schema}
    for name, c, props in (
            ("t1", ctx(svc), {"location": str(tmp_path / "lake" / "a")}),
            ("t2", ctx(svc), {"location": str(tmp_path / "lake" / "b"), "is_managed_location": "true"}),
            ("t3", ctx(svc, warehouse=str(tmp_path / "lake")), {})):
        status, answer = op(svc, "create_table", {**base, "ctx": c, "name": name,
                                                  "properties": {"provider": "parquet", **props}}, "bob")
        assert status == 403 and "CREATE EXTERNAL TABLE on location lake" in answer["error"]["message"], (name, answer)
    assert [t.name for t in admin.list_tables("main.db")] == []
    status, answer = op(svc, "create_table", {**base, "ctx": ctx(svc, warehouse=str(tmp_path / "wh")), "name": "ok",
                                              "properties": {"provider": "parquet"}}, "bob")
    assert status == 200 and answer["table"]["location"] == f"file:{tmp_path}/wh/db.db/ok", answer
    admin.grant("CREATE EXTERNAL TABLE", "location:lake", "user:bob")
    assert op(svc, "create_table", {**base, "ctx": ctx(svc), "name": "t2", "properties": {
        "provider": "parquet", "location": str(tmp_path / "lake" / "b"), "is_managed_location": "true"}}, "bob")[0] == 200
    admin.close()
