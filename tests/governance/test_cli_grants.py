"""``ushas grant / revoke / grants / roles`` and ``--user``: a table-driven privilege matrix through the CLI
(allowed: exit 0; refused: one line naming the privilege and the object, exit 2, nothing written)."""
from __future__ import annotations

from typing import Any

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore


@pytest.fixture
def store(store_uri: str) -> str:
    ms = Metastore.open(store_uri, project="p")
    ms.create_catalog("c")
    ms.create_database(("c", "db"))
    ms.create_table(("c", "db", "t"), schema="a INT, p STRING", partition_by=["p"])
    ms.close()
    return store_uri


def ushas(uri: str, *argv: str, user: str | None = None) -> int:
    return main(["--uri", uri, "--project", "p", *(["--user", user] if user else []), *argv])


#: (operation, argv, the privilege it needs on c.db.t)
OPERATIONS = [
    ("describe", ["describe", "c.db.t"], "USE"),
    ("partitions", ["partitions", "c.db.t"], "SELECT"),
    ("history", ["history", "c.db.t"], "SELECT"),
    ("tag", ["meta", "tag", "c.db.t", "pii"], "MANAGE"),
    ("grant", ["grant", "SELECT", "ON", "TABLE", "c.db.t", "TO", "user:eve"], "MANAGE"),
    ("drop", ["drop", "c.db.t"], "MANAGE"),
]


@pytest.mark.parametrize("privilege", [None, "USE", "SELECT", "MODIFY", "MANAGE", "OWN"], ids=lambda p: p or "none")
def test_cli_privilege_matrix(store: str, privilege: str | None, capsys: Any) -> None:
    if privilege is not None:
        assert ushas(store, "grant", privilege, "ON", "c.db.t", "TO", "user:bob") == 0
    capsys.readouterr()
    for op, argv, needs in OPERATIONS:
        allowed = privilege is not None and (privilege in ("OWN", needs) or needs == "USE")
        rc = ushas(store, *argv, user="bob")
        err = capsys.readouterr().err
        if allowed:
            assert rc == 0, (op, err)
        else:
            assert rc == 2, (op, err)
            assert err.startswith("ushas: PermissionDenied: User bob does not have ") and "c.db.t" in err, err
            assert err.count("\n") == 1
    ms = Metastore.open(store, project="p")
    exists = ms.table_exists(("c", "db", "t"))
    assert exists == (privilege not in ("MANAGE", "OWN"))  # drop went through only with MANAGE / OWN
    ms.close()


def test_grant_revoke_grants_and_roles(store: str, capsys: Any) -> None:
    assert ushas(store, "roles", "create", "analysts") == 0
    assert ushas(store, "roles", "add", "analysts", "user:bob") == 0
    assert ushas(store, "grant", "select", "ON", "db", "TO", "role:analysts", "--catalog", "c") == 0
    assert ushas(store, "grant", "OWN", "ON", "PROJECT", "TO", "user:alice") == 0
    capsys.readouterr()
    assert ushas(store, "--json", "grants", "c.db.t") == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    assert {(r["principal"], r["privilege"], r["inherited_from"]) for r in rows} == {
        ("role:analysts", "SELECT", "database c.db"), ("user:alice", "OWN", "project p")}
    assert ushas(store, "--json", "whoami", user="bob") == 0
    assert json.loads(capsys.readouterr().out)["principals"] == ["role:analysts", "user:bob"]
    assert ushas(store, "partitions", "c.db.t", user="bob") == 0
    assert ushas(store, "revoke", "SELECT", "ON", "DATABASE", "c.db", "FROM", "role:analysts") == 0
    assert ushas(store, "partitions", "c.db.t", user="bob") == 2
    assert ushas(store, "roles", "create", "x", user="alice") == 0  # OWN on the project: an administrator
    assert ushas(store, "lineage", "runs", "c.db.t", user="bob") == 2  # lineage needs SELECT on the project
    capsys.readouterr()
    for bad in (["grant", "SELECT", "c.db.t", "TO", "user:bob"], ["grant", "FLY", "ON", "c", "TO", "user:bob"],
                ["grant", "SELECT", "ON", "c", "TO", "bob"], ["grant", "SELECT", "ON", "TABLE", "c.db", "TO", "user:b"]):
        assert ushas(store, *bad) == 2
        assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("argv, needed", [(argv, need) for _, argv, need in OPERATIONS])
def test_a_refusal_says_how_to_allow_the_call(store: str, argv: list[str], needed: str, capsys: Any) -> None:
    """The refusal names the privilege and the grant that allows it; granting exactly that lets the call
    through (issue 36: a newcomer must not be sent after USE when SELECT is what is missing)."""
    assert ushas(store, *argv, user="bob") == 2
    err = capsys.readouterr().err
    hint = err.strip().rpartition("an owner allows it with: ")[2]
    assert hint.startswith("ushas grant ") and hint.endswith(" TO user:bob"), err
    if needed == "USE":
        assert "USE comes with any privilege on it, or on an object inside it" in err
    assert ushas(store, *hint.split()[1:]) == 0  # the grant it names, run by the owner
    capsys.readouterr()
    # after granting what each refusal named, the call goes through (at most one refusal per level)
    for _ in range(3):
        if ushas(store, *argv, user="bob") == 0:
            break
        hint = capsys.readouterr().err.strip().rpartition("an owner allows it with: ")[2]
        assert ushas(store, *hint.split()[1:]) == 0
    else:
        raise AssertionError(f"{argv}: still refused after granting what the refusals named")
