"""Persistent functions in the metastore (issue 26): stored under their database, versioned, dropped and
undropped like tables, tenant-isolated, removed with their database; and the ``ushas functions`` commands."""
from __future__ import annotations

import json
import uuid

import pytest

from ushas_catalog import records as rec
from ushas_catalog.cli import main
from ushas_catalog.keyspace.layout import FUNCTION
from ushas_catalog.model.names import DatabaseName
from ushas_catalog.errors import FunctionAlreadyExists, InvalidArgument, NoSuchCatalog, NoSuchFunction
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.functions import FunctionDefinition

from .conftest import raw_keys

PLUS_ONE = FunctionDefinition(parameters="x INT", return_type="INT", body="x + 1")
UPPER = FunctionDefinition(class_name="com.example.Upper", resources=(("JAR", "/libs/udfs.jar"),))


def test_create_replace_and_read(sales: Metastore) -> None:
    f = sales.create_function("main.sales.Plus", PLUS_ONE)
    assert (f.name, f.kind, f.version, f.parameters, f.body) == ("plus", "SQL", 1, "x INT", "x + 1")
    with pytest.raises(FunctionAlreadyExists) as e:
        sales.create_function("main.sales.plus", PLUS_ONE)
    assert e.value.answer()["spark"]["errorClass"] == "ROUTINE_ALREADY_EXISTS"
    assert sales.create_function("main.sales.plus", UPPER, if_not_exists=True).kind == "SQL"
    g = sales.create_function("main.sales.plus", UPPER, replace=True)
    assert (g.version, g.kind, g.class_name, g.resources, g.id) == (2, "CLASS", "com.example.Upper",
                                                                    [("jar", "/libs/udfs.jar")], f.id)
    assert g.created_at == f.created_at
    assert [x.name for x in sales.list_functions("main.sales")] == ["plus"]
    assert [h.operation for h in sales.function_history("main.sales.plus")] == ["REPLACE FUNCTION", "CREATE FUNCTION"]


def test_functions_have_their_own_name_space(sales: Metastore) -> None:
    sales.create_table("main.sales.t", "a INT")
    sales.create_function("main.sales.t", PLUS_ONE)
    assert sales.get_table("main.sales.t").name == "t" and sales.get_function("main.sales.t").kind == "SQL"


def test_drop_and_undrop(sales: Metastore) -> None:
    f = sales.create_function("main.sales.plus", PLUS_ONE)
    sales.drop_function("main.sales.plus")
    assert not sales.function_exists("main.sales.plus")
    assert not sales.function_exists("main.nodb.plus") and not sales.function_exists("nocat.sales.plus")
    with pytest.raises(NoSuchFunction) as e:
        sales.get_function("main.sales.plus")
    assert e.value.answer()["spark"]["errorClass"] == "ROUTINE_NOT_FOUND"
    assert [x.name for x in sales.list_functions("main.sales", dropped=True)] == ["plus"]
    sales.create_function("main.sales.plus", UPPER)  # the name is free again
    with pytest.raises(FunctionAlreadyExists):
        sales.undrop_function("main.sales.plus")
    sales.drop_function("main.sales.plus")
    back = sales.undrop_function("main.sales.plus", f.id)
    assert (back.id, back.kind, back.version) == (f.id, "SQL", 3)
    assert [h.operation for h in sales.function_history("main.sales.plus")] == [
        "UNDROP FUNCTION", "DROP FUNCTION", "CREATE FUNCTION"]
    with pytest.raises(NoSuchFunction):
        sales.undrop_function("main.sales.other")
    sales.drop_function("main.sales.plus")
    assert sales.purge_functions("main.sales") == ["plus", "plus"]  # both dropped ones
    assert sales.list_functions("main.sales", dropped=True) == []
    with pytest.raises(NoSuchFunction):
        sales.undrop_function("main.sales.plus")
    assert [k for k in raw_keys(sales) if b"\x02Fr\x00" in k or b"\x02Fc\x00" in k] == []


def test_bad_definitions_write_nothing(sales: Metastore) -> None:
    for bad in (FunctionDefinition(), FunctionDefinition(body="x", parameters="x INT"),
                FunctionDefinition(class_name="a.B", body="1", return_type="INT"),
                FunctionDefinition(class_name="a.B", resources=(("egg", "/x"),))):
        with pytest.raises(InvalidArgument):
            sales.create_function("main.sales.f", bad)
    with pytest.raises(InvalidArgument):
        sales.create_function("main.sales.f", PLUS_ONE, replace=True, if_not_exists=True)
    assert sales.list_functions("main.sales") == []


def test_tenants_are_isolated_and_a_database_drop_takes_its_functions(sales: Metastore, store_uri: str) -> None:
    sales.create_function("main.sales.plus", PLUS_ONE)
    other = Metastore.open(store_uri, project="other")
    with pytest.raises(NoSuchCatalog):
        other.get_function("main.sales.plus")
    other.create_catalog("main")
    other.create_database("main.sales")
    assert other.list_functions("main.sales") == []
    other.close()
    sales.drop_database("main.sales", cascade=True, purge=True)
    sales.create_database("main.sales")
    assert sales.list_functions("main.sales") == [] and not sales.function_exists("main.sales.plus")


def test_records_live_under_the_database(sales: Metastore) -> None:
    f = sales.create_function("main.sales.plus", PLUS_ONE)

    def name_entry(tr: object) -> rec.ObjectName | None:
        db = sales.resolver.database(tr, DatabaseName.parse("main.sales"), load=False)
        return sales.resolver.names(db.path.add(FUNCTION), "Function").load(tr, ("plus",))

    entry = sales.db.run(name_entry)
    assert entry is not None and entry.kind == rec.ObjectKind.FUNCTION and str(uuid.UUID(bytes=entry.id)) == f.id


def test_cli(sales: Metastore, store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    sales.create_function("main.sales.plus", PLUS_ONE)
    sales.create_function("main.sales.upper", UPPER)

    def run(*argv: str) -> tuple[int, str, str]:
        rc = main(["--uri", store_uri, "--project", "acme", *argv])
        out, err = capsys.readouterr()
        return rc, out, err

    rc, out, _ = run("functions", "list", "main.sales")
    assert rc == 0 and "plus   SQL    1        (x INT) RETURNS INT RETURN x + 1" in out
    assert "AS 'com.example.Upper' USING JAR '/libs/udfs.jar'" in out
    rc, out, _ = run("--json", "functions", "show", "main.sales.upper")
    assert json.loads(out)["class_name"] == "com.example.Upper"
    assert run("functions", "drop", "main.sales.plus")[0] == 0
    rc, out, _ = run("functions", "list", "main.sales", "--dropped", "--json")
    assert [f["name"] for f in json.loads(out)] == ["plus"]
    rc, out, _ = run("functions", "undrop", "main.sales.plus")
    assert rc == 0 and "version 3" in out
    rc, out, _ = run("functions", "history", "main.sales.plus")
    assert out.split("\n")[1].split()[-2:] == ["UNDROP", "FUNCTION"]
    rc, _, err = run("functions", "show", "main.sales.nope")
    assert rc == 1 and err.strip() == "ushas: NoSuchFunction: function main.sales.nope does not exist"
