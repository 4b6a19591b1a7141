"""The ``repair`` bridge op (MSCK REPAIR TABLE / RECOVER PARTITIONS): the JVM lists directories,
Python decides and registers (:mod:`ushas_catalog.data.repair`)."""
from __future__ import annotations

from typing import Any

from ..data.repair import add_batched, drop_batched, join_location, parse_paths, partition_scheme, registered
from ..errors import InvalidArgument
from ..model.names import TableName
from ..model.partitions import Partition
from .tables import SparkCtx, location_of, qualify, table_name


def spark_op(ms: Any, r: dict[str, Any]) -> dict[str, Any]:
    """``repair`` steps, each answering JSON: ``start`` (the table root to list and its partition
    columns), ``registered`` (registered partitions: value texts and location, relative to the root
    when under it), ``drop`` (unregister these value lists), ``add`` (register these listed paths)."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    step = r.get("step")
    info = ms.get_table(name)
    root = qualify(location_of(ctx, info)).rstrip("/")
    if step == "start":
        if info.external:  # registering what lies under an external location places it: governed (catalog.locations)
            from .governed_locations import check_location

            check_location(ms, ctx, TableName.parse(name), root)
        scheme = partition_scheme(ms, name)
        return {"location": root, "columns": list(scheme.names), "version": info.version}
    if step == "registered":
        scheme, known = registered(ms, name)
        prefix = root + "/"
        rows = []
        for p in known:
            texts = [p.spec[c] for c in scheme.names]
            relative = p.location.startswith(prefix)
            rows.append([texts, p.location[len(prefix):] if relative else p.location, 1 if relative else 0])
        return {"location": root, "partitions": rows}
    if step == "drop":
        scheme = partition_scheme(ms, name)
        specs = [dict(zip(scheme.names, texts)) for texts in r.get("partitions") or []]
        outcome = drop_batched(ms, name, specs)
        return {"dropped": outcome.done, "transactions": outcome.transactions, "version": outcome.version}
    if step == "add":
        scheme = partition_scheme(ms, name)
        dirs, invalid = parse_paths(scheme, r.get("paths") or [])
        parts = [Partition(values=d.spec, location=join_location(root, d.path)) for d in dirs]
        outcome = add_batched(ms, name, parts)
        return {"added": outcome.done, "skipped": outcome.skipped, "transactions": outcome.transactions,
                "version": outcome.version, "invalid": [[d.path, d.reason] for d in invalid]}
    raise InvalidArgument(f"unknown repair step {step!r}")
