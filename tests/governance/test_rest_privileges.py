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
