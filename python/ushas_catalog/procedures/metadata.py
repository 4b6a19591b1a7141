"""``set_tag``, ``unset_tag``, ``set_property`` (and ``unset_property``) on any object or column: USER
metadata (:mod:`ushas_catalog.metadata.store`), as ``ushas meta tag / untag / set / unset``."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidName
from ..model.names import split_name
from .registry import ACTION, DETAIL, OBJECT, Call, Column, Outcome, Param, procedure

OBJECT_PARAM = Param("object", "STRING", "'' (the catalog), database, database.table (or view), "
                                         "database.table.column (nested: database.table.address.city)")
TAGS = Column("tags", "ARRAY<STRING>", "the object's USER tags after the change")
PROPERTIES = Column("properties", "MAP<STRING, STRING>", "the object's USER properties after the change")


def target(call: Call) -> list[str]:
    """The metadata object an ``object`` argument names, as the metastore's name parts (this catalog first)."""
    text = call.args.get("object")
    if text is None:
        raise InvalidName("object must not be NULL ('' names the catalog itself)")
    parts = split_name(text) if str(text).strip() else []
    return [call.ctx.catalog, *parts]


def _answer(action: str, parts: list[str], meta: Any, detail: str) -> Outcome:
    user = meta.user
    return Outcome([[action, ".".join(parts), detail, sorted(user.tags), dict(user.properties)]])


RESULT = [ACTION, OBJECT, DETAIL, TAGS, PROPERTIES]


@procedure("set_tag", "Add a USER tag to a catalog, database, table, view or column", [
    OBJECT_PARAM, Param("tag", "STRING", "the tag")], RESULT)
def set_tag(call: Call) -> Outcome:
    parts, tag = target(call), call.required("tag")
    return _answer("SET TAG", parts, call.ms.metadata.tag(parts, [tag]), f"tagged {tag}")


@procedure("unset_tag", "Remove a USER tag (a tag not there is ignored)", [
    OBJECT_PARAM, Param("tag", "STRING", "the tag")], RESULT)
def unset_tag(call: Call) -> Outcome:
    parts, tag = target(call), call.required("tag")
    return _answer("UNSET TAG", parts, call.ms.metadata.untag(parts, [tag]), f"untagged {tag}")


@procedure("set_property", "Set a USER property (key = value) of a catalog, database, table, view or column; a NULL "
                           "value removes it ('comment' is the object's own comment)", [
    OBJECT_PARAM, Param("key", "STRING", "the property key"),
    Param("value", "STRING", "its value; NULL removes the property", "NULL")], RESULT)
def set_property(call: Call) -> Outcome:
    parts, key, value = target(call), call.required("key"), call.args.get("value")
    if value is None:
        return _answer("UNSET PROPERTY", parts, call.ms.metadata.unset(parts, [key]), f"removed {key}")
    return _answer("SET PROPERTY", parts, call.ms.metadata.set(parts, {key: value}), f"{key} = {value}")
