"""USER / SYSTEM metadata on every object type: writes, validation, Spark mirroring, SYSTEM
bookkeeping by the catalog and the lineage hook, history, drop / undrop / purge, projects."""
from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from ushas_catalog.errors import InvalidArgument, NoSuchTable, ReadOnlyMetadata
from ushas_catalog.metadata.store import INDEX_SCOPES, INDEX_TYPES, MAX_VALUE_BYTES, MetadataKeys, ObjectType, Scope
from ushas_catalog.metadata.sync import record_lineage_write
from ushas_catalog.metastore import Metastore
from ushas_catalog.metadata.search import check_index
from ushas_catalog.model.table_changes import (AddColumn, DeleteColumn, RenameColumn, SetProperty, RemoveProperty,
                                         UpdateColumnComment)
from ushas_catalog.model.schema import parse_type

OBJECTS: list[tuple[str, ObjectType]] = [
    ("main", ObjectType.CATALOG),
    ("main.sales", ObjectType.DATABASE),
    ("main.sales.orders", ObjectType.TABLE),
    ("main.sales.big_orders", ObjectType.VIEW),
    ("main.sales.orders.customer_id", ObjectType.COLUMN),
    ("main.sales.orders.address.city", ObjectType.COLUMN),
    ("main.sales.big_orders.amount", ObjectType.COLUMN),
]


def _ok(ms: Metastore) -> None:
    check = check_index(ms)
    assert check.ok, check.to_json()


@pytest.mark.parametrize("name,otype", OBJECTS)
def test_user_properties_and_tags_on_every_object_type(sales: Metastore, name: str, otype: ObjectType) -> None:
    md = sales.metadata
    after = md.set(name, {"owner_team": "growth", "tier": "gold"})
    assert after.object.type is otype and after.object.full_name == name
    md.tag(name, ["pii", "finance"])
    got = md.get(name)
    assert got.user.properties == {"owner_team": "growth", "tier": "gold"} | (
        {"comment": "the buyer"} if name.endswith("customer_id") else {})
    assert sorted(got.user.tags) == ["finance", "pii"]
    md.unset(name, ["tier", "not_there"])
    md.untag(name, "finance")
    got = md.get(name)
    assert "tier" not in got.user.properties and got.user.tags == ["pii"]
    assert [h.name for h in sales.search("tag:pii").hits] == [name]
    assert [h.name for h in sales.search("owner_team=growth").hits] == [name]
    assert [(c.action, c.key) for c in md.history(name)] == [
        ("set", "owner_team"), ("set", "tier"), ("tag", "pii"), ("tag", "finance"), ("unset", "tier"),
        ("untag", "finance")]
    _ok(sales)


@pytest.mark.parametrize("name,otype", OBJECTS)
@pytest.mark.parametrize("op", ["set", "unset", "tag", "untag"])
def test_users_cannot_write_system_metadata(sales: Metastore, name: str, otype: ObjectType, op: str) -> None:
    arg: Any = {"created_by": "mallory"} if op == "set" else ["created_by"]
    with pytest.raises(ReadOnlyMetadata, match="SYSTEM metadata is set only by the catalog"):
        getattr(sales.metadata, op)(name, arg, scope="SYSTEM")
    assert sales.metadata.get(name).user.properties.get("created_by") is None


BAD_INPUT: list[tuple[str, Any, str]] = [
    ("empty key", {"": "v"}, "must not be empty"),
    ("blank key", {"  ": "v"}, "must not be empty"),
    ("reserved prefix", {"ushas.owner": "v"}, "reserved prefix 'ushas.'"),
    ("reserved prefix, any case", {"SYSTEM.x": "v"}, "reserved prefix 'system.'"),
    ("equals in key", {"a=b": "v"}, "contains '='"),
    ("star in key", {"a*": "v"}, "contains '\\*'"),
    ("control character", {"a\nb": "v"}, "control character"),
    ("long key", {"k" * 257: "v"}, "257 UTF-8 bytes"),
    ("100 kB value", {"k": "x" * 100_000}, "100000 UTF-8 bytes; the maximum is 4096"),
    ("value just too long", {"k": "é" * (MAX_VALUE_BYTES // 2 + 1)}, "the maximum is 4096"),
    ("NUL in value", {"k": "a\x00b"}, "NUL"),
    ("not a string", {"k": 3}, "must be a string"),
    ("nothing", {}, "at least one"),
]


@pytest.mark.parametrize("case,props,message", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_refused_and_nothing_is_written(sales: Metastore, case: str, props: dict[str, Any],
                                                     message: str) -> None:
    before = sales.metadata.get("main.sales.orders")
    with pytest.raises(InvalidArgument, match=message):
        sales.metadata.set("main.sales.orders", {"good": "value", **props} if props else props)
    assert sales.metadata.get("main.sales.orders") == before
    assert sales.search("good").total == 0


@pytest.mark.parametrize("tags,message", [([""], "must not be empty"), (["ushas.x"], "reserved"),
                                         (["a*"], "contains"), ([], "at least one tag")])
def test_bad_tags(sales: Metastore, tags: list[str], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        sales.metadata.tag("main.sales.orders", ["fine", *tags] if tags else tags)
    assert sales.metadata.get("main.sales.orders").user.tags == []


@pytest.mark.parametrize("name,error", [("main.sales.nope", NoSuchTable), ("main.sales.orders.nope", NoSuchTable),
                                        ("main.sales.orders.address.nope", NoSuchTable)])
def test_unknown_objects(sales: Metastore, name: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        sales.metadata.set(name, {"k": "v"})


def test_column_names_resolve_case_insensitively_to_the_schema_spelling(sales: Metastore) -> None:
    md = sales.metadata.tag("main.sales.orders.CUSTOMER_ID", ["pii"])
    assert md.object.column == "customer_id"


def test_system_metadata_kept_by_the_catalog(sales: Metastore) -> None:
    t = sales.metadata.get("main.sales.orders")
    system = t.system.properties
    assert system["created_by"] == system["updated_by"] == "tester"
    assert system["format"] == "parquet" and system["partition_count"] == "0"
    assert t.schema_fields == ["id", "customer_id", "address", "address.city", "address.zip", "amount", "day"]
    sales.add_partitions("main.sales.orders", [{"day": "2024-01-01"}, {"day": "2024-01-02"}, {"day": "2024-01-03"}])
    sales.drop_partitions("main.sales.orders", [{"day": "2024-01-02"}])
    sales.replace_partitions("main.sales.orders", [{"day": "2024-01-01"}], [{"day": "2024-02-01"},
                                                                           {"day": "2024-02-02"}])
    t2 = sales.metadata.get("main.sales.orders").system.properties
    assert t2["partition_count"] == str(len(list(sales.list_partitions("main.sales.orders"))))
    assert t2["created_at"] == system["created_at"] and t2["updated_at"] > system["updated_at"]
    sales.replace_table("main.sales.orders", "a STRING, b INT", format="json")
    t3 = sales.metadata.get("main.sales.orders")
    assert t3.system.properties["format"] == "json" and "partition_count" not in t3.system.properties
    assert t3.schema_fields == ["a", "b"]
    assert set(sales.metadata.get("main").system.properties) == {"created_by", "created_at", "updated_by",
                                                                  "updated_at"}
    assert sales.metadata.get("main.sales.big_orders").schema_fields == ["id", "amount"]
    _ok(sales)


def test_spark_properties_and_comments_become_user_metadata(sales: Metastore) -> None:
    sales.create_table("main.sales.items", "sku STRING COMMENT 'stock unit', qty INT", comment="Line items",
                       properties={"ushas.meta.owner_team": "ops", "ushas.tag.gold": "true", "plain": "x"})
    md = sales.metadata.get("main.sales.items")
    assert md.user.properties == {"owner_team": "ops", "comment": "Line items"}
    assert md.user.tags == ["gold"]
    assert md.columns["sku"].user.properties == {"comment": "stock unit"}
    sales.metadata.set("main.sales.items", {"owner_team": "ops-emea"})  # a user change stays ...
    sales.alter_table("main.sales.items", [SetProperty("plain", "y")])
    assert sales.metadata.get("main.sales.items").user.properties["owner_team"] == "ops-emea"
    sales.alter_table("main.sales.items", [SetProperty("ushas.meta.owner_team", "ops-apac"),  # ... until Spark's
                                           RemoveProperty("ushas.tag.gold"),
                                           UpdateColumnComment(("qty",), "how many")])
    md = sales.metadata.get("main.sales.items")
    assert md.user.properties["owner_team"] == "ops-apac" and md.user.tags == []
    assert md.columns["qty"].user.properties == {"comment": "how many"}
    assert [h.name for h in sales.search("how*").hits] == ["main.sales.items.qty"]
    sources = {(c.key, c.source) for c in sales.metadata.history("main.sales.items")}
    assert {("owner_team", "spark"), ("owner_team", "api"), ("gold", "spark"), ("comment", "catalog")} <= sources
    _ok(sales)


@pytest.mark.parametrize("props,message", [({"ushas.meta.ushas.x": "1"}, "reserved prefix"),
                                           ({"ushas.meta.": "1"}, "must not be empty"),
                                           ({"ushas.meta.comment": "1"}, "set with COMMENT"),
                                           ({"ushas.meta.k": "x" * 5000}, "maximum is 4096")])
def test_bad_spark_properties_fail_the_spark_operation(sales: Metastore, props: dict[str, str],
                                                       message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        sales.create_table("main.sales.bad", "a INT", properties=props)
    assert not sales.table_exists("main.sales.bad")


@pytest.mark.parametrize("name", ["main", "main.sales", "main.sales.orders", "main.sales.orders.amount"])
def test_comment_is_the_metastore_comment(sales: Metastore, name: str) -> None:
    sales.metadata.set(name, {"comment": "about it"})
    assert sales.metadata.get(name).user.properties["comment"] == "about it"
    assert [h.name for h in sales.search("about it").hits] == [name]
    if name.count(".") == 2:
        assert sales.get_table(name).comment == "about it"
    sales.metadata.unset(name, ["comment"])
    assert "comment" not in sales.metadata.get(name).user.properties
    assert sales.search("about it").total == 0
    with pytest.raises(InvalidArgument, match="on its own"):
        sales.metadata.set(name, {"comment": "x", "other": "y"})
    _ok(sales)


def test_column_rename_moves_and_drop_removes_column_metadata(sales: Metastore) -> None:
    sales.metadata.tag("main.sales.orders.address.city", ["geo"])
    sales.metadata.set("main.sales.orders.customer_id", {"sensitivity": "high"})
    sales.alter_table("main.sales.orders", [RenameColumn(("address",), "addr"),
                                            RenameColumn(("customer_id",), "buyer_id")])
    md = sales.metadata.get("main.sales.orders")
    assert md.columns["addr.city"].user.tags == ["geo"]
    assert md.columns["buyer_id"].user.properties == {"sensitivity": "high", "comment": "the buyer"}
    assert [h.name for h in sales.search("geo").hits] == ["main.sales.orders.addr.city"]
    sales.alter_table("main.sales.orders", [DeleteColumn(("addr",)), AddColumn(("note",), parse_type("STRING"))])
    md = sales.metadata.get("main.sales.orders")
    assert "addr.city" not in md.columns and "note" in md.schema_fields and "addr" not in md.schema_fields
    assert sales.search("geo").total == 0 and sales.search("field:addr*").total == 0
    _ok(sales)


def test_rename_and_move_keep_metadata_and_index_names(sales: Metastore) -> None:
    sales.create_database("main.archive")
    sales.metadata.tag("main.sales.orders", ["gold"])
    sales.rename_table("main.sales.orders", "main.archive.old_orders")
    assert sales.metadata.get("main.archive.old_orders").user.tags == ["gold"]
    assert [h.name for h in sales.search("gold").hits] == ["main.archive.old_orders"]
    sales.rename_view("main.sales.big_orders", "main.sales.large_orders")
    assert [h.name for h in sales.search("field:amount", types="view").hits] == ["main.sales.large_orders"]
    _ok(sales)


@pytest.mark.parametrize("drop,undrop,gone", [
    (lambda ms: ms.drop_table("main.sales.orders"), lambda ms: ms.undrop_table("main.sales.orders"),
     ["main.sales.orders", "main.sales.orders.customer_id"]),
    (lambda ms: ms.drop_database("main.sales", cascade=True), lambda ms: ms.undrop_database("main.sales"),
     ["main.sales", "main.sales.orders", "main.sales.orders.customer_id", "main.sales.big_orders"]),
    (lambda ms: ms.drop_catalog("main", cascade=True), lambda ms: ms.undrop_catalog("main"),
     ["main", "main.sales", "main.sales.orders", "main.sales.orders.customer_id", "main.sales.big_orders"]),
], ids=["table", "database", "catalog"])
def test_drop_removes_index_entries_and_undrop_restores_them(sales: Metastore, drop: Any, undrop: Any,
                                                             gone: list[str]) -> None:
    for name in gone:
        sales.metadata.tag(name, ["findme"])
    assert {h.name for h in sales.search("findme").hits} == set(gone)
    drop(sales)
    assert sales.search("findme").total == 0 and sales.search("customer_id").total == 0
    _ok(sales)
    undrop(sales)
    assert {h.name for h in sales.search("findme").hits} == set(gone)
    assert sales.metadata.get(gone[0]).user.tags == ["findme"]
    _ok(sales)


def _metadata_keys(ms: Metastore) -> int:
    keys = MetadataKeys(ms.project_path)
    return ms.db.run(lambda tr: sum(1 for _ in tr.get_range(*keys.objects.range()))
                     + sum(1 for _ in tr.get_range(*keys.index.range()))
                     + sum(1 for _ in tr.get_range(*keys.pending_range())))


@pytest.mark.parametrize("purge", [
    lambda ms: ms.drop_catalog("main", cascade=True, purge=True),
    lambda ms: (ms.drop_catalog("main", cascade=True), ms.purge_catalog("main")),
    lambda ms: (ms.drop_database("main.sales", cascade=True), ms.purge_database("main.sales"),
                ms.drop_catalog("main", purge=True)),
    lambda ms: (ms.drop_table("main.sales.orders", purge=True), ms.drop_view("main.sales.big_orders"),
                ms.drop_database("main.sales", purge=True), ms.drop_catalog("main", purge=True)),
], ids=["catalog purge", "catalog drop then purge", "database then catalog", "one by one"])
def test_purge_removes_everything(sales: Metastore, purge: Any) -> None:
    sales.metadata.tag("main.sales.orders.customer_id", ["pii"])
    sales.metadata.set("main.sales.big_orders", {"k": "v"})
    sales.drop_table("main.sales.orders")  # a dropped table inside is purged with its database too
    sales.undrop_table("main.sales.orders")
    assert _metadata_keys(sales) > 0
    purge(sales)
    assert _metadata_keys(sales) == 0


def test_lineage_hook_writes_system_metadata(sales: Metastore) -> None:
    tid = uuid.UUID(sales.get_table("main.sales.orders").id)
    run = uuid.uuid4()
    sales.db.run(lambda tr: record_lineage_write(tr, sales.project_path, tid, run_id=run, at_ms=1_700_000_000_000,
                                                 user="etl", rows=1200, files=3))
    system = sales.metadata.get("main.sales.orders").system.properties
    assert system["last_writer_run"] == str(run) and system["row_count"] == "1200" and system["file_count"] == "3"
    assert system["last_write_at"].startswith("2023-11-14T22:13:20")
    assert [h.name for h in sales.search(f"last_writer_run={run}", scope="SYSTEM").hits] == ["main.sales.orders"]
    assert [(c.user, c.source, c.scope) for c in sales.metadata.history("main.sales.orders")][-1] == \
        ("etl", "lineage", Scope.SYSTEM)
    with pytest.raises(InvalidArgument, match="row_count"):
        sales.db.run(lambda tr: record_lineage_write(tr, sales.project_path, tid, run_id=run, at_ms=0, user="etl",
                                                     rows=-1))
    _ok(sales)


def test_history_of_a_column_and_limit(sales: Metastore) -> None:
    md = sales.metadata
    md.tag("main.sales.orders", ["a"])
    md.tag("main.sales.orders.amount", ["b"])
    md.tag("main.sales.orders.amount", ["c"])
    assert [c.key for c in md.history("main.sales.orders.amount")] == ["b", "c"]
    assert [c.key for c in md.history("main.sales.orders", limit=2)] == ["b", "c"]
    assert [c.key for c in md.history("main.sales.orders")] == ["a", "b", "c"]
    with pytest.raises(InvalidArgument):
        md.history("main.sales.orders", limit=0)


def test_projects_are_isolated(store_uri: str) -> None:
    a = Metastore.open(store_uri, project="alpha", user="u")
    b = Metastore.open(store_uri, project="beta", user="u")
    try:
        for ms in (a, b):
            ms.create_catalog("main")
            ms.create_database("main.db")
            ms.create_table("main.db.t", "customer_id BIGINT")
        found = [{h.id for h in ms.search("customer_id").hits} for ms in (a, b)]  # pending entries: per project
        assert len(found[0]) == len(found[1]) == 1 and found[0] != found[1]
        a.metadata.tag("main.db.t", ["only_alpha"])
        assert [h.name for h in a.search("only_alpha").hits] == ["main.db.t"]
        assert b.search("only_alpha").total == 0
        assert b.metadata.get("main.db.t").user.tags == []
        b.drop_catalog("main", cascade=True, purge=True)
        assert [h.name for h in a.search("customer_id").hits] == ["main.db.t"]
        _ok(a)
    finally:
        a.close()
        b.close()


# ---- the write path of the index --------------------------------------------------------------
def test_index_key_is_the_tuple_of_the_entry(ms: Metastore) -> None:
    import fdb.tuple as fdbtuple

    keys = MetadataKeys(ms.project_path)
    oid = uuid.uuid4()
    for fld, term, otype, scope, column, key in [("f", "a.`b.c`", ObjectType.TABLE, Scope.SYSTEM, "a.`b.c`", ""),
                                                 ("kv", "k=v\x00x", ObjectType.COLUMN, Scope.USER, "c", "k"),
                                                 ("t", "é", ObjectType.VIEW, Scope.USER, None, "É")]:
        assert keys.index_key(fld, term, otype, scope, oid, column, key) == fdbtuple.pack(
            (fld, term, INDEX_TYPES.index(otype), INDEX_SCOPES.index(scope), oid, column, key),
            prefix=keys.index.key())


class _RecordingReads(Metastore):
    """Records the keys and ranges the metadata bookkeeping reads."""

    reads: list[bytes]

    def _metadata_commit(self, tr: Any, m: Any) -> None:
        reads = self.reads

        class Tr:
            def __getattr__(self, name: str) -> Any:
                return getattr(tr, name)

            def get(self, key: bytes, **kw: Any) -> Any:
                reads.append(key)
                return tr.get(key, **kw)

            def get_range(self, begin: bytes, end: bytes, **kw: Any) -> Any:
                reads.append(begin)
                return tr.get_range(begin, end, **kw)

        super()._metadata_commit(Tr(), m)


def test_creating_an_object_reads_no_metadata(store_uri: str) -> None:
    """A created object has a new id: there is nothing of it to read or diff against."""
    ms = _RecordingReads.open(store_uri, project="acme", user="tester")
    ms.reads = []
    try:
        ms.create_catalog("main", properties={"ushas.tag.gold": "1"})
        ms.create_database("main.sales", comment="sales")
        ms.create_table("main.sales.t", "a INT COMMENT 'x', s STRUCT<b: STRING>", partition_by=["a"],
                        properties={"ushas.meta.owner": "alice", "ushas.tag.pii": "1"}, comment="c")
        ms.create_view("main.sales.v", "SELECT a FROM main.sales.t", "a INT")
        metadata = ms.project_path.add("Metadata").key()
        assert ms.reads and not [k for k in ms.reads if k.startswith(metadata)]
        ms.reads.clear()
        ms.alter_table("main.sales.t", [SetProperty("ushas.meta.owner", "bob")])  # later commits do read
        assert [k for k in ms.reads if k.startswith(metadata)]
        _ok(ms)
        assert ms.metadata.get("main.sales.t").to_json()["USER"] == {"properties": {"comment": "c", "owner": "bob"},
                                                                    "tags": ["pii"]}
    finally:
        ms.close()


def test_the_write_cost_baseline_writes_all_metadata_but_the_index(store_uri: str) -> None:
    """``bench/search.py`` compares table creation with the index against the same metastore
    with ``on_commit(..., index=False)``: every other metadata key must be the same."""
    import fdb.tuple as fdbtuple

    from ushas_catalog.metadata import sync as metadata_sync

    class NoIndex(Metastore):
        def _metadata_commit(self, tr: Any, m: Any) -> None:
            metadata_sync.on_commit(self, tr, m, index=False)

    def shape(ms: Metastore) -> list[tuple[Any, ...]]:
        keys = MetadataKeys(ms.project_path)
        objects = keys.objects.key()

        def fn(tr: Any) -> list[tuple[Any, ...]]:
            rows = [fdbtuple.unpack(kv.key[len(objects):]) for kv in tr.get_range(*keys.objects.range())]
            names = {}
            for r in rows:
                if r[1] == "Ms":  # the state record: the object's name
                    state = keys.state(r[0])
                    names[r[0]] = json.loads(b"".join(kv.value for kv in tr.get_range(state, state + b"\xff")))["name"]
            return sorted((names[r[0]],) + tuple("stamp" if isinstance(e, fdbtuple.Versionstamp) else e
                                                 for e in r[1:]) for r in rows)

        return ms.db.run(fn)

    with_index = Metastore.open(store_uri, project="p1", user="tester")
    without = NoIndex.open(store_uri, project="p2", user="tester")
    try:
        for ms in (with_index, without):
            ms.create_catalog("main")
            ms.create_database("main.db")
            ms.create_table("main.db.t", "a INT COMMENT 'x', s STRUCT<b: STRING>", partition_by=["a"],
                            properties={"ushas.meta.owner": "alice", "ushas.tag.pii": "1"}, comment="c")
            ms.alter_table("main.db.t", [RenameColumn(("s",), "r"), SetProperty("ushas.tag.gold", "1")])
        assert shape(with_index) == shape(without)
        assert len(shape(without)) > 20
        index = MetadataKeys(without.project_path).index
        assert without.db.run(lambda tr: list(tr.get_range(*index.range()))) == []
        assert with_index.search("tag:gold").total == 1
        _ok(with_index)
    finally:
        with_index.close()
        without.close()
