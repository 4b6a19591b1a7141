"""Persistent functions: ``ushas functions list DB`` (``--dropped``), ``functions show NAME``,
``functions history NAME``, ``functions drop NAME``, ``functions undrop NAME [--id ID]``.
Names are ``catalog.database.function``; databases ``catalog.database``."""
from __future__ import annotations

import argparse

from ..errors import InvalidArgument
from ..model.functions import FunctionInfo
from .context import Context


def _reads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("functions", help="persistent functions (CREATE FUNCTION) of a database",
                       description="List, show, drop and undrop the functions of a database.")
    actions = p.add_subparsers(dest="functions_action", metavar="ACTION", required=True)
    ls = actions.add_parser("list", help="the functions of a database")
    ls.add_argument("database", help="catalog.database")
    ls.add_argument("--dropped", action="store_true", help="the dropped functions (undroppable until purge)")
    _reads(ls)
    ls.set_defaults(func=cmd_list)
    show = actions.add_parser("show", help="one function: its class and resources, or its SQL")
    show.add_argument("name", help="catalog.database.function")
    _reads(show)
    show.set_defaults(func=cmd_show)
    hist = actions.add_parser("history", help="the versions of a function")
    hist.add_argument("name", help="catalog.database.function")
    hist.add_argument("--limit", type=int, metavar="N")
    _reads(hist)
    hist.set_defaults(func=cmd_history)
    drop = actions.add_parser("drop", help="drop a function (undrop brings it back)")
    drop.add_argument("name", help="catalog.database.function")
    drop.set_defaults(func=cmd_drop)
    undrop = actions.add_parser("undrop", help="bring a dropped function back")
    undrop.add_argument("name", help="catalog.database.function")
    undrop.add_argument("--id", help="which dropped function of that name (default: the last dropped)")
    _reads(undrop)
    undrop.set_defaults(func=cmd_undrop)
    purge = actions.add_parser("purge", help="remove dropped functions of a database for good")
    purge.add_argument("database", help="catalog.database")
    purge.add_argument("--older-than", metavar="DURATION", help="only those dropped longer ago (90s, 12h, 7d, ...)")
    _reads(purge)
    purge.set_defaults(func=cmd_purge)


def _definition(f: FunctionInfo) -> str:
    if f.kind == "CLASS":
        using = "".join(f" USING {t.upper()} '{u}'" for t, u in f.resources)
        return f"AS '{f.class_name}'{using}"
    returns = f.return_type if not f.table_function or f.return_type.upper().startswith("TABLE") \
        else f"TABLE ({f.return_type})"
    return f"({f.parameters}) RETURNS {returns} RETURN {f.body}"


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    found = ctx.metastore.list_functions(args.database, dropped=args.dropped)
    if ctx.json:
        ctx.emit([f.to_json() for f in found])
    else:
        ctx.table([{"name": f.name, "kind": f.kind, "version": str(f.version), "definition": _definition(f)}
                   for f in found], ["name", "kind", "version", "definition"])
    return 0


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    f = ctx.metastore.get_function(args.name)
    ctx.emit(f.to_json(), lambda d: "\n".join([
        f"function   {f.qualified_name}", f"kind       {f.kind}", f"version    {f.version}",
        f"definition CREATE FUNCTION {f.qualified_name} {_definition(f)}",
        f"comment    {f.comment or ''}", f"owner      {f.owner or ''}",
        f"created    {f.created_at.isoformat(timespec='seconds')}",
        f"updated    {f.updated_at.isoformat(timespec='seconds')}", f"id         {f.id}"]))
    return 0


def cmd_history(ctx: Context, args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        raise InvalidArgument(f"--limit must be >= 0, not {args.limit}")
    items = ctx.metastore.function_history(args.name, limit=args.limit)
    if ctx.json:
        ctx.emit([h.to_json() for h in items])
    else:
        ctx.table([{"version": str(h.version), "time": h.committed_at.isoformat(timespec="seconds"), "user": h.user,
                    "operation": h.operation} for h in items], ["version", "time", "user", "operation"])
    return 0


def cmd_drop(ctx: Context, args: argparse.Namespace) -> int:
    ctx.metastore.drop_function(args.name)
    if not ctx.json:
        print(f"dropped function {args.name}")
    return 0


def cmd_undrop(ctx: Context, args: argparse.Namespace) -> int:
    f = ctx.metastore.undrop_function(args.name, args.id)
    ctx.emit(f.to_json(), lambda d: f"undropped function {f.qualified_name} (version {f.version})")
    return 0


def cmd_purge(ctx: Context, args: argparse.Namespace) -> int:
    import time

    from ..changes.feed import parse_duration

    before = None
    if args.older_than:
        before = int((time.time() - parse_duration(args.older_than).total_seconds()) * 1_000_000)
    names = ctx.metastore.purge_functions(args.database, before)
    ctx.emit({"purged": names}, lambda d: f"purged {len(names)} dropped function(s)"
             + (": " + ", ".join(names) if names else ""))
    return 0
