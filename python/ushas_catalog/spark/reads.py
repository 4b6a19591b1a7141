"""The read side of the Spark shim: which files a query reads, decided by the catalog.

``io.ushas.spark.UshasFileIndex`` asks :func:`list_files` for the partitions its partition filters
select (pruned over the ordered partition keys: :mod:`ushas_catalog.data.pruning`) with, for each, its
location and the data files the committed writes registered — or no list, when nothing recorded
the files (partitions added with a LOCATION, imported from Hive, registered by a repair): the shim
then lists that partition's directory, and only that one. Nothing lists the table's root.
"""
from __future__ import annotations

from typing import Any

from ..data.pruning import Pruning, parse_filter
from .tables import SparkCtx, location_of, table_name
from .time_travel import OPS as TIME_TRAVEL_OPS, files_json, list_files_as_of, table_size_as_of

Request = dict[str, Any]
Answer = dict[str, Any]


def list_files(ms: Any, r: Request) -> Answer:
    """The partitions a query reads: ``{"columns": [...], "rows": [[value, ...], ...],
    "locations": [...], "files": [[[path, size, mtime], ...] | null, ...]}``; an unpartitioned
    table answers one row with no values. ``filter`` is the partition filter (see
    :mod:`ushas_catalog.data.pruning`; absent: every partition)."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    if r.get("as_of") is not None:  # VERSION / TIMESTAMP AS OF (spark.time_travel)
        return list_files_as_of(ms, r, name)
    info = ms.get_table(name)
    if not info.partition_columns:
        recorded = ms.table_data_files(name)
        return {"columns": [], "rows": [[]], "locations": [location_of(ctx, info)],
                "files": [files_json(recorded)]}
    flt = parse_filter(r.get("filter"))
    pruning: Pruning | None = None

    def ranges(scheme: Any) -> list[tuple[bytes, bytes]]:
        nonlocal pruning
        pruning = Pruning(scheme, flt)
        return pruning.key_ranges()

    scheme, partitions = ms.scan_partitions(name, ranges)
    assert pruning is not None
    row = scheme.json_row()
    rows: list[list[Any]] = []
    locations: list[str | None] = []
    files: list[list[list[Any]] | None] = []
    for key, record in partitions:
        if flt is not None and not pruning.keep(key):
            continue
        rows.append(row(key))
        locations.append(record.location or None)
        files.append(files_json(record.data_files if record.files_recorded else None))
    return {"columns": list(scheme.names), "rows": rows, "locations": locations, "files": files}


def table_size(ms: Any, r: Request) -> Answer:
    """The bytes the catalog recorded for a table (Spark's ``sizeInBytes`` before pruning): the
    sum over its partitions, or an unpartitioned table's ``totalSize``; ``null`` when unknown."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    if r.get("as_of") is not None:
        return table_size_as_of(ms, r, name)
    info = ms.get_table(name)
    if not info.partition_columns:
        text = info.properties.get("totalSize")
        return {"bytes": int(text) if text is not None and text.isdigit() else None}
    total, known = 0, False
    for _, record in ms.scan_partitions(name)[1]:
        if record.HasField("bytes"):
            total, known = total + record.bytes, True
    return {"bytes": total if known else None}


OPS = {"list_files": list_files, "table_size": table_size, **TIME_TRAVEL_OPS}
