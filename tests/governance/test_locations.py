"""Declared external locations (docs/governance.md, "External locations"): declaring, listing, dropping and
granting on them through the Python API, the CLI and REST; the placement check (CREATE EXTERNAL TABLE on the
location holding a path, no path outside declared locations once some are, no overlap with another table of
the project) and the path-read check (READ FILES, or SELECT without a row filter or mask on the table owning the
path). Each refusal is a PermissionDenied naming the privilege, writes no key but its audit event."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import AlreadyExists, InvalidArgument, PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.service.tokens import TokenStore

from service.live import Live, running

C = "c"


@pytest.fixture
def admin(store_uri: str) -> Iterator[Metastore]:
    ms = Metastore.open(store_uri, project="p")
    ms.create_catalog(C)
    ms.create_database((C, "db"))
    ms.create_table((C, "db", "victim"), schema="a INT", location="file:/lake/raw/victim", external=True)
    ms.create_table((C, "db", "open"), schema="a INT", location="file:/lake/raw/open", external=True)
    ms.set_row_filter((C, "db", "victim"), "a > 0")
    ms.create_location("raw", "/lake/raw", "landing zone")
    ms.create_location("team", "file:/lake/team/")
    ms.grant("SELECT", (C, "db", "victim"), "user:bob")
    ms.grant("SELECT", (C, "db", "open"), "user:bob")
    yield ms
    ms.close()


def _keys(ms: Metastore) -> dict[bytes, bytes]:
    begin, end = ms.layout.project(ms.project).range()
    return {bytes(kv.key): bytes(kv.value) for kv in ms.db.run(lambda tr: list(tr.get_range(begin, end)))
            if "ChangeFeed" not in ms.layout.keyspace.parse(bytes(kv.key)).directory_names}


def test_declare_list_grant_and_drop(admin: Metastore) -> None:
    assert [(loc.name, loc.url, loc.comment) for loc in admin.list_locations()] == [
        ("raw", "file:/lake/raw", "landing zone"), ("team", "file:/lake/team", "")]
    with pytest.raises(AlreadyExists, match="external location raw already exists"):
        admin.create_location("raw", "/elsewhere")
    with pytest.raises(InvalidArgument, match="overlaps external location raw"):
        admin.create_location("inner", "/lake/raw/deeper")
    with pytest.raises(InvalidArgument, match="overlaps external location"):
        admin.create_location("outer", "/lake")
    with pytest.raises(InvalidArgument, match="not absolute"):
        admin.create_location("rel", "lake/x")
    assert admin.grant("read_files", "location:team", "user:bob")
    assert [(g.privilege, g.principal) for g in admin.grants("location:team")] == [("READ FILES", "user:bob")]
    admin.drop_location("team")
    assert [loc.name for loc in admin.list_locations()] == ["raw"]
    assert not [g for g in admin.grants() if g.object_kind == "location"]  # its grants went with it


Grants = list[tuple[str, Any]]
#: (case, bob's grants, the call, what a refusal names; "" when allowed)
PLACEMENTS: list[tuple[str, Grants, Callable[[Metastore], Any], str]] = [
    ("no privilege on the location", [], lambda m: m.check_placement("/lake/raw/mine", (C, "db", "mine")),
     "CREATE EXTERNAL TABLE on location raw"),
    ("READ FILES is not CREATE EXTERNAL TABLE", [("READ FILES", "location:raw")],
     lambda m: m.check_placement("/lake/raw/mine", (C, "db", "mine")), "CREATE EXTERNAL TABLE on location raw"),
    ("allowed", [("CREATE EXTERNAL TABLE", "location:raw")],
     lambda m: m.check_placement("/lake/raw/mine", (C, "db", "mine")), ""),
    ("another table's directory", [("CREATE EXTERNAL TABLE", "location:raw")],
     lambda m: m.check_placement("/lake/raw/victim", (C, "db", "mine")), "overlaps the location of another table"),
    ("inside another table's directory", [("CREATE EXTERNAL TABLE", "location:raw")],
     lambda m: m.check_placement("file:///lake/raw/victim/p=1", (C, "db", "mine")),
     "overlaps the location of another table"),
    ("a partition in another table's directory", [("CREATE EXTERNAL TABLE", "location:raw")],
     lambda m: m.check_placement("/lake/raw/victim/p=1", (C, "db", "open"), own="file:/lake/raw/open",
                                 what="a partition of"), "overlaps the location of another table"),
    ("outside every declared location", [("OWN", "project")],
     lambda m: m.check_placement("/tmp/anywhere", (C, "db", "mine")), "lies in no declared external location"),
    ("holding a declared location", [("CREATE EXTERNAL TABLE", "location:raw")],
     lambda m: m.check_placement("/lake", (C, "db", "mine")), "no declared external location"),
    ("dropping a location one does not manage", [("CREATE EXTERNAL TABLE", "location:raw")],
     lambda m: m.drop_location("raw"), "MANAGE on location raw"),
    ("declaring a location without MANAGE on the project", [("OWN", "location:raw")],
     lambda m: m.create_location("mine", "/mine"), "MANAGE on project p"),
]


@pytest.mark.parametrize("case, grants, call, refusal", PLACEMENTS, ids=[c[0] for c in PLACEMENTS])
def test_placement_is_checked(admin: Metastore, store_uri: str, case: str, grants: Grants,
                              call: Callable[[Metastore], Any], refusal: str) -> None:
    for privilege, obj in grants:
        admin.grant(privilege, obj, "user:bob")
    before = _keys(admin)
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        if not refusal:
            call(bob)
            return
        with pytest.raises(PermissionDenied, match=refusal):
            call(bob)
    finally:
        bob.close()
    assert _keys(admin) == before  # nothing changed
    denied = [c for c in admin.changes() if c.operation == "DENIED"]
    assert denied and denied[-1].user == "bob"


#: (case, bob's grants besides SELECT on both tables, the paths read, what a refusal names)
READS: list[tuple[str, Grants, list[str], str]] = [
    ("a filtered table's directory", [], ["/lake/raw/victim"], "row filter or a column mask"),
    ("one file of it", [], ["file:/lake/raw/victim/part-0.parquet"], "row filter or a column mask"),
    ("the location holding it", [], ["/lake/raw"], "row filter or a column mask"),
    ("a table without policy", [], ["/lake/raw/open"], ""),
    ("READ FILES on the location", [("READ FILES", "location:raw")], ["/lake/raw"], ""),
    ("a file no table owns", [], ["/lake/raw/loose.csv"], "READ FILES on location raw"),
    ("the filter's exempt", [("exempt", "")], ["/lake/raw/victim"], ""),
    ("outside governed storage", [], ["/tmp/mine"], ""),
]


@pytest.mark.parametrize("case, grants, paths, refusal", READS, ids=[c[0] for c in READS])
def test_path_reads_are_checked(admin: Metastore, store_uri: str, case: str, grants: Grants, paths: list[str],
                                refusal: str) -> None:
    for privilege, obj in grants:
        if privilege == "exempt":
            admin.set_row_filter((C, "db", "victim"), "a > 0", "user:bob")
        else:
            admin.grant(privilege, obj, "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        if refusal:
            with pytest.raises(PermissionDenied, match=refusal):
                bob.check_path_read(paths)
        else:
            bob.check_path_read(paths)
        admin.revoke("SELECT", (C, "db", "open"), "user:bob")  # SELECT is what lets bob read an unfiltered one
        if paths == ["/lake/raw/open"]:
            with pytest.raises(PermissionDenied, match="neither SELECT on it nor READ FILES"):
                bob.check_path_read(paths)
    finally:
        bob.close()


#: (case, bob's grants, the paths written, what a refusal names)
WRITES: list[tuple[str, Grants, list[str], str]] = [
    ("a filtered table's directory", [], ["/lake/raw/victim"], "WRITE FILES on location raw"),
    ("a partition of it", [], ["file:/lake/raw/victim/b=1"], "WRITE FILES on location raw"),
    ("a directory holding two locations", [], ["/lake"], "WRITE FILES on location raw"),
    ("a loose path in a location", [], ["/lake/team/out"], "WRITE FILES on location team"),
    ("WRITE FILES on the location", [("WRITE FILES", "location:raw")], ["/lake/raw/victim", "/lake/raw/x"], ""),
    ("READ FILES is not enough", [("READ FILES", "location:raw")], ["/lake/raw/x"], "WRITE FILES on location raw"),
    ("MODIFY on the table is not enough", [("MODIFY", "c.db.victim")], ["/lake/raw/victim"], "WRITE FILES"),
    ("outside governed storage", [], ["/tmp/mine"], ""),
]


@pytest.mark.parametrize("case, grants, paths, refusal", WRITES, ids=[c[0] for c in WRITES])
def test_path_writes_are_checked(admin: Metastore, store_uri: str, case: str, grants: Grants, paths: list[str],
                                 refusal: str) -> None:
    for privilege, obj in grants:
        admin.grant(privilege, obj if obj.startswith("location:") else tuple(obj.split(".")), "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        if refusal:
            with pytest.raises(PermissionDenied, match=refusal):
                bob.check_path_write(paths)
        else:
            bob.check_path_write(paths)
    finally:
        bob.close()


def test_path_writes_outside_declared_locations(store_uri: str) -> None:
    """A table outside every declared location: only its owner writes its directory by path."""
    admin = Metastore.open(store_uri, project="q")
    admin.create_catalog(C)
    admin.create_database((C, "db"))
    admin.create_table((C, "db", "t"), schema="a INT", location="file:/data/t", external=True)
    admin.grant("MODIFY", (C, "db", "t"), "user:bob")
    admin.grant("OWN", (C, "db", "t"), "user:olga")
    bob = Metastore.open(store_uri, project="q", user="bob", authorization=True)
    olga = Metastore.open(store_uri, project="q", user="olga", authorization=True)
    try:
        for path in ("/data/t", "/data/t/part", "/data"):
            with pytest.raises(PermissionDenied, match="holds data of table c.db.t"):
                bob.check_path_write([path])
            olga.check_path_write([path])
        bob.check_path_write(["/data/other"])
    finally:
        bob.close()
        olga.close()
        admin.close()


def test_the_managed_warehouse_is_governed(admin: Metastore, store_uri: str) -> None:
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        with pytest.raises(PermissionDenied, match="managed storage"):
            bob.check_path_read(["/wh/c/db.db/t"], roots=["file:/wh"])
    finally:
        bob.close()


def ushas(uri: str, *argv: str, user: str | None = None) -> int:
    return main(["--uri", uri, "--project", "p", *(["--user", user] if user else []), *argv])


def test_cli(admin: Metastore, store_uri: str, capsys: Any) -> None:
    assert ushas(store_uri, "locations", "create", "scratch", "/scratch", "--comment", "tmp") == 0
    assert ushas(store_uri, "grant", "READ", "FILES", "ON", "LOCATION", "scratch", "TO", "user:bob") == 0
    assert ushas(store_uri, "locations", "grant", "scratch", "CREATE_EXTERNAL_TABLE", "user:bob") == 0
    capsys.readouterr()
    assert ushas(store_uri, "locations", "show", "scratch") == 0
    out = capsys.readouterr().out
    assert "file:/scratch" in out and "user:bob: READ FILES" in out and "user:bob: CREATE EXTERNAL TABLE" in out
    before = _keys(admin)
    assert ushas(store_uri, "locations", "drop", "scratch", user="bob") == 2  # a refusal: one line, exit 2
    assert ushas(store_uri, "locations", "create", "mine", "/mine", user="bob") == 2
    assert "MANAGE" in capsys.readouterr().err
    assert _keys(admin) == before
    assert ushas(store_uri, "locations", "--json") == 0
    assert '"scratch"' in capsys.readouterr().out
    assert ushas(store_uri, "locations", "drop", "scratch") == 0


@pytest.fixture
def served(store_uri: str, admin: Metastore) -> Iterator[tuple[Live, dict[str, str]]]:
    tokens = {user: TokenStore(admin).create("write", user)[1] for user in ("bob", "alice")}
    admin.grant("OWN", "project", "user:alice")
    admin.grant("CREATE", (C, "db"), "user:bob")
    admin.grant("MODIFY", (C, "db", "open"), "user:bob")
    for live in running(store_uri, project="p", authorization=True):
        yield live, tokens


def test_rest(served: tuple[Live, dict[str, str]], admin: Metastore) -> None:
    live, tokens = served
    alice, bob = ({"Authorization": f"Bearer {tokens[u]}"} for u in ("alice", "bob"))
    made = live.request("POST", "/api/v1/locations", {"name": "gold", "url": "s3a://bucket/gold/"}, headers=alice)
    assert made.status == 200 and made.json["url"] == "s3a://bucket/gold", made.body
    before = _keys(admin)
    for method, path, body in (("POST", "/api/v1/locations", {"name": "x", "url": "/x"}),
                               ("DELETE", "/api/v1/locations/gold", None),
                               ("POST", "/api/v1/locations/gold/grants",
                                {"privilege": "READ FILES", "principal": "user:bob"}),
                               ("POST", "/api/v1/metastore/call", {"method": "drop_location", "args": ["raw"],
                                                                   "kwargs": {}, "project": "p"}),
                               ("POST", "/api/v1/metastore/call", {  # a table over the victim's files
                                   "method": "create_table", "args": [["c", "db", "steal"], "a INT"],
                                   "kwargs": {"location": "file:/lake/raw/victim", "external": True}, "project": "p"}),
                               ("POST", "/api/v1/metastore/call", {"method": "add_partitions", "args": [
                                   ["c", "db", "open"], [{"$dc": "ushas_catalog.model.partitions.Partition",
                                                          "fields": {"values": {"a": "1"},
                                                                     "location": "file:/lake/raw/victim"}}]],
                                   "kwargs": {}, "project": "p"}),
                               ("POST", "/api/v1/metastore/call", {  # the open table moved over the victim's files
                                   "method": "alter_table", "args": [["c", "db", "open"], [
                                       {"$dc": "ushas_catalog.model.table_changes.SetLocation",
                                        "fields": {"location": "file:/lake/raw/victim/x"}}]],
                                   "kwargs": {}, "project": "p"})):
        answer = live.request(method, path, body, headers=bob)
        assert answer.status == 403 and answer.json["error"]["type"] == "PermissionDenied", (path, answer.body)
    assert _keys(admin) == before
    assert live.request("POST", "/api/v1/locations", {"name": "x"}, headers=alice).status == 400
    granted = live.request("POST", "/api/v1/locations/gold/grants",
                           {"privilege": "READ FILES", "principal": "user:bob"}, headers=alice)
    assert granted.status == 200 and granted.json == {"granted": True}
    listed = live.request("GET", "/api/v1/locations", headers=bob)
    assert listed.status == 200 and [x["name"] for x in listed.json] == ["gold", "raw", "team"]
    assert live.request("DELETE", "/api/v1/locations/gold", headers=alice).json == {"dropped": "gold"}


def test_the_kept_index_follows_every_table_change(admin: Metastore, store_uri: str) -> None:
    """The checks keep the project's table locations per change-feed state: a table created, moved or dropped
    after a check is seen by the next one."""
    admin.grant("CREATE EXTERNAL TABLE", "location:raw", "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        bob.check_placement("/lake/raw/new", (C, "db", "mine"))
        admin.create_table((C, "db", "new"), schema="a INT", location="file:/lake/raw/new", external=True)
        with pytest.raises(PermissionDenied, match="overlaps the location of another table"):
            bob.check_placement("/lake/raw/new", (C, "db", "mine"))
        admin.rename_table((C, "db", "new"), (C, "db", "moved"), location="file:/lake/raw/moved")
        bob.check_placement("/lake/raw/new", (C, "db", "mine"))
        with pytest.raises(PermissionDenied, match="overlaps the location of another table"):
            bob.check_placement("/lake/raw/moved/x", (C, "db", "mine"))
        admin.drop_table((C, "db", "moved"))
        bob.check_placement("/lake/raw/moved", (C, "db", "mine"))
        admin.undrop_table((C, "db", "moved"))  # its last event: live again
        with pytest.raises(PermissionDenied, match="overlaps the location of another table"):
            bob.check_placement("/lake/raw/moved/x", (C, "db", "mine"))
        admin.create_table((C, "db", "brief"), schema="a INT", location="file:/lake/raw/brief", external=True)
        admin.drop_table((C, "db", "moved"))
        admin.drop_table((C, "db", "brief"))  # created and dropped between two checks: never seen
        bob.check_placement("/lake/raw/moved", (C, "db", "mine"))
        bob.check_placement("/lake/raw/brief", (C, "db", "mine"))
        bob.check_path_read(["/lake/raw/open"])
        admin.set_column_mask((C, "db", "open"), "a", "0")
        with pytest.raises(PermissionDenied, match="row filter or a column mask"):
            bob.check_path_read(["/lake/raw/open"])
    finally:
        bob.close()


def test_alter_table_location_is_checked(admin: Metastore, store_uri: str) -> None:
    """SET LOCATION through the Python API (as REST's metastore/call): the placement check, for an owner too."""
    from ushas_catalog.model.table_changes import SetLocation, SetProperty

    admin.grant("OWN", (C, "db", "open"), "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        for change, refusal in ((SetLocation("file:/lake/raw/victim/x"), "CREATE EXTERNAL TABLE"),
                                (SetProperty("location", "/elsewhere/open"), "no declared external location")):
            with pytest.raises(PermissionDenied, match=refusal):
                bob.alter_table((C, "db", "open"), [change])
        admin.grant("CREATE EXTERNAL TABLE", "location:raw", "user:bob")
        with pytest.raises(PermissionDenied, match="overlaps the location of another table"):
            bob.alter_table((C, "db", "open"), [SetLocation("file:/lake/raw/victim/x")])
        assert admin.get_table((C, "db", "open")).location == "file:/lake/raw/open"
        bob.alter_table((C, "db", "open"), [SetLocation("file:/lake/raw/open2")])
        assert admin.get_table((C, "db", "open")).location == "file:/lake/raw/open2"
    finally:
        bob.close()


@pytest.mark.parametrize("url", ["/wh", "file:/wh/c/db.db/m", "/wh/c/db.db/m/part=1"])
def test_a_location_may_not_overlap_managed_storage(admin: Metastore, url: str) -> None:
    admin.create_table((C, "db", "m"), schema="a INT", location="file:/wh/c/db.db/m")  # managed: the warehouse's
    before = admin.list_locations()
    with pytest.raises(InvalidArgument, match="overlaps the managed storage of table c.db.m"):
        admin.create_location("wh", url)
    assert admin.list_locations() == before
    admin.create_location("beside", "/wh2")  # a sibling directory is not the warehouse


def test_one_statements_reads_and_writes_are_one_check(admin: Metastore, store_uri: str) -> None:
    """``check_paths`` (what the Spark shim sends once per governed catalog and plan) checks a statement's writes
    and reads in one transaction, refusing either; nothing is kept between two checks: a grant revoked, a mask
    set, or a path taken over by a filtered table after one check bites on the next."""
    admin.grant("WRITE FILES", "location:team", "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    runs: list[int] = []
    real = bob.run
    bob.run = lambda fn, *a, **kw: runs.append(1) or real(fn, *a, **kw)  # type: ignore[method-assign]
    try:
        bob.check_paths(reads=["/lake/raw/open"], writes=["/lake/team/out"])
        assert len(runs) == 1  # one transaction for both
        with pytest.raises(PermissionDenied, match="row filter or a column mask"):
            bob.check_paths(reads=["/lake/raw/open", "/lake/raw/victim"], writes=["/lake/team/out"])
        with pytest.raises(PermissionDenied, match="WRITE FILES on location raw"):
            bob.check_paths(reads=["/lake/raw/open"], writes=["/lake/raw/x"])
        admin.revoke("SELECT", (C, "db", "open"), "user:bob")
        with pytest.raises(PermissionDenied, match="neither SELECT on it nor READ FILES"):
            bob.check_paths(reads=["/lake/raw/open"])
        admin.revoke("WRITE FILES", "location:team", "user:bob")
        with pytest.raises(PermissionDenied, match="WRITE FILES on location team"):
            bob.check_paths(writes=["/lake/team/out"])
        bob.check_paths(reads=["/data/loose"])  # outside every location and table: storage permissions' to guard
        admin.create_table((C, "db", "taken"), schema="a INT", location="file:/data/loose", external=True)
        admin.grant("SELECT", (C, "db", "taken"), "user:bob")
        bob.check_paths(reads=["/data/loose"])
        admin.set_row_filter((C, "db", "taken"), "a > 0")  # the path's owner is now filtered for bob
        with pytest.raises(PermissionDenied, match="row filter or a column mask"):
            bob.check_paths(reads=["/data/loose/part"])
    finally:
        bob.close()


#: (case, bob's grants, the location, what the refusal names; "" when the create is allowed)
CREATES: list[tuple[str, Grants, str, str]] = [
    ("neither CREATE nor CREATE EXTERNAL TABLE: the database's refusal first", [], "/lake/raw/mine",
     "bob does not have CREATE on database c.db"),
    ("CREATE EXTERNAL TABLE without CREATE", [("CREATE EXTERNAL TABLE", "location:raw")], "/lake/raw/mine",
     "bob does not have CREATE on database c.db"),
    ("CREATE without CREATE EXTERNAL TABLE", [("CREATE", (C, "db"))], "/lake/raw/mine",
     "CREATE EXTERNAL TABLE on location raw"),
    ("both, over another table's directory", [("CREATE", (C, "db")), ("CREATE EXTERNAL TABLE", "location:raw")],
     "/lake/raw/victim/x", "overlaps the location of another table"),
    ("both, outside every declared location", [("CREATE", (C, "db")), ("CREATE EXTERNAL TABLE", "location:raw")],
     "/tmp/anywhere", "lies in no declared external location"),
    ("both", [("CREATE", (C, "db")), ("CREATE EXTERNAL TABLE", "location:raw")], "/lake/raw/mine", ""),
]


@pytest.mark.parametrize("case, grants, location, refusal", CREATES, ids=[c[0] for c in CREATES])
def test_a_create_checks_its_placement_in_its_own_transaction(admin: Metastore, store_uri: str, case: str,
                                                               grants: Grants, location: str, refusal: str) -> None:
    """``create_table`` with a chosen location (every surface: Spark, REST, the CLI) checks CREATE on the database,
    then the placement, in the create's one transaction: a user lacking both is refused for the database first; a
    refusal writes no key but its audit event; an allowed create is owned by its creator."""
    for privilege, obj in grants:
        admin.grant(privilege, obj, "user:bob")
    before = _keys(admin)
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        if not refusal:
            bob.create_table((C, "db", "mine"), schema="a INT", location=location, external=True)
            assert [g.principal for g in admin.grants((C, "db", "mine")) if g.privilege == "OWN"] == ["user:bob"]
            return
        with pytest.raises(PermissionDenied, match=refusal):
            bob.create_table((C, "db", "mine"), schema="a INT", location=location, external=True)
    finally:
        bob.close()
    assert _keys(admin) == before  # nothing changed
    assert not admin.table_exists((C, "db", "mine"))
    denied = [c for c in admin.changes() if c.operation == "DENIED"]
    assert denied and denied[-1].user == "bob"
