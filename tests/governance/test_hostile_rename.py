"""Privileges are checked where objects arrive (docs/governance.md, "Renames"): renaming a table or view
into another database needs CREATE on that database and OWN on the relation (the target database's grants
then apply to it: MANAGE must not become OWN by moving a table into one's own database); a refusal writes
nothing but its audit event, and names the privilege and the object. A rename inside a database needs
MANAGE, as before."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from ushas_catalog.errors import PermissionDenied
from ushas_catalog.metastore import Metastore

C = "c"


@pytest.fixture
def admin(store_uri: str) -> Any:
    ms = Metastore.open(store_uri, project="p")
    ms.create_catalog(C)
    for db in ("src", "mine", "theirs"):
        ms.create_database((C, db))
    ms.create_table((C, "src", "t"), schema="id INT")
    ms.create_view((C, "src", "v"), "SELECT 1 AS x", schema="x INT")
    yield ms
    ms.close()


def _keys(ms: Metastore) -> dict[bytes, bytes]:
    begin, end = ms.layout.project(ms.project).range()
    return {bytes(kv.key): bytes(kv.value) for kv in ms.db.run(lambda tr: list(tr.get_range(begin, end)))
            if "ChangeFeed" not in ms.layout.keyspace.parse(bytes(kv.key)).directory_names}


Grants = list[tuple[str, tuple[str, ...]]]
#: (case, bob's grants, the rename, the privilege and object a refusal names; "" when allowed)
CASES: list[tuple[str, Grants, Callable[[Metastore], Any], str]] = [
    ("into a database where bob only reads", [("MANAGE", (C, "src", "t")), ("SELECT", (C, "theirs"))],
     lambda m: m.rename_table((C, "src", "t"), (C, "theirs", "t")), "CREATE on database c.theirs"),
    ("MANAGE into bob's own database", [("MANAGE", (C, "src", "t")), ("OWN", (C, "mine"))],
     lambda m: m.rename_table((C, "src", "t"), (C, "mine", "t")), "OWN on table c.src.t"),
    ("MANAGE and CREATE on the target", [("MANAGE", (C, "src", "t")), ("CREATE", (C, "theirs"))],
     lambda m: m.rename_table((C, "src", "t"), (C, "theirs", "t")), "OWN on table c.src.t"),
    ("a view into bob's own database", [("MANAGE", (C, "src", "v")), ("OWN", (C, "mine"))],
     lambda m: m.rename_view((C, "src", "v"), (C, "mine", "v")), "OWN on view c.src.v"),
    ("OWN and CREATE on the target", [("OWN", (C, "src", "t")), ("CREATE", (C, "theirs"))],
     lambda m: m.rename_table((C, "src", "t"), (C, "theirs", "t")), ""),
    ("MANAGE inside its database", [("MANAGE", (C, "src", "t"))],
     lambda m: m.rename_table((C, "src", "t"), (C, "src", "t2")), ""),
]


@pytest.mark.parametrize("case, grants, rename, refusal", CASES, ids=[c[0] for c in CASES])
def test_rename_checks_the_target(admin: Metastore, store_uri: str, case: str, grants: Grants,
                                  rename: Callable[[Metastore], Any], refusal: str) -> None:
    for privilege, obj in grants:
        admin.grant(privilege, obj, "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        if not refusal:
            rename(bob)
            return
        before = _keys(admin)
        cursor = list(admin.changes())[-1].cursor
        with pytest.raises(PermissionDenied, match=f"User bob does not have {refusal}"):
            rename(bob)
        assert _keys(admin) == before, case
        events = list(admin.changes(cursor))
        assert [e.change for e in events] == ["ACCESS_DENIED"] and events[0].user == "bob", case
    finally:
        bob.close()
