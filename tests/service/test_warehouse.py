"""A remote Spark catalog's warehouse (``ctx.warehouse`` over ``catalog/ops``; docs/service.md, "The warehouse"): a
governed managed table's default location may not lie in another table's location, empty or not, and a service
started with ``--warehouse`` takes a client's other warehouse only in a declared external location the client may
place data in. On the old code bob put a managed table in an empty directory of admin's table by stating a
warehouse there, and any warehouse was taken."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from remote_service import make_token

from .live import Live, running

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True, "metadata": {}}]})


def _world(store_uri: str, tmp_path: Path) -> Any:
    """admin's table main.adm.t at ``tmp/admin/t`` (an empty directory ``empty`` in it; another database than bob's
    main.db, whose own check of default locations covers its tables), tokens of admin and bob."""
    admin = admin_with_bob(store_uri)
    victim = tmp_path / "admin" / "t"
    (victim / "empty").mkdir(parents=True)
    admin.create_database("main.adm")
    admin.create_table("main.adm.t", "id INT", location=str(victim))
    admin.create_location("lake", str(tmp_path / "lake"))
    return admin, {name: make_token(store_uri, "write", name)[1] for name in ("admin", "bob")}


@pytest.fixture
def plain(store_uri: str, tmp_path: Path) -> Iterator[Any]:
    """A service without ``--warehouse``: each client states its own."""
    admin, tokens = _world(store_uri, tmp_path)
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        yield live, admin
    admin.close()


@pytest.fixture
def own(store_uri: str, tmp_path: Path) -> Iterator[Any]:
    """A service with ``--warehouse tmp/wh``."""
    admin, tokens = _world(store_uri, tmp_path)
    for live in running(store_uri, warehouse=f"file:{tmp_path}/wh"):
        live.tokens = tokens  # type: ignore[attr-defined]
        yield live, admin
    admin.close()


def create(svc: Live, name: str, warehouse: str | None, who: str = "bob") -> tuple[int, dict[str, Any]]:
    c: dict[str, Any] = {"catalog": "main", "spark_catalog": "rem"}
    if warehouse is not None:
        c["warehouse"] = warehouse
    body = {"ctx": c, "namespace": ["db"], "name": name, "schema": SCHEMA, "properties": {"provider": "parquet"}}
    answer = svc.request("POST", "/api/v1/catalog/ops/create_table", body,
                         headers={"Authorization": f"Bearer {svc.tokens[who]}"})  # type: ignore[attr-defined]
    return answer.status, answer.json


def refused(answer: tuple[int, dict[str, Any]], why: str) -> None:
    status, body = answer
    assert status == 403 and body["error"]["type"] == "PermissionDenied", body
    assert why in body["error"]["message"] and "\n" not in body["error"]["message"], body


def test_no_managed_table_inside_another_tables_location(plain: Any, tmp_path: Path) -> None:
    svc, admin = plain
    victim = tmp_path / "admin" / "t"
    refused(create(svc, "in_empty", str(victim / "empty")), "it overlaps the location of another table")
    refused(create(svc, "in_it", str(victim)), "it overlaps the location of another table")
    assert [t.name for t in admin.list_tables("main.db")] == []
    assert os.listdir(victim) == ["empty"] and os.listdir(victim / "empty") == []
    # a warehouse of the client's own elsewhere: as before (the service has none of its own)
    status, answer = create(svc, "fine", str(tmp_path / "bobs"))
    assert status == 200 and answer["table"]["location"] == f"file:{tmp_path}/bobs/db.db/fine", answer


def test_the_services_warehouse_or_a_declared_location_the_client_may_use(own: Any, tmp_path: Path) -> None:
    svc, admin = own
    # stated by the service: no warehouse, or the service's own spelled as a path
    for name, warehouse in (("a", None), ("b", str(tmp_path / "wh"))):
        status, answer = create(svc, name, warehouse)
        assert status == 200 and answer["table"]["location"] == f"file:{tmp_path}/wh/db.db/{name}", answer
    # another one: refused on every op (reads too), unless it lies in a declared location bob may place data in
    refused(create(svc, "c", str(tmp_path / "bobs")), "is not the catalog service's warehouse and lies in no "
                                                      "declared external location")
    status, answer = svc.request("POST", "/api/v1/catalog/ops/list_namespaces",
                                 {"ctx": {"catalog": "main", "warehouse": str(tmp_path / "bobs")}},
                                 headers={"Authorization": f"Bearer {svc.tokens['bob']}"}).status, None
    assert status == 403
    refused(create(svc, "d", str(tmp_path / "lake" / "wh")), "CREATE EXTERNAL TABLE")
    admin.grant("CREATE EXTERNAL TABLE", "location:lake", "user:bob")
    status, answer = create(svc, "d", str(tmp_path / "lake" / "wh"))
    assert status == 200 and answer["table"]["location"] == f"file:{tmp_path}/lake/wh/db.db/d", answer
    assert sorted(t.name for t in admin.list_tables("main.db")) == ["a", "b", "d"]
