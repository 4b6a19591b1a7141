"""The system tables ``<catalog>.system.objects`` and ``<catalog>.system.object_versions``: the project's
versioned objects (volumes, models, files: docs/objects.md) and their data versions, database by database;
``catalog`` / ``database`` (and ``kind``, ``object``) equality filters list only those."""
from __future__ import annotations

from typing import Any, Iterator

from ..errors import NotFound
from .columns import STRING_MAP, STRINGS, Column, TableDef, micros
from .context import ReadContext
from .filters import Filters

Rows = Iterator[tuple[Any, Any]]


def _databases(ctx: ReadContext, filters: Filters) -> Iterator[tuple[str, str]]:
    catalogs, databases = filters.equal("catalog"), filters.equal("database")
    for c in ctx.ms.list_catalogs():
        if catalogs is not None and c.name not in catalogs:
            continue
        for d in ctx.ms.list_databases((c.name,)):
            if databases is None or d.name in databases:
                yield c.name, d.name


def _skip(rows: Rows, token: Any) -> Rows:
    done = token if isinstance(token, int) else 0
    for n, (_, row) in enumerate(rows, start=1):
        if n > done:
            yield n, row


def _objects(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    kinds = filters.equal("kind")

    def rows() -> Rows:
        for c, d in _databases(ctx, filters):
            for o in ctx.ms.objects.list((c, d)):
                if kinds is None or o.kind in kinds:
                    yield None, [c, d, o.name, o.qualified_name, o.kind, o.id, o.location, o.current_version or None,
                                 o.version, o.owner, o.comment, dict(o.properties), list(o.types),
                                 micros(o.created_at), micros(o.updated_at)]

    return _skip(rows(), token)


def _versions(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    names = filters.equal("object")

    def rows() -> Rows:
        for c, d in _databases(ctx, filters):
            for o in ctx.ms.objects.list((c, d)):
                if names is not None and o.name not in names:
                    continue
                try:
                    versions = ctx.ms.objects.versions(o.qualified_name)
                except NotFound:  # dropped meanwhile
                    continue
                for v in reversed(versions):
                    yield None, [c, d, o.name, o.qualified_name, v.version, v.current, v.location,
                                 dict(v.properties), v.comment, v.created_by, micros(v.created_at),
                                 v.rolled_back_from, v.dataset]

    return _skip(rows(), token)


_NAME = (Column("catalog", "string"), Column("database", "string"))

OBJECT_TABLES: dict[str, TableDef] = {t.name: t for t in (
    TableDef("objects", (*_NAME, Column("name", "string"),
                         Column("full_name", "string", "catalog.database.object: the lineage name of a volume"),
                         Column("kind", "string", "volume, model, file, or another kind by name"),
                         Column("id", "string"), Column("location", "string"),
                         Column("current_version", "long", "the data version readers get (NULL: none yet)"),
                         Column("version", "long", "the metadata version (its commits)"), Column("owner", "string"),
                         Column("comment", "string"), Column("properties", STRING_MAP),
                         Column("subspaces", STRINGS, "its user-defined subspaces"),
                         Column("created_at", "timestamp"), Column("updated_at", "timestamp")),
             "one row per versioned object (``ushas objects list``)", _objects, "catalog, database, kind (=, IN)"),
    TableDef("object_versions", (*_NAME, Column("object", "string"), Column("full_name", "string"),
                                 Column("version", "long"), Column("current", "boolean"),
                                 Column("location", "string"), Column("properties", STRING_MAP),
                                 Column("comment", "string"), Column("created_by", "string"),
                                 Column("created_at", "timestamp"),
                                 Column("rolled_back_from", "long", "a rollback: the version it copies"),
                                 Column("dataset", "string", "its lineage dataset name: catalog.database.object@vN")),
             "one row per data version of every versioned object, oldest first (``ushas objects versions``)",
             _versions, "catalog, database, object (=, IN)"),
)}
