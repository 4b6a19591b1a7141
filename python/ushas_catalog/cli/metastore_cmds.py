"""Metastore commands: ``keyspace``, ``catalogs``, ``databases``, ``tables``, ``describe``,
``partitions``, ``history``, ``drop``, ``undrop``, ``purge``, ``dropped``, ``stats``.

Names are ``catalog[.database[.table]]`` (backticks quote parts with dots); the commands
that take any object (``history``, ``drop``, ``undrop``, ``purge``, ``dropped``) act on a
catalog, database or table / view by the number of parts.
"""
from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from ..catalog.row_policies import as_reader_sees, refuse_partition_metadata
from ..errors import InvalidArgument, NoSuchTable, UshasError
from ..model.names import CatalogName, DatabaseName, TableName, parse_any
from .arguments import parse_int
from .context import Context
from .terminal import escape, escape_lines


def _reads(p: argparse.ArgumentParser) -> None:
    """``--json`` after the command as well as before it."""
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keyspace", help="print the key space tree with names and codes")
    _reads(p)
    p.set_defaults(func=cmd_keyspace)

    p = sub.add_parser("catalogs", help="list catalogs")
    _reads(p)
    p.set_defaults(func=cmd_catalogs)

    p = sub.add_parser("databases", help="list databases of a catalog (of every catalog without one)")
    p.add_argument("catalog", nargs="?", help="catalog name")
    _reads(p)
    p.set_defaults(func=cmd_databases)

    p = sub.add_parser("tables", help="list tables and views of a database")
    p.add_argument("database", help="catalog.database")
    _reads(p)
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("describe", help="describe a table (or view), now or as of a version / time")
    p.add_argument("table", help="catalog.database.table")
    p.add_argument("--as-of", metavar="V", help="a version number or an ISO-8601 time (UTC if no zone)")
    _reads(p)
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("partitions", help="list partitions of a table in partition-value order")
    p.add_argument("table", help="catalog.database.table")
    p.add_argument("--prefix", action="append", default=[], metavar="K=V",
                   help="only partitions with column K = V (repeatable)")
    p.add_argument("--limit", type=int, help="at most this many")
    p.add_argument("--tag", action="append", default=[], metavar="K=V",
                   help="only partitions tagged K = V (K alone: any value; repeatable: all of them); "
                        "read from the tag index (see 'ushas partition-tags')")
    _reads(p)
    p.set_defaults(func=cmd_partitions)

    p = sub.add_parser("history", help="commits of a table / view, database or catalog, newest first")
    p.add_argument("name", help="catalog[.database[.table]]")
    p.add_argument("--limit", type=int, help="at most this many")
    _reads(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("drop", help="drop a catalog, database or table (undrop until purged) or a view")
    p.add_argument("name", help="catalog[.database[.table]]")
    p.add_argument("--cascade", action="store_true", help="drop a non-empty catalog or database")
    p.add_argument("--purge", action="store_true", help="remove every key now (no undrop)")
    _reads(p)
    p.set_defaults(func=cmd_drop)

    p = sub.add_parser("undrop", help="restore the most recently dropped catalog, database or table of a name")
    p.add_argument("name", help="catalog[.database[.table]]")
    _reads(p)
    p.set_defaults(func=cmd_undrop)

    p = sub.add_parser("purge", help="delete what drops and overwrites kept: dropped catalogs, databases or "
                                      "tables (keys and data), replaced files, staging of dead writes")
    p.add_argument("name", nargs="?", help="catalog[.database[.table]] (default: the whole project)")
    p.add_argument("--older-than", metavar="AGE", help="only what was dropped / replaced more than AGE ago "
                                                         "(7d, 12h, 30m, 45s)")
    _reads(p)
    p.set_defaults(func=cmd_purge)

    p = sub.add_parser("dropped", help="list dropped catalogs (no name), databases of CATALOG, tables of DATABASE")
    p.add_argument("name", nargs="?", help="catalog or catalog.database")
    _reads(p)
    p.set_defaults(func=cmd_dropped)

    p = sub.add_parser("stats", help="keys and bytes per subspace of the --project project")
    # the only form since other projects' names and sizes are theirs; kept so old scripts still run
    p.add_argument("--this-project", action="store_true", help=argparse.SUPPRESS)
    _reads(p)
    p.set_defaults(func=cmd_stats)


# --- commands ---------------------------------------------------------------------------------
def cmd_keyspace(ctx: Context, args: argparse.Namespace) -> int:
    from ..keyspace.layout import DEFAULT_LAYOUT

    ctx.emit(DEFAULT_LAYOUT.keyspace.to_json(), DEFAULT_LAYOUT.render())
    return 0


def _time(t: dt.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if t else ""


def cmd_catalogs(ctx: Context, args: argparse.Namespace) -> int:
    cats = ctx.metastore.list_catalogs()
    if ctx.json:
        ctx.emit([c.to_json() for c in cats])
    else:
        ctx.table([{"name": c.name, "comment": c.comment, "owner": c.owner, "version": c.version,
                    "created": _time(c.created_at)} for c in cats], ["name", "comment", "owner", "version", "created"])
    return 0


def cmd_databases(ctx: Context, args: argparse.Namespace) -> int:
    ms = ctx.metastore
    catalogs = [CatalogName.parse(args.catalog).catalog] if args.catalog else [c.name for c in ms.list_catalogs()]
    dbs = [d for c in catalogs for d in ms.list_databases((c,))]
    if ctx.json:
        ctx.emit([d.to_json() for d in dbs])
    else:
        ctx.table([{"catalog": d.catalog, "name": d.name, "location": d.location, "comment": d.comment,
                    "owner": d.owner, "version": d.version} for d in dbs],
                  ["catalog", "name", "location", "comment", "owner", "version"])
    return 0


def cmd_tables(ctx: Context, args: argparse.Namespace) -> int:
    rels = ctx.metastore.list_relations(DatabaseName.parse(args.database))
    if ctx.json:
        ctx.emit([r.to_json() for r in rels])
    else:
        ctx.table([{"name": r.name, "kind": r.kind, "id": r.id, "created": _time(r.created_at)} for r in rels],
                  ["name", "kind", "id", "created"])
    return 0


def parse_as_of(text: str | None) -> int | dt.datetime | None:
    if text is None:
        return None
    if text.strip().lstrip("-+").isdigit():  # also non-ASCII digits: parse_int names them
        return parse_int(text, "--as-of")
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidArgument(f"--as-of {text!r} is neither a version number nor an ISO-8601 time") from None


def cmd_describe(ctx: Context, args: argparse.Namespace) -> int:
    ms = ctx.metastore
    name = TableName.parse(args.table)
    as_of = parse_as_of(args.as_of)
    if not ms.table_exists(name) and ms.view_exists(name):
        if as_of is not None:
            raise InvalidArgument("--as-of applies to tables, not views")
        view = ms.get_view(name)
        ctx.emit(view.to_json(), lambda _: _view_text(view))
        return 0
    try:
        table = as_reader_sees(ms, ms.get_table(name, as_of=as_of))
    except NoSuchTable:
        raise
    ctx.emit(table.to_json(), lambda _: _table_text(table))
    return 0


def _table_text(t: Any) -> str:
    e = escape  # one value per line: a newline or escape sequence in a stored value is shown escaped
    lines = [f"Table:       {e(t.full_name)}", f"Id:          {t.id}", f"Version:     {t.version}",
             f"Schema id:   {t.schema_id}", f"Format:      {e(t.format)}" + ("  (external)" if t.external else ""),
             f"Location:    {e(t.location or '')}", f"Owner:       {e(t.owner or '')}",
             f"Comment:     {e(t.comment or '')}", f"Created:     {_time(t.created_at)}",
             f"Updated:     {_time(t.updated_at)}", "", "Columns:"]
    width = max([len(e(f.name)) for f in t.schema.fields] + [4])
    for f in t.schema.fields:
        extra = ("" if f.nullable else " NOT NULL") + (f"  -- {e(f.comment)}" if f.comment else "")
        lines.append(f"  {e(f.name).ljust(width)}  {e(f.data_type.ddl())}{extra}")
    if t.partition_columns:
        lines += ["", "Partitioned by: " + ", ".join(e(c) for c in t.partition_columns)]
    if t.properties:
        lines += ["", "Properties:"] + [f"  {e(k)} = {e(v)}" for k, v in sorted(t.properties.items())]
    if t.row_filter is not None:  # docs/governance.md: row filters and column masks
        lines += ["", "Row filter:  " + e(t.row_filter.expression)
                  + (f"  (exempt: {e(t.row_filter.exempt)})" if t.row_filter.exempt else "")]
    if t.column_masks:
        lines += ["", "Column masks:"] + [f"  {e(m.column)}: {e(m.expression)}"
                                          + (f"  (exempt: {e(m.exempt)})" if m.exempt else "") for m in t.column_masks]
    return "\n".join(lines)


def _view_text(v: Any) -> str:
    e = escape
    lines = [f"View:        {e(f'{v.catalog}.{v.database}.{v.name}')}", f"Version:     {v.version}",
             f"Owner:       {e(v.owner or '')}", f"Comment:     {e(v.comment or '')}", "", "SQL:",
             f"  {escape_lines(v.sql)}", "", "Columns:"]
    lines += [f"  {e(f.name)}  {e(f.data_type.ddl())}" for f in v.schema.fields]
    return "\n".join(lines)


def _prefix(items: list[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidArgument(f"--prefix {item!r} must be COLUMN=VALUE")
        out[key] = value
    return out or None


def cmd_partitions(ctx: Context, args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        raise InvalidArgument("--limit must be >= 0")
    if args.tag:
        from .partition_tag_cmds import tagged_partitions

        parts = tagged_partitions(ctx, TableName.parse(args.table), args.tag, _prefix(args.prefix), args.limit)
    else:
        parts = ctx.metastore.list_partitions(TableName.parse(args.table), prefix=_prefix(args.prefix),
                                              limit=args.limit)
    parts = list(parts)  # listed (SELECT checked), then refused to a reader under the row filter
    refuse_partition_metadata(ctx.metastore, ctx.metastore.get_table(TableName.parse(args.table)),
                              "the partition listing")
    if ctx.json:
        ctx.emit([p.to_json() for p in parts])
        return 0
    rows = []
    columns: list[str] = []
    for p in parts:
        if not columns:
            columns = list(p.spec) + ["location", "files", "bytes", "rows", "tags"]
        rows.append({**p.spec, "location": p.location, "files": p.files, "bytes": p.bytes, "rows": p.rows,
                     "tags": ",".join(f"{k}={v}" for k, v in sorted(p.tags.items())) or None})
    if columns:
        ctx.table(rows, columns)
    return 0


def cmd_history(ctx: Context, args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        raise InvalidArgument(f"--limit must be >= 0, not {args.limit}")
    items = ctx.metastore.history(args.name, limit=args.limit)
    if ctx.json:
        ctx.emit([h.to_json() for h in items])
    else:
        ctx.table([{"version": h.version, "time": _time(h.committed_at), "user": h.user, "operation": h.operation,
                    "schema": h.schema_id, "changed": ",".join(h.changed)} for h in items],
                  ["version", "time", "user", "operation", "schema", "changed"])
    return 0


def cmd_drop(ctx: Context, args: argparse.Namespace) -> int:
    from ..data.purge import delete_local
    from ..progress import progress_for

    ms = ctx.metastore
    name = parse_any(args.name)
    # a purge removes the whole tree in one transaction: the line says what is being removed
    # while it runs (a large catalog takes a while), and 1/1 once committed
    with progress_for(ctx.json or not args.purge, f"purging {name}", total=1, item="one transaction") as bar:
        paths: list[str] = []  # with --purge: the data to delete once the drop committed
        if isinstance(name, CatalogName):
            ms.drop_catalog(name, cascade=args.cascade, purge=args.purge, data_paths=paths)
        elif isinstance(name, DatabaseName):
            ms.drop_database(name, cascade=args.cascade, purge=args.purge, data_paths=paths)
        elif ms.view_exists(name):
            ms.drop_view(name)
        else:
            ms.drop_table(name, purge=args.purge, data_paths=paths)
        delete_local(paths)
        bar.advance(item="")
    ctx.emit({"dropped": str(name), "purged": bool(args.purge)}, f"dropped {name}" + (" (purged)" if args.purge else ""))
    return 0


def cmd_undrop(ctx: Context, args: argparse.Namespace) -> int:
    ms = ctx.metastore
    name = parse_any(args.name)
    if isinstance(name, CatalogName):
        info: Any = ms.undrop_catalog(name)
    elif isinstance(name, DatabaseName):
        info = ms.undrop_database(name)
    else:
        info = ms.undrop_table(name)
    ctx.emit(info.to_json(), f"restored {name} (id {info.id})")
    return 0


def _dropped_count(ms: Any, name: Any) -> int | None:
    """How many dropped objects ``name`` denotes (the purge's size), None when unknown."""
    try:
        if isinstance(name, CatalogName):
            items = ms.list_dropped_catalogs()
        elif isinstance(name, DatabaseName):
            items = ms.list_dropped_databases(name.catalog_name)
        else:
            items = ms.list_dropped_tables(name.database_name)
    except UshasError:  # the parent is gone: the purge itself says so
        return None
    return sum(1 for d in items if d.name == str(name))


def cmd_purge(ctx: Context, args: argparse.Namespace) -> int:
    from ..data.purge import parse_age, purge
    from ..progress import progress_for

    ms = ctx.metastore
    name = parse_any(args.name) if args.name else None
    older_than = parse_age(args.older_than) if args.older_than else None
    # dropped objects go in one transaction per name: the bar fills when the purge is done
    total = None if ctx.json or name is None else _dropped_count(ms, name)
    label = f"purging dropped {name}" if name is not None else f"purging project {ms.project}"
    with progress_for(ctx.json, label, total=total,
                      item="one transaction") as bar:
        summary = purge(ms, name, older_than)
        bar.advance(summary.objects, item="")
    data = {"purged": str(name) if name is not None else None, "count": summary.objects, **summary.to_json()}
    text = (f"purged {summary.objects} dropped object(s)" + (f" named {name}" if name is not None else "")
            + f", {summary.garbage} set(s) of replaced files, {summary.staging} staging dir(s) of dead writes; "
            f"deleted {summary.report.deleted} path(s)")
    if summary.report.unreachable:
        text += (f"; {len(summary.report.unreachable)} path(s) not on this machine's file system were kept: "
                 + ", ".join(summary.report.unreachable[:3]))
    if summary.report.outside:
        text += (f"; {len(summary.report.outside)} recorded file(s) outside their table's location were kept: "
                 + ", ".join(summary.report.outside[:3]))
    ctx.emit(data, text)
    return 0


def cmd_dropped(ctx: Context, args: argparse.Namespace) -> int:
    ms = ctx.metastore
    if args.name is None:
        items = ms.list_dropped_catalogs()
    else:
        name = parse_any(args.name)
        if isinstance(name, CatalogName):
            items = ms.list_dropped_databases(name)
        elif isinstance(name, DatabaseName):
            items = ms.list_dropped_tables(name)
        else:
            raise InvalidArgument("dropped takes a catalog or catalog.database")
    if ctx.json:
        ctx.emit([d.to_json() for d in items])
    else:
        ctx.table([{"kind": d.kind, "name": d.name, "id": d.id, "dropped": _time(d.dropped_at), "by": d.dropped_by}
                   for d in items], ["kind", "name", "id", "dropped", "by"])
    return 0


def cmd_stats(ctx: Context, args: argparse.Namespace) -> int:
    stats = ctx.metastore.stats(all_projects=False)
    if ctx.json:
        ctx.emit([s.to_json() for s in stats])
    else:
        ctx.table([{"project": s.project, "subspace": s.subspace, "keys": s.keys, "bytes": s.bytes} for s in stats],
                  ["project", "subspace", "keys", "bytes"])
    return 0
