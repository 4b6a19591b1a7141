"""Versioned objects (docs/objects.md): ``ushas objects create DB.OBJECT --kind volume|model|file --location URI``,
``objects alter|add-version|rollback|list|show|versions|history|drop|undrop|purge``, and user-defined subspaces
``objects register-type|types|put|get|scan|delete``. Reads take ``--json``."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import InvalidArgument, NotFound
from ..model.versioned_objects import ObjectInfo, ObjectVersionInfo
from .context import Context


def _reads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def _props(p: argparse.ArgumentParser) -> None:
    p.add_argument("--property", "-p", action="append", default=[], metavar="KEY=VALUE", dest="properties",
                   help="a property (repeatable)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("objects", help="versioned objects (volumes, models, files) of a database",
                       description="Create, version, roll back, drop and undrop the versioned objects of a "
                                   "database, and read / write their user-defined subspaces (docs/objects.md).")
    actions = p.add_subparsers(dest="objects_action", metavar="ACTION", required=True)
    c = actions.add_parser("create", help="a new object: DB.OBJECT --kind volume|model|file --location URI")
    c.add_argument("name", help="catalog.database.object")
    c.add_argument("--kind", required=True, help="volume, model, file (or another kind by name)")
    c.add_argument("--location", required=True, metavar="URI", help="where the object's data is")
    c.add_argument("--comment")
    c.add_argument("--if-not-exists", action="store_true")
    _props(c)
    _reads(c)
    c.set_defaults(func=cmd_create)
    a = actions.add_parser("alter", help="change location, properties or comment (the next metadata version)")
    a.add_argument("name", help="catalog.database.object")
    a.add_argument("--location", metavar="URI")
    a.add_argument("--comment")
    a.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a property (repeatable)")
    _props(a)
    _reads(a)
    a.set_defaults(func=cmd_alter)
    v = actions.add_parser("add-version", help="a new data version (made current)")
    v.add_argument("name", help="catalog.database.object")
    v.add_argument("--location", metavar="URI", help="the version's data (default: the object's location)")
    v.add_argument("--comment")
    _props(v)
    _reads(v)
    v.set_defaults(func=cmd_add_version)
    r = actions.add_parser("rollback", help="a new data version copying an earlier one")
    r.add_argument("name", help="catalog.database.object")
    r.add_argument("--to", type=int, required=True, metavar="VERSION", help="the version to go back to")
    _reads(r)
    r.set_defaults(func=cmd_rollback)
    ls = actions.add_parser("list", help="the objects of a database")
    ls.add_argument("database", help="catalog.database")
    ls.add_argument("--kind", help="only objects of this kind")
    ls.add_argument("--dropped", action="store_true", help="the dropped objects (undroppable until purge)")
    _reads(ls)
    ls.set_defaults(func=cmd_list)
    show = actions.add_parser("show", help="one object; --version N / --as-of TIME: one of its data versions")
    show.add_argument("name", help="catalog.database.object")
    show.add_argument("--version", type=int, metavar="N", help="data version N")
    show.add_argument("--as-of", metavar="TIME", help="the data version current at TIME (ISO-8601)")
    _reads(show)
    show.set_defaults(func=cmd_show)
    vs = actions.add_parser("versions", help="the data versions of an object, newest first")
    vs.add_argument("name", help="catalog.database.object")
    vs.add_argument("--limit", type=int, metavar="N")
    _reads(vs)
    vs.set_defaults(func=cmd_versions)
    h = actions.add_parser("history", help="the commits of an object, newest first")
    h.add_argument("name", help="catalog.database.object")
    h.add_argument("--limit", type=int, metavar="N")
    _reads(h)
    h.set_defaults(func=cmd_history)
    d = actions.add_parser("drop", help="drop an object (undrop brings it back until purge)")
    d.add_argument("name", help="catalog.database.object")
    d.set_defaults(func=cmd_drop)
    u = actions.add_parser("undrop", help="bring a dropped object back")
    u.add_argument("name", help="catalog.database.object")
    u.add_argument("--id", help="which dropped object of that name (default: the last dropped)")
    _reads(u)
    u.set_defaults(func=cmd_undrop)
    pg = actions.add_parser("purge", help="remove dropped objects of a database for good (not their files)")
    pg.add_argument("database", help="catalog.database")
    pg.add_argument("--name", help="only the dropped objects of this name")
    pg.add_argument("--older-than", metavar="DURATION", help="only those dropped longer ago (90s, 12h, 7d, ...)")
    _reads(pg)
    pg.set_defaults(func=cmd_purge)
    _register_subspaces(actions)


def _register_subspaces(actions: argparse._SubParsersAction) -> None:
    rt = actions.add_parser("register-type", help="a user-defined subspace: records of a protobuf message type")
    rt.add_argument("name", help="catalog.database.object")
    rt.add_argument("subspace", help="the subspace's name")
    rt.add_argument("descriptor", help="a .proto file, or a FileDescriptorSet file (protoc --include_imports "
                                       "--descriptor_set_out)")
    rt.add_argument("--message", help="the message type's full name (default: the file's one message)")
    rt.add_argument("--key", required=True, action="append", metavar="FIELD",
                    help="a primary key field (repeatable, in key order)")
    _reads(rt)
    rt.set_defaults(func=cmd_register_type)
    ts = actions.add_parser("types", help="the user-defined subspaces of an object")
    ts.add_argument("name", help="catalog.database.object")
    _reads(ts)
    ts.set_defaults(func=cmd_types)
    put = actions.add_parser("put", help="store a record (JSON of its fields) in a user-defined subspace")
    put.add_argument("name", help="catalog.database.object")
    put.add_argument("subspace")
    put.add_argument("record", help="the record as a JSON object")
    _reads(put)
    put.set_defaults(func=cmd_put)
    get = actions.add_parser("get", help="the record of a primary key")
    get.add_argument("name", help="catalog.database.object")
    get.add_argument("subspace")
    get.add_argument("key", help="the primary key as JSON: a value, or a list of them")
    _reads(get)
    get.set_defaults(func=cmd_get)
    sc = actions.add_parser("scan", help="records in primary key order")
    sc.add_argument("name", help="catalog.database.object")
    sc.add_argument("subspace")
    sc.add_argument("--from", dest="start", metavar="KEY", help="first key or key prefix (JSON), inclusive")
    sc.add_argument("--to", dest="end", metavar="KEY", help="last key or key prefix (JSON), exclusive")
    sc.add_argument("--limit", type=int, metavar="N")
    sc.add_argument("--reverse", action="store_true")
    _reads(sc)
    sc.set_defaults(func=cmd_scan)
    de = actions.add_parser("delete", help="remove the record of a primary key")
    de.add_argument("name", help="catalog.database.object")
    de.add_argument("subspace")
    de.add_argument("key", help="the primary key as JSON: a value, or a list of them")
    de.set_defaults(func=cmd_delete)


def _pairs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidArgument(f"--property: expected KEY=VALUE, not {pair!r}")
        out[key] = value
    return out


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidArgument(f"{what}: not JSON ({e.msg}): {text!r}") from None


def _show_object(o: ObjectInfo) -> str:
    props = ", ".join(f"{k}={v}" for k, v in sorted(o.properties.items()))
    return "\n".join([f"object     {o.qualified_name}", f"kind       {o.kind}", f"location   {o.location}",
                      f"version    {o.current_version or '-'} (data), {o.version} (metadata)",
                      f"properties {props}", f"comment    {o.comment or ''}", f"owner      {o.owner or ''}",
                      f"subspaces  {', '.join(o.types)}", f"created    {o.created_at.isoformat(timespec='seconds')}",
                      f"updated    {o.updated_at.isoformat(timespec='seconds')}", f"id         {o.id}"])


def _show_version(v: ObjectVersionInfo) -> str:
    props = ", ".join(f"{k}={x}" for k, x in sorted(v.properties.items()))
    back = f" (rollback to {v.rolled_back_from})" if v.rolled_back_from else ""
    return "\n".join([f"object     {v.object}", f"version    {v.version}{' (current)' if v.current else ''}{back}",
                      f"location   {v.location}", f"properties {props}", f"comment    {v.comment or ''}",
                      f"created    {v.created_at.isoformat(timespec='seconds')} by {v.created_by}",
                      f"dataset    {v.dataset}"])


def cmd_create(ctx: Context, args: argparse.Namespace) -> int:
    o = ctx.metastore.objects.create(args.name, args.kind, args.location, properties=_pairs(args.properties),
                                     comment=args.comment, if_not_exists=args.if_not_exists)
    ctx.emit(o.to_json(), lambda d: f"created {o.kind} {o.qualified_name} at {o.location}")
    return 0


def cmd_alter(ctx: Context, args: argparse.Namespace) -> int:
    o = ctx.metastore.objects.alter(args.name, location=args.location, properties=_pairs(args.properties),
                                    unset_properties=args.unset, comment=args.comment)
    ctx.emit(o.to_json(), lambda d: f"altered {o.qualified_name} (metadata version {o.version})")
    return 0


def cmd_add_version(ctx: Context, args: argparse.Namespace) -> int:
    v = ctx.metastore.objects.add_version(args.name, args.location, properties=_pairs(args.properties),
                                          comment=args.comment)
    ctx.emit(v.to_json(), lambda d: f"{v.object}: version {v.version} at {v.location}")
    return 0


def cmd_rollback(ctx: Context, args: argparse.Namespace) -> int:
    v = ctx.metastore.objects.rollback(args.name, args.to)
    ctx.emit(v.to_json(), lambda d: f"{v.object}: version {v.version} = version {args.to} ({v.location})")
    return 0


def cmd_list(ctx: Context, args: argparse.Namespace) -> int:
    found = ctx.metastore.objects.list(args.database, dropped=args.dropped, kind=args.kind)
    if ctx.json:
        ctx.emit([o.to_json() for o in found])
    else:
        ctx.table([{"name": o.name, "kind": o.kind, "version": str(o.current_version or "-"), "location": o.location}
                   for o in found], ["name", "kind", "version", "location"])
    return 0


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    if args.version is not None or args.as_of is not None:
        v = ctx.metastore.objects.version(args.name, args.version, as_of=args.as_of)
        ctx.emit(v.to_json(), lambda d: _show_version(v))
    else:
        o = ctx.metastore.objects.get(args.name)
        ctx.emit(o.to_json(), lambda d: _show_object(o))
    return 0


def _limit(value: int | None) -> int | None:
    if value is not None and value < 0:
        raise InvalidArgument(f"--limit must be >= 0, not {value}")
    return value


def cmd_versions(ctx: Context, args: argparse.Namespace) -> int:
    found = ctx.metastore.objects.versions(args.name, limit=_limit(args.limit))
    if ctx.json:
        ctx.emit([v.to_json() for v in found])
    else:
        ctx.table([{"version": str(v.version) + (" *" if v.current else ""),
                    "created": v.created_at.isoformat(timespec="seconds"), "by": v.created_by,
                    "location": v.location} for v in found], ["version", "created", "by", "location"])
    return 0


def cmd_history(ctx: Context, args: argparse.Namespace) -> int:
    items = ctx.metastore.objects.history(args.name, limit=_limit(args.limit))
    if ctx.json:
        ctx.emit([h.to_json() for h in items])
    else:
        ctx.table([{"version": str(h.version), "time": h.committed_at.isoformat(timespec="seconds"), "user": h.user,
                    "operation": h.operation} for h in items], ["version", "time", "user", "operation"])
    return 0


def cmd_drop(ctx: Context, args: argparse.Namespace) -> int:
    ctx.metastore.objects.drop(args.name)
    if not ctx.json:
        print(f"dropped object {args.name}")
    return 0


def cmd_undrop(ctx: Context, args: argparse.Namespace) -> int:
    o = ctx.metastore.objects.undrop(args.name, args.id)
    ctx.emit(o.to_json(), lambda d: f"undropped object {o.qualified_name}")
    return 0


def cmd_purge(ctx: Context, args: argparse.Namespace) -> int:
    import time

    from ..changes.feed import parse_duration

    before = None
    if args.older_than:
        before = int((time.time() - parse_duration(args.older_than).total_seconds()) * 1_000_000)
    names = ctx.metastore.objects.purge(args.database, name=args.name, older_than_micros=before)
    ctx.emit({"purged": names}, lambda d: f"purged {len(names)} dropped object(s)"
             + (": " + ", ".join(names) if names else ""))
    return 0


def cmd_register_type(ctx: Context, args: argparse.Namespace) -> int:
    t = ctx.metastore.objects.register_type(args.name, args.subspace, args.descriptor, message_type=args.message,
                                            primary_key=args.key)
    ctx.emit(t.to_json(), lambda d: f"{args.name}: subspace {t.name} of {t.message_type}, "
                                    f"key ({', '.join(t.primary_key)})")
    return 0


def cmd_types(ctx: Context, args: argparse.Namespace) -> int:
    found = ctx.metastore.objects.types(args.name)
    if ctx.json:
        ctx.emit([t.to_json() for t in found])
    else:
        ctx.table([{"subspace": t.name, "message": t.message_type, "key": ", ".join(t.primary_key)} for t in found],
                  ["subspace", "message", "key"])
    return 0


def cmd_put(ctx: Context, args: argparse.Namespace) -> int:
    record = _json_arg(args.record, "record")
    if not isinstance(record, dict):
        raise InvalidArgument("record: a JSON object of the message's fields")
    key = ctx.metastore.objects.put(args.name, args.subspace, record)
    ctx.emit({"key": list(key)}, lambda d: f"stored {args.subspace} {json.dumps(list(key))}")
    return 0


def cmd_get(ctx: Context, args: argparse.Namespace) -> int:
    found = ctx.metastore.objects.read(args.name, args.subspace, _json_arg(args.key, "key"))
    if found is None:
        raise NotFound(f"{args.name}: no {args.subspace} record with key {args.key}")
    ctx.emit(found, lambda d: json.dumps(d, ensure_ascii=False))
    return 0


def cmd_scan(ctx: Context, args: argparse.Namespace) -> int:
    start = None if args.start is None else _json_arg(args.start, "--from")
    end = None if args.end is None else _json_arg(args.end, "--to")
    rows = ctx.metastore.objects.scan(args.name, args.subspace, start, end, limit=_limit(args.limit),
                                      reverse=args.reverse)
    ctx.emit([{"key": list(k), "record": r} for k, r in rows],
             lambda d: "\n".join(f"{json.dumps(x['key'])}\t{json.dumps(x['record'], ensure_ascii=False)}" for x in d))
    return 0


def cmd_delete(ctx: Context, args: argparse.Namespace) -> int:
    if not ctx.metastore.objects.delete(args.name, args.subspace, _json_arg(args.key, "key")):
        raise NotFound(f"{args.name}: no {args.subspace} record with key {args.key}")
    if not ctx.json:
        print(f"deleted {args.subspace} {args.key}")
    return 0
