"""Search shows a caller only the objects it could list (``catalog.listing.listed``): alice's table
``hr.secret.t`` — its comment, column names, tags, properties, creator — is found by no search of bob, who holds
nothing on it, through any surface (the embedded API, the service's metastore call, ``GET /api/v1/search`` with its
totals and facets, ``ushas --uri http://… search``, ``ushas --user bob search``), until alice grants him SELECT on
it, and no longer once she revokes it."""
from __future__ import annotations

import json
from typing import Any, Callable, Iterator
from urllib.parse import quote

import pytest
from bob_may_create import admin_with_bob

from remote_service import make_token

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore

from .live import Live, running

#: what finds alice's table: its comment, a column, a tag, a property, a prefix of the comment, its creator
QUERIES = ("payroll", "salary", "tag:confidential", "confidential", "level=exec", "exec", "payr*",
           "created_by=alice", "field:salary")


@pytest.fixture
def svc(store_uri: str) -> Iterator[Any]:
    admin = admin_with_bob(store_uri)
    admin.grant("CREATE", "project", "user:alice")
    admin.close()
    alice = Metastore.open(store_uri, user="alice", authorization=True)
    alice.create_catalog("hr")
    alice.create_database("hr.secret")
    alice.create_table("hr.secret.t", "salary INT, emp STRING", comment="payroll")
    alice.metadata.tag("hr.secret.t", "confidential")
    alice.metadata.tag("hr.secret.t", "shared")
    alice.metadata.set("hr.secret.t", {"level": "exec"})
    alice.objects.create("hr.secret.model", "model", "s3://hr/models/pay", comment="payroll")  # a versioned object
    bob = Metastore.open(store_uri, user="bob", authorization=True)
    bob.create_table("main.db.mine", "id INT")
    bob.metadata.tag("main.db.mine", "shared")  # a tag both tables carry: counts and facets must not tell
    bob.close()
    tokens = {who: make_token(store_uri, "write", who)[1] for who in ("alice", "bob")}
    for live in running(store_uri, authorization=True):
        live.tokens = tokens  # type: ignore[attr-defined]
        live.alice = alice  # type: ignore[attr-defined]
        yield live
    alice.close()


def _embedded(store_uri: str) -> Callable[[str], list[str]]:
    def names(q: str) -> list[str]:
        bob = Metastore.open(store_uri, user="bob", authorization=True)
        try:
            page = bob.search(q)
            assert page.total == len(page.hits)
            return [h.name for h in page.hits]
        finally:
            bob.close()
    return names


def _metastore_call(svc: Live) -> Callable[[str], list[str]]:
    def names(q: str) -> list[str]:
        bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
        page = bob.search(q)
        assert page.total == len(page.hits)
        return [h.name for h in page.hits]
    return names


def _rest(svc: Live) -> Callable[[str], list[str]]:
    def names(q: str) -> list[str]:
        answer = svc.get(f"/api/v1/search?q={quote(q)}",
                         headers={"Authorization": f"Bearer {svc.tokens['bob']}"})  # type: ignore[attr-defined]
        assert answer.status == 200, answer.json
        body = answer.json
        hits = [h["name"] for h in body["hits"]]
        assert body["total"] == len(hits) == body["facets_over"]
        assert sum(body["facets"]["kind"].values()) == len(hits)
        if not any(h.startswith("hr.") for h in hits):  # nothing of alice's table anywhere in the answer
            assert "alice" not in body["facets"]["owner"] and "hr.secret" not in json.dumps(body), body
        return hits
    return names


def _cli(svc: Live, capsys: pytest.CaptureFixture[str]) -> Callable[[str], list[str]]:
    def names(q: str) -> list[str]:
        capsys.readouterr()
        assert main(["--uri", svc.base, "--token", svc.tokens["bob"], "--json", "search", q]) == 0  # type: ignore[attr-defined]
        page = json.loads(capsys.readouterr().out)
        assert page["total"] == len(page["hits"])
        return [h["name"] for h in page["hits"]]
    return names


def _local_cli(store_uri: str, capsys: pytest.CaptureFixture[str]) -> Callable[[str], list[str]]:
    def names(q: str) -> list[str]:
        capsys.readouterr()
        assert main(["--uri", store_uri, "--user", "bob", "--json", "search", q]) == 0, capsys.readouterr().err
        page = json.loads(capsys.readouterr().out)
        assert page["total"] == len(page["hits"])
        return [h["name"] for h in page["hits"]]
    return names


def _surfaces(svc: Live, store_uri: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Callable[[str], list[str]]]:
    return {"embedded": _embedded(store_uri), "metastore call": _metastore_call(svc), "REST": _rest(svc),
            "CLI --uri": _cli(svc, capsys), "CLI --user": _local_cli(store_uri, capsys)}


def test_bob_finds_nothing_of_alices_table_on_any_surface(svc: Live, store_uri: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    surfaces = _surfaces(svc, store_uri, capsys)
    for surface, names in surfaces.items():
        for q in QUERIES:
            found = names(q)
            assert not [n for n in found if n.startswith("hr.")], (surface, q, found)
        assert names("tag:shared") == ["main.db.mine"], surface  # his own table: found, and counted alone
    # alice (and any caller whose calls are not checked) still finds her table
    assert sorted(h.name for h in svc.alice.search("payroll").hits) == ["hr.secret.model", "hr.secret.t"]  # type: ignore[attr-defined]
    admin = Metastore.open(store_uri)
    try:
        assert {h.name for h in admin.search("tag:shared").hits} == {"main.db.mine", "hr.secret.t"}
    finally:
        admin.close()


def test_a_grant_shows_the_table_and_its_revoke_hides_it_again(svc: Live, store_uri: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    surfaces = _surfaces(svc, store_uri, capsys)
    alice = svc.alice  # type: ignore[attr-defined]
    alice.grant("SELECT", "hr.secret.t", "user:bob")
    for surface, names in surfaces.items():
        # the versioned object is governed by its database, which a privilege inside it lets him see (USE)
        assert sorted(names("payroll")) == ["hr.secret.model", "hr.secret.t"], surface
        assert names("salary") == ["hr.secret.t"], surface
        assert sorted(names("tag:shared")) == ["hr.secret.t", "main.db.mine"], surface
        # a privilege inside the catalog and the database lets him see those two as well (as listings do)
        assert sorted(names("created_by=alice")) == ["hr", "hr.secret", "hr.secret.model", "hr.secret.t"], surface
    alice.revoke("SELECT", "hr.secret.t", "user:bob")
    for surface, names in surfaces.items():
        for q in QUERIES:
            assert not [n for n in names(q) if n.startswith("hr")], (surface, q)
        assert names("tag:shared") == ["main.db.mine"], surface


def test_a_column_search_hides_the_columns_of_a_table_bob_cannot_see(svc: Live) -> None:
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    assert bob.search("salary", types=["column"]).total == 0
    assert bob.search("id", types=["column"]).to_json()["hits"][0]["name"] == "main.db.mine.id"
    svc.alice.grant("USE", "hr.secret", "user:bob")  # type: ignore[attr-defined]  # the database: all in it
    assert [h.name for h in bob.search("salary", types=["column"]).hits] == ["hr.secret.t.salary"]
