"""Grants and roles of a project, each change in the caller's transaction: the records, a new policy
state token (:func:`~.policy.touch`), and the change-feed event (returned, for the catalog layer's
commit hook to record: :class:`~ushas_catalog.catalog.access.AccessOps`)."""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from .. import records as rec
from ..errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied
from ..keyspace.layout import ACCESS, PRIVILEGE, ROLE, ROLE_MEMBER, Layout
from ..kv.base import Transaction
from ..records.governance_pb2 import GrantRecord, MemberRecord, RoleRecord
from ..records.store import RecordStore
from . import policy as policies
from .principals import parse
from .privileges import Securable

Change = rec.ChangeEvent.Change


def _now() -> int:
    return time.time_ns() // 1000


def _base(layout: Layout, project: str) -> Any:
    return layout.project(project).add(ACCESS)


def principal(text: str) -> str:
    """A principal as stored (``user:bob``); InvalidArgument on another shape."""
    try:
        kind, name = parse(text)
    except ValueError as e:
        raise InvalidArgument(str(e)) from None
    return f"{kind}:{name}"


def _event(change: int, kind: str, name: str, object_id: uuid.UUID, operation: str, by: str,
           **detail: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "object_id": object_id, "version": 0, "operation": operation,
            "change": change, "purged": False, "detail": detail, "user": by.removeprefix("user:")}


def grant(tr: Transaction, layout: Layout, project: str, target: Securable, privilege: str, to: str, *,
          by: str) -> dict[str, Any] | None:
    """``to`` gets ``privilege`` on ``target``; the change-feed event, or None when it held it already."""
    store = RecordStore.of(_base(layout, project), PRIVILEGE)
    pk = (target.ids[-1], principal(to), privilege)
    if store.load(tr, pk) is not None:
        return None
    record = GrantRecord(object_kind=target.kind, object_name=target.name, granted_by=by, granted_micros=_now(),
                         ancestor_ids=[i.bytes for i in target.ids[:-1]])
    store.save(tr, pk, record, new=True)
    policies.touch(tr, layout, project, policies.granted(*pk, record))
    return _event(Change.GRANTED, target.kind, target.name, target.ids[-1], "GRANT", by, privilege=privilege,
                  principal=pk[1])


def revoke(tr: Transaction, layout: Layout, project: str, target: Securable, privilege: str, frm: str, *,
           by: str) -> dict[str, Any] | None:
    """``frm`` loses ``privilege`` on ``target`` (granted on it directly); None when it did not hold it."""
    store = RecordStore.of(_base(layout, project), PRIVILEGE)
    pk = (target.ids[-1], principal(frm), privilege)
    if store.load(tr, pk) is None:
        return None
    store.delete(tr, pk)
    policies.touch(tr, layout, project, policies.revoked(*pk))
    return _event(Change.REVOKED, target.kind, target.name, target.ids[-1], "REVOKE", by, privilege=privilege,
                  principal=pk[1])


def create_role(tr: Transaction, layout: Layout, project: str, name: str, *, by: str, comment: str = "",
                if_not_exists: bool = False) -> dict[str, Any] | None:
    role = principal(f"role:{name}").removeprefix("role:")
    store = RecordStore.of(_base(layout, project), ROLE)
    if store.load(tr, (role,)) is not None:
        if if_not_exists:
            return None
        raise AlreadyExists(f"role {role} already exists in project {project!r}", role=role)
    store.save(tr, (role,), RoleRecord(comment=comment, created_by=by, created_micros=_now()), new=True)
    policies.touch(tr, layout, project)
    return _event(Change.ROLE_CHANGED, "role", f"role:{role}", policies.PROJECT_ID, "CREATE ROLE", by)


def drop_role(tr: Transaction, layout: Layout, project: str, name: str, *, by: str) -> dict[str, Any]:
    """Drops the role, its memberships (as container and as member) and its grants."""
    role = name.removeprefix("role:")
    p = policies.load(tr, layout, project)
    base = _base(layout, project)
    if role not in p.roles:
        raise NotFound(f"role {role} does not exist in project {project!r}", role=role)
    RecordStore.of(base, ROLE).delete(tr, (role,))
    members = RecordStore.of(base, ROLE_MEMBER)
    me = f"role:{role}"
    for container, ms in p.members.items():
        for m in ms:
            if container == me or m == me:
                members.delete(tr, (container, m))
    grants = RecordStore.of(base, PRIVILEGE)
    for oid, holders in p.grants.items():
        for priv in holders.get(me, {}):
            grants.delete(tr, (oid, me, priv))
    policies.touch(tr, layout, project)
    return _event(Change.ROLE_CHANGED, "role", me, policies.PROJECT_ID, "DROP ROLE", by)


def add_member(tr: Transaction, layout: Layout, project: str, container: str, member: str, *,
               by: str) -> dict[str, Any] | None:
    """``member`` joins ``container`` (``role:R``, which must exist, or ``group:G``)."""
    c, m = principal(container), principal(member)
    if c.startswith("user:"):
        raise InvalidArgument(f"{c} cannot have members: only roles and groups do")
    p = policies.load(tr, layout, project)
    if c.startswith("role:") and c[5:] not in p.roles:
        raise NotFound(f"role {c[5:]} does not exist in project {project!r}: ushas roles create {c[5:]}")
    if m.startswith("role:") and m[5:] not in p.roles:
        raise NotFound(f"role {m[5:]} does not exist in project {project!r}")
    if c == m or m in p.expand(frozenset({c})):  # m holds c already (directly or nested): a cycle
        raise InvalidArgument(f"{m} cannot join {c}: roles would contain each other")
    store = RecordStore.of(_base(layout, project), ROLE_MEMBER)
    if store.load(tr, (c, m)) is not None:
        return None
    store.save(tr, (c, m), MemberRecord(added_by=by, added_micros=_now()), new=True)
    policies.touch(tr, layout, project)
    return _event(Change.ROLE_CHANGED, "role", c, policies.PROJECT_ID, "ADD MEMBER", by, member=m)


def remove_member(tr: Transaction, layout: Layout, project: str, container: str, member: str, *,
                  by: str) -> dict[str, Any] | None:
    c, m = principal(container), principal(member)
    store = RecordStore.of(_base(layout, project), ROLE_MEMBER)
    if store.load(tr, (c, m)) is None:
        return None
    store.delete(tr, (c, m))
    policies.touch(tr, layout, project)
    return _event(Change.ROLE_CHANGED, "role", c, policies.PROJECT_ID, "REMOVE MEMBER", by, member=m)


def denied_event(error: PermissionDenied) -> dict[str, Any]:
    d = error.detail
    return _event(Change.ACCESS_DENIED, str(d.get("object_kind") or "project"), str(d.get("object") or ""),
                  policies.PROJECT_ID, "DENIED", f"user:{d.get('user', '')}", privilege=d.get("privilege", ""),
                  message=error.message)


@dataclass(frozen=True)
class GrantRow:
    """One grant as listed: on what, to whom, which privilege, whether inherited from an ancestor."""

    object_kind: str
    object_name: str
    principal: str
    privilege: str
    granted_by: str
    granted_micros: int
    inherited_from: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"object_kind": self.object_kind, "object": self.object_name, "principal": self.principal,
                "privilege": self.privilege, "granted_by": self.granted_by, "granted_micros": self.granted_micros,
                "inherited_from": self.inherited_from}


def rows(p: policies.Policy, target: Securable | None = None) -> list[GrantRow]:
    """Every grant of the policy (``target`` None), or the grants that apply to ``target``: on it and on
    its ancestors (``inherited_from`` names the ancestor)."""
    out: list[GrantRow] = []
    ids = list(p.grants) if target is None else list(target.ids)
    for oid in ids:
        for holder, privs in sorted(p.grants.get(oid, {}).items()):
            for priv, g in sorted(privs.items()):
                inherited = "" if target is None or oid == target.ids[-1] else f"{g.object_kind} {g.object_name}"
                out.append(GrantRow(g.object_kind, g.object_name, holder, priv, g.granted_by, g.granted_micros,
                                    inherited))
    return out


def roles(p: policies.Policy) -> list[dict[str, Any]]:
    """Every role with its direct members."""
    return [{"role": name, "comment": r.comment, "created_by": r.created_by,
             "members": sorted(p.members.get(f"role:{name}", {}))} for name, r in sorted(p.roles.items())]
