"""A governed partition's location lies under its table's location or in a declared external location the caller
may place data in, even in a project that declares none (``catalog.locations.A_PARTITION``; docs/governance.md,
"Locations"). On the old code, with no declared location, bob pointed a partition of his own table at admin's
directory (the metastore call, Spark's ADD PARTITION … LOCATION and PARTITION … SET LOCATION over ``catalog/ops``);
his files registered there, then a purge of the partition, deleted admin's files."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from remote_service import make_token

from ushas_catalog.errors import PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition

from .live import Live, running


@pytest.fixture
def svc(store_uri: str, tmp_path: Path) -> Iterator[Any]:
    """bob's partitioned main.db.mine (in main.db's location), admin's files in a directory no table holds."""
    admin = admin_with_bob(store_uri, str(tmp_path / "wh" / "db"))
    admin.close()
    victim = tmp_path / "admin"
    victim.mkdir()
    (victim / "part-0.parquet").write_bytes(b"admin's data")
    tokens = {name: make_token(store_uri, "write", name)[1] for name in ("admin", "bob")}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        live.victim = str(victim)  # type: ignore[attr-defined]
        remote(live, "bob").create_table("main.db.mine", "id INT, dt STRING", partition_by=["dt"])
        yield live


def remote(svc: Live, who: str) -> Any:
    return Metastore.open(svc.base, token=svc.tokens[who])  # type: ignore[attr-defined]


def op(svc: Live, name: str, **fields: Any) -> tuple[int, dict[str, Any]]:
    body = {"ctx": {"catalog": "main", "spark_catalog": "rem", "warehouse": "file:/nonexistent/wh"},
            "namespace": ["db"], "name": "mine", **fields}
    answer = svc.request("POST", f"/api/v1/catalog/ops/{name}", body,
                         headers={"Authorization": f"Bearer {svc.tokens['bob']}"})  # type: ignore[attr-defined]
    return answer.status, answer.json


def refused_op(svc: Live, name: str, **fields: Any) -> None:
    status, answer = op(svc, name, **fields)
    assert status == 403 and answer["error"]["type"] == "PermissionDenied", answer
    message = answer["error"]["message"]
    assert svc.victim in message and "in no declared external location" in message, message  # type: ignore[attr-defined]


def test_no_partition_of_bobs_table_in_admins_directory(svc: Live) -> None:
    bob = remote(svc, "bob")
    victim: str = svc.victim  # type: ignore[attr-defined]
    own = bob.get_table("main.db.mine").location
    with pytest.raises(PermissionDenied, match=f"place a partition of main.db.mine at {victim}: it lies outside the "
                                               f"table's location {own} and in no declared external location"):
        bob.add_partitions("main.db.mine", [Partition({"dt": "x"}, location=victim)])
    # Spark's ADD PARTITION … LOCATION over catalog/ops
    refused_op(svc, "add_partitions", partitions=[{"values": {"dt": "x"}, "properties": {"location": victim}}])
    assert list(bob.list_partitions("main.db.mine")) == []
    # inside the table's own location: as before
    inside = os.path.join(own, "elsewhere")
    bob.add_partitions("main.db.mine", [Partition({"dt": "y"}, location=inside)])
    version = bob.get_table("main.db.mine").version
    # moved there: SET LOCATION (catalog/ops, as Spark sends it) and replace_partitions
    refused_op(svc, "replace_partition_metadata", values={"dt": "y"}, properties={"location": victim})
    with pytest.raises(PermissionDenied, match="in no declared external location"):
        bob.replace_partitions("main.db.mine", [{"dt": "y"}], [Partition({"dt": "y"}, location=victim)])
    assert bob.get_table("main.db.mine").version == version
    assert [p.location for p in bob.list_partitions("main.db.mine")] == [inside]
    assert sorted(os.listdir(victim)) == ["part-0.parquet"]


def test_a_declared_location_with_the_privilege_still_takes_a_partition(svc: Live, tmp_path: Path,
                                                                        store_uri: str) -> None:
    lake = tmp_path / "lake"
    admin = remote(svc, "admin")
    admin.create_location("lake", str(lake))
    bob = remote(svc, "bob")
    with pytest.raises(PermissionDenied, match="CREATE EXTERNAL TABLE"):
        bob.add_partitions("main.db.mine", [Partition({"dt": "x"}, location=str(lake / "x"))])
    admin.grant("CREATE EXTERNAL TABLE", "location:lake", "user:bob")
    bob.add_partitions("main.db.mine", [Partition({"dt": "x"}, location=str(lake / "x"))])
    status, answer = op(svc, "replace_partition_metadata", values={"dt": "x"},
                        properties={"location": str(lake / "moved")})
    assert status == 200, answer
    # ungoverned (embedded, authorization off): anywhere, as before
    ms = Metastore.open(store_uri)
    try:
        ms.add_partitions("main.db.mine", [Partition({"dt": "z"}, location=svc.victim)])  # type: ignore[attr-defined]
    finally:
        ms.close()
