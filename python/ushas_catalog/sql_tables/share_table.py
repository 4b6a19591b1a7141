"""The system table ``<catalog>.system.shares``: the project's shares (one row per shared object, or one
per share without objects) and the shares it mounts (one row per mount), read in the page's transaction."""
from __future__ import annotations

from typing import Any, Iterator

from .columns import STRINGS, Column, TableDef, micros
from .context import ReadContext
from .filters import Filters

Rows = Iterator[tuple[Any, Any]]


def _rows(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    shares = ctx.ms.shares
    rows: list[list[Any]] = []
    for info in shares.list():
        shown = shares.show(info.name)
        base = ["owner", info.name, info.project, list(info.recipients)]
        tail = [info.version, info.owner, info.comment, micros(info.updated_at)]
        if not shown.objects:
            rows.append(base + [None, None, None, None] + tail)
        for o in shown.objects:
            rows.append(base + [o.kind, o.name, o.table_id or o.database_id, o.status] + tail)
    for m in shares.mounts():
        owner, _, name = (m["share"] or "").partition(".")
        rows.append(["mount", name or None, owner or None, [ctx.ms.project], "catalog", m["catalog"], None, "mounted",
                     None, None, None, None])
    done = token if isinstance(token, int) else 0
    for n, row in enumerate(rows, start=1):
        if n > done:
            yield n, row


SHARES = TableDef(
    "shares",
    (Column("role", "string", "owner: a share of this project; mount: a share of another project mounted here"),
     Column("share", "string"), Column("owner_project", "string"),
     Column("recipients", STRINGS, "the projects it is shared with"),
     Column("object_kind", "string", "table, database (its tables, also later ones) or catalog (a mount)"),
     Column("object", "string", "the object's current name (NULL: missing)"), Column("object_id", "string"),
     Column("status", "string", "live, dropped (until undrop or purge), missing, mounted"),
     Column("version", "long"), Column("owner", "string"), Column("comment", "string"),
     Column("updated_at", "timestamp")),
    "one row per shared object of each share of the project, one per mounted share (``ushas shares``)", _rows)
