"""``ushas serve --authorization``: every API request is checked as its token's user (``anonymous``
without one); a refusal is HTTP 403 with ``{"error": {"type": "PermissionDenied", ...}}`` and writes
nothing. A table-driven matrix over a live service on a free port."""
from __future__ import annotations

from typing import Iterator

import pytest

from ushas_catalog.metastore import Metastore
from ushas_catalog.service.tokens import TokenStore

from service.live import Live, running

D = "/api/v1/catalogs/c/databases/db"


@pytest.fixture
def served(store_uri: str) -> Iterator[tuple[Live, dict[str, str]]]:
    ms = Metastore.open(store_uri, project="default")
    ms.create_catalog("c")
    ms.create_database(("c", "db"))
    ms.create_table(("c", "db", "t"), schema="a INT, p STRING", partition_by=["p"])
    tokens = {user: TokenStore(ms).create("write", user)[1] for user in ("bob", "alice")}
    ms.grant("OWN", "project", "user:alice")
    ms.close()
    for live in running(store_uri, authorization=True):
        yield live, tokens


#: (operation, method, path, body, the privilege it needs on c.db.t)
OPERATIONS = [
    ("table", "GET", D + "/tables/t", None, "USE"),
    ("tables", "GET", D + "/tables", None, "USE"),
    ("partitions", "GET", D + "/tables/t/partitions", None, "SELECT"),
    ("history", "GET", D + "/tables/t/history", None, "SELECT"),
    ("tag", "POST", "/api/v1/metadata/tags?catalog=c&database=db&table=t", {"tags": ["pii"]}, "MANAGE"),
]


@pytest.mark.parametrize("privilege", [None, "USE", "SELECT", "MANAGE", "OWN"], ids=lambda p: p or "none")
def test_rest_privilege_matrix(served: tuple[Live, dict[str, str]], store_uri: str, privilege: str | None) -> None:
    live, tokens = served
    if privilege is not None:
        ms = Metastore.open(store_uri)
        ms.grant(privilege, ("c", "db", "t"), "user:bob")
        ms.close()
    bob = {"Authorization": f"Bearer {tokens['bob']}"}
    for op, method, path, body, needs in OPERATIONS:
        answer = live.request(method, path, body, headers=bob)
        allowed = privilege is not None and (privilege in ("OWN", needs) or needs == "USE"
                                             or (op == "tables" and privilege is not None))
        if allowed:
            assert answer.status in (200, 201), (op, answer.status, answer.body)
        else:
            assert answer.status == 403, (op, answer.status, answer.body)
            error = answer.json["error"]
            assert error["type"] == "PermissionDenied" and "User bob does not have" in error["message"], error
    ms = Metastore.open(store_uri)
    tags = ms.metadata.get(("c", "db", "t")).user.tags
    assert ("pii" in tags) == (privilege in ("MANAGE", "OWN"))
    ms.close()


def test_anonymous_and_administrators(served: tuple[Live, dict[str, str]]) -> None:
    live, tokens = served
    denied = live.get(D + "/tables/t")  # loopback reads need no token: they are anonymous's
    assert denied.status == 403 and "User anonymous does not have USE" in denied.json["error"]["message"]
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    assert live.get(D + "/tables/t", headers=alice).status == 200
    assert live.get("/api/v1/lineage/datasets", headers=alice).status == 200
    assert live.get("/api/v1/lineage/datasets", headers={"Authorization": f"Bearer {tokens['bob']}"}).status == 403
    catalogs = live.get("/api/v1/catalogs", headers=alice).json
    assert catalogs["items"][0]["name"] == "c", catalogs


#: the lineage extension's routes (lineage.plugin, registered through ushas_catalog.extensions): the reads need
#: SELECT on the project, the OpenLineage receiver MODIFY, checked before anything of the request is read
LINEAGE_ROUTES = [("GET", "/api/v1/lineage/datasets"), ("GET", "/api/v1/lineage/graph?node=c.db.t"),
                  ("GET", "/api/v1/lineage/tables?node=c.db.t"), ("GET", "/api/v1/lineage/impact?node=c.db.t.a"),
                  ("GET", "/api/v1/runs"), ("GET", "/api/v1/runs/abcd1234"), ("POST", "/api/v1/lineage")]


def test_the_lineage_extensions_routes_are_checked(served: tuple[Live, dict[str, str]], store_uri: str) -> None:
    """Served by an extension, the lineage routes are refused as the catalog's are: to a user with every
    privilege on the table but none on the project, and to anonymous, whatever the arguments."""
    live, tokens = served
    ms = Metastore.open(store_uri)
    ms.grant("OWN", ("c", "db", "t"), "user:bob")
    ms.close()
    for headers, who in (({"Authorization": f"Bearer {tokens['bob']}"}, "bob"), ({}, "anonymous")):
        for method, path in LINEAGE_ROUTES:
            answer = live.request(method, path, {"eventType": "COMPLETE"} if method == "POST" else None,
                                  headers=headers)
            assert answer.status in (401, 403), (who, path, answer.status, answer.body)
            if answer.status == 403:
                error = answer.json["error"]
                assert error["type"] == "PermissionDenied" and f"User {who} does not have" in error["message"], \
                    (path, error)
                assert ("MODIFY" if method == "POST" else "SELECT") in error["message"], (path, error)
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    assert live.get("/api/v1/lineage/datasets", headers=alice).json["items"] == []
    assert live.get("/api/v1/runs", headers=alice).json["items"] == []


@pytest.mark.parametrize("path", ["/api/v1/metadata/tags?catalog=c&database=db&table=t",
                                  "/api/v1/metadata/owner?catalog=c&database=db&table=t",
                                  "/api/v1/lineage"])
@pytest.mark.parametrize("depth", [65, 100_000])
def test_deeply_nested_bodies_are_bad_requests(served: tuple[Live, dict[str, str]], store_uri: str, path: str,
                                               depth: int) -> None:
    """A body nested past what the API takes (or past the parser's recursion) is a 400, never a 500, and
    writes nothing."""
    live, tokens = served
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    raw = ('{"tags": ' + "[" * depth + "]" * depth + "}").encode()
    answer = live.request("POST" if "owner" not in path else "PUT", path, headers=alice, raw=raw)
    assert answer.status == 400, (answer.status, answer.body[:300])
    assert answer.json["error"]["type"] == "InvalidArgument" and "nest" in answer.json["error"]["message"]
    ms = Metastore.open(store_uri)
    assert ms.metadata.get(("c", "db", "t")).user.tags == [] or not ms.metadata.get(("c", "db", "t")).user.tags
    ms.close()


def test_the_owner_sets_an_owner(served: tuple[Live, dict[str, str]], store_uri: str) -> None:
    """OWN on the project allows what MANAGE on a table allows through REST too (PUT /metadata/owner);
    without MANAGE it is a 403 naming it."""
    live, tokens = served
    path = "/api/v1/metadata/owner?catalog=c&database=db&table=t"
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    answer = live.request("PUT", path, {"owner": "carol"}, headers=alice)
    assert answer.status == 200, answer.body
    bob = {"Authorization": f"Bearer {tokens['bob']}"}
    answer = live.request("PUT", path, {"owner": "bob"}, headers=bob)
    assert answer.status == 403 and "User bob does not have USE" in answer.json["error"]["message"], answer.body
    ms = Metastore.open(store_uri)
    assert ms.get_table(("c", "db", "t")).owner == "carol"
    ms.close()
