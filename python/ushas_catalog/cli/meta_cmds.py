"""Metadata and search commands.

- ``ushas meta set OBJECT KEY=VALUE...``, ``meta unset OBJECT KEY...``, ``meta tag OBJECT TAG...``,
  ``meta untag OBJECT TAG...``: USER metadata (one transaction per command). ``--scope SYSTEM``
  is refused: SYSTEM metadata is the catalog's and the lineage listener's.
- ``ushas meta show OBJECT [--scope S]``: USER and SYSTEM metadata (of a table / view: its
  columns' too).
- ``ushas meta history OBJECT [--limit N]``: who changed what, when.
- ``ushas search QUERY [--type T]... [--scope S] [--limit N] [--cursor C]``: see
  :mod:`ushas_catalog.metadata.search` for the query forms.

OBJECT is ``catalog``, ``catalog.database``, ``catalog.database.table`` (table or view) or
``catalog.database.table.column`` (more parts: a nested field). ``--json`` on every command.
"""
from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvalidArgument
from ..metadata.store import ObjectMetadata, ObjectType, Scope
from .context import Context
from .terminal import escape

_TYPES = [t.value.lower() for t in ObjectType]
_SCOPES = [s.value for s in Scope]


def _json_flag(p: argparse.ArgumentParser) -> None:
    """``--json`` after the command as well as before it."""
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def _scope_arg(p: argparse.ArgumentParser, default: str | None) -> None:
    p.add_argument("--scope", type=str.upper, choices=_SCOPES, default=default,
                   help=f"metadata scope (default {default})" if default else "only this scope")


def register(sub: argparse._SubParsersAction) -> None:
    meta = sub.add_parser("meta", help="USER / SYSTEM properties and tags of catalogs, databases, tables, views, "
                                       "columns", description="Business and system metadata.")
    commands = meta.add_subparsers(dest="meta_command", metavar="SUBCOMMAND", parser_class=type(meta))
    commands.required = True

    for name, help_text, dest, metavar, func in (
            ("set", "set USER properties: OBJECT KEY=VALUE...", "pairs", "KEY=VALUE", cmd_set),
            ("unset", "remove USER properties: OBJECT KEY...", "keys", "KEY", cmd_unset),
            ("tag", "add USER tags: OBJECT TAG...", "tags", "TAG", cmd_tag),
            ("untag", "remove USER tags: OBJECT TAG...", "tags", "TAG", cmd_untag)):
        p = commands.add_parser(name, help=help_text)
        p.add_argument("object", help="catalog[.database[.table[.column]]]")
        p.add_argument(dest, nargs="+", metavar=metavar)
        _scope_arg(p, "USER")
        _json_flag(p)
        p.set_defaults(func=func)

    p = commands.add_parser("show", help="USER and SYSTEM metadata of an object")
    p.add_argument("object")
    _scope_arg(p, None)
    _json_flag(p)
    p.set_defaults(func=cmd_show)

    p = commands.add_parser("history", help="who changed which metadata of an object, and when (oldest first)")
    p.add_argument("object")
    p.add_argument("--limit", type=int, help="only the most recent N changes")
    _json_flag(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("search", help="search tags, properties, values and schema field names",
                       description="QUERY: TERM (tag, key, value or field name), TERM* (prefix), "
                                   "tag:T / key:K / value:V / field:F, KEY=VALUE, KEY=VAL*. Case-insensitive.")
    p.add_argument("query")
    p.add_argument("--type", action="append", choices=_TYPES, type=str.lower, dest="types", metavar="TYPE",
                   help=f"only objects of this type ({', '.join(_TYPES)}); repeatable")
    _scope_arg(p, None)
    p.add_argument("--limit", type=int, default=20, help="hits per page (default 20)")
    p.add_argument("--cursor", help="continue after the page that printed this cursor")
    _json_flag(p)
    p.set_defaults(func=cmd_search)


# ---- writes ----------------------------------------------------------------------------------------
def _pairs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidArgument(f"expected KEY=VALUE, not {pair!r}")
        out[key] = value
    return out


def cmd_set(ctx: Context, args: argparse.Namespace) -> int:
    return _written(ctx, ctx.metastore.metadata.set(args.object, _pairs(args.pairs), scope=args.scope))


def cmd_unset(ctx: Context, args: argparse.Namespace) -> int:
    return _written(ctx, ctx.metastore.metadata.unset(args.object, args.keys, scope=args.scope))


def cmd_tag(ctx: Context, args: argparse.Namespace) -> int:
    return _written(ctx, ctx.metastore.metadata.tag(args.object, args.tags, scope=args.scope))


def cmd_untag(ctx: Context, args: argparse.Namespace) -> int:
    return _written(ctx, ctx.metastore.metadata.untag(args.object, args.tags, scope=args.scope))


def _written(ctx: Context, md: ObjectMetadata) -> int:
    ctx.emit(md.to_json(), lambda _: _show_text(md, None))
    return 0


# ---- reads -----------------------------------------------------------------------------------------
def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    md = ctx.metastore.metadata.get(args.object)
    scope = Scope(args.scope) if args.scope else None
    data = md.to_json()
    if scope is not None:
        data.pop(Scope.USER.value if scope is Scope.SYSTEM else Scope.SYSTEM.value)
        for col in data.get("columns", {}).values():
            col.pop(Scope.USER.value if scope is Scope.SYSTEM else Scope.SYSTEM.value)
    ctx.emit(data, lambda _: _show_text(md, scope))
    return 0


def _show_text(md: ObjectMetadata, scope: Scope | None) -> str:
    o = md.object
    lines = [f"{o.full_name}  {o.type.value}  {o.id}"]
    for s in Scope:
        if scope is not None and s is not scope:
            continue
        lines.extend(_scoped_lines(md, s, "  "))
    if md.schema_fields:
        lines.append("  schema fields: " + ", ".join(md.schema_fields))
    for name, col in sorted(md.columns.items()):
        col_lines = [x for s in Scope if scope is None or s is scope for x in _scoped_lines(col, s, "    ")]
        if col_lines:
            lines.append(f"  column {name}")
            lines.extend(col_lines)
    return "\n".join(lines)


def _scoped_lines(md: ObjectMetadata, scope: Scope, indent: str) -> list[str]:
    sm = md.scope(scope)
    if not sm.properties and not sm.tags:
        return []
    out = [f"{indent}{scope.value}"]
    out.extend(f"{indent}  {escape(k)} = {escape(v)}" for k, v in sorted(sm.properties.items()))  # one line each
    if sm.tags:
        out.append(f"{indent}  tags: {', '.join(sorted(sm.tags))}")
    return out


def cmd_history(ctx: Context, args: argparse.Namespace) -> int:
    changes = ctx.metastore.metadata.history(args.object, limit=args.limit)
    rows = [c.to_json() for c in changes]
    if ctx.json:
        ctx.emit(rows)
        return 0
    ctx.table(({**r, "what": _what(r)} for r in rows), ["at", "user", "source", "scope", "action", "what"])
    return 0


def _what(r: dict[str, Any]) -> str:
    target = f"{r['column']}: " if r.get("column") else ""
    if r["action"] in ("tag", "untag"):
        return f"{target}{r['key']}"
    if r["action"] == "unset":
        return f"{target}{r['key']} (was {r['old']!r})"
    was = f" (was {r['old']!r})" if r.get("old") is not None else ""
    return f"{target}{r['key']} = {r['new']!r}{was}"


def cmd_search(ctx: Context, args: argparse.Namespace) -> int:
    page = ctx.metastore.search(args.query, types=args.types, scope=args.scope, limit=args.limit,
                                cursor=args.cursor)
    if ctx.json:
        ctx.emit(page.to_json())
        return 0
    ctx.table(({"name": h.name, "type": h.type.value, "match": h.to_json()["match"], "score": f"{h.score:.2f}",
                "matched": "; ".join(f"{m.field} {m.shown}" + (f" ({m.column})" if m.column and m.field != "field"
                                                               else "") for m in h.matches)}
               for h in page.hits), ["name", "type", "match", "score", "matched"])
    print(f"{len(page.hits)} of {page.total}" + (f"; next page: --cursor {page.next_cursor}"
                                                  if page.next_cursor else ""))
    return 0


__all__ = ["register"]
