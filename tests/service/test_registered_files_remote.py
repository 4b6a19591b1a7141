"""Registered files stay in their table, over the service (catalog/registered_files.py): a user with a write
token cannot register another user's file in their own table (the REST metastore call, the shim's
``catalog/ops/commit_write``), so the owner's next ``ushas purge`` cannot delete it."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from remote_service import make_token

from ushas_catalog.data.purge import purge
from ushas_catalog.errors import PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition

from .live import Live, running


@pytest.fixture
def svc(store_uri: str, tmp_path: Path) -> Iterator[Any]:
    admin = admin_with_bob(store_uri, str(tmp_path / "wh" / "db"))
    admin.close()
    victim = tmp_path / "admin" / "part-0.parquet"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"admin's data")
    tokens = {"bob": make_token(store_uri, "write", "bob")[1]}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        live.victim = victim  # type: ignore[attr-defined]
        yield live


def _purged_by_admin(store_uri: str) -> dict[str, Any]:
    admin = Metastore.open(store_uri, user="admin", authorization=True)
    try:
        return purge(admin).to_json()
    finally:
        admin.close()


def test_the_metastore_call_refuses_a_file_outside_the_table(svc: Live, store_uri: str) -> None:
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    victim = [DataFile(str(svc.victim), 12, 0)]  # type: ignore[attr-defined]
    t = bob.create_table("main.db.mine", "id INT")
    bob.create_table("main.db.parts", "id INT, k INT", partition_by=["k"])
    with pytest.raises(PermissionDenied, match=f"register data file {svc.victim} in table main.db.mine: it lies "  # type: ignore[attr-defined]
                                               f"outside the table's location {t.location}"):
        bob.write_table_files("main.db.mine", victim, "APPEND")
    with pytest.raises(PermissionDenied, match="outside the table's location"):
        bob.add_partitions("main.db.parts", [Partition({"k": 1}, data_files=victim)])
    with pytest.raises(PermissionDenied, match="outside the table's location"):
        bob.replace_partitions("main.db.parts", [], [Partition({"k": 1}, data_files=victim)])
    assert bob.table_data_files("main.db.mine") == [] and list(bob.list_partitions("main.db.parts")) == []
    bob.drop_table("main.db.mine")
    bob.drop_table("main.db.parts")
    _purged_by_admin(store_uri)
    assert svc.victim.read_bytes() == b"admin's data"  # type: ignore[attr-defined]


def test_a_spark_commit_through_catalog_ops_refuses_a_file_outside_the_table(svc: Live, store_uri: str) -> None:
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    t = bob.create_table("main.db.mine", "id INT")
    ctx = {"uri": svc.base, "project": "default", "catalog": "main", "spark_catalog": "rem", "branch": "main",
           "warehouse": "file:/tmp/wh"}
    body = {"ctx": ctx, "namespace": ["db"], "name": "mine", "location": t.location, "mode": "append", "rows": 1,
            "filters": [], "write_id": "job-victim", "deadline_ms": int(time.time() * 1000) + 60_000,
            "base_version": t.version,
            "written": [{"path": "", "existing": [], "files": [{"path": str(svc.victim), "size": 12,  # type: ignore[attr-defined]
                                                               "mtime": 1}]}]}
    answer = svc.request("POST", "/api/v1/catalog/ops/commit_write", body,
                         headers={"Authorization": f"Bearer {svc.tokens['bob']}"})  # type: ignore[attr-defined]
    assert answer.status == 403, answer.json
    error = answer.json["error"]
    assert error["type"] == "PermissionDenied" and error["errorClass"] == "INSUFFICIENT_PERMISSIONS"
    assert str(svc.victim) in error["message"] and "outside the table's location" in error["message"]  # type: ignore[attr-defined]
    assert bob.table_data_files("main.db.mine") == []
    # a file in the table commits as before
    body["write_id"] = "job-ok"
    body["written"][0]["files"][0]["path"] = f"{t.location}/part-0.parquet"  # type: ignore[index]
    answer = svc.request("POST", "/api/v1/catalog/ops/commit_write", body,
                         headers={"Authorization": f"Bearer {svc.tokens['bob']}"})  # type: ignore[attr-defined]
    assert answer.status == 200, answer.json
    assert [f.path for f in bob.table_data_files("main.db.mine")] == [f"{t.location}/part-0.parquet"]
    bob.drop_table("main.db.mine")
    _purged_by_admin(store_uri)
    assert svc.victim.read_bytes() == b"admin's data"  # type: ignore[attr-defined]
