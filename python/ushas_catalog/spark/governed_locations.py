"""Governed locations (docs/governance.md, "Locations"): a governed caller (authorization on) may not give a
table or a partition a location inside the catalog's managed warehouse (where managed tables live, at
predictable ``<warehouse>/<db>.db/<table>`` paths) or its database's location, nor one holding them; a
partition's location may lie inside its own table's location. Then the metastore's own check
(:meth:`~ushas_catalog.catalog.locations.LocationOps.check_placement`): CREATE EXTERNAL TABLE on the declared
external location holding it, and no overlap with another table of the project. Checked on CREATE TABLE …
LOCATION, CTAS / RTAS … LOCATION, ALTER TABLE … SET LOCATION, ADD PARTITION … LOCATION and repair, before
anything is written."""
from __future__ import annotations

from typing import Any

from ..data.locations import normalized, overlaps
from ..errors import PermissionDenied
from ..model.names import TableName
from .tables import SparkCtx, qualify


def _inside(path: str, root: str) -> bool:
    x, y = normalized(path), normalized(root)
    return x == y or x.startswith(y.rstrip("/") + "/")


def check_location(ms: Any, ctx: SparkCtx, name: TableName, location: str, *, own: str | None = None,
                   what: str = "the table", database: Any = None, placement: bool = True) -> None:
    """Refuse (:class:`PermissionDenied`, Spark's ``INSUFFICIENT_PERMISSIONS``) ``location`` for ``what`` of
    table ``name`` when the caller is governed and it lies in governed storage; ``own``: the table's own
    location, inside which a partition may lie; ``database``: the table's database when the caller has it;
    ``placement=False``: the metastore's own check is left to the metastore call that follows, which makes it
    (``Metastore.create_table`` of a chosen location: one check, not two)."""
    if not location or not ms.caller().authorization:
        return
    if own and _inside(location, own):
        return
    user = ms.caller().user
    roots: list[tuple[str, str]] = [(qualify(ctx.warehouse), f"the managed warehouse of catalog {ctx.spark_catalog}")]
    database = database if database is not None else ms.get_database(name.database_name)
    if database.location:
        roots.append((qualify(database.location), f"the location of database {name.database_name}"))
    for root, shown in roots:
        if overlaps(location, root):  # inside it, or holding it
            raise _denied(user, name, location, what, shown)
    if placement:
        ms.check_placement(qualify(location), name, own=own, what=what)


def _denied(user: str, name: TableName, location: str, what: str, where: str) -> PermissionDenied:
    return PermissionDenied(f"User {user} may not place {what} {name} at {location}: it lies in {where} "
                            f"(governed storage: only the catalog places data there)", privilege="LOCATION",
                            object=str(name), user=user)


__all__ = ["check_location"]
