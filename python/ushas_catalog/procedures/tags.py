"""``create_tag`` / ``drop_tag``: named versions of a table (:mod:`ushas_catalog.catalog.time_travel`):
``VERSION AS OF 'tag'`` reads it, and its files are never purged while the tag lives."""
from __future__ import annotations

from .registry import TABLE, Call, Column, Outcome, Param, procedure

_TAG_COLUMNS = [Column("table", "STRING"), Column("tag", "STRING"), Column("version", "BIGINT")]


@procedure("create_tag", "Name a version of a table (default: the current one); VERSION AS OF 'tag' reads it and "
                         "purge keeps its files while the tag lives",
           [TABLE, Param("tag", "STRING", "the tag's name (not a number)"),
            Param("version", "BIGINT", "the version to name (default: the current one)", "NULL")],
           _TAG_COLUMNS)
def create_tag(call: Call) -> Outcome:
    name = call.table()
    version = call.args.get("version")
    t = call.ms.create_tag(name, str(call.args["tag"]), None if version is None else int(version))
    return Outcome([[".".join(name), t.name, t.version]])


@procedure("drop_tag", "Remove a tag of a table: its version's files may then be purged",
           [TABLE, Param("tag", "STRING", "the tag's name")], _TAG_COLUMNS)
def drop_tag(call: Call) -> Outcome:
    name = call.table()
    t = call.ms.drop_tag(name, str(call.args["tag"]))
    return Outcome([[".".join(name), t.name, t.version]])
