"""Row filters and column masks (docs/governance.md): ``ushas row-filter set TABLE EXPR [--exempt P]``,
``row-filter drop TABLE``, ``ushas column-mask set TABLE COLUMN EXPR [--exempt P]``, ``column-mask drop
TABLE COLUMN``. Each is one commit of the table. The CLI checks a mask's column; Spark's
``CALL <catalog>.system.set_row_filter`` / ``set_column_mask`` also parse and resolve the expression."""
from __future__ import annotations

import argparse
from typing import Any

from ..model.names import TableName
from .context import Context

EXEMPT_HELP = "the principal that reads the table unfiltered / unmasked: role:NAME, group:NAME or user:NAME"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("row-filter", help="a table's row filter: set, drop",
                       description="Only rows for which the filter (a Spark SQL boolean expression; current_user() "
                                   "and is_member('role:x') are the reader's) is true are read through the catalog.")
    actions = p.add_subparsers(dest="row_filter_action", metavar="ACTION", required=True)
    s = actions.add_parser("set", help="set (or replace) the table's row filter")
    s.add_argument("table", help="catalog.database.table")
    s.add_argument("expression", help="a Spark SQL boolean expression, e.g. \"region = 'EU'\"")
    s.add_argument("--exempt", help=EXEMPT_HELP)
    s.set_defaults(func=cmd_set_filter)
    d = actions.add_parser("drop", help="remove the table's row filter")
    d.add_argument("table", help="catalog.database.table")
    d.set_defaults(func=cmd_drop_filter)

    p = sub.add_parser("column-mask", help="a column's mask: set, drop",
                       description="A masked column is read as the mask's Spark SQL expression (cast to the "
                                   "column's type) through the catalog.")
    actions = p.add_subparsers(dest="column_mask_action", metavar="ACTION", required=True)
    s = actions.add_parser("set", help="set (or replace) a column's mask")
    s.add_argument("table", help="catalog.database.table")
    s.add_argument("column")
    s.add_argument("expression", help="a Spark SQL expression, e.g. \"concat('***', substr(ssn, -4, 4))\"")
    s.add_argument("--exempt", help=EXEMPT_HELP)
    s.set_defaults(func=cmd_set_mask)
    d = actions.add_parser("drop", help="remove a column's mask")
    d.add_argument("table", help="catalog.database.table")
    d.add_argument("column")
    d.set_defaults(func=cmd_drop_mask)


def _done(ctx: Context, info: Any, what: str) -> int:
    data = info.to_json()
    ctx.emit(data, f"{what} {info.full_name} (version {info.version})")
    return 0


def cmd_set_filter(ctx: Context, args: argparse.Namespace) -> int:
    info = ctx.metastore.set_row_filter(TableName.parse(args.table), args.expression, args.exempt)
    return _done(ctx, info, "row filter set on")


def cmd_drop_filter(ctx: Context, args: argparse.Namespace) -> int:
    return _done(ctx, ctx.metastore.drop_row_filter(TableName.parse(args.table)), "row filter dropped from")


def cmd_set_mask(ctx: Context, args: argparse.Namespace) -> int:
    info = ctx.metastore.set_column_mask(TableName.parse(args.table), args.column, args.expression, args.exempt)
    return _done(ctx, info, f"mask of {args.column} set on")


def cmd_drop_mask(ctx: Context, args: argparse.Namespace) -> int:
    info = ctx.metastore.drop_column_mask(TableName.parse(args.table), args.column)
    return _done(ctx, info, f"mask of {args.column} dropped from")
