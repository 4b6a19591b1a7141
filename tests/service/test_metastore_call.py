"""The metastore API over HTTP (``POST /api/v1/metastore/call``, ``Metastore.open("http://...")``): what a
hostile client cannot do. The API itself runs against both implementations in
tests/metastore/test_metastore.py (fixture ``either_ms``)."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from ushas_catalog.errors import Forbidden, InvalidArgument, PermissionDenied, ServiceUnreachable
from ushas_catalog.metastore import Metastore
from ushas_catalog.remote import wire

from remote_service import free_port, make_token

from .live import Live, running


@pytest.fixture
def svc(store_uri: str) -> Iterator[Any]:
    ms = Metastore.open(store_uri)
    ms.grant("OWN", "project", "user:admin")
    ms.close()
    tokens = {name: make_token(store_uri, access, name)[1] for name, access in
              (("admin", "write"), ("bob", "write"), ("reader", "read"))}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        yield live


def remote(svc: Live, who: str) -> Any:
    return Metastore.open(svc.base, token=svc.tokens[who])  # type: ignore[attr-defined]


def call(svc: Live, body: dict[str, Any], who: str = "admin") -> tuple[int, dict[str, Any]]:
    answer = svc.request("POST", "/api/v1/metastore/call", body,
                         headers={"Authorization": f"Bearer {svc.tokens[who]}"})  # type: ignore[attr-defined]
    return answer.status, answer.json


def test_the_tokens_user_is_the_caller_checked(svc: Live) -> None:
    admin, bob = remote(svc, "admin"), remote(svc, "bob")
    assert (admin.user, bob.user) == ("admin", "bob")
    admin.create_catalog("main")
    admin.create_database("main.db")
    with pytest.raises(PermissionDenied, match="bob does not have CREATE"):
        bob.create_table("main.db.t", "id INT")
    admin.grant("CREATE", "main.db", "user:bob")
    assert bob.create_table("main.db.t", "id INT").owner == "bob"
    assert [h.user for h in admin.history("main.db.t")] == ["bob"]


def test_a_read_token_only_reads(svc: Live) -> None:
    admin = remote(svc, "admin")
    admin.create_catalog("main")
    admin.grant("USE", "main", "user:reader")
    reader = remote(svc, "reader")
    assert reader.get_catalog("main").name == "main"
    with pytest.raises(Forbidden, match="may only read"):
        reader.create_database("main.x")
    with pytest.raises(Forbidden, match="may only read"):
        reader.grant("OWN", "project", "user:reader")


def test_a_read_token_cannot_send_or_dodge_read_only_on_a_path_check(svc: Live, tmp_path: Any) -> None:
    """The path checks (``check_paths``, ``check_path_write``, ``check_path_read``) run with ``read_only`` set by the
    service from the token, as ``/catalog/ops/check_paths`` does: a read token's governed path write is refused even
    with WRITE FILES, through every check and spelling; a client sending ``read_only`` itself (by keyword or by
    position, either value, either token) is refused; a write token's write and a read token's read still pass."""
    admin = remote(svc, "admin")
    lake = tmp_path / "lake"
    admin.create_location("lake", str(lake))
    for user in ("reader", "bob"):
        for privilege in ("READ FILES", "WRITE FILES"):
            admin.grant(privilege, "location:lake", f"user:{user}")
    reader, bob = remote(svc, "reader"), remote(svc, "bob")
    out = str(lake / "out")
    for dodge in (lambda: reader.check_paths(writes=[out]), lambda: reader.check_paths([], [out]),
                  lambda: reader.check_path_write([out]), lambda: reader.check_paths(reads=[out], writes=[out])):
        with pytest.raises(PermissionDenied, match="a read token may only read"):
            dodge()
    sent: list[dict[str, Any]] = [
        {"method": "check_paths", "kwargs": {"writes": [out], "read_only": False}},
        {"method": "check_paths", "args": [[], [out], None, False]},
        {"method": "check_paths", "kwargs": {"writes": [out], "read_only": True}},
    ]
    for who in ("reader", "bob"):
        for body in sent:
            status, answer = call(svc, body, who)
            assert status == 400 and "read_only is set by the catalog service" in answer["error"]["message"], answer
    with pytest.raises(InvalidArgument, match="read_only is set by the catalog service"):
        reader.check_paths(writes=[out], read_only=False)
    reader.check_path_read([out])
    reader.check_paths(reads=[out])
    bob.check_paths(writes=[out])
    bob.check_path_write([out])
    admin.revoke("WRITE FILES", "location:lake", "user:bob")
    with pytest.raises(PermissionDenied, match="WRITE FILES on location lake"):
        bob.check_path_write([out])
    assert not (lake / "out").exists()  # a check writes no file


@pytest.mark.parametrize("body, error", [
    ({"method": "run", "args": []}, "does not offer the metastore method 'run'"),
    ({"method": "_commit", "args": []}, "does not offer"),
    ({"method": "changes", "args": []}, "does not offer"),  # never ends when following
    ({"method": "close", "args": []}, "does not offer"),
    ({"method": "get_catalog", "args": [{"$dc": "subprocess.Popen", "fields": {"args": ["id"]}}]},
     "not one the catalog service exchanges"),
    ({"method": "get_catalog", "args": [{"$dc": "ushas_catalog.model.names.os.system", "fields": {}}]},
     "unknown value type"),
    ({"method": "get_catalog", "args": [{"$enum": "ushas_catalog.model.names.TableName", "name": "x"}]},
     "is not an enum"),
    ({"method": "list_catalogs", "project": "other"}, "serves project 'default', not 'other'"),
    ({"method": "get_catalog", "args": "main"}, "args must be a list"),
])
def test_what_a_client_cannot_call_or_send(svc: Live, body: dict[str, Any], error: str) -> None:
    status, answer = call(svc, body)
    assert status == 400 and error in answer["error"]["message"], answer


def test_the_codec_round_trips_the_api_values() -> None:
    import datetime as dt
    import uuid

    from ushas_catalog.model.names import TableName
    from ushas_catalog.model.partitions import Partition

    values = [(1, "a"), {("k", 1): {"$x": b"\x00\xff"}}, frozenset({1}), {2}, uuid.uuid4(),
              dt.datetime.now(dt.timezone.utc), dt.date(2024, 1, 1), TableName("c", "d", "t"),
              Partition(values={"dt": "2024-01-01"}, location="/x")]
    assert wire.decode(wire.encode(values)) == values
    with pytest.raises(InvalidArgument, match="cannot be sent"):
        wire.encode(lambda: None)


def test_open_refuses_local_identity_and_an_unreachable_service(svc: Live) -> None:
    with pytest.raises(InvalidArgument, match="takes no user, authorization"):
        Metastore.open(svc.base, token=svc.tokens["admin"], user="root")  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServiceUnreachable, match=f"ushas service at {url} unreachable"):
        Metastore.open(url, token=svc.tokens["admin"])  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="needs the store itself"):
        remote(svc, "admin").run(lambda tr: None)


def test_a_remote_metastore_has_exactly_the_methods_the_service_offers() -> None:
    from ushas_catalog.remote.metastore import SERVED, RemoteMetastore
    from ushas_catalog.service.metastore_call_api import offered_methods

    assert SERVED == offered_methods()
    public = {n for n in dir(Metastore) if not n.startswith("_") and callable(getattr(Metastore, n))}
    assert SERVED <= public  # the embedded API's own names
    assert all(callable(RemoteMetastore.__dict__[n]) for n in SERVED)
    assert "run" not in RemoteMetastore.__dict__ and not hasattr(RemoteMetastore, "metadata")
