"""``ushas shares``: shares between projects (docs/governance.md, "Shares").

Owner project: ``shares create NAME [--comment]``, ``shares add NAME catalog.db[.table]``,
``shares remove NAME OBJECT``, ``shares grant NAME project:OTHER``, ``shares revoke NAME project:OTHER``,
``shares drop NAME``, ``shares list``, ``shares show NAME``, ``shares usage NAME`` (recipients' reads).
Recipient project: ``shares mount OWNER.SHARE AS CATALOG``, ``shares unmount CATALOG``, ``shares mounts``,
``shares tables CATALOG[.db]`` (what the mount shows).
"""
from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvalidArgument
from ..model.names import split_name
from .command_group import command_group
from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    group = command_group(sub, "shares", help="share tables and databases read-only with other projects",
                          description="Shares between projects: a project shares tables or whole databases of one "
                                      "catalog, read-only, with other projects, which mount them as catalogs.",
                          default=cmd_list)
    add = group.add
    share = ("share", {"help": "the share's name"})
    c = add("create", "create a share", cmd_create, share)
    c.add_argument("--comment", help="what the share is for")
    add("add", "add a table (catalog.db.table) or a whole database (catalog.db)", cmd_add, share,
        ("object", {"help": "catalog.db.table or catalog.db"}))
    add("remove", "remove a table or database (or an object id) from a share", cmd_remove, share,
        ("object", {"help": "catalog.db.table, catalog.db, or the object's id"}))
    add("grant", "share with a project", cmd_grant, share, ("recipient", {"help": "project:NAME"}))
    add("revoke", "stop sharing with a project", cmd_revoke, share, ("recipient", {"help": "project:NAME"}))
    d = add("drop", "drop a share", cmd_drop, share)
    d.add_argument("--if-exists", action="store_true")
    add("list", "this project's shares", cmd_list)
    add("show", "a share: recipients and objects (live, dropped, missing)", cmd_show, share)
    add("usage", "reads of the share's tables recorded in the recipients' lineage", cmd_usage, share)
    add("mount", "mount a share granted to this project as a catalog: mount OWNER.SHARE AS CATALOG", cmd_mount,
        ("share", {"help": "OWNER_PROJECT.SHARE"}), ("as_word", {"metavar": "AS", "choices": ["AS", "as"]}),
        ("catalog", {"help": "the catalog name to mount it as"}))
    add("unmount", "remove a mounted share's catalog", cmd_unmount, ("catalog", {"help": "the mounted catalog"}))
    add("mounts", "the shares this project mounts", cmd_mounts)
    add("tables", "what a mounted share shows: tables CATALOG[.db]", cmd_tables,
        ("name", {"help": "CATALOG or CATALOG.db"}))


def _info(ctx: Context, info: Any) -> None:
    data = info.to_json()
    lines = [f"share {info.name} (project {info.project}, v{info.version})",
             f"  recipients: {', '.join(info.recipients) or '(none)'}", f"  privileges: {', '.join(info.privileges)}"]
    if info.comment:
        lines.append(f"  comment: {info.comment}")
    for o in info.objects:
        lines.append(f"  {o.kind:<8} {o.name or '(missing)'}  [{o.status}]  {o.table_id or o.database_id}")
    ctx.emit(data, "\n".join(lines))


def cmd_create(ctx: Context, args: argparse.Namespace) -> int:
    _info(ctx, ctx.metastore.shares.create(args.share, args.comment))
    return 0


def cmd_add(ctx: Context, args: argparse.Namespace) -> int:
    _info(ctx, ctx.metastore.shares.add(args.share, args.object))
    return 0


def cmd_remove(ctx: Context, args: argparse.Namespace) -> int:
    _info(ctx, ctx.metastore.shares.remove(args.share, args.object))
    return 0


def cmd_grant(ctx: Context, args: argparse.Namespace) -> int:
    _info(ctx, ctx.metastore.shares.grant(args.share, args.recipient))
    return 0


def cmd_revoke(ctx: Context, args: argparse.Namespace) -> int:
    _info(ctx, ctx.metastore.shares.revoke(args.share, args.recipient))
    return 0


def cmd_drop(ctx: Context, args: argparse.Namespace) -> int:
    dropped = ctx.metastore.shares.drop(args.share, if_exists=args.if_exists)
    ctx.emit({"dropped": dropped}, f"dropped share {args.share}" if dropped else f"no share {args.share}")
    return 0


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    rows = [{"share": i.name, "recipients": ",".join(i.recipients), "objects": len(ctx.metastore.shares.show(i.name).objects),
             "version": i.version, "comment": i.comment} for i in ctx.metastore.shares.list()]
    ctx.table(rows, ["share", "recipients", "objects", "version", "comment"])
    return 0


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    _info(ctx, ctx.metastore.shares.show(args.share))
    return 0


def cmd_usage(ctx: Context, args: argparse.Namespace) -> int:
    ctx.table(ctx.metastore.shares.usage(args.share), ["project", "table", "access", "time", "run_id"])
    return 0


def cmd_mount(ctx: Context, args: argparse.Namespace) -> int:
    out = ctx.metastore.shares.mount(args.share, args.catalog)
    ctx.emit(out, f"mounted share {out['share']} as catalog {out['catalog']}")
    return 0


def cmd_unmount(ctx: Context, args: argparse.Namespace) -> int:
    ctx.metastore.shares.unmount(args.catalog)
    ctx.emit({"unmounted": args.catalog}, f"unmounted catalog {args.catalog}")
    return 0


def cmd_mounts(ctx: Context, args: argparse.Namespace) -> int:
    ctx.table(ctx.metastore.shares.mounts(), ["catalog", "share"])
    return 0


def cmd_tables(ctx: Context, args: argparse.Namespace) -> int:
    parts = split_name(args.name)
    if not 1 <= len(parts) <= 2:
        raise InvalidArgument(f"{args.name!r}: expected CATALOG or CATALOG.db")
    view = ctx.metastore.shares.open(parts[0])
    dbs = [parts[1]] if len(parts) == 2 else [d.name for d in view.list_databases(parts[0])]
    rows = [{"database": d, "table": t.name, "id": t.id} for d in dbs for t in view.list_tables((parts[0], d))]
    ctx.table(rows, ["database", "table", "id"])
    return 0
