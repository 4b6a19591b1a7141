"""Governance commands (docs/governance.md): ``ushas grant PRIVILEGE ON [KIND] OBJECT TO PRINCIPAL``,
``ushas revoke PRIVILEGE ON [KIND] OBJECT FROM PRINCIPAL``, ``ushas grants [OBJECT]``, ``ushas roles
[list | create R | drop R | add R MEMBER | remove R MEMBER]``, ``ushas whoami``.

Objects are named as everywhere in the CLI (``catalog``, ``catalog.database``,
``catalog.database.table``), or relative to ``--catalog C``; ``PROJECT`` is the whole project; an
optional kind word (``TABLE``, ``VIEW``, ``DATABASE``, ``SCHEMA``, ``CATALOG``, ``FUNCTION``) may precede
the name, as in SQL.

Identity: ``--user NAME`` (env ``USHAS_USER``) makes the CLI call as that user with authorization on:
every command then needs its privileges (a refusal is one line, exit 2). Without it the CLI is the
store's administrator (whoever can open the store can change it anyway): that is how the first
administrator is made, ``ushas grant OWN ON PROJECT TO user:alice``. :func:`command_scope` covers the
commands that read outside the metastore's checked calls (lineage, the store's own tools).
"""
from __future__ import annotations

import argparse
import contextlib
from typing import Any, Callable, Iterator

from ..catalog.authorization import OBJECT, PROJECT, Requirement, requiring
from ..errors import InvalidArgument
from ..governance.privileges import MANAGE, OWN, SELECT
from ..model.names import split_name
from .context import Context

KINDS = ("TABLE", "VIEW", "DATABASE", "SCHEMA", "CATALOG", "FUNCTION", "PROJECT", "LOCATION")


def _reads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def register(sub: argparse._SubParsersAction) -> None:
    for verb, word, help_ in (("grant", "TO", "grant a privilege on an object to a user, group or role"),
                              ("revoke", "FROM", "revoke a privilege granted on an object")):
        p = sub.add_parser(verb, help=help_,
                           description=f"ushas {verb} PRIVILEGE ON [KIND] OBJECT {word} PRINCIPAL: PRIVILEGE is USE, "
                                       f"SELECT, MODIFY, CREATE, MANAGE or OWN; OBJECT is PROJECT, catalog, "
                                       f"catalog.database or catalog.database.table (or relative to --catalog); "
                                       f"PRINCIPAL is user:NAME, group:NAME or role:NAME.")
        p.add_argument("words", nargs="+", metavar=f"PRIVILEGE ON OBJECT {word} PRINCIPAL")
        p.add_argument("--catalog", metavar="C", help="names are relative to catalog C")
        _reads(p)
        p.set_defaults(func=cmd_grant if verb == "grant" else cmd_revoke, keyword=word)
    g = sub.add_parser("grants", help="the grants on an object (and inherited from its ancestors), or all",
                       description="ushas grants [[KIND] OBJECT]: the grants that apply to the object; without one, "
                                   "every grant of the project.")
    g.add_argument("words", nargs="*", metavar="OBJECT")
    g.add_argument("--catalog", metavar="C", help="names are relative to catalog C")
    _reads(g)
    g.set_defaults(func=cmd_grants)
    r = sub.add_parser("roles", help="roles of the project and their members: list, create, drop, add, remove",
                       description="ushas roles [list]; roles create NAME [--comment TEXT]; roles drop NAME; roles add "
                                   "NAME MEMBER; roles remove NAME MEMBER (MEMBER: user:, group: or role:NAME).")
    actions = r.add_subparsers(dest="roles_action", metavar="ACTION")
    r.set_defaults(func=cmd_roles_list)
    _reads(r)
    ls = actions.add_parser("list", help="every role with its members")
    _reads(ls)
    ls.set_defaults(func=cmd_roles_list)
    c = actions.add_parser("create", help="create a role")
    c.add_argument("name")
    c.add_argument("--comment", default="")
    c.set_defaults(func=lambda ctx, a: _done(ctx, ctx.metastore.create_role(a.name, comment=a.comment),
                                             f"created role:{a.name}", f"role:{a.name} exists"))
    d = actions.add_parser("drop", help="drop a role, its memberships and grants")
    d.add_argument("name")
    d.set_defaults(func=lambda ctx, a: _done(ctx, ctx.metastore.drop_role(a.name) is None, f"dropped role:{a.name}", ""))
    for action, fn, yes, no in (("add", "grant_role", "added", "was a member"),
                                ("remove", "revoke_role", "removed", "was not a member")):
        m = actions.add_parser(action, help=f"{action} a member (user:, group: or role:NAME)")
        m.add_argument("name", help="the role (or group:NAME)")
        m.add_argument("member")
        m.set_defaults(func=_member(fn, yes, no))
    w = sub.add_parser("whoami", help="the user and the groups and roles it holds (with --user)")
    _reads(w)
    w.set_defaults(func=cmd_whoami)


def _member(fn: str, yes: str, no: str) -> Callable[[Context, argparse.Namespace], int]:
    def run(ctx: Context, a: argparse.Namespace) -> int:
        done = getattr(ctx.metastore, fn)(a.name, a.member)
        return _done(ctx, done, f"{a.member} {yes}: {a.name}", f"{a.member} {no}: {a.name}")

    return run


def _done(ctx: Context, done: bool, yes: str, no: str) -> int:
    ctx.emit({"changed": bool(done), "message": yes if done else no}, lambda d: d["message"])
    return 0


def target(words: list[str], catalog: str | None) -> Any:
    """``[KIND] NAME`` (or ``PROJECT``) -> what ``Metastore.grant`` takes."""
    if not words:
        raise InvalidArgument("name the object: PROJECT, catalog, catalog.database or catalog.database.table")
    kind = words[0].upper() if words[0].upper() in KINDS else None
    rest = words[1:] if kind is not None else words
    if kind == "PROJECT" or (kind is None and len(rest) == 1 and rest[0].upper() == "PROJECT"):
        if rest and kind == "PROJECT":
            raise InvalidArgument(f"PROJECT takes no name (got {' '.join(rest)!r}): it is --project")
        return "project"
    if len(rest) != 1:
        raise InvalidArgument(f"expected one object name, got {' '.join(rest)!r}")
    if kind == "LOCATION":  # an external location: a name of the project, not of a catalog
        return f"location:{rest[0]}"
    parts = split_name(rest[0])
    if catalog is not None:
        parts = [catalog, *parts]
    want = {"CATALOG": 1, "DATABASE": 2, "SCHEMA": 2, "TABLE": 3, "VIEW": 3, "FUNCTION": 3}.get(kind or "")
    if want is not None and len(parts) != want:
        raise InvalidArgument(f"{kind} {rest[0]!r}: expected {want} name part(s) (catalog[.database[.name]]"
                              f"{', or use --catalog' if catalog is None else ''})")
    if not 1 <= len(parts) <= 3:
        raise InvalidArgument(f"object {rest[0]!r} must be catalog[.database[.table]]")
    if kind == "FUNCTION":
        return "function:" + ".".join(f"`{p}`" for p in parts)
    return tuple(parts)


def _split(words: list[str], keyword: str) -> tuple[str, Any, str, list[str]]:
    upper = [w.upper() for w in words]
    on = upper.index("ON") if "ON" in upper[1:4] else -1  # a privilege is one to three words (READ FILES)
    if len(words) < 4 or on < 1 or keyword not in upper[on + 1:]:
        raise InvalidArgument(f"expected PRIVILEGE ON [KIND] OBJECT {keyword} PRINCIPAL, got {' '.join(words)!r}")
    at = upper.index(keyword, on + 1)
    if at != len(words) - 2:
        raise InvalidArgument(f"expected one PRINCIPAL after {keyword}, got {' '.join(words[at + 1:])!r}")
    return " ".join(words[:on]), words[on + 1:at], words[-1], words


def _shown(on: Any) -> str:
    return on if isinstance(on, str) else ".".join(on)


def cmd_grant(ctx: Context, args: argparse.Namespace) -> int:
    privilege, obj, who, _ = _split(args.words, "TO")
    on = target(obj, args.catalog)
    done = ctx.metastore.grant(privilege, on, who)
    return _done(ctx, done, f"granted {privilege.upper()} on {_shown(on)} to {who}",
                 f"{who} holds {privilege.upper()} on {_shown(on)} already")


def cmd_revoke(ctx: Context, args: argparse.Namespace) -> int:
    privilege, obj, who, _ = _split(args.words, "FROM")
    on = target(obj, args.catalog)
    done = ctx.metastore.revoke(privilege, on, who)
    return _done(ctx, done, f"revoked {privilege.upper()} on {_shown(on)} from {who}",
                 f"{privilege.upper()} on {_shown(on)} was not granted to {who}")


def cmd_grants(ctx: Context, args: argparse.Namespace) -> int:
    on = target(args.words, args.catalog) if args.words else None
    rows = [r.to_json() for r in ctx.metastore.grants(on)]
    ctx.table(rows, ["object_kind", "object", "principal", "privilege", "granted_by", "inherited_from"])
    return 0


def cmd_roles_list(ctx: Context, args: argparse.Namespace) -> int:
    rows = [{**r, "role": f"role:{r['role']}", "members": r["members"] if ctx.json else ", ".join(r["members"])}
            for r in ctx.metastore.roles()]
    ctx.table(rows, ["role", "members", "comment", "created_by"])
    return 0


def cmd_whoami(ctx: Context, args: argparse.Namespace) -> int:
    ms = ctx.metastore
    caller = ms.caller()
    ctx.emit({"user": caller.user, "authorization": caller.authorization, "principals": sorted(ms.principals_of())},
             lambda d: f"{d['user']} ({'authorization on' if d['authorization'] else 'store administrator'}): "
                       + ", ".join(d["principals"]))
    return 0


#: commands that read or change the store outside the metastore's checked calls, and what they need
COMMAND_RULES: dict[str, Requirement] = {
    "lineage": Requirement(SELECT, PROJECT, covers=True),
    **{c: Requirement(MANAGE, PROJECT, covers=True) for c in ("write", "writes", "repair-pending", "purge")},
    **{c: Requirement(OWN, PROJECT, covers=True) for c in ("check", "repair-counter", "tokens", "stats",
                                                            "import-hive", "demo", "init", "serve", "ui")},
}


@contextlib.contextmanager
def command_scope(ctx: Context, args: argparse.Namespace) -> Iterator[None]:
    """With ``--user``, a command of :data:`COMMAND_RULES` is checked first (in a transaction of its own:
    these commands run many) and covers what it does; other commands are checked call by call."""
    if not getattr(ctx, "user", None):
        yield
        return
    req = COMMAND_RULES.get(str(args.command))
    if req is None:
        yield
        return
    with requiring(req):
        ctx.metastore.run(lambda tr: None)
        yield


__all__ = ["COMMAND_RULES", "OBJECT", "command_scope", "register", "target"]
