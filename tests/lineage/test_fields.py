"""Struct updates without Spark: the field names of a struct type as Spark prints it, and which
expressions feed each field of ``update_fields(base, WithField…, DropField…)`` (lineage.fields)."""
from __future__ import annotations

import pytest

from lineage.fields import struct_field_names, updated_members
from lineage.plan import Expr


@pytest.mark.parametrize("data_type, names", [
    ("struct<street:string,zip:string>", ["street", "zip"]),
    ("struct<a:int,b:struct<c:int,d:array<int>>,e:map<string,int>,f:decimal(10,2)>", ["a", "b", "e", "f"]),
    ("struct<`odd name`:int>", ["odd name"]),
    ("string", None),
    (None, None),
    ("struct<a>", None),  # not a type Spark prints: not understood, never guessed
])
def test_struct_field_names(data_type: str | None, names: list[str] | None) -> None:
    assert struct_field_names(data_type) == names


def ref(name: str, expr_id: int) -> Expr:
    return Expr("AttributeReference", expr_id=expr_id, name=name)


def test_updated_members_replace_add_drop() -> None:
    base, name, one = ref("addr", 6), ref("name", 7), Expr("Literal")
    update = Expr("UpdateFields", (base, Expr("WithField", (name,), name="zip"), Expr("WithField", (one,), name="c"),
                                   Expr("DropField", name="street")))
    got = updated_members(Expr("Alias", (update,), expr_id=9, name="a3"), ["zip", "c"])
    assert got is not None
    assert got[0] is base and got[1] == [[name], [one]]
    # a field added then dropped is gone; a kept field (None) comes from the base
    update = Expr("UpdateFields", (base, Expr("WithField", (name,), name="x"), Expr("DropField", name="x")))
    assert updated_members(update, ["street", "zip"]) == (base, [None, None])


def test_updated_members_without_field_names_is_not_understood() -> None:
    """An older shim does not write the field an operation names: the resolver keeps the
    whole-struct answer rather than guess."""
    update = Expr("UpdateFields", (ref("addr", 6), Expr("WithField", (ref("name", 7),))))
    assert updated_members(update, ["street", "zip"]) is None
    assert updated_members(ref("addr", 6), ["street", "zip"]) is None
