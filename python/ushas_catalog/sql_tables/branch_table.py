"""The system table ``<catalog>.system.branches``: the live branches of every catalog of the project
(docs/branches.md), read from main whatever branch the Spark catalog is on."""
from __future__ import annotations

from typing import Any, Iterator

from .columns import Column, TableDef, micros
from .context import ReadContext
from .filters import Filters

Rows = Iterator[tuple[Any, Any]]


def _rows(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    ms = getattr(ctx.ms, "parent", None) or ctx.ms
    done = token if isinstance(token, int) else 0
    n = 0
    for c in ms.list_catalogs():
        for b in ms.list_branches(c.name):
            n += 1
            if n > done:
                yield n, [b.catalog, b.name, b.parent, b.from_version, b.created_by, micros(b.created_at), b.merges,
                          micros(b.merged_at) if b.merged_at else None, b.changed_keys]


BRANCHES = TableDef(
    "branches",
    (Column("catalog", "string"), Column("branch", "string"), Column("parent", "string", "always main"),
     Column("from_version", "long", "the branch point it reads its parent as of"), Column("created_by", "string"),
     Column("created_at", "timestamp"), Column("merges", "long"), Column("merged_at", "timestamp"),
     Column("changed_keys", "long", "keys the branch changed since it was made or last merged")),
    "one row per live branch of each catalog of the project (``ushas branch list``)", _rows)
