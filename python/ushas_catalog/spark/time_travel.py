"""Spark's reads as of a version: ``SELECT … FROM t VERSION AS OF 12 | 'tag'``, ``TIMESTAMP AS OF …``
and the DataFrame options ``versionAsOf`` / ``timestampAsOf`` reach ``TableCatalog.loadTable(ident,
version | timestamp)``; :func:`load_table_as_of` answers the table as it was then (schema, format,
properties) with ``as_of``, the version, which the shim's file index sends back with every listing:
:func:`list_files_as_of` answers exactly that version's files (:mod:`ushas_catalog.catalog.time_travel`).

Governance is the current one: the caller needs the privileges a read needs now, and reads through
the row filter and masks in force now, whatever the version.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterable

from ..data.pruning import Pruning, parse_filter
from ..errors import InvalidArgument
from ..model.names import TableName
from ..model.row_policies import without_masked_statistics
from .lookups import absent_as_no_such_table
from .tables import SparkCtx, location_of, table_answer, table_name

Request = dict[str, Any]
Answer = dict[str, Any]

#: what an as-of answer takes from the old version (the rest, policy included, is the current table's)
AS_OF_FIELDS = ("schema", "partition_by", "properties", "format", "location", "bucketing")


def files_json(files: Iterable[Any] | None) -> list[list[Any]] | None:
    """Recorded data files (DataFile values or their records) as compact ``[path, size, mtime]``
    rows; None (not recorded: the shim lists the location) stays None."""
    return None if files is None else [[f.path, f.size, f.mtime] for f in files]


def as_of_of(r: Request) -> int | dt.datetime | str:
    """The request's version (a number or a tag name) or timestamp (epoch microseconds, Spark's)."""
    if r.get("timestamp") is not None:
        micros = int(r["timestamp"])
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)
    version = r.get("version")
    if version is None or not str(version).strip():
        raise InvalidArgument("a read as of a version needs a version number, a tag or a timestamp")
    return str(version).strip()


def load_table_as_of(ms: Any, r: Request) -> Answer:
    """``{"kind": "table", "table": {..., "as_of": N}, "id", "version": N}``: the table as of the
    request's version, time or tag, as the calling user reads it now."""
    from .cache import Known, lookup
    from .registry import REGISTRY

    ctx = SparkCtx.of(r)
    name = TableName.parse(table_name(ctx, r))
    cache = REGISTRY.get(ctx.uri, ctx.project).cache(ctx.spark_catalog)
    with absent_as_no_such_table(r):
        current = lookup(ms, cache, ctx, name, Known.of(None), views=False)  # the read's checks, today's policy
        info = ms.table_as_of(name, as_of_of(r))
    body = table_answer(ctx, info)
    table = dict(current["table"])
    table.update({k: body[k] for k in AS_OF_FIELDS})
    table["properties"] = without_masked_statistics(table["properties"] or {}, table.get("policy"))
    table["as_of"] = info.version
    return {"kind": "table", "table": table, "id": current["id"], "version": info.version}


def list_files_as_of(ms: Any, r: Request, name: Any) -> Answer:
    """:func:`ushas_catalog.spark.reads.list_files` of version ``r["as_of"]``."""
    ctx = SparkCtx.of(r)
    flt = parse_filter(r.get("filter"))
    pruning: Pruning | None = None

    def ranges(scheme: Any) -> list[tuple[bytes, bytes]]:
        nonlocal pruning
        pruning = Pruning(scheme, flt)
        return pruning.key_ranges()

    found = ms.files_as_of(name, int(r["as_of"]), ranges if flt is not None else None)
    if found.scheme is None or not found.scheme.names:
        info = ms.table_as_of(name, found.version)
        return {"columns": [], "rows": [[]], "locations": [location_of(ctx, info)], "files": [files_json(found.files)]}
    row = found.scheme.json_row()
    out: Answer = {"columns": list(found.scheme.names), "rows": [], "locations": [], "files": []}
    for key, record in found.partitions:
        if pruning is not None and not pruning.keep(key):
            continue
        out["rows"].append(row(key))
        out["locations"].append(record.location or None)
        out["files"].append(files_json(record.data_files if record.files_recorded else None))
    return out


def table_size_as_of(ms: Any, r: Request, name: Any) -> Answer:
    """The bytes of version ``r["as_of"]``'s files (Spark's size estimate); null when unknown."""
    found = ms.files_as_of(name, int(r["as_of"]))
    if found.scheme is None or not found.scheme.names:
        return {"bytes": None if found.files is None else sum(f.size for f in found.files)}
    total, known = 0, False
    for _, record in found.partitions:
        if record.HasField("bytes"):
            total, known = total + record.bytes, True
    return {"bytes": total if known else None}


OPS = {"load_table_as_of": load_table_as_of}
