"""A fenced write's id is bound to its table and its writer (``data.write_fence.check_owner``; docs/service.md): over
the catalog service, bob cannot read admin's write's recorded answer, commit over it, or end it by presenting its id,
whatever table he names; admin's own retry still gets the recorded answer. On the old code each of bob's calls
succeeded: his commit answered admin's write's result and applied nothing, his abort ended admin's write."""
from __future__ import annotations

from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from ushas_catalog.errors import WriteIdTaken
from ushas_catalog.metastore import Metastore

from remote_service import make_token

from .live import Live, running

W = "8c0e4a52-1b7e-4a8e-9a51-2f3c6d7e8f90"  # admin's write (a Spark job UUID)


@pytest.fixture
def svc(store_uri: str) -> Iterator[Any]:
    """admin's table main.db.t, bob's main.db.mine (bob may create in main.db, nothing on main.db.t)."""
    admin = admin_with_bob(store_uri)
    admin.create_table("main.db.t", "id INT")
    admin.close()
    tokens = {name: make_token(store_uri, "write", name)[1] for name in ("admin", "bob")}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        remote(live, "bob").create_table("main.db.mine", "id INT")
        yield live


def remote(svc: Live, who: str) -> Any:
    return Metastore.open(svc.base, token=svc.tokens[who])  # type: ignore[attr-defined]


def op(svc: Live, who: str, name: str, table: str | None, **fields: Any) -> tuple[int, dict[str, Any]]:
    """A catalog op as the shim sends it (remote mode), naming ``main.db.<table>``."""
    body: dict[str, Any] = {"ctx": {"catalog": "main", "spark_catalog": "rem"}, **fields}
    if table is not None:
        body.update(namespace=["db"], name=table)
    answer = svc.request("POST", f"/api/v1/catalog/ops/{name}", body,
                         headers={"Authorization": f"Bearer {svc.tokens[who]}"})  # type: ignore[attr-defined]
    return answer.status, answer.json


def versions(svc: Live) -> tuple[int, int]:
    admin = remote(svc, "admin")
    return admin.get_table("main.db.t").version, admin.get_table("main.db.mine").version


def test_another_users_committed_write_id_is_refused_on_every_way_in(svc: Live) -> None:
    admin, bob = remote(svc, "admin"), remote(svc, "bob")
    committed = admin.touch_table("main.db.t", "WRITE", {}, write_id=W)
    before = versions(svc)
    # on his own table: the id is another table's write (that table is not named)
    with pytest.raises(WriteIdTaken, match=f"write id {W} is already the id of a write into another table") as e:
        bob.touch_table("main.db.mine", "WRITE", {}, write_id=W)
    assert "main.db.t" not in str(e.value) and "\n" not in str(e.value)
    # on admin's table, once he may write it: another user's write
    remote(svc, "admin").grant("MODIFY", "main.db.t", "user:bob")
    with pytest.raises(WriteIdTaken, match=f"write id {W} is the id of another user's write"):
        bob.touch_table("main.db.t", "WRITE", {}, write_id=W)
    assert versions(svc) == before
    # asking what became of it, or ending it: refused, or its state alone (nothing of its answer)
    status, answer = op(svc, "bob", "write_outcome", None, write_id=W)
    assert (status, answer["error"]["type"]) == (400, "WriteIdTaken"), answer
    status, answer = op(svc, "bob", "abort_write", "mine", write_id=W, reason="mine now")
    assert (status, answer["error"]["type"]) == (400, "WriteIdTaken"), answer
    assert "main.db.t" not in answer["error"]["message"]
    for ending in ("abort_write", "abort_staged"):  # Spark's abort of a write, of a staged CTAS
        status, answer = op(svc, "bob", ending, "t", write_id=W, reason="mine now", files_removed=True)
        assert status == 200 and answer["state"] == "COMMITTED", answer
        assert answer["version"] is None and answer["answer"] is None and answer["table"] is None
    assert versions(svc) == before
    # admin's own retry: the recorded answer, nothing applied again
    assert admin.touch_table("main.db.t", "WRITE", {}, write_id=W) == committed
    status, answer = op(svc, "admin", "write_outcome", None, write_id=W)
    assert status == 200 and (answer["state"], answer["version"], answer["user"]) == ("COMMITTED", committed, "admin")
    assert versions(svc) == before


def test_another_user_cannot_end_a_write_before_it_commits(svc: Live) -> None:
    """bob, who may not write main.db.t, presents admin's running write's id: refused, and admin's commit goes
    through. Named for bob's own table, the abort is bob's: admin's commit is then refused, not answered."""
    status, answer = op(svc, "bob", "abort_write", "t", write_id=W, reason="ended by bob")
    assert (status, answer["error"]["type"]) == (403, "PermissionDenied"), answer
    status, answer = op(svc, "bob", "abort_write", None, write_id=W, reason="ended by bob")
    assert (status, answer["error"]["type"]) == (400, "InvalidArgument"), answer
    before = versions(svc)
    admin = remote(svc, "admin")
    assert admin.touch_table("main.db.t", "WRITE", {}, write_id=W) == before[0] + 1
    # another id, ended by bob on his own table first: admin's commit with it is refused, nothing applied
    other = "0f1e2d3c-4b5a-4697-8879-6a5b4c3d2e1f"
    status, answer = op(svc, "bob", "abort_write", "mine", write_id=other, reason="taken")
    assert status == 200 and answer["state"] == "ABORTED"
    with pytest.raises(WriteIdTaken, match="another table"):
        admin.touch_table("main.db.t", "WRITE", {}, write_id=other)
    assert versions(svc) == (before[0] + 1, before[1])
