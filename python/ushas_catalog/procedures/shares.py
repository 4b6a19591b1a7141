"""Shares between projects (:mod:`ushas_catalog.catalog.shares`) as procedures, called in the owner's catalog:
``create_share``, ``add_to_share``, ``remove_from_share``, ``grant_share``, ``revoke_share``, ``drop_share``,
``show_shares``, ``share_usage``; and in the recipient's: ``mount_share``, ``unmount_share``. Objects are
named in the calling catalog: ``'db'`` (a whole database) or ``'db.table'``."""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument, InvalidName
from ..model.names import quote, split_name
from .registry import ACTION, DETAIL, OBJECT, Call, Column, Outcome, Param, procedure

SHARE = Param("share", "STRING", "the share's name")
OBJECT_ARG = Param("object", "STRING", "'db' (a whole database, tables created later included) or 'db.table'")
RECIPIENT = Param("recipient", "STRING", "the project to share with: 'project:NAME'")
VERSION = Column("version", "BIGINT", "the share's version after the call")


def _object(call: Call) -> str:
    """The object argument as a name of this catalog: ``catalog.db`` or ``catalog.db.table``."""
    text = call.required("object")
    parts = split_name(text)
    if len(parts) == 3:
        if parts[0] not in (call.ctx.spark_catalog, call.ctx.catalog):
            raise InvalidArgument(f"object {text!r} names catalog {parts[0]!r}; this is catalog "
                                  f"{call.ctx.spark_catalog!r} (name it as database.table)")
        parts = parts[1:]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise InvalidName(f"object {text!r}: expected 'database' or 'database.table'")
    return ".".join(quote(p) for p in (call.ctx.catalog, *parts))


def _row(action: str, info: Any, detail: str) -> Outcome:
    return Outcome([[action, info.name, detail, info.version]])


@procedure("create_share", "Create a share of this project (read-only, SELECT only)",
           [SHARE, Param("comment", "STRING", "what it is for", "NULL")], [ACTION, OBJECT, DETAIL, VERSION])
def create_share(call: Call) -> Outcome:
    info = call.ms.shares.create(call.required("share"), call.args.get("comment"))
    return _row("CREATE SHARE", info, f"share {info.name} of project {info.project}")


@procedure("add_to_share", "Add a table or a whole database of this catalog to a share",
           [SHARE, OBJECT_ARG], [ACTION, OBJECT, DETAIL, VERSION])
def add_to_share(call: Call) -> Outcome:
    obj = _object(call)
    info = call.ms.shares.add(call.required("share"), obj)
    return _row("ADD TO SHARE", info, obj)


@procedure("remove_from_share", "Remove a table or database from a share (or an object by its id)",
           [SHARE, OBJECT_ARG], [ACTION, OBJECT, DETAIL, VERSION])
def remove_from_share(call: Call) -> Outcome:
    text = call.required("object")
    obj = text if _is_id(text) else _object(call)
    info = call.ms.shares.remove(call.required("share"), obj)
    return _row("REMOVE FROM SHARE", info, obj)


@procedure("grant_share", "Share with another project (it mounts the share as a catalog of its own)",
           [SHARE, RECIPIENT], [ACTION, OBJECT, DETAIL, VERSION])
def grant_share(call: Call) -> Outcome:
    info = call.ms.shares.grant(call.required("share"), call.required("recipient"))
    return _row("GRANT SHARE", info, str(call.args["recipient"]))


@procedure("revoke_share", "Stop sharing with a project (its next catalog call no longer sees the share)",
           [SHARE, RECIPIENT], [ACTION, OBJECT, DETAIL, VERSION])
def revoke_share(call: Call) -> Outcome:
    info = call.ms.shares.revoke(call.required("share"), call.required("recipient"))
    return _row("REVOKE SHARE", info, str(call.args["recipient"]))


@procedure("drop_share", "Drop a share: every recipient loses it at once", [SHARE], [ACTION, OBJECT, DETAIL])
def drop_share(call: Call) -> Outcome:
    name = call.required("share")
    call.ms.shares.drop(name)
    return Outcome([["DROP SHARE", name, "dropped"]])


@procedure("show_shares", "The project's shares, one row per shared object (the system table "
                          "<catalog>.system.shares also lists mounted shares)",
           [Param("share", "STRING", "only this share", "NULL")],
           [Column("share", "STRING"), Column("recipients", "ARRAY<STRING>"), Column("object_kind", "STRING"),
            Column("object", "STRING"), Column("status", "STRING"), Column("version", "BIGINT")])
def show_shares(call: Call) -> Outcome:
    shares = call.ms.shares
    only = call.args.get("share")
    infos = [shares.show(only)] if only else [shares.show(i.name) for i in shares.list()]
    rows: list[list[Any]] = []
    for info in infos:
        for o in info.objects or [None]:
            rows.append([info.name, list(info.recipients), o.kind if o else None, o.name if o else None,
                         o.status if o else None, info.version])
    return Outcome(rows)


@procedure("mount_share", "Mount a share another project granted to this one as a catalog of this project "
                          "(read it with a Spark catalog of that name)",
           [Param("share", "STRING", "OWNER_PROJECT.SHARE"), Param("catalog", "STRING", "the catalog name to mount as")],
           [ACTION, OBJECT, DETAIL])
def mount_share(call: Call) -> Outcome:
    out = call.ms.shares.mount(call.required("share"), call.required("catalog"))
    return Outcome([["MOUNT SHARE", out["catalog"], f"share {out['share']}"]])


@procedure("unmount_share", "Remove a mounted share's catalog name (the owner's share is untouched)",
           [Param("catalog", "STRING", "the mounted catalog")], [ACTION, OBJECT, DETAIL])
def unmount_share(call: Call) -> Outcome:
    name = call.required("catalog")
    call.ms.shares.unmount(name)
    return Outcome([["UNMOUNT SHARE", name, "unmounted"]])


def _is_id(text: Any) -> bool:
    import uuid

    try:
        uuid.UUID(str(text))
    except ValueError:
        return False
    return True
