"""``ushas serve`` (alias ``ushas ui``) and ``ushas tokens``.

- ``ushas serve [--host 127.0.0.1] [--port 8765] [--allowed-host NAME]... [--namespace NS=CATALOG]...``:
  the UI, the REST API v1 and the OpenLineage receiver of the store ``--uri`` / ``--project``
  from one process on waitress (:mod:`ushas_catalog.ui.server`); access log on stderr; SIGTERM
  or Ctrl-C lets requests in flight finish, then exits 0. Another ``--host`` than a loopback
  address needs a token in the store (reads then need one too).
- ``ushas tokens create --read|--write [--name N]``: a new API token, printed once;
  ``ushas tokens list``; ``ushas tokens revoke ID`` (:mod:`ushas_catalog.service.tokens`).
"""
from __future__ import annotations

import argparse

from ..errors import InvalidArgument
from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    register_serve(sub)
    register_tokens(sub)


def register_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", aliases=["ui"], help="serve the web UI, the REST API and the OpenLineage receiver",
                       description="Serve the UI (http://HOST:PORT/), the REST API v1 (/api/v1, OpenAPI document "
                                   "at /api/v1/openapi.json) and the OpenLineage receiver (POST /api/v1/lineage) "
                                   "of the store --uri / --project, on waitress. Writes need a write token "
                                   "(ushas tokens create --write); binding to another address than 127.0.0.1 "
                                   "needs a token in the store and makes reads need one too.")
    p.add_argument("--port", type=int, default=8765, help="TCP port (default 8765; 0 picks a free one)")
    p.add_argument("--uri", dest="serve_uri", default=None,
                   help="the store URI (default: the global --uri / USHAS_URI)")
    p.add_argument("--project", dest="serve_project", default=None,
                   help="the tenant project (default: the global --project / USHAS_PROJECT)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME[:PORT]", dest="allowed_hosts",
                   help="also answer requests for this host name (repeatable), e.g. the name a reverse proxy "
                        "or other machines use; without it only the --host address (and localhost on a "
                        "loopback address) is answered, which stops DNS-rebinding pages")
    p.add_argument("--namespace", action="append", default=[], metavar="NAMESPACE=CATALOG", dest="namespaces",
                   help="the receiver maps OpenLineage datasets of this namespace (e.g. the spark://host:10000 "
                        "of dbt-spark) to the tables of this catalog (repeatable)")
    p.add_argument("--no-hooks", dest="hooks", action="store_false",
                   help="do not run the change hooks' delivery worker in this process (ushas hooks run does)")
    p.add_argument("--authorization", action="store_true",
                   help="check every request's privileges as its token's user (docs/governance.md)")
    p.add_argument("--warehouse", default=None, metavar="URL",
                   help="the managed warehouse of remote Spark catalogs (their managed tables' data); a client "
                        "stating another needs CREATE EXTERNAL TABLE on the declared location holding it")
    p.set_defaults(func=run_serve)


def namespaces_arg(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        ns, eq, catalog = value.rpartition("=")
        if not eq or not ns.strip() or not catalog.strip():
            raise InvalidArgument(f"--namespace takes NAMESPACE=CATALOG, not {value!r}")
        out[ns.strip()] = catalog.strip()
    return out


def run_serve(ctx: Context, args: argparse.Namespace) -> int:
    from ..spark.tables import qualify
    from ..ui.security import HostPolicy
    from ..ui.server import serve

    if not 0 <= args.port <= 65535:
        raise InvalidArgument(f"--port must be 0..65535, not {args.port}")
    try:
        HostPolicy.for_bind(args.host, args.port or 1, args.allowed_hosts)  # before the store is opened
    except ValueError as exc:
        raise InvalidArgument(f"--allowed-host: {exc}") from None
    namespaces = namespaces_arg(args.namespaces)
    if args.serve_uri or args.serve_project:  # ushas serve --uri U --project P: the store it serves
        ctx.close()
        ctx.uri, ctx.project = args.serve_uri or ctx.uri, args.serve_project or ctx.project
    ctx.metastore  # fail now, with one line, when the store cannot be opened
    serve(ctx.uri, ctx.project, host=args.host, port=args.port, allowed_hosts=args.allowed_hosts,
          namespaces=namespaces, hooks=args.hooks, authorization=args.authorization,
          warehouse=qualify(args.warehouse) if args.warehouse else None,
          announce=lambda url: print(f"Ushas on {url}  (UI, API {url}api/v1/, OpenLineage receiver "
                                     f"{url}api/v1/lineage; store {ctx.uri}, project {ctx.project}; "
                                     "Ctrl-C stops it)", flush=True))
    return 0


def register_tokens(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tokens", help="API tokens of ushas serve: create, list, revoke",
                       description="Bearer tokens for the REST API and the OpenLineage receiver of ushas serve. "
                                   "The store keeps only a hash of each token; a token is shown once.")
    commands = p.add_subparsers(dest="tokens_command", metavar="SUBCOMMAND", parser_class=type(p))
    commands.required = True
    c = commands.add_parser("create", help="create a token (printed once)")
    access = c.add_mutually_exclusive_group(required=True)
    access.add_argument("--read", dest="access", action="store_const", const="read", help="may read")
    access.add_argument("--write", dest="access", action="store_const", const="write",
                        help="may read and write (metadata edits, OpenLineage events)")
    c.add_argument("--name", default="", help="what the token is for (shown by list)")
    c.set_defaults(func=cmd_create)
    ls = commands.add_parser("list", help="tokens: id, name, access, created")
    ls.set_defaults(func=cmd_list)
    r = commands.add_parser("revoke", help="revoke a token by its id (its sessions end too)")
    r.add_argument("id")
    r.set_defaults(func=cmd_revoke)


def cmd_create(ctx: Context, args: argparse.Namespace) -> int:
    from ..service.tokens import TokenStore

    info, token = TokenStore(ctx.metastore).create(args.access, args.name)
    ctx.emit({**info.to_json(), "token": token},
             f"{token}\n(token {info.id}, {info.access}; shown once: keep it now)")
    return 0


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    from ..service.tokens import TokenStore

    rows = [t.to_json() for t in TokenStore(ctx.metastore).list()]
    if ctx.json:
        ctx.emit(rows)
    else:
        ctx.table(rows, ["id", "name", "access", "created_at", "created_by"])
    return 0


def cmd_revoke(ctx: Context, args: argparse.Namespace) -> int:
    from ..service.tokens import TokenStore

    info = TokenStore(ctx.metastore).revoke(args.id)
    ctx.emit(info.to_json(), f"revoked token {info.id} ({info.access})")
    return 0


__all__ = ["register", "namespaces_arg"]
