"""Registered files stay in their table (catalog/registered_files.py): a governed user cannot register a path
outside their table's location (or their partition's) and so have the owner's next ``ushas purge`` delete it;
and ``ushas purge`` itself keeps (and reports) recorded files outside the dropped table's locations."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from bob_may_create import admin_with_bob

from ushas_catalog.data.garbage import Garbage
from ushas_catalog.data.purge import purge
from ushas_catalog.errors import InvalidArgument, PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition


@pytest.fixture
def world(store_uri: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """admin owns the project; bob may create tables in main.db; admin's file lies outside every table."""
    admin = admin_with_bob(store_uri, str(tmp_path / "wh" / "db"))
    victim = tmp_path / "admin" / "part-0.parquet"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"admin's data")
    bob = Metastore.open(store_uri, user="bob", authorization=True)
    yield {"admin": admin, "bob": bob, "victim": victim, "tmp": tmp_path}
    bob.close()
    admin.close()


def _victim_file(w: dict[str, Any]) -> list[DataFile]:
    return [DataFile(str(w["victim"]), 12, 0)]


REGISTRATIONS: dict[str, Callable[[Metastore, list[DataFile]], Any]] = {
    "append": lambda ms, files: ms.write_table_files("main.db.flat", files, "APPEND"),
    "append only": lambda ms, files: ms.write_table_files("main.db.flat", files, "APPEND", append=True),
    "overwrite": lambda ms, files: ms.write_table_files("main.db.flat", files, "INSERT OVERWRITE"),
    "garbage file": lambda ms, files: ms.write_table_files("main.db.flat", [], "INSERT OVERWRITE",
                                                           garbage=Garbage(files=files)),
    "garbage directory": lambda ms, files: ms.write_table_files(
        "main.db.flat", [], "TRUNCATE", garbage=Garbage(directories=[str(Path(files[0].path).parent)])),
    "add partitions": lambda ms, files: ms.add_partitions("main.db.parts", [Partition({"k": 1}, data_files=files)]),
    "replace partitions": lambda ms, files: ms.replace_partitions("main.db.parts", [],
                                                                  [Partition({"k": 2}, data_files=files)]),
    "appended partition": lambda ms, files: ms.replace_partitions("main.db.parts", [], [
        Partition({"k": 0}, data_files=files, files=1)], append=True),
}


@pytest.mark.parametrize("how", sorted(REGISTRATIONS))
def test_a_file_outside_the_table_is_refused_and_survives_purge(world: dict[str, Any], how: str) -> None:
    bob, admin = world["bob"], world["admin"]
    flat = bob.create_table("main.db.flat", "id INT")
    parts = bob.create_table("main.db.parts", "id INT, k INT", partition_by=["k"])
    bob.add_partitions("main.db.parts", [Partition({"k": 0}, data_files=[DataFile(parts.location + "/k=0/a", 1, 0)])])
    before = (bob.get_table("main.db.flat").version, bob.get_table("main.db.parts").version)
    with pytest.raises(PermissionDenied, match="outside the table's location") as refused:
        REGISTRATIONS[how](bob, _victim_file(world))
    message = str(refused.value)
    assert "\n" not in message and "main.db." in message and "wh/db/" in message  # the table and its location
    assert (bob.get_table("main.db.flat").version, bob.get_table("main.db.parts").version) == before  # nothing
    assert flat.location and parts.location
    bob.drop_table("main.db.flat")
    bob.drop_table("main.db.parts")
    purge(admin)
    assert world["victim"].read_bytes() == b"admin's data"


def test_dotted_paths_are_refused(world: dict[str, Any]) -> None:
    bob = world["bob"]
    t = bob.create_table("main.db.flat", "id INT")
    sneaky = f"{t.location}/../../../admin/part-0.parquet"
    with pytest.raises(InvalidArgument, match=r"'\.' or '\.\.' segment"):
        bob.write_table_files("main.db.flat", [DataFile(sneaky, 1, 0)], "APPEND")


def test_legitimate_registrations_pass(world: dict[str, Any]) -> None:
    bob, admin, tmp = world["bob"], world["admin"], world["tmp"]
    flat = bob.create_table("main.db.flat", "id INT")
    bob.write_table_files("main.db.flat", [DataFile(f"file:{flat.location}/a.parquet", 1, 0)], "APPEND")
    bob.write_table_files("main.db.flat", [DataFile(f"{flat.location}/b.parquet", 1, 0)], "APPEND", append=True)
    parts = bob.create_table("main.db.parts", "id INT, k INT", partition_by=["k"])
    bob.replace_partitions("main.db.parts", [], [Partition({"k": 1}, data_files=[
        DataFile(f"{parts.location}/k=1/a.parquet", 1, 0)])])
    # a partition admin placed elsewhere (a declared location: a partition outside its table needs one): bob
    # writes into it (its files lie under its own location)
    admin.create_location("elsewhere", str(tmp / "elsewhere"))
    elsewhere = tmp / "elsewhere" / "k=2"
    admin.add_partitions("main.db.parts", [Partition({"k": 2}, location=str(elsewhere))])
    bob.replace_partitions("main.db.parts", [{"k": 2}], [Partition({"k": 2}, location=str(elsewhere), data_files=[
        DataFile(f"{elsewhere}/a.parquet", 1, 0)])])
    assert [f.path for f in bob.get_partition("main.db.parts", {"k": 2}).data_files] == [f"{elsewhere}/a.parquet"]
    # files in a declared external location: WRITE FILES on it
    ext = tmp / "ext"
    admin.create_location("ext", str(ext))
    refused = [DataFile(f"{ext}/x.parquet", 1, 0)]
    with pytest.raises(PermissionDenied, match="WRITE FILES on external location ext"):
        bob.write_table_files("main.db.flat", refused, "APPEND", append=True)
    admin.grant("WRITE FILES", "location:ext", "user:bob")
    admin.grant("READ FILES", "location:ext", "user:bob")
    bob.write_table_files("main.db.flat", refused, "APPEND", append=True)


def test_purge_keeps_and_reports_files_registered_outside_before(world: dict[str, Any]) -> None:
    """Defence in depth: files an ungoverned caller (or an older version) registered outside the table."""
    admin = world["admin"]
    admin.authorization = False  # as registered before the bound existed
    t = admin.create_table("main.db.flat", "id INT")
    inside = Path(t.location) / "a.parquet"
    inside.parent.mkdir(parents=True)
    inside.write_bytes(b"x")
    admin.write_table_files("main.db.flat", [DataFile(str(inside), 1, 0), *_victim_file(world)], "APPEND")
    parts = admin.create_table("main.db.parts", "id INT, k INT", partition_by=["k"])
    admin.add_partitions("main.db.parts", [Partition({"k": 1}, data_files=_victim_file(world))])
    admin.write_table_files("main.db.flat", [], "INSERT OVERWRITE", garbage=Garbage(files=_victim_file(world)))
    admin.write_table_files("main.db.flat", [DataFile(str(inside), 1, 0), *_victim_file(world)], "APPEND")
    admin.drop_table("main.db.flat")
    admin.drop_table("main.db.parts")
    assert parts.location
    summary = purge(admin).to_json()
    assert world["victim"].read_bytes() == b"admin's data"
    assert not inside.exists()  # the table's own files go
    assert summary["kept_outside"] and set(summary["kept_outside"]) == {str(world["victim"])}


def test_purge_keeps_a_live_tables_garbage_outside_it(world: dict[str, Any]) -> None:
    admin = world["admin"]
    admin.authorization = False
    admin.create_table("main.db.flat", "id INT")
    admin.write_table_files("main.db.flat", [], "INSERT OVERWRITE", garbage=Garbage(
        files=_victim_file(world), directories=[str(world["victim"].parent)]))
    summary = purge(admin).to_json()
    assert world["victim"].read_bytes() == b"admin's data"
    assert str(world["victim"]) in summary["kept_outside"] and str(world["victim"].parent) in summary["kept_outside"]


def test_a_write_in_chunks_is_bounded_before_anything_is_staged(world: dict[str, Any],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from ushas_catalog import bulk

    monkeypatch.setattr(bulk, "WRITE_BULK_AT", 50)
    bob = world["bob"]
    t = bob.create_table("main.db.parts", "id INT, k INT", partition_by=["k"])
    items = [Partition({"k": i}, data_files=[DataFile(f"{t.location}/k={i}/a", 1, 0)]) for i in range(60)]
    items[-1] = Partition({"k": 59}, data_files=_victim_file(world))
    with pytest.raises(PermissionDenied, match="outside the table's location"):
        bob.replace_partitions("main.db.parts", [], items)
    assert list(bob.list_partitions("main.db.parts")) == [] and bulk.pending_work(bob) == []
    items[-1] = Partition({"k": 59}, data_files=[DataFile(f"{t.location}/k=59/a", 1, 0)])
    assert bob.replace_partitions("main.db.parts", [], items).added == 60


SCHEMA_JSON = ('{"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": true, "metadata": {}}, '
               '{"name": "dt", "type": "string", "nullable": true, "metadata": {}}]}')


def test_a_staged_ctas_is_bounded(world: dict[str, Any], store_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files a staged CTAS stages (purged if it dies) and commits, in one transaction and in chunks."""
    from ushas_catalog import bulk
    from ushas_catalog.kv.base import Limits
    from ushas_catalog.kv.sqlite import SqliteDatabase
    from ushas_catalog.spark.staged import OPS

    bob = world["bob"]
    victim = {"path": str(world["victim"]), "size": 12, "mtime": 1}
    request = {"ctx": {"uri": store_uri, "project": "default", "catalog": "main", "warehouse": str(world["tmp"]),
                       "user": "bob", "authorization": True},
               "namespace": ["db"], "name": "t", "kind": "create", "schema": SCHEMA_JSON, "properties": {},
               "partitioning": [{"transform": "identity", "columns": ["dt"], "text": "dt"}]}
    staged = OPS["stage_table"](bob, request)
    with pytest.raises(PermissionDenied, match="register staged file"):
        OPS["stage_files"](bob, {**request, "write_id": staged["write_id"], "files": [victim]})
    location = staged["table"]["location"]
    written = [{"path": f"dt={i}", "existing": [], "files": [{"path": f"{location}/dt={i}/part-0.parquet",
                                                               "size": 1, "mtime": 1}]} for i in range(60)]
    written[-1]["files"] = [victim]
    commit = {**request, "write_id": staged["write_id"], "deadline_ms": time.time_ns() // 1_000_000 + 60_000,
              "location": location, "write": {"written": written, "rows": 60}}
    with pytest.raises(PermissionDenied, match="outside the table's location"):
        OPS["commit_staged"](bob, commit)  # in one transaction
    monkeypatch.setattr(bulk, "WRITE_CHUNK", 16)
    monkeypatch.setattr(SqliteDatabase, "limits", Limits(transaction_bytes=20_000))  # the one transaction fails
    with pytest.raises(PermissionDenied, match="outside the table's location"):
        OPS["commit_staged"](bob, commit)  # in chunks
    assert not bob.table_exists("main.db.t") and bulk.pending_work(bob) == []


def test_an_ended_write_releases_only_its_tables_files(world: dict[str, Any]) -> None:
    from ushas_catalog.data.write_fence import release_files

    admin = world["admin"]
    admin.authorization = False
    t = admin.create_table("main.db.flat", "id INT")
    release_files(admin, "main.db.flat", "job-1", [DataFile(f"{t.location}/part-job-1", 1, 0),
                                                    *_victim_file(world)])
    assert [f.path for e in admin.garbage() for f in e.files] == [f"{t.location}/part-job-1"]
