"""``drop_table_statement``, the one bridge call of DROP TABLE (``ushas_catalog.spark.statements``), under
authorization: a caller cannot get more out of it than out of the calls Spark's DropTableExec makes one by one
(``relation_exists``, then ``drop_table`` or ``relation_exists`` of a view). For each privilege bob holds and
each object (a table, a missing name, a view), the statement's answer is the one those calls give, with the
same error type, and a refused drop writes nothing (the table stays, with its version); every refusal is
audited as before. No Spark: the bridge's entry point, as the shim calls it."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.metastore import Metastore
from ushas_catalog.spark import bridge

SCHEMA = '{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}}]}'


def call(op: str, request: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(bridge.handle(op, json.dumps(request)))
    return answer


def one_by_one(request: dict[str, Any]) -> dict[str, Any]:
    """What the shim got before: Spark's DropTableExec, call by call."""
    exists = call("relation_exists", {**request, "kind": "table"})
    if "error" in exists:
        return exists
    if exists["exists"]:
        return {**call("drop_table", {**request, "purge": False}), "exists": True}
    view = call("relation_exists", {**request, "kind": "view"})
    return view if "error" in view else {"exists": False, "view": view["exists"]}


def shape(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its message (it names the object): what a caller learns."""
    return {k: (v["type"] if k == "error" else v) for k, v in answer.items()}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    uri = f"sqlite:///{tmp_path / 'ushas.db'}"
    project = "p_" + uuid.uuid4().hex[:8]
    admin = Metastore.open(uri, project=project, create=True)
    admin.create_catalog("main")
    admin.create_database(("main", "db"))
    yield type("Store", (), {"uri": uri, "project": project, "ms": admin, "dir": tmp_path})
    admin.close()


def ctx(store: Any, user: str) -> dict[str, Any]:
    return {"uri": store.uri, "project": store.project, "catalog": "main", "spark_catalog": "main", "user": user,
            "authorization": True, "warehouse": str(store.dir / "warehouse")}


def denials(ms: Metastore) -> int:
    return sum(1 for c in ms.changes() if c.change == "ACCESS_DENIED" and c.user == "bob")


@pytest.mark.parametrize("privilege", (None, "USE", "SELECT", "MODIFY", "MANAGE", "OWN"), ids=lambda p: p or "none")
def test_one_call_gives_bob_nothing_the_calls_one_by_one_would_not(store: Any, privilege: str | None) -> None:
    ms = store.ms
    for name in ("t", "twin"):  # the statement drops t, the calls one by one its twin
        ms.create_table(("main", "db", name), SCHEMA)
    ms.create_view(("main", "db", "v"), "SELECT 1 AS a", SCHEMA)
    if privilege:
        for name in ("t", "twin", "v"):
            ms.grant(privilege, ("main", "db", name), "user:bob")
    bob = ctx(store, "bob")
    may_drop = privilege in ("MANAGE", "OWN")
    for name, twin in (("t", "twin"), ("missing", "missing"), ("v", "v")):
        version = ms.get_table(("main", "db", name)).version if name == "t" else None
        before = denials(ms)
        got = call("drop_table_statement", {"ctx": bob, "namespace": ["db"], "name": name, "purge": False})
        audited = denials(ms) - before
        expected = one_by_one({"ctx": bob, "namespace": ["db"], "name": twin})
        assert shape(got) == shape(expected), (name, got, expected)
        assert audited == denials(ms) - before - audited  # each refusal audited, as call by call
        if name == "t":
            assert ms.table_exists(("main", "db", "t")) is not may_drop
            assert got.get("dropped", False) is may_drop
            if not may_drop:  # refused: nothing written
                assert got["error"]["type"] == "PermissionDenied" and audited == 1
                assert ms.get_table(("main", "db", "t")).version == version
    assert ms.view_exists(("main", "db", "v"))  # DROP TABLE never drops a view


def store_db(store: Any) -> Any:
    """The bridge's own opened store of ``store`` (what the shim's calls run on)."""
    from ushas_catalog.spark.registry import REGISTRY

    return REGISTRY.get(store.uri, store.project).metastore.db


def counted(store: Any, monkeypatch: pytest.MonkeyPatch, fail_writes: bool = False) -> list[str]:
    """Each transaction the bridge's store begins from now on, as ``write`` or ``read`` at its commit; with
    ``fail_writes`` a transaction that wrote fails at its commit (nothing of it stored)."""
    from ushas_catalog.errors import StoreUnavailable

    db = store_db(store)
    real = db.create_transaction
    log: list[str] = []

    def create() -> Any:
        tr = real()
        wrote: list[bool] = []
        for name in ("set", "clear", "clear_range"):
            def noted(*a: Any, _o: Any = getattr(tr, name), **k: Any) -> Any:
                wrote.append(True)
                return _o(*a, **k)

            setattr(tr, name, noted)
        commit = tr.commit

        def committed() -> None:
            log.append("write" if wrote else "read")
            if wrote and fail_writes:
                raise StoreUnavailable("the disk went away at the commit")
            commit()

        tr.commit = committed
        return tr

    monkeypatch.setattr(db, "create_transaction", create)
    return log


def test_drop_table_statement_is_one_transaction(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The statement's calls (the table's existence, then its drop; a missing table's view check) share ONE
    transaction of the store, not one each; the answers and what is stored are the calls' own."""
    ms = store.ms
    ms.create_table(("main", "db", "t"), SCHEMA)
    ms.create_view(("main", "db", "v"), "SELECT 1 AS a", SCHEMA)
    admin = {**ctx(store, "admin"), "authorization": False}
    call("open", {"ctx": admin, "cache_options": {}})
    log = counted(store, monkeypatch)
    got = call("drop_table_statement", {"ctx": admin, "namespace": ["db"], "name": "t", "purge": False})
    assert got == {"dropped": True, "delete_paths": [], "exists": True}
    assert log == ["write"]
    assert not ms.table_exists(("main", "db", "t"))
    assert [d.name for d in ms.list_dropped_tables(("main", "db"), "t")] == ["main.db.t"]  # kept for UNDROP
    for name, answer in (("missing", {"exists": False, "view": False}), ("v", {"exists": False, "view": True})):
        log.clear()
        assert call("drop_table_statement", {"ctx": admin, "namespace": ["db"], "name": name}) == answer
        assert log == ["read"]
    assert ms.view_exists(("main", "db", "v"))


def test_a_failed_commit_is_the_drops_error_and_stores_nothing(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The statement's one transaction fails at its commit: the answer is the one the calls one by one give
    (the table existed; the drop's error), and nothing of the drop is stored: the table stays, at its version,
    with no dropped record; the next DROP drops it."""
    ms = store.ms
    version = ms.create_table(("main", "db", "t"), SCHEMA).version
    admin = {**ctx(store, "admin"), "authorization": False}
    call("open", {"ctx": admin, "cache_options": {}})
    log = counted(store, monkeypatch, fail_writes=True)
    got = call("drop_table_statement", {"ctx": admin, "namespace": ["db"], "name": "t", "purge": False})
    assert got["exists"] is True and got["error"]["type"] == "StoreUnavailable", got
    assert "went away" in got["error"]["message"] and "dropped" not in got
    assert log == ["write"]  # the one transaction; the answer is made without another
    assert ms.get_table(("main", "db", "t")).version == version
    assert ms.list_dropped_tables(("main", "db"), "t") == []
    monkeypatch.undo()
    assert call("drop_table_statement", {"ctx": admin, "namespace": ["db"], "name": "t"})["dropped"] is True
