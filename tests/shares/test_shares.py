"""Shares between projects through the Python API and the CLI (no Spark): what a recipient sees, what it
cannot reach, writes refused, revocation at the next call, renames and drops followed by id, hostile
names, audit in the change feed, lineage across the share."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from ushas_catalog.errors import (CatalogAlreadyExists, InvalidArgument, NoSuchCatalog, NoSuchNamespace, NoSuchShare, NoSuchTable,
                                  ShareCatalog, ShareReadOnly)
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty

#: a catalog, database and table names no parser should trip on
CAT, DB = "mä.in", "sa`les"
HOSTILE = ["or.ders", "it's", "`x`", "表", "weird name"]


def q(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


@pytest.fixture
def owner(store_uri: str, tmp_path: Path) -> Iterator[Any]:
    ms = Metastore.open(store_uri, project="acme.corp", user="alice")
    ms.create_catalog(q(CAT))
    for db in (DB, "secret"):
        ms.create_database((CAT, db))
    for t in HOSTILE:
        ms.create_table((CAT, DB, t), "id bigint, dt string", partition_by=["dt"], location=str(tmp_path / t))
    ms.create_table((CAT, "secret", "keys"), "k string", location=str(tmp_path / "keys"))
    ms.create_view((CAT, DB, "v"), f"SELECT * FROM {q(CAT)}.{q(DB)}.{q('or.ders')}", "id bigint, dt string")
    yield ms
    ms.close()


@pytest.fixture
def recipient(store_uri: str) -> Iterator[Any]:
    ms = Metastore.open(store_uri, project="beta", user="bob")
    yield ms
    ms.close()


def shared(owner: Any, recipient: Any, *objects: str, share: str = "s1") -> Any:
    owner.shares.create(share, "for beta")
    for o in objects:
        owner.shares.add(share, o)
    owner.shares.grant(share, "project:beta")
    recipient.shares.mount(f"{q('acme.corp')}.{share}", "partner")
    return recipient.shares.open("partner")


def test_a_shared_table_reads_and_nothing_else_is_reachable(owner: Any, recipient: Any) -> None:
    view = shared(owner, recipient, f"{q(CAT)}.{q(DB)}.{q('or.ders')}", f"{q(CAT)}.{q(DB)}.{q('表')}")
    assert [d.name for d in view.list_databases("partner")] == [DB]
    assert sorted(t.name for t in view.list_tables(("partner", DB))) == ["or.ders", "表"]
    t = view.get_table(("partner", DB, "or.ders"))
    assert t.id == owner.get_table((CAT, DB, "or.ders")).id  # the owner's table, not a copy
    assert view.list_views(("partner", DB)) == []
    # unshared objects: by name in the share catalog, by the owner's catalog name, by a recipient's own name
    for name in [("partner", DB, "it's"), ("partner", DB, "v"), ("partner", "secret", "keys")]:
        with pytest.raises((NoSuchTable, NoSuchNamespace)):
            view.get_table(name)
    with pytest.raises(NoSuchCatalog):
        view.get_table((CAT, DB, "or.ders"))
    assert view.list_catalogs() == []  # the owner's catalogs are not names of the share
    for whole_project in (view.changes, view.search):
        with pytest.raises(ShareReadOnly):
            whole_project("x")
    assert not view.database_exists(("partner", "secret"))
    # the recipient's own objects of the same names are its own, untouched by the share
    recipient.create_catalog(q(CAT))
    recipient.create_database((CAT, DB))
    assert recipient.list_tables((CAT, DB)) == []
    # nothing of the owner is copied into the recipient: only the mount's catalog entry
    assert [c.name for c in recipient.list_catalogs()] == [CAT]  # a mount is not one of its catalogs
    assert recipient.shares.mounts() == [{"catalog": "partner", "share": "`acme.corp`.s1"}]
    with pytest.raises(ShareCatalog):
        recipient.get_table(("partner", DB, "or.ders"))  # the project's own API names the mount as such


def test_every_write_through_a_share_is_refused_and_writes_nothing(owner: Any, recipient: Any) -> None:
    view = shared(owner, recipient, f"{q(CAT)}.{q(DB)}")
    t = (("partner", DB, "or.ders"))
    before = owner.get_table((CAT, DB, "or.ders")).version
    attempts = [lambda: view.create_table(("partner", DB, "new"), "a int"),
                lambda: view.drop_table(t),
                lambda: view.rename_table(t, ("partner", DB, "renamed")),
                lambda: view.alter_table(t, [SetProperty("k", "v")]),
                lambda: view.add_partitions(t, [{"dt": "x"}]),
                lambda: view.create_database(("partner", "newdb")),
                lambda: view.drop_database(("partner", DB), cascade=True),
                lambda: view.alter_catalog("partner", comment="mine")]
    for attempt in attempts:
        with pytest.raises(ShareReadOnly):
            attempt()
    assert owner.get_table((CAT, DB, "or.ders")).version == before
    assert [t.name for t in owner.list_tables((CAT, DB))] == sorted(HOSTILE)


def test_a_whole_database_shows_tables_created_later_and_follows_renames(owner: Any, recipient: Any) -> None:
    view = shared(owner, recipient, f"{q(CAT)}.{q(DB)}")
    owner.create_table((CAT, DB, "later"), "a int")
    assert "later" in [t.name for t in view.list_tables(("partner", DB))]
    owner.rename_table((CAT, DB, "later"), (CAT, DB, "later2"))
    assert view.get_table(("partner", DB, "later2")).name == "later2"
    owner.alter_database((CAT, DB), comment="renames follow")  # by id: the share is unchanged
    assert view.get_database(("partner", DB)).comment == "renames follow"


def test_a_shared_table_renamed_dropped_and_undropped(owner: Any, recipient: Any) -> None:
    view = shared(owner, recipient, f"{q(CAT)}.{q(DB)}.{q('`x`')}")
    owner.rename_table((CAT, DB, "`x`"), (CAT, DB, "y.z"))
    assert [t.name for t in view.list_tables(("partner", DB))] == ["y.z"]
    assert owner.shares.show("s1").objects[0].name == f"{q(CAT)}.{q(DB)}.{q('y.z')}"
    owner.drop_table((CAT, DB, "y.z"))
    assert view.list_tables(("partner", DB)) == []
    (obj,) = owner.shares.show("s1").objects
    assert obj.status == "dropped"
    with pytest.raises(NoSuchTable):  # a dropped table cannot be added by name
        owner.shares.add("s1", f"{q(CAT)}.{q(DB)}.{q('y.z')}")
    # a new table under the dropped one's name is NOT shared (a share holds ids, not names)
    owner.create_table((CAT, DB, "y.z"), "a int")
    with pytest.raises(NoSuchTable):
        view.get_table(("partner", DB, "y.z"))
    owner.drop_table((CAT, DB, "y.z"), purge=True)
    owner.undrop_table((CAT, DB, "y.z"))
    assert view.get_table(("partner", DB, "y.z")).id == obj.table_id
    owner.shares.remove("s1", obj.table_id)  # by id, as for a table that cannot be named
    assert owner.shares.show("s1").objects == []


def test_revoke_remove_and_drop_take_effect_at_the_next_call(owner: Any, recipient: Any) -> None:
    view = shared(owner, recipient, f"{q(CAT)}.{q(DB)}.{q('or.ders')}", f"{q(CAT)}.{q(DB)}.{q('表')}")
    assert view.get_table(("partner", DB, "or.ders"))
    owner.shares.remove("s1", f"{q(CAT)}.{q(DB)}.{q('or.ders')}")
    with pytest.raises(NoSuchTable):
        view.get_table(("partner", DB, "or.ders"))
    assert view.get_table(("partner", DB, "表"))
    owner.shares.revoke("s1", "project:beta")
    with pytest.raises(NoSuchShare):
        view.get_table(("partner", DB, "表"))
    with pytest.raises(NoSuchShare):
        view.list_databases("partner")
    owner.shares.grant("s1", "beta")
    assert view.get_table(("partner", DB, "表"))
    owner.shares.drop("s1")
    with pytest.raises(NoSuchShare):
        view.get_table(("partner", DB, "表"))
    # a share of the same name made again is not granted to anyone: still nothing
    owner.shares.create("s1")
    with pytest.raises(NoSuchShare):
        view.get_table(("partner", DB, "表"))


def test_a_project_cannot_mount_what_is_not_granted_to_it(owner: Any, recipient: Any, store_uri: str) -> None:
    owner.shares.create("s1")
    owner.shares.add("s1", f"{q(CAT)}.{q(DB)}")
    with pytest.raises(NoSuchShare) as missing:
        recipient.shares.mount("`acme.corp`.nothere", "p")
    with pytest.raises(NoSuchShare) as ungranted:
        recipient.shares.mount("`acme.corp`.s1", "p")
    assert str(missing.value).replace("nothere", "s1") == str(ungranted.value)  # existence is not disclosed
    owner.shares.grant("s1", "project:beta")
    recipient.shares.mount("`acme.corp`.s1", "p")
    other = Metastore.open(store_uri, project="gamma")
    with pytest.raises(NoSuchShare):  # another project cannot use beta's grant
        other.shares.mount("`acme.corp`.s1", "p")
    with pytest.raises(InvalidArgument):
        owner.shares.grant("s1", "user:bob")  # shares go to projects
    with pytest.raises(InvalidArgument):
        owner.shares.grant("s1", "project:acme.corp")  # not to its owner
    other.close()


def test_a_share_holds_objects_of_one_catalog_and_no_views(owner: Any) -> None:
    owner.create_catalog("other")
    owner.create_database("other.db")
    owner.shares.create("s1")
    owner.shares.add("s1", f"{q(CAT)}.{q(DB)}")
    with pytest.raises(InvalidArgument):
        owner.shares.add("s1", "other.db")
    with pytest.raises(NoSuchTable):
        owner.shares.add("s1", f"{q(CAT)}.{q(DB)}.v")  # a view is not a table


def test_share_changes_are_in_the_change_feed_and_the_system_table(owner: Any, recipient: Any) -> None:
    shared(owner, recipient, f"{q(CAT)}.{q(DB)}.{q('or.ders')}")
    owner.shares.revoke("s1", "beta")
    owner.shares.drop("s1")
    events = [(c.kind, c.operation, c.name, c.user) for c in owner.changes() if c.kind == "share"]
    assert events == [("share", op, "s1", "alice") for op in
                      ("CREATE SHARE", "ADD TO SHARE", "GRANT SHARE", "REVOKE SHARE", "DROP SHARE")]
    grant = [c for c in owner.changes() if c.operation == "GRANT SHARE"][0]
    assert grant.detail == {"object": "project:beta"} and grant.after["recipients"] == ["beta"]
    assert [(c.operation, c.name) for c in recipient.changes()] == [("MOUNT SHARE", "partner")]


def test_a_recipient_run_keeps_the_owner_table_as_its_input(owner: Any, recipient: Any, store_uri: str) -> None:
    from lineage.model import Dataset
    from lineage.store import CapturedRun
    from lineage.tables import open_lineage_store

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from capture.pipeline import T1, run  # noqa: E402 - the lineage tests' run builder

    shared(owner, recipient, f"{q(CAT)}.{q(DB)}.{q('or.ders')}")
    read = Dataset.table("partner", DB, "or.ders")
    store = open_lineage_store(store_uri, "beta", {"partner": "partner"})
    captured = CapturedRun(run(1, T1), reads=(read,), writes=())
    store.record(captured)
    tid = owner.get_table((CAT, DB, "or.ders")).id
    ((access, ref),) = store.run_datasets(captured.run.run_id)
    assert (access.value, str(ref.key), ref.name) == ("read", tid, read.name)  # the owner's table, by its id
    store.close()
    (use,) = owner.shares.usage("s1")
    assert (use["project"], use["table_id"], use["access"]) == ("beta", tid, "read")


def test_the_cli(owner: Any, store_uri: str) -> None:
    def ushas(project: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", store_uri, "--project", project,
                               *args], capture_output=True, text=True, timeout=60)

    assert ushas("acme.corp", "shares", "create", "s1", "--comment", "x").returncode == 0
    table = ".".join(q(p) for p in (CAT, DB, "it's"))
    assert ushas("acme.corp", "shares", "add", "s1", table).returncode == 0
    assert ushas("acme.corp", "shares", "grant", "s1", "project:beta").returncode == 0
    shown = json.loads(ushas("acme.corp", "--json", "shares", "show", "s1").stdout)
    assert shown["recipients"] == ["beta"] and [o["status"] for o in shown["objects"]] == ["live"]
    assert ushas("beta", "shares", "mount", "`acme.corp`.s1", "AS", "partner").returncode == 0
    tables = json.loads(ushas("beta", "--json", "shares", "tables", "partner").stdout)
    assert [(t["database"], t["table"]) for t in tables] == [(DB, "it's")]
    refused = ushas("gamma", "shares", "mount", "`acme.corp`.s1", "AS", "p")
    assert refused.returncode != 0 and "not shared with project 'gamma'" in refused.stderr
    for project in ("acme.corp", "beta"):  # shares and mounts are what the integrity check expects
        assert ushas(project, "check").returncode == 0, ushas(project, "check").stdout
    assert ushas("acme.corp", "shares", "revoke", "s1", "project:beta").returncode == 0
    gone = ushas("beta", "shares", "tables", "partner")
    assert gone.returncode != 0 and "NoSuchShare" in gone.stderr


def test_with_authorization_the_recipient_project_grants_decide(owner: Any, store_uri: str) -> None:
    from ushas_catalog.errors import PermissionDenied

    admin = Metastore.open(store_uri, project="beta", user="admin")
    shared(owner, admin, f"{q(CAT)}.{q(DB)}.{q('or.ders')}")
    bob = Metastore.open(store_uri, project="beta", user="bob", authorization=True)
    with pytest.raises(PermissionDenied):
        bob.shares.open("partner").get_table(("partner", DB, "or.ders"))
    with pytest.raises(PermissionDenied):
        bob.shares.mount("`acme.corp`.s1", "mine")  # mounting needs CREATE on the project
    with pytest.raises(PermissionDenied):
        Metastore.open(store_uri, project="acme.corp", user="eve", authorization=True).shares.grant("s1", "gamma")
    for privilege in ("USE", "SELECT"):
        admin.grant(privilege, "project", "user:bob")
    assert bob.shares.open("partner").get_table(("partner", DB, "or.ders")).name == "or.ders"
    admin.close()
    bob.close()


def test_a_mount_may_take_the_owners_catalog_name(owner: Any, recipient: Any) -> None:
    owner.shares.create("s1")
    owner.shares.add("s1", f"{q(CAT)}.{q(DB)}.{q('weird name')}")
    owner.shares.grant("s1", "project:beta")
    recipient.shares.mount("`acme.corp`.s1", q(CAT))  # the mount is named like the owner's catalog
    view = recipient.shares.open(q(CAT))
    assert [t.name for t in view.list_tables((CAT, DB))] == ["weird name"]
    with pytest.raises(NoSuchTable):
        view.get_table((CAT, DB, "or.ders"))  # the same name as the owner's: still only what is shared
    with pytest.raises(CatalogAlreadyExists):
        recipient.create_catalog(q(CAT))
    recipient.shares.unmount(q(CAT))
    recipient.create_catalog(q(CAT))  # the name is free again; the owner's share is untouched
    assert owner.shares.show("s1").recipients == ["beta"]


def test_a_checked_lookup_through_a_share_sees_only_the_share(owner: Any, store_uri: str) -> None:
    """The privilege check of a call through a share reads the share's filtered names, even after the owner's own
    checked calls in the same process read the same databases unfiltered (the checks' key-path memo is per plain
    resolver), and the call's lookup takes nothing the share does not hold from the check."""
    from ushas_catalog.errors import PermissionDenied  # noqa: F401 - the grants below make bob's calls allowed

    admin = Metastore.open(store_uri, project="beta", user="admin")
    shared(owner, admin, f"{q(CAT)}.{q(DB)}.{q('or.ders')}")
    for privilege in ("USE", "SELECT"):
        admin.grant(privilege, "project", "user:bob")
    owner.grant("OWN", "project", "user:alice")
    alice = Metastore.open(store_uri, project="acme.corp", user="alice", authorization=True)
    bob = Metastore.open(store_uri, project="beta", user="bob", authorization=True)
    try:
        for name in ("it's", "or.ders"):  # the owner's checked lookups: the unfiltered names of DB
            assert alice.get_table((CAT, DB, name)).name == name
        assert alice.get_database((CAT, "secret")).name == "secret"
        view = bob.shares.open("partner")
        assert view.get_table(("partner", DB, "or.ders")).name == "or.ders"
        with pytest.raises(NoSuchTable):
            view.get_table(("partner", DB, "it's"))
        with pytest.raises(NoSuchNamespace):
            view.get_table(("partner", "secret", "keys"))
        with pytest.raises(NoSuchNamespace):
            view.get_database(("partner", "secret"))
        assert not view.table_exists(("partner", DB, "it's"))
    finally:
        alice.close()
        bob.close()
        admin.close()
