"""``ushas locations``: declared external locations (docs/governance.md, "External locations").

``locations list``, ``locations create NAME URL [--comment]``, ``locations show NAME``, ``locations drop NAME``,
``locations grant NAME PRIVILEGE PRINCIPAL`` and ``locations revoke NAME PRIVILEGE PRINCIPAL`` (PRIVILEGE:
``CREATE_EXTERNAL_TABLE``, ``READ_FILES``, ``WRITE_FILES``, ``MANAGE``, ``OWN``; also
``ushas grant READ FILES ON LOCATION NAME TO user:bob``).
"""
from __future__ import annotations

import argparse
from typing import Any

from .command_group import command_group
from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    group = command_group(sub, "locations",
                          help="external locations: storage where tables may be placed and files read",
                          description="Declared external locations (as Unity Catalog's): CREATE EXTERNAL TABLE, "
                                      "READ FILES and WRITE FILES are granted on them.", default=cmd_list)
    add = group.add
    name = ("name", {"help": "the location's name"})
    c = add("create", "declare an external location: create NAME URL", cmd_create, name,
            ("url", {"help": "s3a://bucket/dir, file:/dir or /dir"}))
    c.add_argument("--comment", default="", help="what the location is for")
    add("list", "the project's external locations", cmd_list)
    add("show", "one location and the grants on it", cmd_show, name)
    add("drop", "drop a location and its grants (tables placed in it stay)", cmd_drop, name)
    for verb in ("grant", "revoke"):
        add(verb, f"{verb} a privilege on a location: {verb} NAME PRIVILEGE PRINCIPAL", cmd_grant if verb == "grant"
            else cmd_revoke, name, ("privilege", {"help": "CREATE_EXTERNAL_TABLE, READ_FILES, WRITE_FILES, MANAGE, OWN"}),
            ("principal", {"help": "user:NAME, group:NAME or role:NAME"}))


def _line(loc: Any) -> str:
    return f"{loc.name}  {loc.url}" + (f"  ({loc.comment})" if loc.comment else "")


def cmd_create(ctx: Context, args: argparse.Namespace) -> int:
    loc = ctx.metastore.create_location(args.name, args.url, args.comment)
    ctx.emit(loc.to_json(), f"created external location {_line(loc)}")
    return 0


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    found = ctx.metastore.list_locations()
    ctx.emit([loc.to_json() for loc in found], "\n".join(_line(loc) for loc in found) or "(no external locations)")
    return 0


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    loc = ctx.metastore.get_location(args.name)
    grants = ctx.metastore.grants(f"location:{args.name}")
    data = {**loc.to_json(), "grants": [g.to_json() for g in grants]}
    lines = [_line(loc)] + [f"  {g.principal}: {g.privilege}" + (f" (from {g.inherited_from})" if g.inherited_from
                                                                  else "") for g in grants]
    ctx.emit(data, "\n".join(lines))
    return 0


def cmd_drop(ctx: Context, args: argparse.Namespace) -> int:
    ctx.metastore.drop_location(args.name)
    ctx.emit({"dropped": args.name}, f"dropped external location {args.name}")
    return 0


def cmd_grant(ctx: Context, args: argparse.Namespace) -> int:
    done = ctx.metastore.grant(args.privilege, f"location:{args.name}", args.principal)
    ctx.emit({"granted": done}, f"granted {args.privilege} on location {args.name} to {args.principal}"
             if done else f"{args.principal} holds {args.privilege} on location {args.name} already")
    return 0


def cmd_revoke(ctx: Context, args: argparse.Namespace) -> int:
    done = ctx.metastore.revoke(args.privilege, f"location:{args.name}", args.principal)
    ctx.emit({"revoked": done}, f"revoked {args.privilege} on location {args.name} from {args.principal}"
             if done else f"{args.privilege} on location {args.name} was not granted to {args.principal}")
    return 0


__all__ = ["register"]
