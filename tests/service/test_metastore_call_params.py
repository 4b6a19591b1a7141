"""``POST /api/v1/metastore/call`` accepts only the parameters a client may set (``metastore_call_api.CATALOG_ONLY``,
docs/service.md "What a client may send"): each catalog-only parameter, by keyword or by position, is refused with a
one-line InvalidArgument (HTTP 400) before anything runs, and the calls they made possible on the old code — placing a
table without the location's privilege, having another user's file deleted by the next purge, reading another
project's key counts, replacing another user's view or function — are refused."""
from __future__ import annotations

import os
from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from ushas_catalog.data.garbage import Garbage
from ushas_catalog.errors import InvalidArgument, PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.functions import FunctionDefinition
from ushas_catalog.remote import wire

from remote_service import make_token

from .live import Live, running


@pytest.fixture
def svc(store_uri: str, tmp_path: Any) -> Iterator[Any]:
    """admin (OWN on the project) made catalog main, database main.db (CREATE and USE for bob) and the
    external location ``lake`` (no privilege on it for bob); bob owns table main.db.mine."""
    admin = admin_with_bob(store_uri)
    admin.create_location("lake", str(tmp_path / "lake"))
    admin.close()
    tokens = {name: make_token(store_uri, access, name)[1] for name, access in (("admin", "write"), ("bob", "write"))}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        live.lake = str(tmp_path / "lake")  # type: ignore[attr-defined]
        remote(live, "bob").create_table("main.db.mine", "id INT")
        yield live


def remote(svc: Live, who: str) -> Any:
    return Metastore.open(svc.base, token=svc.tokens[who])  # type: ignore[attr-defined]


def call(svc: Live, who: str, method: str, args: list[Any] | None = None,
         kwargs: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    answer = svc.request("POST", "/api/v1/metastore/call",
                         {"method": method, "args": wire.encode(args or []), "kwargs": wire.encode(kwargs or {})},
                         headers={"Authorization": f"Bearer {svc.tokens[who]}"})  # type: ignore[attr-defined]
    return answer.status, answer.json


def refused(svc: Live, who: str, method: str, parameter: str, args: list[Any] | None = None,
            kwargs: dict[str, Any] | None = None) -> None:
    status, answer = call(svc, who, method, args, kwargs)
    assert status == 400, answer
    assert answer["error"]["type"] == "InvalidArgument", answer
    message = answer["error"]["message"]
    assert f"{method}: {parameter}" in message and "\n" not in message, message


def test_every_catalog_only_parameter_is_a_parameter_of_an_offered_method() -> None:
    """The declaration names real parameters (a renamed one would silently become client-settable)."""
    import inspect

    from ushas_catalog.service.metastore_call_api import CATALOG_ONLY, offered_methods

    assert set(CATALOG_ONLY) <= offered_methods()
    for method, names in CATALOG_ONLY.items():
        params = inspect.signature(getattr(Metastore, method)).parameters
        assert names and set(names) <= set(params), (method, names)


def test_a_default_location_cannot_skip_the_placement_check(svc: Live) -> None:
    """On the old code ``default_location=True`` made ``create_table`` skip the check of a chosen location: bob,
    without CREATE EXTERNAL TABLE on ``lake``, placed a table in it (then read and wrote its files as the table's)."""
    bob, admin = remote(svc, "bob"), remote(svc, "admin")
    place = os.path.join(svc.lake, "taken")  # type: ignore[attr-defined]
    with pytest.raises(PermissionDenied, match="CREATE EXTERNAL TABLE"):
        bob.create_table("main.db.t", "id INT", location=place)
    refused(svc, "bob", "create_table", "default_location", ["main.db.t", "id INT"],
            {"location": place, "default_location": True})
    with pytest.raises(InvalidArgument, match="create_table: default_location"):
        bob.create_table("main.db.t", "id INT", location=place, default_location=False)
    assert not admin.table_exists("main.db.t")
    # a default location is checked too: on the old code a database placed in the lake gave its tables lake paths
    admin.grant("CREATE", "main", "user:bob")
    bob.create_database("main.wet", location=os.path.join(svc.lake, "wet"))  # type: ignore[attr-defined]
    with pytest.raises(PermissionDenied, match="CREATE EXTERNAL TABLE on location lake"):
        bob.create_table("main.wet.t", "id INT")
    assert admin.list_tables("main.wet") == []
    admin.grant("CREATE EXTERNAL TABLE", "location:lake", "user:bob")
    assert bob.create_table("main.wet.t", "id INT").location == os.path.join(svc.lake, "wet", "t")  # type: ignore[attr-defined]


def test_replace_table_checks_a_chosen_location(svc: Live) -> None:
    """On the old code ``replace_table`` never checked the placement: bob created, or moved his own table, into
    ``lake`` without CREATE EXTERNAL TABLE on it (every surface: the embedded API as well)."""
    bob, admin = remote(svc, "bob"), remote(svc, "admin")
    place = os.path.join(svc.lake, "taken")  # type: ignore[attr-defined]
    for name in ("main.db.new", "main.db.mine"):
        with pytest.raises(PermissionDenied, match="CREATE EXTERNAL TABLE"):
            bob.replace_table(name, "id INT", location=place)
        with pytest.raises(PermissionDenied, match="CREATE EXTERNAL TABLE"):
            bob.replace_table(name, "id INT", properties={"location": place})
    assert not admin.table_exists("main.db.new")
    assert admin.get_table("main.db.mine").version == 1
    bob.replace_table("main.db.mine", "id INT, x STRING")  # no location chosen: its own, as before
    admin.grant("CREATE EXTERNAL TABLE", "location:lake", "user:bob")
    assert bob.replace_table("main.db.new", "id INT", location=place).location == place


def test_a_client_cannot_record_garbage_for_purge_to_delete(svc: Live, store_uri: str, tmp_path: Any) -> None:
    """On the old code bob (MODIFY on his own table only) recorded another user's file as his table's garbage:
    the next ``ushas purge`` (the project owner's) deleted it."""
    from ushas_catalog.data.purge import purge

    victim = tmp_path / "admins" / "part-0.parquet"
    victim.parent.mkdir()
    victim.write_bytes(b"admin's data")
    junk = Garbage(files=[DataFile(str(victim), 12, 0)])
    refused(svc, "bob", "write_table_files", "garbage", ["main.db.mine", [], "OVERWRITE"], {"garbage": junk})
    status, answer = call(svc, "bob", "write_table_files", ["main.db.mine", [], "OVERWRITE", junk])  # keyword-only
    assert status == 400 and "too many positional arguments" in answer["error"]["message"], answer
    refused(svc, "bob", "replace_partitions", "garbage", ["main.db.mine", [], []], {"garbage": junk})
    admin = Metastore.open(store_uri, user="admin", authorization=True)
    try:
        assert admin.garbage() == []
        purge(admin)
    finally:
        admin.close()
    assert victim.read_bytes() == b"admin's data"
    assert remote(svc, "bob").get_table("main.db.mine").version == 1  # nothing written


def test_stats_of_other_projects_and_a_placement_checks_own_location_are_the_catalogs(svc: Live,
                                                                                      store_uri: str) -> None:
    """On the old code the project's owner read every project's key counts (``all_projects``), and any user made a
    placement check pass anywhere by naming its ``own`` table location."""
    other = Metastore.open(store_uri, project="other")
    other.create_catalog("secret")
    other.close()
    refused(svc, "admin", "stats", "all_projects", [], {"all_projects": True})
    refused(svc, "admin", "stats", "all_projects", [True])
    refused(svc, "admin", "stats", "batch", [], {"batch": 1})
    assert {s.project for s in remote(svc, "admin").stats()} == {"default"}
    place = os.path.join(svc.lake, "x")  # type: ignore[attr-defined]
    refused(svc, "bob", "check_placement", "own", [place, "main.db.t"], {"own": "/"})
    with pytest.raises(PermissionDenied, match="CREATE EXTERNAL TABLE"):
        remote(svc, "bob").check_placement(place, "main.db.t")


def test_replacing_a_view_or_function_needs_manage_on_it(svc: Live) -> None:
    """On the old code CREATE OR REPLACE (``replace=True``) of an existing view or function checked only USE on it:
    bob, with USE and CREATE on the database, replaced admin's view and function."""
    admin, bob = remote(svc, "admin"), remote(svc, "bob")
    admin.create_view("main.db.v", "SELECT 1 AS one", "one INT")
    admin.create_function("main.db.f", FunctionDefinition(parameters="x INT", return_type="INT", body="x + 1"))
    with pytest.raises(PermissionDenied, match="MANAGE"):
        bob.create_view("main.db.v", "SELECT 2 AS one", "one INT", replace=True)
    with pytest.raises(PermissionDenied, match="MANAGE"):
        bob.create_function("main.db.f", FunctionDefinition(parameters="x INT", return_type="INT", body="x + 2"),
                            replace=True)
    assert admin.get_view("main.db.v").sql == "SELECT 1 AS one"
    assert admin.get_function("main.db.f").version == 1
    admin.grant("MANAGE", "main.db.v", "user:bob")
    assert bob.create_view("main.db.v", "SELECT 2 AS one", "one INT", replace=True).sql == "SELECT 2 AS one"


def test_positional_arguments_reach_no_catalog_only_parameter(svc: Live) -> None:
    """A positional argument is bound to the parameter it lands on: one that lands on a catalog-only parameter is
    refused like the keyword, and more positional arguments than a method takes are refused too."""
    refused(svc, "admin", "stats", "all_projects", [False, 1])  # the first one it lands on
    refused(svc, "bob", "check_paths", "read_only", [[], [], None, False])
    status, answer = call(svc, "bob", "get_table", ["main.db.mine", None, "extra"])
    assert status == 400 and answer["error"]["type"] == "InvalidArgument", answer


def test_the_clients_own_parameters_still_pass(svc: Live) -> None:
    """What a client may set still works: a comment, properties, a fence of its own, an owner label."""
    bob = remote(svc, "bob")
    t = bob.create_table("main.db.t2", "id INT", comment="c", properties={"p": "1"}, owner="team-a")
    assert (t.comment, t.properties, t.owner) == ("c", {"p": "1"}, "team-a")
    v = bob.write_table_files("main.db.t2", [], "APPEND", write_id="w-bob-1", detail={"rows": 0})
    assert bob.write_table_files("main.db.t2", [], "APPEND", write_id="w-bob-1") == v  # once
    paths: list[str] = []
    bob.drop_table("main.db.t2", data_paths=paths)
