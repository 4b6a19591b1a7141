"""Versioned objects (issue 23, part 2): volumes, models and files under a database, with versions, history,
drop / undrop / purge, names shared with tables refused, user-defined subspaces, and ``ushas objects``."""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import (InvalidArgument, NamespaceNotEmpty, NoSuchObject, NoSuchVersion, ObjectAlreadyExists,
                                  TableAlreadyExists)
from ushas_catalog.keyspace.layout import OBJECT
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import DatabaseName
from ushas_catalog.records.object_pb2 import ObjectVersion

from .conftest import raw_keys

MODEL = "main.sales.churn"
FEATURE_PROTO = """syntax = "proto3";
package demo;
message Feature {
  string entity = 1;
  int64 day = 2;
  double value = 3;
  repeated string tags = 4;
}
"""


def test_create_version_roll_back_and_read_as_of(sales: Metastore) -> None:
    o = sales.objects.create(MODEL, "model", "s3://b/models/churn", properties={"framework": "sklearn"},
                             comment="churn model")
    assert (o.kind, o.location, o.current_version, o.version, o.owner) == ("model", "s3://b/models/churn", 0, 1,
                                                                          "tester")
    with pytest.raises(NoSuchVersion, match="no version yet"):
        sales.objects.version(MODEL)
    v1 = sales.objects.add_version(MODEL, "s3://b/models/churn/1", properties={"auc": "0.81"})
    between = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.002)
    v2 = sales.objects.add_version(MODEL)  # the object's location by default
    assert (v1.version, v2.version, v2.location, v2.current) == (1, 2, "s3://b/models/churn", True)
    assert v2.dataset == "main.sales.churn@v2"
    assert sales.objects.version(MODEL, as_of=between).version == 1
    assert sales.objects.version(MODEL, as_of=between.isoformat()).properties == {"auc": "0.81"}
    with pytest.raises(NoSuchVersion):
        sales.objects.version(MODEL, as_of=dt.datetime(2000, 1, 1))
    back = sales.objects.rollback(MODEL, 1)
    assert (back.version, back.location, back.properties, back.rolled_back_from) == (
        3, "s3://b/models/churn/1", {"auc": "0.81"}, 1)
    assert sales.objects.version(MODEL).version == 3
    assert [(v.version, v.current) for v in sales.objects.versions(MODEL)] == [(3, True), (2, False), (1, False)]
    assert sales.objects.version(MODEL, 2).location == "s3://b/models/churn"
    with pytest.raises(NoSuchVersion):
        sales.objects.rollback(MODEL, 9)
    altered = sales.objects.alter(MODEL, properties={"stage": "prod"}, unset_properties=["framework"])
    assert altered.properties == {"stage": "prod"} and altered.current_version == 3
    assert [h.operation for h in sales.objects.history(MODEL)] == [
        "ALTER OBJECT", "ROLLBACK", "ADD VERSION", "ADD VERSION", "CREATE OBJECT"]
    assert sales.objects.get(MODEL, as_of=1).properties == {"framework": "sklearn"}
    assert sales.objects.get(MODEL, as_of=1).current_version == 0
    assert sales.objects.get(MODEL, as_of=between).current_version == 1  # metadata as at a time
    with pytest.raises(NoSuchVersion, match="did not exist"):
        sales.objects.get(MODEL, as_of="2000-01-01T00:00:00")
    with pytest.raises(NoSuchVersion):
        sales.objects.get(MODEL, as_of=99)


def test_bad_input_is_refused_and_writes_nothing(sales: Metastore) -> None:
    before = raw_keys(sales)
    for kind, location in [("", "/x"), ("Model!", "/x"), ("model", ""), ("model", None)]:
        with pytest.raises(InvalidArgument):
            sales.objects.create(MODEL, kind, location)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        sales.objects.create(MODEL, "model", "/x", properties={"k": 1})  # type: ignore[dict-item]
    assert raw_keys(sales) == before
    sales.objects.create(MODEL, "model", "/m")
    with pytest.raises(ObjectAlreadyExists):
        sales.objects.create(MODEL, "file", "/m")
    assert sales.objects.create(MODEL, "file", "/other", if_not_exists=True).kind == "model"
    with pytest.raises(InvalidArgument):
        sales.objects.rollback(MODEL, 0)
    with pytest.raises(InvalidArgument, match="property 'nope'"):
        sales.objects.alter(MODEL, unset_properties=["nope"])
    with pytest.raises(NoSuchObject):
        sales.objects.add_version("main.sales.none", "/x")


def test_objects_and_tables_do_not_share_a_name(sales: Metastore) -> None:
    sales.create_table("main.sales.orders", "id INT")
    sales.create_view("main.sales.v", "SELECT 1 AS a", "a INT")
    with pytest.raises(TableAlreadyExists, match="already exists as a table"):
        sales.objects.create("main.sales.orders", "volume", "/v")
    with pytest.raises(TableAlreadyExists, match="already exists as a view"):
        sales.objects.create("main.sales.v", "volume", "/v")
    sales.objects.create("main.sales.docs", "volume", "/v")
    with pytest.raises(TableAlreadyExists, match="versioned object"):
        sales.create_table("main.sales.docs", "id INT")
    with pytest.raises(TableAlreadyExists, match="versioned object"):
        sales.create_view("main.sales.docs", "SELECT 1 AS a", "a INT")
    with pytest.raises(TableAlreadyExists, match="versioned object"):
        sales.rename_table("main.sales.orders", "main.sales.docs")
    assert [t.name for t in sales.list_tables("main.sales")] == ["orders"]
    sales.drop_table("main.sales.orders")
    sales.objects.create("main.sales.orders", "file", "/o")
    with pytest.raises(TableAlreadyExists, match="versioned object"):
        sales.undrop_table("main.sales.orders")


def test_drop_undrop_purge(sales: Metastore) -> None:
    first = sales.objects.create(MODEL, "model", "/m1")
    sales.objects.add_version(MODEL, "/m1/v1")
    sales.objects.drop(MODEL)
    assert sales.objects.list("main.sales") == [] and not sales.objects.exists(MODEL)
    with pytest.raises(NoSuchObject):
        sales.objects.get(MODEL)
    second = sales.objects.create(MODEL, "model", "/m2")  # the name is free again
    with pytest.raises(ObjectAlreadyExists):
        sales.objects.undrop(MODEL)
    sales.objects.drop(MODEL)
    assert sorted(o.id for o in sales.objects.list("main.sales", dropped=True)) == sorted([first.id, second.id])
    back = sales.objects.undrop(MODEL, first.id)
    assert (back.id, back.current_version, back.location) == (first.id, 1, "/m1")
    assert sales.objects.history(MODEL)[0].operation == "UNDROP OBJECT"
    assert sales.objects.purge("main.sales") == ["churn"]  # the other dropped one
    assert [o.id for o in sales.objects.list("main.sales", dropped=True)] == []
    sales.objects.drop(MODEL)
    assert sales.objects.purge("main.sales", name="other") == []
    assert sales.objects.purge("main.sales", name="churn") == ["churn"]
    db = sales.run(lambda tr: sales.resolver.database(tr, DatabaseName.parse("main.sales"), load=False))
    begin, end = db.path.add(OBJECT).range()
    assert [k for k in raw_keys(sales, begin, end)] == []  # every key of the object is gone
    from ushas_catalog.data.purge import purge as purge_project

    sales.objects.create("main.sales.later", "file", "/l")
    sales.objects.drop("main.sales.later")
    assert purge_project(sales, older_than=dt.timedelta(days=1)).objects == 0  # dropped just now: kept
    assert purge_project(sales).objects == 1  # ushas purge: dropped objects too (never their files)
    assert sales.objects.list("main.sales", dropped=True) == []


def test_list_by_kind_and_drop_with_the_database(sales: Metastore) -> None:
    sales.objects.create("main.sales.a", "volume", "/a")
    sales.objects.create("main.sales.b", "model", "/b")
    sales.objects.create("main.sales.c", "embeddings", "/c")  # kinds are extensible by name
    assert [o.name for o in sales.objects.list("main.sales")] == ["a", "b", "c"]
    assert [o.name for o in sales.objects.list("main.sales", kind="MODEL")] == ["b"]
    with pytest.raises(NamespaceNotEmpty, match="versioned objects"):
        sales.drop_database("main.sales")
    sales.drop_database("main.sales", cascade=True)
    sales.create_database("main.sales")
    assert sales.objects.list("main.sales") == []


def _feature_type(sales: Metastore, tmp_path: Path) -> None:
    proto = tmp_path / "feature.proto"
    proto.write_text(FEATURE_PROTO)
    sales.objects.create("main.sales.features", "file", "/f")
    t = sales.objects.register_type("main.sales.features", "daily", proto, primary_key=["entity", "day"])
    assert (t.message_type, t.primary_key) == ("demo.Feature", ("entity", "day"))


def test_a_proto_file_compiles_with_protoc_on_path_without_grpcio_tools(
        sales: Metastore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without grpcio-tools the product runs a ``protoc`` found on PATH (here: grpcio-tools' own protoc behind a
    script, the package itself made unimportable); with neither, the error says what to install."""
    import grpc_tools

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "protoc-calls"
    protoc = bin_dir / "protoc"
    protoc.write_text(f"#!/bin/sh\necho called >> {calls}\n"
                      f"exec {sys.executable} -m grpc_tools.protoc -I{Path(grpc_tools.__file__).parent / '_proto'} "
                      '"$@"\n')
    protoc.chmod(0o755)
    monkeypatch.setitem(sys.modules, "grpc_tools", None)  # ``from grpc_tools import protoc`` raises ImportError
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _feature_type(sales, tmp_path)
    assert calls.read_text() == "called\n"
    assert sales.objects.put("main.sales.features", "daily", {"entity": "a", "day": 1, "value": 0.5}) == ("a", 1)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InvalidArgument, match="needs grpcio-tools .* or protoc on PATH"):
        sales.objects.register_type("main.sales.features", "other", tmp_path / "feature.proto", primary_key=["entity"])


def test_user_defined_subspace_from_a_proto_file(sales: Metastore, tmp_path: Path) -> None:
    _feature_type(sales, tmp_path)
    obj = "main.sales.features"
    for entity in "ba":
        for day in (3, 1, 2):
            assert sales.objects.put(obj, "daily", {"entity": entity, "day": day, "value": day / 2}) == (entity, day)
    assert sales.objects.read(obj, "daily", ("a", 2)) == {"entity": "a", "day": "2", "value": 1.0, "tags": []}
    assert sales.objects.read(obj, "daily", ("a", 9)) is None
    assert [k for k, _ in sales.objects.scan(obj, "daily")] == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2),
                                                                ("b", 3)]
    assert [k for k, _ in sales.objects.scan(obj, "daily", ("a", 2), ("b",))] == [("a", 2), ("a", 3)]
    assert [k for k, _ in sales.objects.scan(obj, "daily", "b", limit=2, reverse=True)] == [("b", 3), ("b", 2)]
    with pytest.raises(InvalidArgument, match="no field named \"colour\""):
        sales.objects.put(obj, "daily", {"entity": "a", "colour": "red"})
    with pytest.raises(InvalidArgument, match="not ushas.metastore.ObjectVersion|holds demo.Feature"):
        sales.objects.put(obj, "daily", ObjectVersion(version=1))
    with pytest.raises(InvalidArgument, match="primary key"):
        sales.objects.read(obj, "daily", "a")
    with pytest.raises(InvalidArgument, match="at most 4000 bytes"):
        sales.objects.put(obj, "daily", {"entity": "e" * 5000, "day": 1})
    with pytest.raises(InvalidArgument, match="at most 90000 bytes"):
        sales.objects.put(obj, "daily", {"entity": "a", "day": 9, "tags": ["t" * 1000] * 100})
    with pytest.raises(NoSuchObject, match="no subspace 'weekly'"):
        sales.objects.put(obj, "weekly", {"entity": "a"})
    assert sales.objects.delete(obj, "daily", ("a", 2)) and not sales.objects.delete(obj, "daily", ("a", 2))
    assert [t.name for t in sales.objects.types(obj)] == ["daily"] and sales.objects.get(obj).types == ["daily"]
    with pytest.raises(ObjectAlreadyExists):
        sales.objects.register_type(obj, "daily", tmp_path / "feature.proto", primary_key="entity")
    assert sales.objects.drop_type(obj, "daily") == 5
    assert sales.objects.types(obj) == []


def test_user_defined_subspace_from_a_message_class(sales: Metastore) -> None:
    """A generated message class (or a serialized FileDescriptorSet) needs no protoc."""
    obj = "main.sales.runs"
    sales.objects.create(obj, "model", "/r")
    sales.objects.register_type(obj, "versions", ObjectVersion, primary_key="version")
    sales.objects.put(obj, "versions", ObjectVersion(version=7, location="/r/7"))
    sales.objects.put(obj, "versions", {"version": 3, "location": "/r/3"})
    assert [(k, r["location"]) for k, r in sales.objects.scan(obj, "versions")] == [((3,), "/r/3"), ((7,), "/r/7")]
    with pytest.raises(InvalidArgument, match="primary key field 'nope'"):
        sales.objects.register_type(obj, "other", ObjectVersion, primary_key="nope")
    with pytest.raises(InvalidArgument, match="single scalar"):
        sales.objects.register_type(obj, "other", ObjectVersion, primary_key="properties")
    with pytest.raises(InvalidArgument, match="not a serialized FileDescriptorSet"):
        sales.objects.register_type(obj, "other", b"\xff\xff garbage", primary_key="x")


def _cli(store_uri: str, *args: str) -> int:
    return main(["--uri", store_uri, "--project", "acme", *args])


def test_cli(sales: Metastore, store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(store_uri, "objects", "create", "main.sales.docs", "--kind", "volume", "--location", "/v",
                "-p", "team=ml") == 0
    assert "created volume main.sales.docs" in capsys.readouterr().out
    assert _cli(store_uri, "objects", "add-version", "main.sales.docs", "--location", "/v/1") == 0
    assert _cli(store_uri, "objects", "add-version", "main.sales.docs", "--location", "/v/2") == 0
    assert _cli(store_uri, "objects", "rollback", "main.sales.docs", "--to", "1") == 0
    capsys.readouterr()
    assert _cli(store_uri, "objects", "versions", "main.sales.docs", "--json") == 0
    assert [v["version"] for v in json.loads(capsys.readouterr().out)] == [3, 2, 1]
    assert _cli(store_uri, "--json", "objects", "show", "main.sales.docs") == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["kind"], shown["current_version"], shown["properties"]) == ("volume", 3, {"team": "ml"})
    assert _cli(store_uri, "objects", "show", "main.sales.docs", "--version", "2", "--json") == 0
    assert json.loads(capsys.readouterr().out)["location"] == "/v/2"
    assert _cli(store_uri, "objects", "list", "main.sales") == 0
    assert "docs" in capsys.readouterr().out
    assert _cli(store_uri, "objects", "show", "main.sales.nope") == 1
    assert "NoSuchObject" in capsys.readouterr().err
    assert _cli(store_uri, "objects", "create", "main.sales.x", "--kind", "Bad Kind", "--location", "/x") == 2
    assert _cli(store_uri, "objects", "drop", "main.sales.docs") == 0
    assert _cli(store_uri, "objects", "undrop", "main.sales.docs") == 0
    assert _cli(store_uri, "objects", "drop", "main.sales.docs") == 0
    capsys.readouterr()
    assert _cli(store_uri, "objects", "purge", "main.sales", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"purged": ["docs"]}


def test_cli_subspaces(sales: Metastore, store_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proto = tmp_path / "feature.proto"
    proto.write_text(FEATURE_PROTO)
    assert _cli(store_uri, "objects", "create", "main.sales.f", "--kind", "file", "--location", "/f") == 0
    assert _cli(store_uri, "objects", "register-type", "main.sales.f", "daily", str(proto), "--key", "entity",
                "--key", "day") == 0
    for day in (2, 1):
        assert _cli(store_uri, "objects", "put", "main.sales.f", "daily", json.dumps({"entity": "a", "day": day})) == 0
    capsys.readouterr()
    assert _cli(store_uri, "objects", "scan", "main.sales.f", "daily", "--json") == 0
    assert [r["key"] for r in json.loads(capsys.readouterr().out)] == [["a", 1], ["a", 2]]
    assert _cli(store_uri, "objects", "get", "main.sales.f", "daily", '["a", 2]', "--json") == 0
    assert json.loads(capsys.readouterr().out)["day"] == "2"
    assert _cli(store_uri, "objects", "put", "main.sales.f", "daily", '{"entity": "a", "oops": 1}') == 2
    assert "no field named" in capsys.readouterr().err
    assert _cli(store_uri, "objects", "delete", "main.sales.f", "daily", '["a", 2]') == 0
    assert _cli(store_uri, "objects", "get", "main.sales.f", "daily", '["a", 2]') == 1


def test_system_tables(sales: Metastore) -> None:
    from ushas_catalog.sql_tables.ops import rows_page

    sales.create_database("main.other")
    sales.objects.create("main.sales.docs", "volume", "/v", properties={"team": "ml"})
    sales.objects.create(MODEL, "model", "/m")
    sales.objects.create("main.other.x", "model", "/x")
    for n in (1, 2):
        sales.objects.add_version(MODEL, f"/m/{n}")
    sales.objects.rollback(MODEL, 1)
    ctx = {"uri": "unused", "catalog": "main", "spark_catalog": "main", "warehouse": "/w"}

    def read(name: str, filters: list[dict[str, object]], columns: list[str]) -> list[list[object]]:
        return rows_page(sales, {"ctx": ctx, "namespace": ["system"], "name": name, "filters": filters,
                                 "page_size": 100, "columns": columns})["rows"]

    assert read("objects", [{"op": "eq", "column": "database", "value": "sales"}],
                ["full_name", "kind", "current_version", "properties"]) == [
        ["main.sales.churn", "model", 3, {}], ["main.sales.docs", "volume", None, {"team": "ml"}]]
    assert read("objects", [{"op": "in", "column": "kind", "values": ["model"]}], ["full_name"]) == [
        ["main.other.x"], ["main.sales.churn"]]
    assert read("object_versions", [{"op": "eq", "column": "object", "value": "churn"}],
                ["version", "current", "location", "rolled_back_from", "dataset"]) == [
        [1, False, "/m/1", None, "main.sales.churn@v1"], [2, False, "/m/2", None, "main.sales.churn@v2"],
        [3, True, "/m/1", 1, "main.sales.churn@v3"]]


def test_tags_search_and_the_change_feed(sales: Metastore) -> None:
    sales.objects.create(MODEL, "model", "/m", comment="churn predictor", properties={"ushas.tag.gold": ""})
    sales.objects.add_version(MODEL, "/m/1")
    md = sales.metadata.tag(MODEL, ["pii"])
    assert md.object.type.value == "OBJECT" and md.user.tags == ["gold", "pii"]
    assert md.system.properties["object_kind"] == "model" and md.system.properties["current_version"] == "1"
    sales.metadata.set(MODEL, {"team": "ml"})
    sales.metadata.set(MODEL, {"comment": "the churn model"})  # the object's own comment
    assert sales.objects.get(MODEL).comment == "the churn model"
    assert [(h.type.value, h.name) for h in sales.search("pii").hits] == [("OBJECT", MODEL)]
    assert [h.name for h in sales.search("team=ml", types=["object"]).hits] == [MODEL]
    assert [h.name for h in sales.search("object_kind=model").hits] == [MODEL]
    assert sales.search("pii", types=["table"]).hits == []
    sales.objects.drop(MODEL)
    assert sales.search("pii").hits == []
    sales.objects.undrop(MODEL)
    assert [h.name for h in sales.search("pii").hits] == [MODEL]
    sales.objects.drop(MODEL)
    sales.objects.purge("main.sales")
    assert sales.search("pii").hits == []
    events = [(c.kind, c.operation) for c in sales.changes()][-4:]
    assert events == [("object", "DROP OBJECT"), ("object", "UNDROP OBJECT"), ("object", "DROP OBJECT"),
                      ("object", "PURGE OBJECT")]


def test_ushas_check_knows_objects(sales: Metastore) -> None:
    from ushas_catalog.check import run_checks
    from ushas_catalog.records.store import RecordStore
    from ushas_catalog.keyspace.layout import OBJECT_ID, OBJECT_RECORD

    sales.objects.create(MODEL, "model", "/m", properties={"ushas.tag.gold": ""})
    sales.objects.add_version(MODEL, "/m/1")
    sales.metadata.tag(MODEL, ["pii"])
    sales.objects.create("main.sales.gone", "file", "/g")
    sales.objects.drop("main.sales.gone")
    assert run_checks(sales).ok, run_checks(sales).findings
    oid = uuid.UUID(sales.objects.get(MODEL).id)
    db = sales.run(lambda tr: sales.resolver.database(tr, DatabaseName.parse("main.sales"), load=False))
    path = db.path.add(OBJECT).add(OBJECT_ID, oid)
    sales.db.run(lambda tr: RecordStore.of(path, OBJECT_RECORD).delete(tr, ()))  # a half-removed object
    assert any("has no record" in f.problem and f.where == MODEL for f in run_checks(sales, ["names"]).findings)
