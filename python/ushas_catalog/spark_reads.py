"""The read side of the Spark shim: which files a query reads, decided by the catalog.

``io.ushas.spark.UshasFileIndex`` asks :func:`list_files` for the partitions its partition filters
select (pruned over the ordered partition keys: :mod:`ushas_catalog.pruning`) with, for each, its
location and the data files the committed writes registered — or no list, when nothing recorded
the files (partitions added with a LOCATION, imported from Hive, registered by a repair): the shim
then lists that partition's directory, and only that one. Nothing lists the table's root.
"""
from __future__ import annotations

from typing import Any

from .pruning import Pruning, parse_filter
from .spark_tables import SparkCtx, location_of, table_name

Request = dict[str, Any]
Answer = dict[str, Any]


def _files(files: Any) -> list[list[Any]] | None:
    """Recorded data files as compact ``[path, size, mtime]`` rows (None: not recorded)."""
    if files is None:
        return None
    return [[f.path, f.size, f.mtime] for f in files]


def list_files(ms: Any, r: Request) -> Answer:
    """The partitions a query reads: ``{"columns": [...], "rows": [[value, ...], ...],
    "locations": [...], "files": [[[path, size, mtime], ...] | null, ...]}``; an unpartitioned
    table answers one row with no values. ``filter`` is the partition filter (see
    :mod:`ushas_catalog.pruning`; absent: every partition)."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = ms.get_table(name)
    if not info.partition_columns:
        recorded = ms.table_data_files(name) if hasattr(ms, "table_data_files") else None
        return {"columns": [], "rows": [[]], "locations": [location_of(ctx, info)], "files": [_files(recorded)]}
    flt = parse_filter(r.get("filter"))
    pruning: Pruning | None = None

    def ranges(scheme: Any) -> list[tuple[bytes, bytes]]:
        nonlocal pruning
        pruning = Pruning(scheme, flt)
        return pruning.key_ranges()

    scheme, partitions = ms.partitions_in_ranges(name, ranges)
    assert pruning is not None
    columns = list(scheme.names)
    encoders = [(c.name, c.encode) for c in scheme.columns]
    rows: list[list[Any]] = []
    locations: list[str | None] = []
    files: list[list[list[Any]] | None] = []
    for p in partitions:
        if flt is not None and not pruning.keep(tuple(encode(p.values[n]) for n, encode in encoders)):
            continue
        values = p.to_json()["values"]
        rows.append([values[c] for c in columns])
        locations.append(p.location)
        files.append(_files(getattr(p, "data_files", None)))
    return {"columns": columns, "rows": rows, "locations": locations, "files": files}


def table_size(ms: Any, r: Request) -> Answer:
    """The bytes the catalog recorded for a table (Spark's ``sizeInBytes`` before pruning): the
    sum over its partitions, or an unpartitioned table's ``totalSize``; ``null`` when unknown."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = ms.get_table(name)
    if not info.partition_columns:
        text = info.properties.get("totalSize")
        return {"bytes": int(text) if text is not None and text.isdigit() else None}
    total, known = 0, False
    for p in ms.list_partitions(name):
        if p.bytes is not None:
            total, known = total + p.bytes, True
    return {"bytes": total if known else None}


OPS = {"list_files": list_files, "table_size": table_size}
