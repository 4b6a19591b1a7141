"""``ushas --uri http://… drop --purge`` (and ``Metastore.open("http://…").drop_table(…, purge=True)``) removes the
table's data as on a local store: the service collects what the purge rules free (``data.purge.bounded``) and deletes
it itself after the commit; a client names no path (``data_paths`` is an answer list), a file registered from
outside the table is kept, and a caller who may not drop the table deletes nothing."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from bob_may_create import admin_with_bob

from remote_service import make_token

from ushas_catalog.cli import main
from ushas_catalog.data.purge import local_path
from ushas_catalog.errors import InvalidArgument, PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition

from .live import Live, running


def _file(path: str) -> DataFile:
    local = Path(local_path(path) or path)
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(b"rows")
    return DataFile(path, 4, 1)


def _tables(ms: Any, prefix: str) -> dict[str, list[Path]]:
    """An unpartitioned and a partitioned table of ``ms``'s user, each with data files in its location: name -> the
    local paths of its files."""
    flat = ms.create_table(f"main.db.{prefix}flat", "id INT")
    ms.write_table_files(f"main.db.{prefix}flat", [_file(f"{flat.location}/part-0.parquet")], "APPEND")
    parts = ms.create_table(f"main.db.{prefix}parts", "id INT, k INT", partition_by=["k"])
    ms.add_partitions(f"main.db.{prefix}parts", [Partition({"k": k}, data_files=[_file(
        f"{parts.location}/k={k}/part-0.parquet")]) for k in (1, 2)])
    return {name: [Path(local_path(f.path) or f.path) for f in _all_files(ms, name)]
            for name in (f"main.db.{prefix}flat", f"main.db.{prefix}parts")}


def _all_files(ms: Any, name: str) -> list[DataFile]:
    partitions = list(ms.list_partitions(name)) if ms.get_table(name).partition_columns else []
    if not partitions:
        return list(ms.table_data_files(name))
    return [f for p in partitions for f in ms.get_partition(name, p.values).data_files or []]


@pytest.fixture
def svc(store_uri: str, tmp_path: Path) -> Iterator[Any]:
    admin = admin_with_bob(store_uri, str(tmp_path / "wh" / "db"))
    admin.close()
    tokens = {who: make_token(store_uri, "write", who)[1] for who in ("bob", "eve")}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        yield live


def _ushas(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_remote_drop_purge_removes_the_data_as_a_local_one_does(svc: Live, store_uri: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    remote = _tables(bob, "r_")
    local_bob = Metastore.open(store_uri, user="bob", authorization=True)
    local = _tables(local_bob, "l_")
    local_bob.close()
    # a file the store's administrator registered in a table from outside its location: no purge deletes it
    outside = tmp_path / "elsewhere" / "part-9.parquet"
    store_admin = Metastore.open(store_uri)
    store_admin.write_table_files("main.db.r_flat", [_file(str(outside))], "APPEND")
    store_admin.close()
    assert all(p.is_file() for files in (*remote.values(), *local.values()) for p in files) and outside.is_file()

    for kind in ("flat", "parts"):
        name = f"main.db.r_{kind}"
        code, out = _ushas("--uri", svc.base, "--token", svc.tokens["bob"], "--json", "drop", "--purge", name,  # type: ignore[attr-defined]
                           capsys=capsys)
        code_local, out_local = _ushas("--uri", store_uri, "--user", "bob", "--json", "drop", "--purge",
                                       f"main.db.l_{kind}", capsys=capsys)
        assert (code, code_local) == (0, 0), (out, out_local)
        assert json.loads(out) == {"dropped": name, "purged": True}
        assert json.loads(out_local) == {"dropped": f"main.db.l_{kind}", "purged": True}
    for name, files in (*remote.items(), *local.items()):
        assert not [p for p in files if p.exists()], name  # the files are gone, remote as local
    assert outside.read_bytes() == b"rows"  # registered from outside the table: kept
    assert not bob.table_exists("main.db.r_flat") and bob.list_dropped_tables("main.db") == []
    # the text form: the same line
    texts = _tables(bob, "t_")
    code, out = _ushas("--uri", svc.base, "--token", svc.tokens["bob"], "drop", "--purge", "main.db.t_parts",  # type: ignore[attr-defined]
                       capsys=capsys)
    assert (code, out.strip()) == (0, "dropped main.db.t_parts (purged)")
    assert not [p for p in texts["main.db.t_parts"] if p.exists()]


def test_a_caller_who_may_not_drop_deletes_nothing(svc: Live, store_uri: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    tables = _tables(bob, "b_")
    admin = Metastore.open(store_uri, user="admin", authorization=True)
    admin.grant("SELECT", "main.db", "user:eve")  # eve reads main.db; dropping needs MANAGE
    admin.close()
    for name in tables:
        code, out = _ushas("--uri", svc.base, "--token", svc.tokens["eve"], "drop", "--purge", name,  # type: ignore[attr-defined]
                           capsys=capsys)
        assert code == 2 and f"User eve does not have MANAGE on table {name}" in out, out
        eve = Metastore.open(svc.base, token=svc.tokens["eve"])  # type: ignore[attr-defined]
        with pytest.raises(PermissionDenied, match=f"User eve does not have MANAGE on table {name}"):
            eve.drop_table(name, purge=True, data_paths=[])
    assert all(p.read_bytes() == b"rows" for files in tables.values() for p in files)
    assert all(bob.table_exists(name) for name in tables)


def test_a_client_cannot_name_paths_for_the_service_to_delete(svc: Live, tmp_path: Path) -> None:
    victim = tmp_path / "admin" / "keep.parquet"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"admin's")
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    bob.create_table("main.db.mine", "id INT")
    with pytest.raises(InvalidArgument, match="drop_table: data_paths is an answer list"):
        bob.drop_table("main.db.mine", purge=True, data_paths=[str(victim)])
    assert bob.table_exists("main.db.mine") and victim.read_bytes() == b"admin's"
    bob.drop_table("main.db.mine", purge=True, data_paths=[])
    assert victim.read_bytes() == b"admin's" and not bob.table_exists("main.db.mine")


def test_sql_drop_purge_through_the_service_answers_only_the_tables_own_data(svc: Live, store_uri: str,
                                                                            tmp_path: Path) -> None:
    """``DROP TABLE … PURGE`` of a remote Spark catalog: the service's ``catalog/ops/drop_table`` decides what the
    shim deletes (the table's location), and a file registered from outside it is not among them."""
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    files = _tables(bob, "s_")["main.db.s_flat"]
    location = bob.get_table("main.db.s_flat").location
    outside = tmp_path / "elsewhere" / "part-9.parquet"
    store_admin = Metastore.open(store_uri)
    store_admin.write_table_files("main.db.s_flat", [_file(str(outside))], "APPEND")
    store_admin.close()
    ctx = {"uri": svc.base, "project": "default", "catalog": "main", "spark_catalog": "rem", "branch": "main",
           "warehouse": "file:/tmp/wh"}
    answer = svc.request("POST", "/api/v1/catalog/ops/drop_table",
                         {"ctx": ctx, "namespace": ["db"], "name": "s_flat", "purge": True},
                         headers={"Authorization": f"Bearer {svc.tokens['bob']}"})  # type: ignore[attr-defined]
    assert answer.status == 200, answer.json
    assert answer.json["dropped"] is True and answer.json["delete_paths"] == [location]
    assert str(outside) not in json.dumps(answer.json) and all(p.is_file() for p in files)


def test_remote_drop_database_cascade_purge_removes_its_tables_data(svc: Live, store_uri: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    admin = Metastore.open(store_uri, user="admin", authorization=True)
    admin.grant("CREATE", "main", "user:bob")
    admin.close()
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    bob.create_database("main.bobs", location=str(tmp_path / "wh" / "bobs"))
    flat = bob.create_table("main.bobs.flat", "id INT")
    bob.write_table_files("main.bobs.flat", [_file(f"{flat.location}/part-0.parquet")], "APPEND")
    parts = bob.create_table("main.bobs.parts", "id INT, k INT", partition_by=["k"])
    bob.add_partitions("main.bobs.parts", [Partition({"k": 1}, data_files=[_file(f"{parts.location}/k=1/p.parquet")])])
    files = [Path(local_path(p) or p) for p in (f"{flat.location}/part-0.parquet", f"{parts.location}/k=1/p.parquet")]
    assert all(p.is_file() for p in files)
    code, out = _ushas("--uri", svc.base, "--token", svc.tokens["bob"], "--json", "drop", "--purge", "--cascade",  # type: ignore[attr-defined]
                       "main.bobs", capsys=capsys)
    assert code == 0 and json.loads(out) == {"dropped": "main.bobs", "purged": True}, out
    assert not [p for p in files if p.exists()] and not bob.database_exists("main.bobs")


def test_drop_partition_purge_answers_only_files_inside_the_table(svc: Live, store_uri: str, tmp_path: Path) -> None:
    """``ALTER TABLE … DROP PARTITION … PURGE`` (``catalog/ops/drop_partitions``, the op embedded and remote Spark
    send): the shim deletes the partition's files the purge rules allow, not one registered from outside the table."""
    bob = Metastore.open(svc.base, token=svc.tokens["bob"])  # type: ignore[attr-defined]
    parts = bob.create_table("main.db.p_parts", "id INT, k INT", partition_by=["k"])
    inside = _file(f"{parts.location}/k=3/part-0.parquet")
    outside = _file(str(tmp_path / "elsewhere" / "part-7.parquet"))
    store_admin = Metastore.open(store_uri)
    store_admin.add_partitions("main.db.p_parts", [Partition({"k": 3}, data_files=[inside, outside])])
    store_admin.close()
    ctx = {"uri": svc.base, "project": "default", "catalog": "main", "spark_catalog": "rem", "branch": "main",
           "warehouse": "file:/tmp/wh"}
    answer = svc.request("POST", "/api/v1/catalog/ops/drop_partitions",
                         {"ctx": ctx, "namespace": ["db"], "name": "p_parts", "partitions": [{"k": 3}], "purge": True},
                         headers={"Authorization": f"Bearer {svc.tokens['bob']}"})  # type: ignore[attr-defined]
    assert answer.status == 200, answer.json
    assert answer.json == {"dropped": True, "delete_paths": [inside.path]}
    assert list(bob.list_partitions("main.db.p_parts")) == []
