"""The Metastore API on the embedded engine: every operation, its errors, and the raw keys it leaves."""
from __future__ import annotations

import datetime as dt
import uuid

import pytest

from ushas_catalog.errors import (CatalogAlreadyExists, Conflict, InvalidArgument, InvalidSchemaChange, NamespaceAlreadyExists,
                                  NamespaceNotEmpty, NoSuchCatalog, NoSuchNamespace, NoSuchPartition, NoSuchTable,
                                  NoSuchVersion, NoSuchView, PartitionAlreadyExists, TableAlreadyExists,
                                  ViewAlreadyExists)
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import DatabaseName, TableName
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import (AddColumn, ColumnPosition, DeleteColumn, RemoveProperty, RenameColumn,
                                         SetComment, SetLocation, SetProperty, UpdateColumnComment,
                                         UpdateColumnNullability, UpdateColumnPosition, UpdateColumnType,
                                         changes_from_json)

from .conftest import parametrize_kinds, raw_keys


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_kinds(metafunc)


@pytest.fixture
def ms(either_ms: Metastore) -> Metastore:
    """Every test of this module runs on the embedded metastore and on the one ``ushas serve`` serves."""
    return either_ms


#: served, every call is checked and a relation's creator holds OWN on it: purging a table (dropping a view)
#: leaves that grant's key
#: (named by the purged id), so the tests that count the keys a purge leaves run embedded only
PURGE_KEEPS_GRANTS = pytest.mark.embedded_only

T = "main.sales.orders"
SCHEMA = "id BIGINT NOT NULL, amount DECIMAL(10,2), point STRUCT<x: DOUBLE, y: DOUBLE>, dt DATE, h INT"


def make_table(ms: Metastore, name: str = T, **kw) -> None:
    ms.create_table(name, SCHEMA, partition_by=["dt", "h"], **kw)


# --- catalogs and databases ------------------------------------------------------------
def test_catalog_lifecycle(ms: Metastore) -> None:
    info = ms.create_catalog("Main", comment="c", properties={"k": "v"})
    assert (info.name, info.comment, info.properties, info.version, info.owner) == ("main", "c", {"k": "v"}, 1, "tester")
    with pytest.raises(CatalogAlreadyExists):
        ms.create_catalog("MAIN")
    assert ms.create_catalog("main", if_not_exists=True).id == info.id
    assert ms.ensure_catalog("main").id == info.id
    assert ms.ensure_catalog("other").name == "other"
    assert [c.name for c in ms.list_catalogs()] == ["main", "other"]
    altered = ms.alter_catalog("main", set_properties={"a": "1"}, remove_properties=["k"], comment=None)
    assert altered.properties == {"a": "1"} and altered.comment is None and altered.version == 2
    ms.create_database("main.db")
    with pytest.raises(NamespaceNotEmpty):
        ms.drop_catalog("main")
    ms.drop_catalog("main", cascade=True)
    with pytest.raises(NoSuchCatalog):
        ms.get_catalog("main")
    assert [d.name for d in ms.list_dropped_catalogs()] == ["main"]
    restored = ms.undrop_catalog("main")
    assert restored.id == info.id and ms.database_exists("main.db")
    assert [h.operation for h in ms.history("main")] == ["UNDROP CATALOG", "DROP CATALOG", "ALTER CATALOG",
                                                          "CREATE CATALOG"]


def test_database_lifecycle(ms: Metastore) -> None:
    with pytest.raises(NoSuchCatalog):
        ms.create_database("main.sales")
    ms.create_catalog("main")
    db = ms.create_database("main.Sales", comment="s", location="/wh/s", properties={"a": "1"}, owner="ann")
    assert (db.name, db.location, db.owner, db.properties) == ("sales", "/wh/s", "ann", {"a": "1"})
    with pytest.raises(NamespaceAlreadyExists):
        ms.create_database("main.sales")
    assert ms.create_database("main.sales", if_not_exists=True).id == db.id
    assert ms.database_exists("main.sales") and not ms.database_exists("main.nope")
    assert not ms.database_exists("nope.sales")
    d2 = ms.alter_database("main.sales", set_properties={"b": "2"}, remove_properties=["a"], comment=None,
                           location="/wh/s2")
    assert (d2.properties, d2.comment, d2.location, d2.version) == ({"b": "2"}, None, "/wh/s2", 2)
    assert ms.get_database("main.sales").location == "/wh/s2"
    ms.create_table("main.sales.t", "a INT")
    with pytest.raises(NamespaceNotEmpty):
        ms.drop_database("main.sales")
    ms.drop_database("main.sales", cascade=True)
    with pytest.raises(NoSuchNamespace):
        ms.get_database("main.sales")
    with pytest.raises(NoSuchNamespace):
        ms.get_table("main.sales.t")
    ms.undrop_database("main.sales")
    assert ms.get_table("main.sales.t").schema.to_ddl() == "a INT"
    ms.drop_database("main.sales", cascade=True)
    assert ms.purge_database("main.sales") == 1
    with pytest.raises(NoSuchNamespace):
        ms.undrop_database("main.sales")
    assert [d.name for d in ms.list_databases("main")] == []


# --- tables ------------------------------------------------------------------------------
def test_create_get_list_table(sales: Metastore) -> None:
    t = sales.create_table("main.sales.Orders", SCHEMA, partition_by=["DT", "h"], properties={"p": "1"},
                           comment="all orders", owner="bob")
    assert (t.name, t.version, t.schema_id, t.partition_columns, t.format) == ("orders", 1, 1, ["dt", "h"], "parquet")
    assert t.location == "/wh/sales/orders" and t.comment == "all orders" and t.owner == "bob"
    assert t.schema.field("point").data_type.json_value()["type"] == "struct"
    got = sales.get_table(T)
    assert got == t
    assert got.to_json()["schema"]["fields"][0] == {"name": "id", "type": "long", "nullable": False, "metadata": {}}
    assert sales.table_exists(T) and not sales.table_exists("main.sales.x") and not sales.table_exists("x.y.z")
    sales.create_table("main.sales.a_first", "x INT", format="ORC", location="s3a://b/x", external=True)
    assert [(r.name, r.kind) for r in sales.list_tables("main.sales")] == [("a_first", "TABLE"), ("orders", "TABLE")]
    assert sales.get_table("main.sales.a_first").format == "orc"
    with pytest.raises(TableAlreadyExists):
        make_table(sales)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"format": "delta"}, InvalidArgument, "unknown table format 'delta'"),
    ({"partition_by": ["nope"]}, InvalidArgument, "'nope' is not a column"),
    ({"schema": "a INT, s STRUCT<x: INT>", "partition_by": ["s"]}, InvalidArgument, "cannot be a partition column"),
    ({"properties": {"k": 1}}, InvalidArgument, "must be a string"),
    ({"schema": "a INT, a INT"}, InvalidArgument, "duplicate column"),
    ({"schema": "a WHATEVER"}, InvalidArgument, "unknown data type"),
    ({"external": True, "location": None, "name": "main.nolocation.t"}, InvalidArgument, "needs a location"),
    ({"name": "main.nope.t"}, NoSuchNamespace, "main.nope"),
    ({"name": "nope.sales.t"}, NoSuchCatalog, "nope"),
])
def test_create_table_errors_write_nothing(sales: Metastore, kwargs: dict, error: type, message: str) -> None:
    sales.create_database("main.nolocation")
    before = raw_keys(sales)
    args = {"name": "main.sales.bad", "schema": "a INT, b STRING", **kwargs}
    with pytest.raises(error, match=message):
        sales.create_table(**args)
    assert raw_keys(sales) == before


def test_reserved_properties_fill_fields(sales: Metastore) -> None:
    t = sales.create_table("main.sales.r", "a INT", properties={"location": "/x", "comment": "c", "provider": "csv",
                                                                "owner": "o", "k": "v"})
    assert (t.location, t.comment, t.format, t.owner, t.properties) == ("/x", "c", "csv", "o", {"k": "v"})


def test_schema_evolution_and_time_travel(sales: Metastore) -> None:
    make_table(sales)
    t1 = sales.get_table(T)
    between = dt.datetime.now(dt.timezone.utc)
    t2 = sales.alter_table(T, [AddColumn(("point", "z"), parse_type("DOUBLE"), comment="height",
                                         position=ColumnPosition("x")),
                               AddColumn(("first",), parse_type("STRING"), position=ColumnPosition.first()),
                               UpdateColumnType(("amount",), parse_type("DECIMAL(14,2)")),
                               UpdateColumnType(("h",), parse_type("INT")),  # its own type: no change
                               SetProperty("owner_team", "sales"), SetComment("c")])
    assert t2.version == 2 and t2.schema_id == 2
    assert t2.schema.names == ["first", "id", "amount", "point", "dt", "h"]
    assert [f.name for f in t2.schema.field("point").data_type.fields] == ["x", "z", "y"]
    assert t2.properties == {"owner_team": "sales"} and t2.comment == "c"
    t3 = sales.alter_table(T, [RenameColumn(("point",), "pt"), DeleteColumn(("first",)),
                               UpdateColumnComment(("id",), "key"), UpdateColumnNullability(("amount",), False),
                               UpdateColumnPosition(("h",), ColumnPosition.first()), RemoveProperty("owner_team"),
                               SetLocation("/elsewhere")])
    assert t3.schema_id == 3 and t3.partition_columns == ["dt", "h"] and t3.location == "/elsewhere"
    assert t3.schema.names == ["h", "id", "amount", "pt", "dt"]
    assert t3.schema.field("id").comment == "key" and not t3.schema.field("amount").nullable
    # properties-only change keeps the schema id
    t4 = sales.alter_table(T, [SetProperty("x", "y")])
    assert (t4.version, t4.schema_id) == (4, 3)
    # time travel by version and by time
    past = sales.get_table(T, as_of=1)
    assert (past.version, past.schema_id, past.schema, past.location, past.properties, past.comment) == \
        (1, 1, t1.schema, t1.location, {}, None)
    assert sales.get_table(T, as_of=2).schema == t2.schema
    assert sales.get_table(T, as_of=3).properties == {}
    assert sales.get_table(T, as_of=between).version == 1
    assert sales.get_table(T, as_of=dt.datetime.now(dt.timezone.utc)).version == 4
    assert sales.get_table(T, as_of=4) == sales.get_table(T)
    for bad in (0, 5):
        with pytest.raises(NoSuchVersion):
            sales.get_table(T, as_of=bad)
    with pytest.raises(NoSuchVersion):
        sales.get_table(T, as_of=dt.datetime(2000, 1, 1))
    hist = sales.history(T)
    assert [(h.version, h.operation, h.schema_id) for h in hist] == [
        (4, "ALTER TABLE", 3), (3, "ALTER TABLE", 3), (2, "ALTER TABLE", 2), (1, "CREATE TABLE", 1)]
    assert hist[0].user == "tester" and hist[0].detail["changes"][0]["type"] == "SetProperty"
    assert sales.history(TableName.parse(T)) == hist  # a name object works as well as a string
    assert sales.history(DatabaseName.parse("main.sales")) == sales.history("main.sales")


@pytest.mark.parametrize("change, message", [
    (UpdateColumnType(("id",), parse_type("INT")), "narrower"),
    (UpdateColumnType(("amount",), parse_type("DECIMAL(9,2)")), "cannot hold"),
    (UpdateColumnType(("id",), parse_type("STRING")), "cannot be widened"),
    (UpdateColumnType(("point",), parse_type("STRUCT<x: DOUBLE>")), "nested types"),
    (UpdateColumnType(("dt",), parse_type("TIMESTAMP")), "it is a partition column"),
    (UpdateColumnType(("h",), parse_type("BIGINT")), "it is a partition column"),
    (DeleteColumn(("dt",)), "it is a partition column"),
    (RenameColumn(("dt",), "day"), "it is a partition column"),
    (DeleteColumn(("nope",)), "does not exist"),
    (AddColumn(("ID",), parse_type("INT")), "already exists"),
    (AddColumn(("id", "sub"), parse_type("INT")), "is not a struct"),
    (AddColumn(("x",), parse_type("INT"), position=ColumnPosition("nope")), "no such column"),
    (RenameColumn(("id",), "Amount"), "that column exists"),
    (RenameColumn(("point", "nope"), "q"), "does not exist"),
])
def test_bad_schema_changes_are_refused_atomically(sales: Metastore, change: object, message: str) -> None:
    make_table(sales)
    before = raw_keys(sales)
    with pytest.raises(InvalidSchemaChange, match=message):
        sales.alter_table(T, [SetProperty("a", "b"), change])  # type: ignore[list-item]
    assert raw_keys(sales) == before


def test_alter_expected_version_and_json_changes(sales: Metastore) -> None:
    make_table(sales)
    with pytest.raises(Conflict, match="not the expected 7"):
        sales.alter_table(T, [SetProperty("a", "b")], expected_version=7)
    changes = changes_from_json([
        {"type": "AddColumn", "fieldNames": ["tags"], "dataType": {"type": "array", "elementType": "string",
                                                                   "containsNull": True}, "nullable": True,
         "comment": None, "position": {"type": "after", "column": "id"}},
        {"type": "SetProperty", "property": "comment", "value": "via property"},
        {"type": "SetProperty", "property": "location", "value": "/moved"},
    ])
    t = sales.alter_table(T, changes, expected_version=1)
    assert t.schema.names[:2] == ["id", "tags"] and t.comment == "via property" and t.location == "/moved"
    assert t.properties == {}
    with pytest.raises(InvalidArgument, match="unknown type 'Nope'"):
        changes_from_json([{"type": "Nope"}])
    with pytest.raises(InvalidArgument, match="lacks 'newName'"):
        changes_from_json([{"type": "RenameColumn", "fieldNames": ["a"]}])


def test_five_thousand_column_table(sales: Metastore) -> None:
    ddl = ", ".join(f"column_with_a_longish_name_{i:05d} DECIMAL(38,10) COMMENT 'comment {i}'" for i in range(5000))
    t = sales.create_table("main.sales.wide", ddl)
    assert len(t.schema.fields) == 5000
    sales.alter_table("main.sales.wide", [AddColumn(("extra",), parse_type("INT"))])
    assert len(sales.get_table("main.sales.wide").schema.fields) == 5001
    assert sales.get_table("main.sales.wide", as_of=1).schema == t.schema


def test_replace_table_keeps_history(sales: Metastore) -> None:
    make_table(sales)
    sales.add_partitions(T, [{"dt": "2024-01-01", "h": 1}])
    t = sales.replace_table(T, "a STRING, b INT", partition_by=["b"], format="json")
    assert (t.version, t.schema_id, t.format, t.partition_columns) == (3, 2, "json", ["b"])
    assert list(sales.list_partitions(T)) == []
    assert sales.get_table(T, as_of=1).schema.names == ["id", "amount", "point", "dt", "h"]
    fresh = sales.replace_table("main.sales.new", "a INT")
    assert fresh.version == 1
    sales.create_view("main.sales.v", "SELECT 1", "x INT")
    with pytest.raises(TableAlreadyExists, match="as a view"):
        sales.replace_table("main.sales.v", "a INT")


def test_rename_within_and_across_databases(sales: Metastore) -> None:
    make_table(sales)
    sales.add_partitions(T, [{"dt": "2024-01-01", "h": 1}])
    sales.create_database("main.other")
    r = sales.rename_table(T, "main.sales.orders2")
    assert r.name == "orders2" and r.version == 3
    with pytest.raises(NoSuchTable):
        sales.get_table(T)
    moved = sales.rename_table("main.sales.orders2", "main.other.orders")
    assert moved.database == "other" and moved.id == r.id and moved.version == 4
    assert [p.spec for p in sales.list_partitions("main.other.orders")] == [{"dt": "2024-01-01", "h": "1"}]
    assert sales.get_table("main.other.orders", as_of=1).name == "orders"
    assert [h.operation for h in sales.history("main.other.orders")][:2] == ["RENAME TABLE", "RENAME TABLE"]
    sales.create_catalog("cat2")
    sales.create_database("cat2.db")
    with pytest.raises(InvalidArgument, match="stays in its catalog"):
        sales.rename_table("main.other.orders", "cat2.db.orders")
    make_table(sales, "main.sales.taken")
    with pytest.raises(TableAlreadyExists):
        sales.rename_table("main.other.orders", "main.sales.taken")
    # the table's keys left the old database with it
    tid = uuid.UUID(r.id).bytes
    sales_db = sales.db.run(lambda tr: sales.resolver.database(tr, sales_db_name(), load=False).path)
    assert not any(tid in k for k in raw_keys(sales, *sales_db.range()))
    assert any(tid in k for k in raw_keys(sales))


def sales_db_name() -> DatabaseName:
    return DatabaseName("main", "sales")


@PURGE_KEEPS_GRANTS
def test_drop_undrop_purge_table_leaves_zero_keys(sales: Metastore) -> None:
    before = raw_keys(sales)
    make_table(sales)
    sales.add_partitions(T, [{"dt": f"2024-01-{d:02d}", "h": h} for d in range(1, 4) for h in range(3)])
    tid = uuid.UUID(sales.get_table(T).id)
    sales.drop_table(T)
    with pytest.raises(NoSuchTable):
        sales.get_table(T)
    assert not sales.table_exists(T)
    dropped = sales.list_dropped_tables("main.sales")
    assert [(d.name, d.id) for d in dropped] == [("main.sales.orders", str(tid))]
    t = sales.undrop_table(T)
    assert t.id == str(tid) and len(list(sales.list_partitions(T))) == 9
    with pytest.raises(NoSuchTable, match="no dropped table"):
        sales.undrop_table(T)
    sales.drop_table(T)
    make_table(sales)  # a new table of the same name
    with pytest.raises(TableAlreadyExists):
        sales.undrop_table(T)
    sales.drop_table(T)
    assert len(sales.list_dropped_tables("main.sales")) == 2
    # one name's dropped tables: that name's entries only (no prefix or extension of it)
    assert [d.name for d in sales.list_dropped_tables("main.sales", "orders")] == ["main.sales.orders"] * 2
    assert sales.list_dropped_tables("main.sales", "order") == sales.list_dropped_tables("main.sales", "ordersx") == []
    assert sales.purge_table(T) == 2
    after = raw_keys(sales)
    # only the database's own bookkeeping remains; no key mentions the table
    assert not any(tid.bytes in k for k in after)
    assert [k for k in after if k not in before and b"\x02T\x00" in k] == []
    with pytest.raises(NoSuchTable):
        sales.purge_table(T)


def test_drop_with_purge_is_immediate(sales: Metastore) -> None:
    before = raw_keys(sales)
    make_table(sales)
    sales.drop_table(T, purge=True)
    assert sales.list_dropped_tables("main.sales") == []
    assert [k for k in raw_keys(sales) if k not in before and b"\x02T\x00" in k] == []


def test_drop_project_leaves_nothing(sales: Metastore) -> None:
    make_table(sales)
    sales.drop_project()
    assert raw_keys(sales) == []


# --- views ------------------------------------------------------------------------------
@PURGE_KEEPS_GRANTS
def test_views_share_the_table_name_space(sales: Metastore) -> None:
    make_table(sales)
    v = sales.create_view("main.sales.v", "SELECT id FROM orders", "id BIGINT", comment="c",
                          current_catalog="main", current_namespace=["sales"], query_column_names=["id"])
    assert (v.name, v.version, v.current_namespace, v.comment) == ("v", 1, ["sales"], "c")
    with pytest.raises(TableAlreadyExists, match="as a table"):
        sales.create_view(T, "SELECT 1", "x INT")
    with pytest.raises(TableAlreadyExists, match="as a view"):
        sales.create_table("main.sales.v", "x INT")
    with pytest.raises(ViewAlreadyExists):
        sales.create_view("main.sales.v", "SELECT 2", "x INT")
    with pytest.raises(NoSuchTable, match="is a view"):
        sales.get_table("main.sales.v")
    with pytest.raises(NoSuchView, match="is a table"):
        sales.get_view(T)
    r = sales.create_view("main.sales.v", "SELECT 2 AS x", "x INT", replace=True)
    assert r.version == 2 and r.sql == "SELECT 2 AS x" and r.created_at == v.created_at
    a = sales.alter_view("main.sales.v", set_properties={"k": "v"}, comment=None)
    assert a.properties == {"k": "v"} and a.comment is None and a.version == 3
    assert [x.name for x in sales.list_views("main.sales")] == ["v"]
    assert [x.name for x in sales.list_tables("main.sales")] == ["orders"]
    assert [x.kind for x in sales.list_relations("main.sales")] == ["TABLE", "VIEW"]
    sales.create_database("main.other")
    moved = sales.rename_view("main.sales.v", "main.other.w")
    assert moved.sql == "SELECT 2 AS x" and sales.view_exists("main.other.w") and not sales.view_exists("main.sales.v")
    assert [h.operation for h in sales.history("main.other.w")] == ["RENAME VIEW", "ALTER VIEW", "REPLACE VIEW",
                                                                     "CREATE VIEW"]
    before = raw_keys(sales)
    sales.drop_view("main.other.w")
    assert not sales.view_exists("main.other.w")
    assert not any(uuid.UUID(moved.id).bytes in k for k in raw_keys(sales))
    assert len(raw_keys(sales)) < len(before)
    with pytest.raises(NoSuchView):
        sales.drop_view("main.other.w")


# --- partitions -------------------------------------------------------------------------
def test_partition_operations(sales: Metastore) -> None:
    make_table(sales)
    # a partition outside its table lies in a declared location (governed, as the served API is, it must)
    sales.create_location("custom", "/custom")
    r = sales.add_partitions(T, [{"dt": "2024-01-02", "h": 10}, {"dt": "2024-01-02", "h": 9},
                                 Partition({"dt": "2024-01-01", "h": "3"}, location="/custom", files=2, bytes=100,
                                           rows=7, properties={"p": "q"}),
                                 {"dt": None, "h": 1}])
    assert (r.version, r.added) == (2, 4)
    parts = list(sales.list_partitions(T))
    assert [p.spec for p in parts] == [
        {"dt": "__HIVE_DEFAULT_PARTITION__", "h": "1"}, {"dt": "2024-01-01", "h": "3"},
        {"dt": "2024-01-02", "h": "9"}, {"dt": "2024-01-02", "h": "10"}]
    assert parts[1].location == "/custom" and (parts[1].files, parts[1].bytes, parts[1].rows) == (2, 100, 7)
    assert parts[2].location == "/wh/sales/orders/dt=2024-01-02/h=9" and parts[2].rows is None
    assert parts[2].values == {"dt": dt.date(2024, 1, 2), "h": 9}
    assert [p.spec["h"] for p in sales.list_partitions(T, prefix={"dt": "2024-01-02"})] == ["9", "10"]
    assert [p.spec["dt"] for p in sales.list_partitions(T, prefix={"h": 3})] == ["2024-01-01"]
    assert len(list(sales.list_partitions(T, limit=2))) == 2
    assert sales.get_partition(T, {"dt": "2024-01-01", "h": 3}).properties == {"p": "q"}
    with pytest.raises(NoSuchPartition):
        sales.get_partition(T, {"dt": "2024-01-01", "h": 4})
    with pytest.raises(PartitionAlreadyExists):
        sales.add_partitions(T, [{"dt": "2024-01-05", "h": 1}, {"dt": "2024-01-01", "h": 3}])
    assert len(list(sales.list_partitions(T))) == 4  # nothing half-written
    r = sales.add_partitions(T, [{"dt": "2024-01-05", "h": 1}, {"dt": "2024-01-01", "h": 3}], if_not_exists=True)
    assert (r.added, r.skipped) == (1, 1)
    assert sales.add_partitions(T, [{"dt": "2024-01-05", "h": 1}], if_not_exists=True).version is None
    d = sales.drop_partitions(T, [{"dt": "2024-01-02"}])
    assert d.dropped == 2
    with pytest.raises(NoSuchPartition):
        sales.drop_partitions(T, [{"dt": "2024-01-02", "h": 9}])
    assert sales.drop_partitions(T, [{"dt": "2024-01-02", "h": 9}], if_exists=True).version is None
    # overwrite: replace one, add one, drop the rest of the day
    sales.add_partitions(T, [{"dt": "2024-01-01", "h": 4}])
    o = sales.replace_partitions(T, [{"dt": "2024-01-01"}], [Partition({"dt": "2024-01-01", "h": 3}, rows=1),
                                                             {"dt": "2024-01-01", "h": 5}])
    assert (o.replaced, o.added, o.dropped) == (1, 1, 1)
    day = list(sales.list_partitions(T, prefix={"dt": "2024-01-01"}))
    assert [(p.spec["h"], p.rows) for p in day] == [("3", 1), ("5", None)]
    ops = [h.operation for h in sales.history(T)]
    assert ops[:3] == ["REPLACE PARTITIONS", "ADD PARTITIONS", "DROP PARTITIONS"]


@pytest.mark.parametrize("spec, message", [
    ({"dt": "2024-02-30", "h": 1}, "invalid value '2024-02-30' for partition column 'dt'"),
    ({"dt": "2024-01-01", "h": "x"}, "invalid value 'x' for partition column 'h'"),
    ({"dt": "2024-01-01"}, "lacks partition column"),
    ({"dt": "2024-01-01", "h": 1, "zz": 2}, "'zz' is not a partition column"),
    (Partition({"dt": "2024-01-01", "h": 1}, rows=-1), "rows must be an integer >= 0"),
    ("dt=2024", "a spec mapping or a Partition"),
])
def test_bad_partitions_write_nothing(sales: Metastore, spec: object, message: str) -> None:
    make_table(sales)
    before = raw_keys(sales)
    with pytest.raises(InvalidArgument, match=message):
        sales.add_partitions(T, [{"dt": "2024-01-09", "h": 0}, spec])  # type: ignore[list-item]
    assert raw_keys(sales) == before


def test_unpartitioned_table_refuses_partitions(sales: Metastore) -> None:
    sales.create_table("main.sales.flat", "a INT")
    with pytest.raises(InvalidArgument, match="not partitioned"):
        sales.add_partitions("main.sales.flat", [{"a": 1}])


def test_listing_streams_across_batches(sales: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    import ushas_catalog.metastore as m

    monkeypatch.setattr(m, "PARTITION_BATCH", 7)
    sales.create_table("main.sales.p", "a INT, k INT", partition_by=["k"])
    sales.add_partitions("main.sales.p", [{"k": i} for i in range(30, 0, -1)])
    assert [p.values["k"] for p in sales.list_partitions("main.sales.p")] == list(range(1, 31))
    assert [p.values["k"] for p in sales.list_partitions("main.sales.p", limit=9)] == list(range(1, 10))


@pytest.mark.embedded_only  # it counts the reads of this process's transactions; served, the service reads
def test_prefix_listing_touches_only_matching_keys(sales: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    make_table(sales)
    sales.add_partitions(T, [{"dt": f"2024-01-{d:02d}", "h": h} for d in range(1, 6) for h in range(4)])
    table_id = uuid.UUID(sales.get_table(T).id).bytes
    read: list[bytes] = []
    make = sales.db.create_transaction

    def spying_transaction():  # type: ignore[no-untyped-def]
        tr = make()
        get_range = tr.get_range

        def counted(begin, end, **kw):  # type: ignore[no-untyped-def]
            for kv in get_range(begin, end, **kw):
                if table_id in kv.key and b"\x02Tx\x00" in kv.key:
                    read.append(kv.key)
                yield kv

        tr.get_range = counted  # type: ignore[method-assign]
        return tr

    monkeypatch.setattr(sales.db, "create_transaction", spying_transaction)
    got = list(sales.list_partitions(T, prefix={"dt": "2024-01-03"}))
    assert [p.spec for p in got] == [{"dt": "2024-01-03", "h": str(h)} for h in range(4)]
    assert len(read) == 4


def test_stats_counts_keys_per_subspace(sales: Metastore) -> None:
    make_table(sales)
    sales.add_partitions(T, [{"dt": "2024-01-01", "h": h} for h in range(5)])
    stats = {(s.project, s.subspace): s for s in sales.stats()}
    assert stats[("acme", "TablePartition")].keys == 5
    assert stats[("acme", "TablePartitionHistory")].keys == 5
    assert stats[("acme", "TableCommit")].keys == 2
    assert sum(s.keys for s in stats.values()) == len(raw_keys(sales))
    other = Metastore.open(sales.db.uri, project="other")
    other.create_catalog("x")
    assert {s.project for s in other.stats(all_projects=True)} == {"acme", "other"}
    assert {s.project for s in other.stats()} == {"other"}
    other.close()


def test_added_column_goes_before_trailing_partition_columns(sales: Metastore) -> None:
    make_table(sales)  # ..., dt, h with PARTITIONED BY (dt, h): Spark writes expect them last
    t = sales.alter_table(T, [AddColumn(("channel",), parse_type("STRING"))])
    assert t.schema.names[-3:] == ["channel", "dt", "h"]
    sales.create_table("main.sales.flat", "a INT, b INT")
    assert sales.alter_table("main.sales.flat", [AddColumn(("c",), parse_type("INT"))]).schema.names == \
        ["a", "b", "c"]
