"""``undrop_table`` and ``purge``: what ``ushas undrop`` and ``ushas purge`` do, from Spark SQL."""
from __future__ import annotations

import datetime as dt
from typing import Any

from ..errors import InvalidArgument
from ..model.names import DatabaseName, TableName
from .registry import ACTION, DETAIL, OBJECT, TABLE, VERSION, Call, Column, Outcome, Param, procedure


@procedure("undrop_table", "Restore the most recently dropped table of a name, with its data (until it is purged)",
           [TABLE], [ACTION, OBJECT, VERSION, DETAIL])
def undrop_table(call: Call) -> Outcome:
    name = call.table()
    info = call.ms.undrop_table(name)
    return Outcome([["UNDROP TABLE", ".".join(name), info.version, f"restored {'.'.join(name)} (id {info.id})"]],
                   refresh=[list(name[1:])])


def older_than(call: Call) -> dt.timedelta | None:
    """The ``older_than`` argument (a timestamp) as an age: what is older than it goes."""
    when = call.args.get("older_than")
    if when is None:
        return None
    age: dt.timedelta = dt.datetime.now(dt.timezone.utc) - when
    if age < dt.timedelta(0):
        raise InvalidArgument(f"older_than {when.isoformat()} is in the future")
    return age


@procedure("purge", "Delete what drops and overwrites kept until now: dropped tables or databases (their keys and "
                    "data), the files overwrites, truncates and dropped partitions let go, and staging directories "
                    "of dead writes; of one table, one database, or the whole project; only what is older than "
                    "older_than when given",
           [Param("table", "STRING", "a table, dropped or live: database.table", "NULL"),
            Param("database", "STRING", "a dropped database", "NULL"),
            Param("older_than", "TIMESTAMP", "only what was dropped or let go before this time", "NULL")],
           [Column("purged_objects", "BIGINT", "dropped tables / databases removed"),
            Column("garbage_entries", "BIGINT", "sets of let-go files deleted"),
            Column("staging_dirs", "BIGINT", "staging directories of dead writes deleted"),
            Column("deleted_paths", "BIGINT", "files and directories deleted"),
            Column("missing_paths", "BIGINT", "paths already gone"),
            Column("unreachable", "ARRAY<STRING>", "paths not on this machine's file system: Spark deletes them"),
            Column("kept_outside", "ARRAY<STRING>", "recorded files outside their table's and partition's "
                                                    "locations: kept, never deleted")],
           one_transaction=False)
def purge(call: Call) -> Outcome:
    """One transaction per dropped object, then its files are deleted (as ``ushas purge``): never a
    file deleted before the metadata naming it is gone. Paths the Python side cannot reach (another file
    system) are deleted by the JVM with Hadoop's FileSystem after the answer."""
    from ..data.purge import purge as purge_now

    if call.args.get("table") is not None and call.args.get("database") is not None:
        raise InvalidArgument("purge takes a table or a database, not both")
    name: Any = None
    if call.args.get("table") is not None:
        name = TableName.parse(call.table())
    elif call.args.get("database") is not None:
        name = DatabaseName.parse(call.database())
    summary = purge_now(call.ms, name, older_than(call))
    report = summary.report
    return Outcome([[summary.objects, summary.garbage, summary.staging, report.deleted, report.missing,
                     list(report.unreachable), list(report.outside)]], delete_paths=list(report.unreachable))
