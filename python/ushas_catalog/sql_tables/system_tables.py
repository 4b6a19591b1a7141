"""The system tables: ``<catalog>.system.<name>`` — the project's catalog objects, metadata, change
feed, runs, lineage and usage as tables (the data ``ushas`` and the UI show, read with the same
functions).

Objects (``tables``, ``columns``, ``tags``, ``properties``, ``partitions``) are listed catalog by
catalog, database by database; ``catalog`` / ``database`` / ``table`` equality filters list only
those. With authorization on, they list only what the caller may see (USE; ``partitions``: SELECT on
the table), as ``SHOW TABLES`` does. The lineage tables (runs, dataset access, column and table lineage, usage)
are the lineage extension's (``lineage.plugin.system_tables``): :func:`all_tables` adds every installed
extension's tables to the catalog's own :data:`TABLES`.
"""
from __future__ import annotations

from typing import Any, Iterator

from ..catalog.listing import LISTED
from ..catalog.row_policies import filtered_for_reader
from ..errors import NotFound
from ..governance.privileges import SELECT
from ..model.names import TableName
from .columns import STRING_MAP, STRINGS, Column, TableDef, micros
from .context import ReadContext
from .filters import Filters
from . import partition_tags as partition_tag_tables
from .metadata_tables import CHANGE_COLUMNS, PARTITION_FIELDS, change_rows, partition_records

Rows = Iterator[tuple[Any, Any]]


# ---- catalog objects -------------------------------------------------------------------------------
def _databases(ctx: ReadContext, filters: Filters) -> Iterator[tuple[str, str]]:
    catalogs = filters.equal("catalog")
    databases = filters.equal("database")
    for c in ctx.ms.list_catalogs():
        if catalogs is not None and c.name not in catalogs or not ctx.ms.may(LISTED, "catalog", c.name):
            continue
        for d in ctx.ms.list_databases((c.name,)):
            if databases is not None and d.name not in databases or not ctx.ms.may(LISTED, "database", (c.name, d.name)):
                continue
            yield c.name, d.name


def _relations(ctx: ReadContext, filters: Filters, kinds: tuple[str, ...] = ("TABLE", "VIEW")
               ) -> Iterator[tuple[str, str, Any]]:
    names = filters.equal("table")
    for c, d in _databases(ctx, filters):
        for r in ctx.ms.list_relations((c, d)):
            if r.kind in kinds and (names is None or r.name in names) and ctx.ms.may(LISTED, "relation", (c, d, r.name)):
                yield c, d, r


def _skip(rows: Rows, token: Any) -> Rows:
    """Rows after the ``token``-th (object listings re-read their small lists; the token counts rows)."""
    done = token if isinstance(token, int) else 0
    for n, (_, row) in enumerate(rows, start=1):
        if n > done:
            yield n, row


def _tables(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    def rows() -> Rows:
        for c, d, r in _relations(ctx, filters):
            full = f"{c}.{d}.{r.name}"
            try:
                if r.kind == "VIEW":
                    v = ctx.ms.get_view(full)
                    yield full, [c, d, r.name, full, "VIEW", r.id, None, None, None, [], v.owner, v.comment,
                                 micros(v.created_at), micros(v.updated_at), v.version, dict(v.properties)]
                    continue
                t = ctx.ms.get_table(full)
            except NotFound:  # dropped meanwhile (a page reads one snapshot; listings are per call)
                continue
            yield full, [c, d, r.name, full, "TABLE", t.id, t.format, t.location, t.external,
                         list(t.partition_columns), t.owner, t.comment, micros(t.created_at), micros(t.updated_at),
                         t.version, dict(t.properties)]

    return _skip(rows(), token)


def _columns(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    def rows() -> Rows:
        for c, d, r in _relations(ctx, filters, ("TABLE",)):
            full = f"{c}.{d}.{r.name}"
            try:
                t = ctx.ms.get_table(full)
                md = ctx.ms.metadata.get(full)
            except NotFound:
                continue
            for i, f in enumerate(t.schema.fields):
                cm = md.columns.get(f.name)
                user_tags = list(cm.user.tags) if cm is not None else []
                props = dict(cm.user.properties) if cm is not None else {}
                yield None, [c, d, r.name, full, f.name, i, f.data_type.ddl(), f.nullable, f.comment,
                             f.name in t.partition_columns, user_tags, props]

    return _skip(rows(), token)


def _objects(ctx: ReadContext, filters: Filters) -> Iterator[tuple[str, str, Any]]:
    """(object type, full name, metadata) of catalogs, databases, tables and views in name order."""
    catalogs = filters.equal("catalog")
    for c in ctx.ms.list_catalogs():
        if catalogs is not None and c.name not in catalogs or not ctx.ms.may(LISTED, "catalog", c.name):
            continue
        yield "CATALOG", c.name, ctx.ms.metadata.get(c.name)
        for cat, d in _databases(ctx, Filters([{"op": "eq", "column": "catalog", "value": c.name}])):
            yield "DATABASE", f"{cat}.{d}", ctx.ms.metadata.get(f"{cat}.{d}")
            for r in ctx.ms.list_relations((cat, d)):
                full = f"{cat}.{d}.{r.name}"
                if not ctx.ms.may(LISTED, "relation", (cat, d, r.name)):
                    continue
                try:
                    yield r.kind, full, ctx.ms.metadata.get(full)
                except NotFound:
                    continue


def _tags(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    def rows() -> Rows:
        for kind, name, md in _objects(ctx, filters):
            for scope, sm in (("USER", md.user), ("SYSTEM", md.system)):
                for tag in sm.tags:
                    yield None, [kind, name, None, tag, scope]
            for column, cm in sorted(md.columns.items()):
                for scope, sm in (("USER", cm.user), ("SYSTEM", cm.system)):
                    for tag in sm.tags:
                        yield None, ["COLUMN", name, column, tag, scope]

    return _skip(rows(), token)


def _properties(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    def rows() -> Rows:
        for kind, name, md in _objects(ctx, filters):
            for scope, sm in (("USER", md.user), ("SYSTEM", md.system)):
                for k, v in sorted(sm.properties.items()):
                    yield None, [kind, name, None, k, v, scope]
            for column, cm in sorted(md.columns.items()):
                for scope, sm in (("USER", cm.user), ("SYSTEM", cm.system)):
                    for k, v in sorted(sm.properties.items()):
                        yield None, ["COLUMN", name, column, k, v, scope]

    return _skip(rows(), token)


def _partitions(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """Every partition of every partitioned table; a ``table`` filter reads those tables only."""
    after_table = tuple(token[:3]) if isinstance(token, list) else None
    after_key = token[3] if isinstance(token, list) else None
    for c, d, r in _relations(ctx, filters, ("TABLE",)):
        full = f"{c}.{d}.{r.name}"
        if after_table is not None and (c, d, r.name) < after_table or not ctx.ms.may(SELECT, "relation", full):
            continue
        sub = ReadContext(ctx.ms, ctx.catalog, TableName.parse(full))
        try:
            info = sub.ms.get_table(full)
        except NotFound:
            continue
        scheme_names = info.partition_columns
        if not scheme_names or filtered_for_reader(ctx.ms, info):  # its partitions describe hidden rows
            continue
        start = after_key if (c, d, r.name) == after_table else None
        for tok, key, rec in partition_records(sub, Filters(None), start):
            spec = {n: str(v) for n, v in zip(scheme_names, key)}
            yield [c, d, r.name, tok], [c, d, r.name, full, spec, rec.location or None,
                                rec.files if rec.HasField("files") else None,
                                rec.bytes if rec.HasField("bytes") else None,
                                rec.rows if rec.HasField("rows") else None, rec.created_at_micros, dict(rec.properties),
                                dict(rec.tags)]


def _changes(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    return change_rows(ctx, filters, token)


OBJECT_COLUMNS = (Column("catalog", "string"), Column("database", "string"), Column("table", "string"),
                  Column("full_name", "string", "catalog.database.table: joins with the lineage tables' names"))

TABLES: dict[str, TableDef] = {t.name: t for t in (
    TableDef("tables", (*OBJECT_COLUMNS[:2], Column("name", "string"), OBJECT_COLUMNS[3],
                        Column("kind", "string", "TABLE or VIEW"), Column("id", "string"), Column("format", "string"),
                        Column("location", "string"), Column("external", "boolean"),
                        Column("partition_columns", STRINGS), Column("owner", "string"), Column("comment", "string"),
                        Column("created_at", "timestamp"), Column("updated_at", "timestamp"),
                        Column("version", "long"), Column("properties", STRING_MAP)),
             "one row per table and view (``ushas tables``, ``ushas describe``)", _tables,
             "catalog, database (=, IN)"),
    TableDef("columns", (*OBJECT_COLUMNS, Column("column", "string"), Column("position", "integer"),
                         Column("type", "string"), Column("nullable", "boolean"), Column("comment", "string"),
                         Column("is_partition", "boolean"), Column("tags", STRINGS, "the column's USER tags"),
                         Column("properties", STRING_MAP, "the column's USER properties")),
             "one row per top-level column of every table, with its tags (``ushas meta show``)", _columns,
             "catalog, database, table (=, IN)"),
    TableDef("partitions", (*OBJECT_COLUMNS, Column("spec", STRING_MAP, "partition column -> value"),
                            *PARTITION_FIELDS),
             "one row per partition of every partitioned table", _partitions, "catalog, database, table (=, IN)"),
    TableDef("tags", (Column("object_type", "string", "CATALOG, DATABASE, TABLE, VIEW, COLUMN"),
                      Column("object_name", "string"), Column("column", "string"), Column("tag", "string"),
                      Column("scope", "string", "USER or SYSTEM")),
             "one row per tag of an object or column (``ushas meta show``)", _tags, "catalog (=, IN)"),
    TableDef("properties", (Column("object_type", "string"), Column("object_name", "string"),
                            Column("column", "string"), Column("key", "string"), Column("value", "string"),
                            Column("scope", "string", "USER or SYSTEM")),
             "one row per metadata property of an object or column (``ushas meta show``)", _properties,
             "catalog (=, IN)"),
    TableDef("changes", CHANGE_COLUMNS, "the project's change feed (``ushas changes``)", _changes),
)}
TABLES.update(partition_tag_tables.SYSTEM)  # partition_tag_stats


from .governance_tables import GOVERNANCE_TABLES  # noqa: E402 - grants, audit (docs/governance.md)

TABLES.update(GOVERNANCE_TABLES)

from .share_table import SHARES  # noqa: E402 - shares between projects (catalog.shares)

TABLES[SHARES.name] = SHARES

from .object_tables import OBJECT_TABLES  # noqa: E402 - versioned objects (docs/objects.md)

TABLES.update(OBJECT_TABLES)

from .branch_table import BRANCHES  # noqa: E402 - branches of the catalogs (docs/branches.md)

TABLES[BRANCHES.name] = BRANCHES

from .stream_table import STREAMS  # noqa: E402 - streaming writers (docs/streaming.md)

TABLES[STREAMS.name] = STREAMS


def all_tables() -> dict[str, TableDef]:
    """The system tables: the catalog's (:data:`TABLES`) and the installed extensions' (the lineage
    extension's ``runs``, ``dataset_access``, ``column_lineage``, ``table_lineage``, ``usage``)."""
    from ..extensions import extensions

    out = dict(TABLES)
    for ref in extensions().system_tables:
        out.update(ref.load())
    return out
