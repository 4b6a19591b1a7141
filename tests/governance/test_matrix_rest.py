"""The privilege matrix (tests/governance/matrix.py) through the REST API of ``ushas serve
--authorization``: each request runs as its token's user; allowed: 2xx, refused: HTTP 403
``PermissionDenied`` naming the privilege and the object, writing nothing but the refusal's audit
event. One live service (free port) over one store for the module."""
from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from ushas_catalog.metastore import Metastore
from ushas_catalog.service.tokens import TokenStore

from governance.matrix import OPERATIONS, PRINCIPALS, Principal, Probe, fill, setup_store
from service.live import Live, running


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Live, Probe, dict[str, str]]]:
    root = tmp_path_factory.mktemp("matrix-rest")
    uri = f"sqlite:///{root / 'ushas.db'}"
    ms = Metastore.open(uri, project="default")
    setup_store(ms, str(root / "warehouse"))
    tokens = {who.user: TokenStore(ms).create("write", who.user)[1] for who in PRINCIPALS}
    for live in running(uri, authorization=True):
        yield live, Probe(ms), tokens
    ms.close()


@pytest.mark.parametrize("who", PRINCIPALS, ids=lambda w: w.key)
def test_rest_privilege_matrix(served: tuple[Live, Probe, dict[str, str]], who: Principal) -> None:
    live, probe, tokens = served
    headers = {"Authorization": f"Bearer {tokens[who.user]}"}
    for op in OPERATIONS:
        if op.rest is None:
            continue
        method, path, body = op.rest

        def refusal(error: BaseException | None, answer: Any) -> str:
            assert error is None, error
            if answer.status in (200, 201):
                return ""
            assert answer.status == 403, (op.name, answer.status, answer.body)
            err = answer.json["error"]
            assert err["type"] == "PermissionDenied", err
            return str(err["message"])

        sent = {k: fill(v, who) if isinstance(v, str) else v for k, v in body.items()} if isinstance(body, dict) \
            else body
        probe.run(op, who, lambda: live.request(method, fill(path, who), sent, headers=headers), refusal)


def test_the_audit_of_refusals_is_in_the_change_feed_api(served: tuple[Live, Probe, dict[str, str]]) -> None:
    """An administrator reads refusals through ``GET /changes``."""
    live, probe, tokens = served
    nobody = {"Authorization": f"Bearer {tokens['u_none']}"}
    assert live.get("/api/v1/catalogs/c_none/databases/db/tables/t/history", headers=nobody).status == 403
    admin = next(w for w in PRINCIPALS if w.privilege == "OWN" and w.level == "project")
    headers = {"Authorization": f"Bearer {tokens[admin.user]}"}
    denied: list[dict[str, Any]] = []
    since = None
    while True:
        page = live.get("/api/v1/changes" + (f"?since={since}" if since else ""), headers=headers).json
        denied += [e for e in page["items"] if e["change"] == "ACCESS_DENIED"]
        if not page["items"]:
            break
        since = page["next_cursor"]
    assert any("u_none" in e["user"] and "c_none.db.t" in e["detail"].get("message", "") for e in denied), \
        json.dumps(denied[-3:])
