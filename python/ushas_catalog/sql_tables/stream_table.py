"""The system table ``<catalog>.system.streams``: the streaming queries that committed micro-batches into
the project's tables, each with its last committed batch (``ushas_catalog.changes.streams``,
docs/streaming.md). A row shows only for a table the caller may SELECT, under the table's current name;
a table dropped since (or renamed and not written by the query since) shows no row."""
from __future__ import annotations

from typing import Any, Iterator

from ..changes.streams import list_progress
from ..errors import NotFound
from ..governance.privileges import SELECT
from .columns import Column, TableDef
from .context import ReadContext
from .filters import Filters

Rows = Iterator[tuple[Any, Any]]


def _rows(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    ms = ctx.ms
    tables = filters.equal("table")
    queries = filters.equal("query_id")
    done = token if isinstance(token, int) else 0
    n = 0
    for p in ms.run(lambda tr: list_progress(tr, ms.project_path)):
        if tables is not None and p.table not in tables or queries is not None and p.query_id not in queries:
            continue
        try:
            if not ms.may(SELECT, "relation", p.table) or ms.get_table(p.table).id != p.table_id:
                continue
        except NotFound:
            continue
        n += 1
        if n > done:
            yield n, [p.table, p.table_id, p.query_id, p.last_batch, p.batches, p.version, p.time_micros,
                      p.first_time_micros, p.user, p.operation]


STREAMS = TableDef(
    "streams",
    (Column("table", "string", "catalog.database.table"), Column("table_id", "string"),
     Column("query_id", "string", "the streaming query's id (kept in its checkpoint), or foreachBatch's ushas.streamId"),
     Column("last_batch", "long", "the last micro-batch committed: a restarted query commits only later ones"),
     Column("batches", "long", "micro-batches committed"),
     Column("version", "long", "the table version the last batch made"),
     Column("last_commit", "timestamp"), Column("first_commit", "timestamp"), Column("user", "string"),
     Column("operation", "string", "APPEND, or OVERWRITE (complete mode)")),
    "one row per streaming query that wrote into a table, with its last committed micro-batch", _rows)
