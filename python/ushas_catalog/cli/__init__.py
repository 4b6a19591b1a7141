"""The ``ushas`` command line: ``ushas --uri URI --project P [--branch B] COMMAND``.

Each command group lives in its own module under this package (or in an extension: its
``commands``, :mod:`ushas_catalog.extensions`; ``ushas lineage`` is the lineage extension's) and exposes
``register(subparsers)``; the command functions take ``(ctx: Context, args)`` and
return an exit code or ``None``. Errors: a :class:`~ushas_catalog.errors.UshasError`
becomes one line on stderr and its ``exit_code`` (1 for a missing object, 2 for bad
input); argparse usage errors also exit 2. ``--json`` is accepted anywhere before ``--``.

Only ``init``, ``demo`` and ``import-hive`` create a store (``set_defaults(creates_store=True)``)
and say so on stderr; every other command opens an existing one (``store not found: PATH``,
exit 2, when there is none), read-only when its file is not writable.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from ..errors import NotServed, StoreNotFound, UshasError
from ..store_location import STORE_HINT, URI_ENV, default_uri
from .arguments import check_namespace, parse_checked
from .context import Context
from .help import Parser

#: modules under ushas_catalog.cli that contribute commands, in help order
COMMAND_MODULES: tuple[str, ...] = ("jarcmd", "spark_conf_cmds", "store_cmds", "metastore_cmds",
                                    "meta_cmds", "changes_cmds", "app_cmds", "repair_cmds", "write_cmds",
                                    "pending_cmds", "check_cmds", "serve_cmds",
                                    "function_cmds", "object_cmds", "grant_cmds",
                                    "share_cmds", "location_cmds",
                                    "hooks_cmds",
                                    "partition_tag_cmds",
                                    "row_policy_cmds", "branch_cmds", "compact_cmds")



_Parser = Parser  # one-line errors (exit 2) with "did you mean"; grouped top-level help (cli/help.py)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ushas", description="Ushas Catalog: metastore, lineage and discovery for Spark")
    from ..version import __version__

    parser.add_argument("--version", action="version", version=f"ushas {__version__}",
                        help="print the version and exit")
    parser.add_argument("--uri", default=None,
                        help="store URI: sqlite:///path/ushas.db, fdb:///path/fdb.cluster, postgresql://... or "
                             "the catalog service: http(s)://host:port with --token (env USHAS_URI; default "
                             "sqlite:///$XDG_DATA_HOME/ushas/ushas.db)")
    parser.add_argument("--project", default=os.environ.get("USHAS_PROJECT", "default"),
                        help="tenant project (env USHAS_PROJECT, default 'default')")
    parser.add_argument("--json", action="store_true", help="machine-readable output on every read")
    parser.add_argument("--user", default=os.environ.get("USHAS_USER") or None,
                        help="call as this user, with authorization on (env USHAS_USER; docs/governance.md)")
    parser.add_argument("--token", default=None,
                        help="with an http(s):// --uri (the catalog service, ushas serve): its token (default: env "
                             "USHAS_TOKEN); the token's user is who calls (docs/service.md)")
    parser.add_argument("--branch", default=os.environ.get("USHAS_BRANCH", "main"),
                        help="read and write this branch of the catalogs (env USHAS_BRANCH, default main; "
                             "docs/branches.md)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue  # that command group is not part of this build
            raise
        module.register(sub)
    from ..extensions import extensions

    for register in extensions().commands.values():  # the extensions' command groups (``ushas lineage``)
        register.load()(sub)
    return parser


def split_json_flag(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``--json`` anywhere before a ``--`` (before or after the command and its subcommands):
    the arguments without it, and whether it was there."""
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    found = "--json" in args[:end]
    return [a for i, a in enumerate(args) if i >= end or a != "--json"], found


#: the commands that work on the store itself (its files, its lineage store, its tokens, its feed): not
#: through the catalog service (``--uri http(s)://...``)
STORE_COMMANDS = frozenset({"check", "serve", "ui", "init", "demo", "import-hive", "repair", "repair-counter",
                            "repair-pending", "keyspace", "tokens", "changes", "lineage", "hooks", "write", "writes",
                            "purge", "meta", "objects", "shares"})


def refuse_store_command(command: str) -> None:
    if command in STORE_COMMANDS:
        raise NotServed(f"'ushas {command}' works on the store itself, not through the catalog service: run it "
                        f"with the store's own URI, on the service's host")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    from .store_cmds import route_counter

    argv, json_flag = split_json_flag(sys.argv[1:] if argv is None else argv)
    argv = route_counter(argv)
    from .pending_cmds import route_pending
    argv = route_pending(argv)
    args = parse_checked(parser, argv)  # bad bytes or numbers: one line, exit 2
    args.uri_given = args.uri is not None or bool(os.environ.get(URI_ENV, "").strip())
    if args.uri is None:
        args.uri = default_uri()
        check_namespace(parser, argparse.Namespace(uri=args.uri))  # USHAS_URI: checked as an argument
    ctx = Context(uri=args.uri, project=args.project, json=bool(args.json or json_flag),
                  create=bool(getattr(args, "creates_store", False)), user=args.user,
                  branch=args.branch, token=args.token)
    try:
        from .grant_cmds import command_scope

        if ctx.remote:
            refuse_store_command(str(args.command))
        with command_scope(ctx, args):  # --user: the commands that read outside checked calls
            try:
                rc = args.func(ctx, args)
            except AttributeError as exc:  # a command reaching for the store through a served metastore
                if not ctx.remote:
                    raise
                raise NotServed(f"'ushas {args.command}' needs the store itself ({exc}): run it with the store's "
                                f"own URI, on the service's host") from None
        return int(rc or 0)
    except UshasError as exc:
        hint = f"; {STORE_HINT}" if isinstance(exc, StoreNotFound) else ""
        print(f"ushas: {exc.type}: {exc.message}{hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        ctx.close()
