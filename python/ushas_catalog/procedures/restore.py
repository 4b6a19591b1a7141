"""``restore_table``: a table's metadata as of a version or a time (:mod:`ushas_catalog.catalog.restore`)."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from .registry import TABLE, Call, Column, Outcome, Param, procedure


@procedure("restore_table", "Make a table's schema, properties and partitions what they were at a version or a "
                            "time; the restore is itself a new version (history shows it; another restore undoes it)",
           [TABLE, Param("version", "BIGINT", "the version to restore", "NULL"),
            Param("timestamp", "TIMESTAMP", "restore the version current at this time", "NULL")],
           [Column("table", "STRING"), Column("restored_version", "BIGINT"),
            Column("version", "BIGINT", "the new version (NULL: the table already was so)"),
            Column("schema_changed", "BOOLEAN"), Column("properties_changed", "BOOLEAN"),
            Column("partitions_added", "BIGINT"), Column("partitions_dropped", "BIGINT"),
            Column("partitions_replaced", "BIGINT")])
def restore_table(call: Call) -> Outcome:
    name = call.table()
    version, when = call.args.get("version"), call.args.get("timestamp")
    if (version is None) == (when is None):
        raise InvalidArgument("restore_table needs exactly one of version or timestamp")
    as_of: Any = int(version) if version is not None else when
    r = call.ms.restore_table(name, as_of)
    return Outcome([[".".join(name), r.restored_version, r.version, r.schema_changed, r.properties_changed,
                     r.partitions_added, r.partitions_dropped, r.partitions_replaced]], refresh=[list(name[1:])])
