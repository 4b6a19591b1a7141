"""Roles, grants and their enforcement through the Metastore API (docs/governance.md)."""
from __future__ import annotations

import inspect
from typing import Any, Callable

import pytest

from ushas_catalog.catalog.authorization import RULES, UNGUARDED
from ushas_catalog.errors import InvalidArgument, NotFound, PermissionDenied
from ushas_catalog.governance.principals import principals
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import changes_from_json

SET_K = changes_from_json([{"type": "SetProperty", "property": "k", "value": "v"}])


@pytest.fixture
def admin(store_uri: str) -> Any:
    ms = Metastore.open(store_uri, project="p")  # no identity: the store's administrator
    ms.create_catalog("c")
    ms.create_database(("c", "db"))
    ms.create_table(("c", "db", "t"), schema="a INT, p STRING", partition_by=["p"])
    yield ms
    ms.close()


def as_user(store_uri: str, user: str) -> Metastore:
    return Metastore.open(store_uri, project="p", user=user, authorization=True)


def refused(fn: Callable[[], Any], privilege: str, shown: str) -> PermissionDenied:
    with pytest.raises(PermissionDenied) as info:
        fn()
    assert f"does not have {privilege} on {shown}" in info.value.message, info.value.message
    return info.value


def test_every_public_metastore_call_declares_its_privilege() -> None:
    public = {n for n, v in inspect.getmembers(Metastore) if not n.startswith("_") and callable(v)}
    access = {"grant", "revoke", "grants", "create_role", "drop_role", "grant_role", "revoke_role", "roles",
              "principals_of", "caller", "authorize"}  # check their own privileges (catalog.access)
    assert sorted(public - set(RULES) - UNGUARDED - access) == []


def test_nested_roles_and_groups_expand(admin: Metastore) -> None:
    admin.create_role("analysts")
    admin.create_role("readers")
    admin.grant_role("readers", "role:analysts")   # analysts are readers
    admin.grant_role("analysts", "group:eng")      # eng members are analysts
    admin.grant_role("group:eng", "user:bob")
    got = admin.run(lambda tr: principals(tr, admin.layout, "p", "bob"))
    assert got == {"user:bob", "group:eng", "role:analysts", "role:readers"}
    assert admin.run(lambda tr: principals(tr, admin.layout, "p", "eve")) == {"user:eve"}
    with pytest.raises(InvalidArgument, match="contain each other"):
        admin.grant_role("analysts", "role:readers")  # a cycle
    with pytest.raises(NotFound):
        admin.grant_role("nope", "user:bob")
    admin.drop_role("analysts")
    assert admin.run(lambda tr: principals(tr, admin.layout, "p", "bob")) == {"user:bob", "group:eng"}


def test_grants_are_inherited_downwards_and_revocable(admin: Metastore, store_uri: str) -> None:
    bob = as_user(store_uri, "bob")
    refused(lambda: bob.get_table("c.db.t"), "USE", "table c.db.t")
    admin.create_role("r")
    admin.grant_role("r", "user:bob")
    admin.grant("SELECT", "c", "role:r")  # on the catalog: every table in it
    assert list(bob.list_partitions("c.db.t")) == []
    refused(lambda: bob.add_partitions("c.db.t", [{"p": "x"}]), "MODIFY", "table c.db.t")
    assert admin.revoke("SELECT", "c", "role:r")
    assert not admin.revoke("SELECT", "c", "role:r")  # not granted any more
    refused(lambda: list(bob.list_partitions("c.db.t")), "SELECT", "table c.db.t")
    admin.grant("MODIFY", ("c", "db", "t"), "user:bob")
    bob.add_partitions("c.db.t", [{"p": "x"}])
    assert [h.user for h in admin.history("c.db.t")][0] == "bob"  # the caller's identity on the commit


def test_a_refused_call_writes_nothing_and_is_audited(admin: Metastore, store_uri: str) -> None:
    admin.grant("SELECT", ("c", "db", "t"), "user:bob")
    bob = as_user(store_uri, "bob")
    version = admin.get_table("c.db.t").version
    refused(lambda: bob.alter_table("c.db.t", SET_K), "MANAGE", "table c.db.t")
    refused(lambda: bob.drop_table("c.db.t"), "MANAGE", "table c.db.t")
    refused(lambda: bob.grant("SELECT", ("c", "db", "t"), "user:eve"), "MANAGE", "table c.db.t")
    assert admin.get_table("c.db.t").version == version
    assert [g.principal for g in admin.grants(("c", "db", "t"))] == ["user:bob"]
    denials = [c for c in admin.changes() if c.change == "ACCESS_DENIED"]
    assert [(c.user, c.detail["privilege"]) for c in denials] == [("bob", "MANAGE")] * 3


def test_who_may_grant_and_the_bootstrap(admin: Metastore, store_uri: str) -> None:
    admin.grant("OWN", "project", "user:alice")  # the store's administrator makes the first administrator
    alice, bob = as_user(store_uri, "alice"), as_user(store_uri, "bob")
    alice.grant("MANAGE", ("c", "db"), "user:bob")
    bob.grant("SELECT", ("c", "db", "t"), "user:eve")  # MANAGE on the database: may grant inside it
    refused(lambda: bob.grant("MANAGE", ("c", "db", "t"), "user:eve"), "OWN", "table c.db.t")  # not MANAGE / OWN
    refused(lambda: bob.create_role("x"), "MANAGE", "project p")
    kinds = [(c.change, c.operation) for c in admin.changes() if c.change in ("GRANTED", "REVOKED")]
    assert kinds == [("GRANTED", "GRANT")] * 3


def test_creators_own_what_they_create_and_grants_follow_renames(admin: Metastore, store_uri: str) -> None:
    admin.grant("CREATE", ("c", "db"), "user:bob")
    bob = as_user(store_uri, "bob")
    bob.create_table(("c", "db", "mine"), schema="a INT")
    bob.rename_table("c.db.mine", "c.db.ours")  # OWN: it may
    own = [g for g in admin.grants(("c", "db", "ours")) if not g.inherited_from]
    assert [(g.principal, g.privilege) for g in own] == [("user:bob", "OWN")]
    refused(lambda: bob.drop_table("c.db.t"), "MANAGE", "table c.db.t")  # not what it did not create
    bob.drop_table("c.db.ours")


def test_authorization_off_is_the_default(admin: Metastore, store_uri: str) -> None:
    plain = Metastore.open(store_uri, project="p", user="bob")  # an identity, no authorization
    plain.alter_table("c.db.t", SET_K)
    plain.create_table(("c", "db", "x"), schema="a INT")
    assert admin.history("c.db.x")[0].user == "bob"
    assert not [g for g in admin.grants(("c", "db", "x")) if not g.inherited_from]  # no OWN grant without it


def test_a_cached_policy_costs_one_point_read(admin: Metastore) -> None:
    from ushas_catalog.governance import policy

    admin.grant("SELECT", "c", "user:bob")
    reads: list[tuple[bytes, bytes]] = []

    def counted(tr: Any) -> Any:
        real = tr.get_range

        def get_range(*a: Any, **kw: Any) -> Any:
            reads.append((a[0], a[1]))
            return real(*a, **kw)

        tr.get_range = get_range
        return policy.load(tr, admin.layout, "p")

    admin.run(counted)  # first: the state record and the Access range
    first = len(reads)
    reads.clear()
    p = admin.run(counted)
    assert len(reads) == 1 and first == 2  # then only the state record
    assert p.grants


def test_versioned_objects_are_checked_on_their_database(admin: Metastore, store_uri: str) -> None:
    admin.objects.create("c.db.model", "model", "/m")
    bob = as_user(store_uri, "bob")
    refused(lambda: bob.objects.get("c.db.model"), "USE", "database c.db")
    refused(lambda: bob.objects.create("c.db.other", "file", "/o"), "CREATE", "database c.db")
    admin.grant("USE", ("c", "db"), "user:bob")
    assert bob.objects.get("c.db.model").kind == "model"
    refused(lambda: bob.objects.versions("c.db.model"), "SELECT", "database c.db")
    refused(lambda: bob.objects.add_version("c.db.model", "/m/1"), "MODIFY", "database c.db")
    refused(lambda: bob.objects.drop("c.db.model"), "MANAGE", "database c.db")
    admin.grant("MODIFY", ("c", "db"), "user:bob")
    assert bob.objects.add_version("c.db.model", "/m/1").created_by == "bob"
    assert admin.objects.versions("c.db.model")[0].version == 1


@pytest.mark.parametrize("name", ["c.db.t", ("c", "db", "t"), "TableName", "c.db", "DatabaseName", "c", "CatalogName"])
def test_a_name_object_is_checked_as_the_name_it_is(admin: Metastore, store_uri: str, name: Any) -> None:
    """``history(TableName(...))`` is checked on that table (not on a catalog named like the table), and a
    ``DatabaseName`` / ``CatalogName`` works as its text does."""
    from ushas_catalog.model.names import CatalogName, DatabaseName, TableName

    parse = {"TableName": lambda: TableName.parse("c.db.t"), "DatabaseName": lambda: DatabaseName.parse("c.db"),
             "CatalogName": lambda: CatalogName.parse("c")}
    target = parse[name]() if isinstance(name, str) and name in parse else name
    shown = {3: "table c.db.t", 2: "database c.db", 1: "catalog c"}
    parts = 3 if name in ("c.db.t", ("c", "db", "t"), "TableName") else 2 if name in ("c.db", "DatabaseName") else 1
    bob = as_user(store_uri, "bob")
    refused(lambda: bob.history(target), "SELECT", shown[parts])
    admin.grant("SELECT", {3: "c.db.t", 2: "c.db", 1: "c"}[parts], "user:bob")
    assert bob.history(target)
    bob.close()


def test_a_grant_or_revoke_updates_the_cached_policy_exactly(admin: Metastore, store_uri: str) -> None:
    """A grant or revoke derives the next policy snapshot from the cached one (no re-read of the whole policy
    after a creator's OWN grant): the derived snapshot is what a fresh read returns, a revoke bites on the
    very next call, and a grant whose transaction does not commit is never seen."""
    from ushas_catalog.governance import policy

    def fresh() -> policy.Policy:
        return admin.run(lambda tr: policy.read(tr, admin.layout, "p", policy.load(tr, admin.layout, "p").token))

    def cached() -> policy.Policy:
        return admin.run(lambda tr: policy.load(tr, admin.layout, "p"))

    def derived() -> bool:  # the current state's snapshot is known: loading it reads the state record only
        reads: list[Any] = []

        def counted(tr: Any) -> Any:
            real = tr.get_range
            tr.get_range = lambda *a, **kw: reads.append(a) or real(*a, **kw)
            return policy.load(tr, admin.layout, "p")

        admin.run(counted)
        return len(reads) == 1

    admin.grant("CREATE", ("c", "db"), "user:bob")
    admin.grant("SELECT", ("c", "db"), "user:bob")
    cached()
    bob = as_user(store_uri, "bob")
    bob.create_table(("c", "db", "mine"), schema="a INT")  # its OWN grant, in the create's transaction
    assert derived() and cached() == fresh()
    assert list(bob.list_partitions("c.db.t")) == []
    assert admin.revoke("SELECT", ("c", "db"), "user:bob")
    assert derived() and cached() == fresh()
    refused(lambda: list(bob.list_partitions("c.db.t")), "SELECT", "table c.db.t")  # the next call: refused
    admin.grant("SELECT", ("c", "db", "t"), "user:bob")
    admin.grant("MODIFY", ("c", "db", "t"), "user:bob")
    admin.revoke("MODIFY", ("c", "db", "t"), "user:bob")
    own = [g.privilege for g in admin.grants(("c", "db", "t")) if not g.inherited_from]
    assert cached() == fresh() and own == ["SELECT"]

    class Undone(Exception):
        pass

    def granted_then_failed(tr: Any) -> None:  # a grant whose transaction then fails: nothing to see
        from ushas_catalog.governance import grants
        from ushas_catalog.governance.privileges import Securable

        grants.grant(tr, admin.layout, "p", Securable("project", "p", (policy.PROJECT_ID,)), "OWN", "user:bob",
                     by="user:admin")
        raise Undone()

    with pytest.raises(Undone):
        admin.run(granted_then_failed)
    assert cached() == fresh()
    refused(lambda: bob.drop_table("c.db.t"), "MANAGE", "table c.db.t")  # no OWN on the project
