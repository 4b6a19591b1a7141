"""A project's access policy (roles, members, grants) as one immutable in-memory snapshot.

Everything lives in the project's ``Access`` subspace (``keyspace.layout.ACCESS_CHILDREN``), which is
small. Its ``AccessState`` record gets a new random token on every change, so a process keeps the
snapshot of the last token it read: checking a call costs one point read (the state record, which also
puts the policy in the transaction's read set, so a concurrent grant or revoke conflicts with it) and,
after a change, one range read of the subspace.
"""
from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import fdb.tuple as fdbtuple

from ..keyspace.layout import ACCESS, ACCESS_STATE, LOCATION, PRIVILEGE, ROLE, ROLE_MEMBER, Layout
from ..kv.base import Transaction
from ..records.governance_pb2 import AccessState, GrantRecord, LocationRecord, MemberRecord, RoleRecord
from ..records.store import RecordStore

#: the object id grants on the whole project are kept under
PROJECT_ID = uuid.UUID(int=0)


@dataclass(frozen=True)
class Policy:
    """Roles, members and grants of one project at one state token (``b""``: nothing ever granted)."""

    token: bytes = b""
    roles: dict[str, RoleRecord] = field(default_factory=dict)
    #: container principal (``role:R`` / ``group:G``) -> member principal -> record
    members: dict[str, dict[str, MemberRecord]] = field(default_factory=dict)
    #: object id -> principal -> privilege -> record
    grants: dict[uuid.UUID, dict[str, dict[str, GrantRecord]]] = field(default_factory=dict)
    #: declared external locations: name -> record (``governance.locations``)
    locations: dict[str, LocationRecord] = field(default_factory=dict)
    _inside_cache: dict[str, dict[uuid.UUID, set[str]]] = field(default_factory=dict, compare=False, repr=False)
    #: the answers of :meth:`expand` (the snapshot never changes: each user's principals are computed once)
    _expanded: dict[frozenset[str], frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    def containers(self) -> dict[str, set[str]]:
        """member principal -> the containers it belongs to directly."""
        out: dict[str, set[str]] = {}
        for container, members in self.members.items():
            for m in members:
                out.setdefault(m, set()).add(container)
        return out

    def expand(self, start: frozenset[str]) -> frozenset[str]:
        """``start`` and every role / group its principals belong to, directly or through nested roles."""
        found = self._expanded.get(start)
        if found is not None:
            return found
        up = self.containers()
        seen = set(start)
        todo = list(start)
        while todo:
            for c in up.get(todo.pop(), ()):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        if len(self._expanded) >= 1024:
            self._expanded.clear()
        out = self._expanded[start] = frozenset(seen)
        return out

    def inside(self) -> dict[uuid.UUID, set[str]]:
        """object id -> the principals holding a privilege on something inside it."""
        out: dict[uuid.UUID, set[str]] = {}
        for on in self.grants.values():
            for holder, privs in on.items():
                for g in privs.values():
                    for a in g.ancestor_ids:
                        out.setdefault(uuid.UUID(bytes=a), set()).add(holder)
        return out

    def holds_inside(self, object_id: uuid.UUID, holders: frozenset[str]) -> bool:
        """Whether ``holders`` hold a privilege on something inside ``object_id``."""
        inside = self._inside_cache.get("v")
        if inside is None:
            inside = self._inside_cache["v"] = self.inside()
        return bool(inside.get(object_id, set()) & holders)

    def privileges_on(self, object_id: uuid.UUID, holders: frozenset[str]) -> set[str]:
        """The privileges ``holders`` were granted directly on ``object_id``."""
        on = self.grants.get(object_id)
        if not on:
            return set()
        out: set[str] = set()
        for p in holders:
            out.update(on.get(p, ()))
        return out


_CACHE: "OrderedDict[bytes, Policy]" = OrderedDict()
_LOCK = threading.Lock()
_CACHE_SIZE = 64
EMPTY = Policy()


_STATE_STORES: dict[tuple[bytes, str], RecordStore[AccessState]] = {}


def _state_store(layout: Layout, project: str) -> RecordStore[AccessState]:
    """The store of ``project``'s state record (its key path is built once per project)."""
    key = (layout.prefix, project)
    found = _STATE_STORES.get(key)
    if found is None:
        if len(_STATE_STORES) >= 1024:
            _STATE_STORES.clear()
        found = _STATE_STORES[key] = RecordStore.of(layout.project(project).add(ACCESS), ACCESS_STATE)
    return found


def load(tr: Transaction, layout: Layout, project: str) -> Policy:
    """The policy of ``project`` as ``tr`` sees it: one point read, plus one range read when the
    snapshot this process holds is not the current one."""
    st = _state_store(layout, project).load(tr, ())
    if st is None:
        return EMPTY
    with _LOCK:
        found = _CACHE.get(st.token)
        if found is not None:
            _CACHE.move_to_end(st.token)
            return found
    policy = read(tr, layout, project, st.token)
    with _LOCK:
        _CACHE[st.token] = policy
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return policy


def read(tr: Transaction, layout: Layout, project: str, token: bytes) -> Policy:
    """Every role, member, grant and external location of ``project``: one range read of its ``Access``
    subspace."""
    base = layout.project(project).add(ACCESS)
    stores = {s: RecordStore.of(base, s) for s in (ROLE, ROLE_MEMBER, PRIVILEGE, LOCATION)}
    prefixes = [(st.prefix, name) for name, st in stores.items()]
    roles: dict[str, RoleRecord] = {}
    members: dict[str, dict[str, MemberRecord]] = {}
    grants: dict[uuid.UUID, dict[str, dict[str, GrantRecord]]] = {}
    locations: dict[str, LocationRecord] = {}
    for kv in tr.get_range(*base.range()):
        for prefix, sub in prefixes:
            if kv.key.startswith(prefix) and len(kv.key) > len(prefix):
                pk = fdbtuple.unpack(kv.key[len(prefix):])
                if sub is ROLE:
                    roles[pk[0]] = RoleRecord.FromString(kv.value)
                elif sub is ROLE_MEMBER:
                    members.setdefault(pk[0], {})[pk[1]] = MemberRecord.FromString(kv.value)
                elif sub is LOCATION:
                    locations[pk[0]] = LocationRecord.FromString(kv.value)
                else:
                    grants.setdefault(pk[0], {}).setdefault(pk[1], {})[pk[2]] = GrantRecord.FromString(kv.value)
                break
    return Policy(token, roles, members, grants, locations)


def touch(tr: Transaction, layout: Layout, project: str,
          change: Callable[[Policy, bytes], Policy] | None = None) -> None:
    """Record a change of the policy: a new state token (every process re-reads the policy once).

    ``change``: what this write did to the policy (the one record it saved or deleted just before), as a
    function of the snapshot at the state ``tr`` replaces and the new token. When this process holds that
    snapshot, the new state's snapshot is derived from it here and cached under the new token, so that the
    next check reads no more than the state record (a creator's OWN grant no longer costs every process's
    next call a read of the whole policy). The token is new and random: the derived snapshot is found only
    once this transaction committed it, and ``tr`` read the old state, so a concurrent change of the policy
    conflicts with it. The derived snapshot equals what :func:`read` returns at the new token (a test
    compares them)."""
    store = RecordStore.of(layout.project(project).add(ACCESS), ACCESS_STATE)
    old = store.load(tr, ())
    token = uuid.uuid4().bytes
    store.save(tr, (), AccessState(token=token, changes=(old.changes if old else 0) + 1))
    if change is None or old is None:
        return
    with _LOCK:
        base = _CACHE.get(old.token)
    if base is None:
        return
    derived = change(base, token)
    with _LOCK:
        _CACHE[token] = derived
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)


def granted(oid: uuid.UUID, holder: str, privilege: str, record: GrantRecord) -> Callable[[Policy, bytes], Policy]:
    """A :func:`touch` change: ``holder`` was granted ``privilege`` on object ``oid`` (``record`` saved)."""
    def change(p: Policy, token: bytes) -> Policy:
        grants = dict(p.grants)
        on = grants[oid] = dict(grants.get(oid, {}))
        kept = GrantRecord()
        kept.CopyFrom(record)  # the snapshot's own copy: the caller's message may change after
        on[holder] = {**on.get(holder, {}), privilege: kept}
        return Policy(token, p.roles, p.members, grants, p.locations)

    return change


def revoked(oid: uuid.UUID, holder: str, privilege: str) -> Callable[[Policy, bytes], Policy]:
    """A :func:`touch` change: ``holder``'s grant of ``privilege`` on object ``oid`` was deleted."""
    def change(p: Policy, token: bytes) -> Policy:
        grants = dict(p.grants)
        on = grants[oid] = dict(grants.get(oid, {}))
        held = on[holder] = dict(on.get(holder, {}))
        held.pop(privilege, None)
        if not held:
            del on[holder]
        if not on:
            del grants[oid]
        return Policy(token, p.roles, p.members, grants, p.locations)

    return change
