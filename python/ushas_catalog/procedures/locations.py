"""Declared external locations (docs/governance.md, "External locations") as procedures: ``create_location``,
``drop_location``, ``show_locations``. Privileges on a location are granted with ``grant`` and the object
``location:NAME`` (``CALL ushas.system.grant('READ FILES', 'location:raw', 'user:bob')``)."""
from __future__ import annotations

from ..errors import InvalidArgument
from .registry import ACTION, DETAIL, OBJECT, Call, Column, Outcome, Param, from_micros, procedure

NAME = Param("name", "STRING", "the location's name")


@procedure("create_location", "Declare an external location: storage where tables may be placed and files read",
           [NAME, Param("url", "STRING", "s3a://bucket/dir, file:/dir or /dir"),
            Param("comment", "STRING", "what the location is for", "NULL")], [ACTION, OBJECT, DETAIL])
def create_location(call: Call) -> Outcome:
    """Refused (InvalidArgument) at or over this catalog's managed warehouse or a managed table's directory."""
    from ..data.locations import overlaps
    from ..spark.tables import qualify

    name, url = call.required("name"), call.required("url")
    warehouse = getattr(call.ctx, "warehouse", None)
    if warehouse and overlaps(qualify(url), qualify(warehouse)):
        raise InvalidArgument(f"external location {name} at {url} overlaps the managed warehouse of catalog "
                              f"{call.ctx.spark_catalog} ({warehouse}): the managed warehouse is the catalog's own, "
                              f"not an external location")
    loc = call.ms.create_location(name, url, call.args.get("comment") or "")
    return Outcome([["CREATE LOCATION", f"location:{loc.name}", loc.url]])


@procedure("drop_location", "Drop an external location and its grants (tables placed in it stay)", [NAME],
           [ACTION, OBJECT, DETAIL])
def drop_location(call: Call) -> Outcome:
    name = call.required("name")
    call.ms.drop_location(name)
    return Outcome([["DROP LOCATION", f"location:{name}", "dropped"]])


@procedure("show_locations", "The project's external locations", [], [
    Column("name", "STRING"), Column("url", "STRING"), Column("comment", "STRING"),
    Column("created_by", "STRING"), Column("created_at", "TIMESTAMP")])
def show_locations(call: Call) -> Outcome:
    return Outcome([[loc.name, loc.url, loc.comment, loc.created_by, from_micros(loc.created_micros)]
                    for loc in call.ms.list_locations()])
