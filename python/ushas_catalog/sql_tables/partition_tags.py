"""The partition tag tables: ``<catalog>.<db>.<table>.partition_tags`` (one row per tag of a partition,
read from the table's tag index: ``tag_key`` / ``tag_value`` equalities read only those index keys) and
``<catalog>.system.partition_tag_stats`` (per table and tag: partitions, bytes, rows). See
:mod:`ushas_catalog.catalog.partition_tags`."""
from __future__ import annotations

from typing import Any, Iterator

from ..catalog.partition_tags import entry_suffix, stats_of
from ..errors import InvalidArgument, NotFound
from ..model.partitions import PartitionColumn
from .columns import Column, TableDef
from .context import ReadContext
from .filters import Filters

Rows = Iterator[tuple[Any, Any]]


def _value(c: PartitionColumn, element: Any) -> Any:
    """A partition key element as its column's row value (decimals and binaries as text)."""
    if element is None:
        return None
    return c.text(element) if c.kind in ("decimal", "binary") else element


def _column_type(c: PartitionColumn) -> Any:
    return "string" if c.kind == "binary" else c.data_type.json_value()


def _leading(ctx: ReadContext) -> tuple[Column, ...]:
    scheme = ctx.ms.run(lambda tr: ctx.ms.resolver.scheme(tr, ctx.ms.resolver.table(tr, ctx.table)))
    return tuple(Column(c.name, _column_type(c), "partition value") for c in scheme.columns)


def _narrowing(filters: Filters) -> list[tuple[str | None, str | None]]:
    """The (tag key, tag value) index ranges the ``tag_key`` / ``tag_value`` equalities select."""
    keys = filters.equal("tag_key")
    values = filters.equal("tag_value")
    if keys is None:
        return [(None, None)]
    keys = sorted({k for k in keys if isinstance(k, str)})
    if values is None:
        return [(k, None) for k in keys]
    vals = sorted({v for v in values if isinstance(v, str)})
    return [(k, v) for k in keys for v in vals]


def _partition_tags(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    after = bytes.fromhex(token) if isinstance(token, str) else None
    if not _leading(ctx):  # an unpartitioned table: no partitions, no tags
        return
    for key, value in _narrowing(filters):
        scheme, items = ctx.ms.tag_entries(ctx.table, key, value, after=after)
        cols = scheme.columns
        for k, v, pk, r in items:
            has = r.HasField
            yield entry_suffix(k, v, pk).hex(), [*(_value(c, e) for c, e in zip(cols, pk)), k, v, r.location or None,
                                                 r.files if has("files") else None,
                                                 r.bytes if has("bytes") else None,
                                                 r.rows if has("rows") else None]


def _tables(ctx: ReadContext, filters: Filters) -> Iterator[tuple[str, str, str]]:
    catalogs, databases, names = filters.equal("catalog"), filters.equal("database"), filters.equal("table")
    for c in ctx.ms.list_catalogs():
        if catalogs is not None and c.name not in catalogs:
            continue
        for d in ctx.ms.list_databases((c.name,)):
            if databases is not None and d.name not in databases:
                continue
            for r in ctx.ms.list_relations((c.name, d.name)):
                if r.kind == "TABLE" and (names is None or r.name in names):
                    yield c.name, d.name, r.name


def _tag_stats(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """Per table (``catalog`` / ``database`` / ``table`` equalities list only those) and tag: read from
    each table's tag index (one range read for a table without tags)."""
    done = tuple(token[:3]) if isinstance(token, list) else None
    skip = int(token[3]) if isinstance(token, list) else 0
    keys = filters.equal("tag_key")
    for c, d, t in _tables(ctx, filters):
        if done is not None and (c, d, t) < done:
            continue
        full = f"{c}.{d}.{t}"
        try:
            stats = []
            for key in (sorted(k for k in keys if isinstance(k, str)) if keys is not None else [None]):
                stats.extend(stats_of(ctx.ms.tag_entries(full, key)[1]))
        except (NotFound, InvalidArgument):  # dropped meanwhile, or not partitioned
            stats = []
        if not stats:
            yield [c, d, t, 0], None  # looked at (a page ends after so many), nothing to show
            continue
        for i, s in enumerate(stats, start=1):
            if (c, d, t) == done and i <= skip:
                continue
            yield [c, d, t, i], [c, d, t, full, s.key, s.value, s.partitions, s.bytes if s.bytes_known else None,
                                 s.rows if s.rows_known else None]


METADATA: dict[str, TableDef] = {t.name: t for t in (
    TableDef("partition_tags", (
        Column("tag_key", "string"), Column("tag_value", "string"), Column("location", "string"),
        Column("files", "long"), Column("bytes", "long"), Column("rows", "long")),
        "one row per tag of a partition, by tag key, value, then partition (``ushas partitions --tag``); the "
        "partition columns come first", _partition_tags, "tag_key, tag_value (=, IN): the tag index",
        leading=_leading),
)}

SYSTEM: dict[str, TableDef] = {t.name: t for t in (
    TableDef("partition_tag_stats", (
        Column("catalog", "string"), Column("database", "string"), Column("table", "string"),
        Column("full_name", "string"), Column("tag_key", "string"), Column("tag_value", "string"),
        Column("partitions", "long", "partitions carrying the tag"),
        Column("bytes", "long", "their bytes (null: none recorded its size)"),
        Column("rows", "long", "their rows (null: none recorded its row count)")),
        "per table and partition tag: how many partitions carry it, their bytes and rows "
        "(``ushas partition-tags stats``)", _tag_stats,
        "catalog, database, table, tag_key (=, IN): each table's tag index"),
)}

__all__ = ["METADATA", "SYSTEM"]
