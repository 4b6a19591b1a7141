"""``ushas branch``: branches of a catalog (docs/branches.md).

``branch create CATALOG BRANCH [--from-version V]``, ``branch list CATALOG``, ``branch drop CATALOG BRANCH``,
``branch merge CATALOG BRANCH [--into main]``. They run on main whatever ``--branch`` says; ``--branch NAME``
(a global option) makes every other command read and write that branch.
"""
from __future__ import annotations

import argparse
from typing import Any

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("branch", help="branches of a catalog: create, list, drop, merge",
                       description="Branches of a catalog: a branch reads the catalog as of its branch point plus "
                                   "its own changes; --branch NAME on any command works in it.")
    a = p.add_subparsers(dest="branch_action", metavar="ACTION")
    a.required = True
    catalog = ("catalog", {"help": "the catalog"})
    branch = ("branch", {"help": "the branch's name"})

    def add(name: str, help: str, func: Any, *args: tuple[str, dict[str, Any]]) -> argparse.ArgumentParser:
        sp = a.add_parser(name, help=help)
        for arg, kw in args:
            sp.add_argument(arg, **kw)
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
        sp.set_defaults(func=func)
        return sp

    c = add("create", "branch a catalog (O(1) keys)", cmd_create, catalog, branch)
    c.add_argument("--from-version", type=int, dest="from_version",
                   help="a branch point a live branch holds (default: now)")
    add("list", "the live branches of a catalog", cmd_list, catalog)
    add("drop", "drop a branch and everything it changed", cmd_drop, catalog, branch)
    m = add("merge", "apply a branch's changes to main in one transaction (or name every conflict)", cmd_merge,
            catalog, branch)
    m.add_argument("--into", default="main", help="the branch merged into: its parent, main")


def _main(ctx: Context) -> Any:
    ms = ctx.metastore
    return getattr(ms, "parent", None) or ms


def _row(b: Any) -> dict[str, Any]:
    return {"catalog": b.catalog, "branch": b.name, "parent": b.parent, "from_version": b.from_version,
            "created_by": b.created_by, "created_at": b.created_at.isoformat(), "merges": b.merges,
            "changed_keys": b.changed_keys}


def cmd_create(ctx: Context, args: argparse.Namespace) -> int:
    b = _main(ctx).create_branch(args.catalog, args.branch, from_version=args.from_version)
    ctx.emit(_row(b), f"created branch {b.name} of catalog {b.catalog} at branch point {b.from_version}")
    return 0


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    rows = [_row(b) for b in _main(ctx).list_branches(args.catalog)]
    if ctx.json:
        ctx.emit(rows)
    else:
        ctx.table(rows, ["branch", "parent", "from_version", "created_by", "created_at", "merges", "changed_keys"])
    return 0


def cmd_drop(ctx: Context, args: argparse.Namespace) -> int:
    _main(ctx).drop_branch(args.catalog, args.branch)
    ctx.emit({"catalog": args.catalog, "branch": args.branch, "dropped": True},
             f"dropped branch {args.branch} of catalog {args.catalog}")
    return 0


def cmd_merge(ctx: Context, args: argparse.Namespace) -> int:
    out = _main(ctx).merge_branch(args.catalog, args.branch, into=args.into)
    ctx.emit(out, f"merged branch {out['branch']} of catalog {out['catalog']} into {out['into']}: "
                  f"{len(out['objects'])} object(s) ({', '.join(out['objects']) or 'none'}), {out['keys']} key(s)")
    return 0
