"""Names that would make paths collide or escape, fixed partition columns and managed locations
that overlap, through the Python API, the CLI and the Hive import: each refused with its error
(and Spark error class), nothing written."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import (InvalidArgument, InvalidColumnName, InvalidName, LocationInUse,
                                  PartitionColumnChange)
from ushas_catalog.spark.hive_import import HiveDatabase, HivePartition, HiveTable, import_hive
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import path_problem
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn, DeleteColumn, RenameColumn, UpdateColumnType

from .conftest import raw_keys

#: names that would escape or collide as directories
HOSTILE = ["a/b", "/abs", "a\\b", ".", "..", "a\x00b", "a\x01b", "a\nb", "a\x7fb", "a\x85b", "a\x9fb"]
#: names that are awkward but one path segment each: accepted
FINE = ["a.b", "a b", "...", ".hidden", "a:b", "a%2Fb", "日本", "a=b"]

T = "main.sales.orders"


@pytest.fixture
def filled(sales: Metastore) -> Metastore:
    sales.create_table(T, "id BIGINT, v STRING, dt DATE, h INT", partition_by=["dt", "h"])
    sales.create_view("main.sales.v", "SELECT id FROM orders", "id BIGINT")
    return sales


def dump(ms: Metastore) -> list[tuple[bytes, bytes]]:
    """Every key and value of the store."""
    return ms.db.run(lambda tr: [(kv.key, kv.value) for kv in tr.get_range(b"", b"\xff")])


Entry = Callable[[Metastore, str], Any]

#: every way a new catalog / database / table / view name enters through the Python API
NAME_ENTRIES: dict[str, Entry] = {
    "create_catalog": lambda ms, n: ms.create_catalog((n,)),
    "ensure_catalog": lambda ms, n: ms.ensure_catalog((n,)),
    "create_database": lambda ms, n: ms.create_database(("main", n)),
    "create_table": lambda ms, n: ms.create_table(("main", "sales", n), "id INT"),
    "create_external_table": lambda ms, n: ms.create_table(("main", "sales", n), "id INT", location="/x",
                                                           external=True),
    "replace_table": lambda ms, n: ms.replace_table(("main", "sales", n), "id INT"),
    "create_view": lambda ms, n: ms.create_view(("main", "sales", n), "SELECT 1", "x INT"),
    "rename_table": lambda ms, n: ms.rename_table(T, ("main", "sales", n)),
    "rename_table_moving": lambda ms, n: ms.rename_table(T, ("main", "sales", n), location="/wh/sales/x"),
    "rename_view": lambda ms, n: ms.rename_view("main.sales.v", ("main", "sales", n)),
}

#: every way a new column name enters
COLUMN_ENTRIES: dict[str, Entry] = {
    "create_table": lambda ms, n: ms.create_table("main.sales.n", {"type": "struct", "fields": [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": n, "type": "string", "nullable": True, "metadata": {}}]}),
    "create_table_partitioned": lambda ms, n: ms.create_table("main.sales.n", {"type": "struct", "fields": [
        {"name": "id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": n, "type": "string", "nullable": True, "metadata": {}}]}, partition_by=[n]),
    "replace_table": lambda ms, n: ms.replace_table(T, {"type": "struct", "fields": [
        {"name": n, "type": "string", "nullable": True, "metadata": {}}]}),
    "add_column": lambda ms, n: ms.alter_table(T, [AddColumn((n,), parse_type("INT"))]),
    "rename_column": lambda ms, n: ms.alter_table(T, [RenameColumn(("v",), n)]),
}


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("entry", list(NAME_ENTRIES))
def test_hostile_object_names_are_refused(filled: Metastore, entry: str, name: str) -> None:
    before = dump(filled)
    with pytest.raises(InvalidName) as info:
        NAME_ENTRIES[entry](filled, name)
    assert isinstance(info.value, InvalidArgument) and not isinstance(info.value, InvalidColumnName)
    assert info.value.spark is not None and info.value.spark.error_class == "INVALID_SCHEMA_OR_RELATION_NAME"
    assert info.value.spark.parameters == {"name": "`" + name + "`"}
    assert info.value.exit_code == 2
    assert dump(filled) == before


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("entry", list(COLUMN_ENTRIES))
def test_hostile_column_names_are_refused(filled: Metastore, entry: str, name: str) -> None:
    before = dump(filled)
    with pytest.raises(InvalidColumnName) as info:
        COLUMN_ENTRIES[entry](filled, name)
    assert isinstance(info.value, InvalidArgument)
    assert info.value.spark is not None and info.value.spark.error_class == "INVALID_COLUMN_NAME_AS_PATH"
    assert info.value.spark.parameters == {"datasource": "parquet", "columnName": "`" + name + "`"}
    assert dump(filled) == before


@pytest.mark.parametrize("name", FINE)
def test_names_that_are_one_path_segment_are_accepted(filled: Metastore, name: str) -> None:
    assert path_problem(name) is None
    filled.create_database(("main", name))
    filled.create_table(("main", "sales", name), {"type": "struct", "fields": [
        {"name": name, "type": "string", "nullable": True, "metadata": {}}]}, partition_by=[name])
    filled.alter_table(T, [AddColumn((name,), parse_type("INT"))])
    filled.create_view(("main", "sales", "v_" + name), "SELECT 1", "x INT")


def test_nested_fields_are_not_paths(filled: Metastore) -> None:
    """A struct field never becomes a directory: any name is kept."""
    t = filled.create_table("main.sales.n", "id INT, s STRUCT<`a/b`: INT, `..`: INT>")
    assert [f.name for f in t.schema.field("s").data_type.fields] == ["a/b", ".."]
    filled.alter_table("main.sales.n", [AddColumn(("s", "c/d"), parse_type("INT")),
                                        RenameColumn(("s", "a/b"), "x\\y")])


def test_objects_made_before_the_rule_can_still_be_read_and_dropped(filled: Metastore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Only new names are checked: looking a hostile name up says it does not exist, and an
    object that has one (written by an older version) can be renamed away and dropped."""
    import ushas_catalog.catalog.tables as metastore_module
    from ushas_catalog.model.names import TableName

    assert not filled.table_exists("main.sales.`a/b`")
    with monkeypatch.context() as m:  # an old store: the name written as it was before the rule
        m.setattr(metastore_module, "new_table_name", lambda name, what="table": TableName.parse(name))
        filled.create_table(("main", "sales", "a/b"), "id INT")
    assert filled.get_table(("main", "sales", "a/b")).name == "a/b"
    filled.rename_table(("main", "sales", "a/b"), "main.sales.fixed")
    filled.drop_table("main.sales.fixed")


# ---- partition columns are fixed ---------------------------------------------------------------------
@pytest.mark.parametrize("change, error_class, params", [
    (RenameColumn(("dt",), "day"), "UNSUPPORTED_FEATURE.TABLE_OPERATION",
     {"tableName": "`main`.`sales`.`orders`", "operation": "RENAME COLUMN of partition column `dt`"}),
    (RenameColumn(("DT",), "day"), "UNSUPPORTED_FEATURE.TABLE_OPERATION",
     {"tableName": "`main`.`sales`.`orders`", "operation": "RENAME COLUMN of partition column `DT`"}),
    (DeleteColumn(("h",)), "UNSUPPORTED_FEATURE.TABLE_OPERATION",
     {"tableName": "`main`.`sales`.`orders`", "operation": "DROP COLUMN of partition column `h`"}),
    (DeleteColumn(("h",), if_exists=True), "UNSUPPORTED_FEATURE.TABLE_OPERATION",
     {"tableName": "`main`.`sales`.`orders`", "operation": "DROP COLUMN of partition column `h`"}),
    (UpdateColumnType(("h",), parse_type("BIGINT")), "CANNOT_ALTER_PARTITION_COLUMN",
     {"tableName": "`main`.`sales`.`orders`", "columnName": "`h`"}),
    (UpdateColumnType(("dt",), parse_type("TIMESTAMP")), "CANNOT_ALTER_PARTITION_COLUMN",
     {"tableName": "`main`.`sales`.`orders`", "columnName": "`dt`"}),
])
def test_partition_columns_are_fixed(filled: Metastore, change: Any, error_class: str, params: dict) -> None:
    filled.add_partitions(T, [{"dt": "2024-01-01", "h": 1}])
    before = dump(filled)
    with pytest.raises(PartitionColumnChange, match="partition column") as info:
        filled.alter_table(T, [AddColumn(("x",), parse_type("INT")), change])
    assert info.value.spark is not None
    assert (info.value.spark.error_class, info.value.spark.parameters) == (error_class, params)
    assert dump(filled) == before


def test_partition_columns_keep_what_does_not_change_them(filled: Metastore) -> None:
    t = filled.alter_table(T, [UpdateColumnType(("h",), parse_type("INT"))])  # its own type: no change
    assert t.partition_columns == ["dt", "h"] and t.schema.field("h").data_type == parse_type("INT")
    from ushas_catalog.model.table_changes import UpdateColumnComment

    t = filled.alter_table(T, [UpdateColumnComment(("dt",), "the day"), RenameColumn(("v",), "value")])
    assert t.partition_columns == ["dt", "h"] and t.schema.field("dt").comment == "the day"


# ---- managed locations -------------------------------------------------------------------------------
@pytest.mark.parametrize("other_location", [
    "/wh/sales/new",             # the same directory
    "/wh/sales/new/",            # the same, spelled with a slash
    "file:///wh/sales/new",      # the same, as a URI
    "/wh/sales/new/part",        # inside the new table's directory
    "/wh/sales",                 # holding it (the database directory itself)
])
def test_default_location_must_not_overlap_another_table(sales: Metastore, other_location: str) -> None:
    sales.create_table("main.sales.ext", "id INT", location=other_location, external=True)
    before = dump(sales)
    with pytest.raises(LocationInUse) as info:
        sales.create_table("main.sales.new", "id INT")  # default location /wh/sales/new
    assert info.value.spark is not None and info.value.spark.error_class == "LOCATION_ALREADY_EXISTS"
    assert info.value.spark.runtime
    assert info.value.spark.parameters == {"identifier": "`main`.`sales`.`new`", "location": "'/wh/sales/new'"}
    assert "main.sales.ext" in info.value.message
    assert dump(sales) == before


def test_default_location_checks(sales: Metastore) -> None:
    sales.create_table("main.sales.ext", "id INT", location="/wh/sales/newer", external=True)
    sales.create_table("main.sales.new", "id INT")  # /wh/sales/new is not inside /wh/sales/newer
    # a location the user gives is taken as given, inside another table's or not
    sales.create_table("main.sales.mine", "id INT", location="/wh/sales/new/mine")
    sales.create_table("main.sales.also", "id INT", location="/wh/sales/new", default_location=False)
    # a database without a location: no default location to check
    sales.create_database("main.noloc")
    sales.create_table("main.noloc.t", "id INT")
    # renaming into a default location that another table holds
    sales.create_table("main.sales.ext2", "id INT", location="/wh/sales/target", external=True)
    before = dump(sales)
    with pytest.raises(LocationInUse):
        sales.rename_table("main.sales.new", "main.sales.target", location="/wh/sales/target")
    assert dump(sales) == before
    # its own location does not count against itself
    sales.drop_table("main.sales.also")
    sales.rename_table("main.sales.new", "main.sales.new2", location="/wh/sales/new/x")


# ---- CLI ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["a/b", "..", "a\\b", "x\x01"])
def test_cli_refuses_a_hostile_import_catalog(store_uri: str, tmp_path: Path, name: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    ms = Metastore.open(store_uri, project="acme")
    before = raw_keys(ms)
    rc = main(["--uri", store_uri, "--project", "acme", "import-hive", "--catalog", name,
               "--metastore-db", str(tmp_path / "none")])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "catalog name" in err and "InvalidName" in err
    assert raw_keys(ms) == before
    ms.close()


def test_cli_refuses_a_hostile_import_catalog_as_a_process(store_uri: str, tmp_path: Path) -> None:
    from tests.app.cli_run import run_cli

    rc, out, err = run_cli(["--uri", store_uri, "import-hive", "--catalog", "../up",
                            "--metastore-db", str(tmp_path / "none")], tty=False, timeout=120)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "'../up'" in err


# ---- Hive import: reported, not a crash ---------------------------------------------------------------
class HostileHive:
    """A Hive metastore holding names Ushas refuses, next to fine ones."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def databases(self) -> list[HiveDatabase]:
        return [HiveDatabase("good", location=str(self.root / "good.db")),
                HiveDatabase("bad/db", location=str(self.root / "bad"))]

    def tables(self, database: str) -> list[str]:
        return ["ok", "a/b", "..", "badcol", "v/w"] if database == "good" else ["t"]

    def table(self, database: str, name: str) -> HiveTable:
        columns = [{"name": "id", "type": "integer", "nullable": True, "metadata": {}},
                   {"name": "x/y" if name == "badcol" else "x", "type": "string", "nullable": True,
                    "metadata": {}}]
        if name == "v/w":
            return HiveTable(database, name, "VIEW", {"type": "struct", "fields": columns[:1]},
                             view_text="SELECT 1 AS id")
        return HiveTable(database, name, "EXTERNAL", {"type": "struct", "fields": columns}, provider="parquet",
                         location=str(self.root / database / name))

    def partitions(self, database: str, name: str) -> Iterator[HivePartition]:
        return iter(())


def test_hive_import_reports_hostile_names(ms: Metastore, tmp_path: Path) -> None:
    report = import_hive(ms, HostileHive(tmp_path), "hive")
    problems = {p.name: p.reason for p in report.problems}
    assert set(problems) == {"bad/db", "good.a/b", "good...", "good.badcol", "good.v/w"}
    assert "InvalidName" in problems["bad/db"] and "InvalidName" in problems["good.a/b"]
    assert "InvalidColumnName" in problems["good.badcol"]
    assert [t.name for t in ms.list_relations("hive.good")] == ["ok"]
    assert [d.name for d in ms.list_databases("hive")] == ["good"]
