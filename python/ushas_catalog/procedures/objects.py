"""Versioned objects from Spark SQL (docs/objects.md): ``create_object``, ``add_object_version``,
``rollback_object``, ``drop_object``, ``undrop_object`` — what ``ushas objects …`` does."""
from __future__ import annotations

from .registry import ACTION, DETAIL, OBJECT, Call, Column, Outcome, Param, procedure

NAME = Param("object", "STRING", "the object: database.object (or <catalog>.database.object)")
DATA_VERSION = Column("version", "BIGINT", "the object's data version after the call (NULL: none)")


def _name(call: Call) -> tuple[str, str, str]:
    return call.table("object")


@procedure("create_object", "Create a versioned object (a volume, model or file) in a database",
           [NAME, Param("kind", "STRING", "volume, model, file (or another kind by name)"),
            Param("location", "STRING", "where its data is"), Param("comment", "STRING", "its comment", "NULL"),
            Param("properties", "MAP<STRING, STRING>", "its properties", "NULL")],
           [ACTION, OBJECT, DATA_VERSION, DETAIL])
def create_object(call: Call) -> Outcome:
    name = _name(call)
    o = call.ms.objects.create(name, call.required("kind"), call.required("location"),
                               comment=call.args.get("comment"), properties=call.args.get("properties"))
    return Outcome([["CREATE OBJECT", o.qualified_name, None, f"created {o.kind} at {o.location} (id {o.id})"]])


@procedure("add_object_version", "Add a data version to a versioned object and make it current",
           [NAME, Param("location", "STRING", "the version's data (NULL: the object's location)", "NULL"),
            Param("properties", "MAP<STRING, STRING>", "the version's properties", "NULL"),
            Param("comment", "STRING", "the version's comment", "NULL")],
           [ACTION, OBJECT, DATA_VERSION, DETAIL, Column("dataset", "STRING", "its lineage dataset name")])
def add_object_version(call: Call) -> Outcome:
    v = call.ms.objects.add_version(_name(call), call.args.get("location"), properties=call.args.get("properties"),
                                    comment=call.args.get("comment"))
    return Outcome([["ADD VERSION", v.object, v.version, f"version {v.version} at {v.location}", v.dataset]])


@procedure("rollback_object", "Make an earlier data version current again, as a new version",
           [NAME, Param("version", "BIGINT", "the version to go back to")],
           [ACTION, OBJECT, DATA_VERSION, DETAIL])
def rollback_object(call: Call) -> Outcome:
    v = call.ms.objects.rollback(_name(call), call.required("version"))
    return Outcome([["ROLLBACK", v.object, v.version, f"version {v.version} = version {v.rolled_back_from} "
                                                      f"({v.location})"]])


@procedure("drop_object", "Drop a versioned object (undrop_object brings it back until it is purged)",
           [NAME], [ACTION, OBJECT, DETAIL])
def drop_object(call: Call) -> Outcome:
    name = _name(call)
    call.ms.objects.drop(name)
    return Outcome([["DROP OBJECT", ".".join(name), "dropped (its files are untouched)"]])


@procedure("undrop_object", "Bring the most recently dropped versioned object of a name back",
           [NAME], [ACTION, OBJECT, DATA_VERSION, DETAIL])
def undrop_object(call: Call) -> Outcome:
    o = call.ms.objects.undrop(_name(call))
    return Outcome([["UNDROP OBJECT", o.qualified_name, o.current_version or None, f"restored (id {o.id})"]])
