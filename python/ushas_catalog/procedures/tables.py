"""``repair_table`` (MSCK REPAIR TABLE) and ``refresh_table`` (REFRESH TABLE, and this session's cached data)."""
from __future__ import annotations

from ..data.repair import RepairMode, partition_scheme
from ..errors import InvalidArgument
from .registry import ACTION, DETAIL, OBJECT, TABLE, Call, Column, Outcome, Param, procedure


@procedure("repair_table", "Register the partition directories under a table's location that are not registered "
                           "(mode 'add', MSCK REPAIR TABLE's default), unregister the partitions whose directory is "
                           "gone ('drop'), or both ('sync')",
           [TABLE, Param("mode", "STRING", "add | drop | sync", "'add'")],
           [Column("table", "STRING"), Column("mode", "STRING"),
            Column("listed", "BIGINT", "partition directories found"), Column("added", "BIGINT"),
            Column("dropped", "BIGINT"), Column("invalid", "BIGINT", "directories not registered (see the log)")],
           one_transaction=False)
def repair_table(call: Call) -> Outcome:
    """The JVM lists the directories (Hadoop's FileSystem, any scheme) and registers them through the
    ``repair`` bridge op in batches within FoundationDB's limits (:mod:`ushas_catalog.data.repair`)."""
    name = call.table()
    text = str(call.required("mode")).strip().lower()
    try:
        mode = RepairMode(text)
    except ValueError:
        raise InvalidArgument(f"mode {call.args['mode']!r}: expected 'add', 'drop' or 'sync'") from None
    if call.jvm_result is None:
        partition_scheme(call.ms, name)  # a clear error for a missing or unpartitioned table
        return Outcome.ask_jvm("repair", {"mode": mode.value}, namespace=[name[1]], name=name[2],
                               add=mode.adds, drop=mode.drops)
    r = call.jvm_result
    return Outcome([[".".join(name), mode.value, r["listed"], r["added"], r["dropped"], r["invalid"]]])


@procedure("refresh_table", "Drop this session's cached relation of a table (its file listing) and refresh its "
                            "cached data (CACHE TABLE), so the next query reads what the catalog lists now",
           [TABLE], [ACTION, OBJECT, DETAIL])
def refresh_table(call: Call) -> Outcome:
    name = call.table()
    info = call.ms.get_table(name)
    return Outcome([["REFRESH TABLE", ".".join(name), f"version {info.version}"]], refresh=[list(name[1:])])
