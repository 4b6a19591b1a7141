"""The bridge operations of the metadata and system tables (``io.ushas.spark.UshasRowsTable``).

- ``rows_table``: the identifier names a metadata table (``[db, table]`` + name) or a system table
  (``[system]`` + name): its Spark schema, or Spark's not-found error.
- ``rows_page``: one page of rows, read in ONE transaction: at most ``page_size`` rows, the
  requested ``columns`` only, the rows Python can tell the ``filters`` reject left out (Spark
  evaluates them again), and a ``token`` to continue from (null: the end). A page also ends after
  :data:`SCAN_PER_PAGE` rows looked at, so a selective filter over a big scan still answers within
  FoundationDB's 5 s per transaction.
"""
from __future__ import annotations

from typing import Any

from ..errors import NoSuchTable
from ..model.names import SYSTEM_DATABASE, TableName
from ..spark.one_transaction import run_in_one_transaction
from .columns import TableDef
from .context import ReadContext
from .filters import Filters
from .metadata_tables import TABLES as METADATA_TABLES
from .system_tables import all_tables as system_tables

Request = dict[str, Any]
Answer = dict[str, Any]

#: the most rows one page sends (the shim asks for its own ``PAGE_SIZE``, at most this)
MAX_PAGE = 20_000
#: the most rows one page looks at (each looked at once, filtered or not)
SCAN_PER_PAGE = 50_000


def is_system(namespace: list[str] | None) -> bool:
    return list(namespace or ()) == [SYSTEM_DATABASE]


def _resolve(ms: Any, r: Request) -> tuple[TableDef, ReadContext]:
    ctx = r["ctx"]
    namespace, name = list(r.get("namespace") or ()), r["name"]
    catalog = ctx["catalog"]
    shown = ".".join([ctx.get("spark_catalog") or catalog, *namespace, name])
    if is_system(namespace):
        every = system_tables()
        tdef = every.get(name)
        if tdef is None:
            raise NoSuchTable(f"{shown}: no such system table; the system tables are "
                              f"{', '.join(sorted(every))}", table=shown)
        return tdef, ReadContext(ms, catalog)
    if len(namespace) != 2:
        raise NoSuchTable(f"{shown}: not a metadata or system table", table=shown)
    tdef = METADATA_TABLES.get(name)
    if tdef is None:
        raise NoSuchTable(f"{shown}: {'.'.join(namespace)} has no metadata table {name!r}; the metadata tables "
                          f"are {', '.join(sorted(METADATA_TABLES))}", table=shown)
    return tdef, ReadContext(ms, catalog, TableName(catalog, namespace[0], namespace[1]))


def rows_table(ms: Any, r: Request) -> Answer:
    """The schema of a metadata or system table (the table it belongs to must exist)."""
    def fn(m: Any) -> Answer:
        tdef, ctx = _resolve(m, r)
        if ctx.table is not None:
            m.get_table(ctx.table)  # NoSuchTable when the table is not there
        return {"schema": tdef.schema_json(ctx), "kind": "system" if ctx.table is None else "metadata"}

    return run_in_one_transaction(ms, fn)


def rows_page(ms: Any, r: Request) -> Answer:
    """One page of rows: ``{"rows": [[...], ...], "token": ...}``."""
    size = max(1, min(int(r.get("page_size") or MAX_PAGE), MAX_PAGE))
    limit = r.get("limit")
    state = r.get("token") or {}
    return run_in_one_transaction(ms, lambda m: _page(m, r, size, limit, state))


def _page(ms: Any, r: Request, size: int, limit: int | None, state: dict[str, Any]) -> Answer:
    tdef, ctx = _resolve(ms, r)
    names = [c.name for c in tdef.all_columns(ctx)]
    wanted = r.get("columns")
    picks = [names.index(c) for c in wanted] if wanted is not None else list(range(len(names)))
    filters = Filters(r.get("filters"))
    keep = filters.matcher(names)
    if wanted is not None:  # the columns read and the columns filtered: the rest may stay unread
        ctx.columns = frozenset(wanted) | {c for f in filters.items for c in _columns_of(f)}
    whole = picks == list(range(len(names)))
    sent = int(state.get("sent", 0))
    rows: list[list[Any]] = []
    scanned = 0
    last: Any = state.get("at")
    for token, row in tdef.source(ctx, filters, state.get("at")):
        scanned += 1
        if token is not None:
            last = token
        if row is not None and (keep is None or keep(row)):
            rows.append(row if whole else [row[i] for i in picks])
            sent += 1
            if limit is not None and sent >= limit:
                return {"rows": rows, "token": None}
        if token is not None and (len(rows) >= size or scanned >= SCAN_PER_PAGE):
            return {"rows": rows, "token": {"at": last, "sent": sent}}
    return {"rows": rows, "token": None}


def _columns_of(f: Any) -> set[str]:
    out = {f["column"]} if "column" in f else set()
    for c in [*(f.get("children") or ()), *([f["child"]] if "child" in f else [])]:
        out |= _columns_of(c)
    return out


def list_system_tables(r: Request) -> Answer:
    """SHOW TABLES IN <catalog>.system: the system tables (the answer of ``list_relations``)."""
    if r.get("kind") == "view":
        return {"relations": []}
    return {"relations": [{"name": n, "type": "SYSTEM"} for n in sorted(system_tables())]}


OPS = {"rows_table": rows_table, "rows_page": rows_page}
