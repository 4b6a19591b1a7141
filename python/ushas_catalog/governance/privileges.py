"""Privileges, the objects they are granted on, and the check (:func:`allowed`, :func:`authorize`).

Privileges: ``USE`` (see the object: load, list, describe), ``SELECT`` (read its data and metadata
tables), ``MODIFY`` (write its data, partitions), ``CREATE`` (create objects inside it), ``MANAGE``
(alter, drop, rename, grant on it), ``OWN`` (everything). A grant on a catalog or database applies to
everything inside it (and one on the project to the whole project). Any privilege on an object or its
ancestors lets the holder see it (USE).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..errors import PermissionDenied
from ..keyspace.layout import Layout
from ..kv.base import Transaction
from . import policy as policies
from .principals import of_policy

USE, SELECT, MODIFY, CREATE, MANAGE, OWN = "USE", "SELECT", "MODIFY", "CREATE", "MANAGE", "OWN"
#: the privileges of a declared external location (docs/governance.md, "External locations"): placing a
#: table's or a partition's data in it, reading its files by path, writing files to it by path
CREATE_EXTERNAL_TABLE, READ_FILES, WRITE_FILES = "CREATE EXTERNAL TABLE", "READ FILES", "WRITE FILES"
PRIVILEGES = (USE, SELECT, MODIFY, CREATE, MANAGE, OWN, CREATE_EXTERNAL_TABLE, READ_FILES, WRITE_FILES)
LOCATION_PRIVILEGES = (CREATE_EXTERNAL_TABLE, READ_FILES, WRITE_FILES)
KINDS = ("project", "catalog", "database", "table", "view", "function", "location")


def privilege(text: str) -> str:
    """``"select"`` -> ``"SELECT"``, ``"read_files"`` -> ``"READ FILES"``; raises ValueError on an unknown
    privilege."""
    p = " ".join(text.replace("_", " ").split()).upper()
    if p not in PRIVILEGES:
        raise ValueError(f"unknown privilege {text!r}: one of {', '.join(PRIVILEGES)}")
    return p


@dataclass(frozen=True)
class Securable:
    """An object privileges are granted on: its kind, name (for messages) and the ids of the project,
    its catalog, its database and itself (``ids[-1]`` is the object; a missing object's chain stops
    at the deepest existing ancestor and ``exists`` is False)."""

    kind: str
    name: str
    ids: tuple[uuid.UUID, ...]
    exists: bool = True

    @staticmethod
    def project(name: str) -> "Securable":
        return Securable("project", name, (policies.PROJECT_ID,))


def effective(p: policies.Policy, holders: frozenset[str], target: Securable) -> set[str]:
    """The privileges ``holders`` have on ``target``: granted on it or any of its ancestors."""
    out: set[str] = set()
    for oid in target.ids:
        out |= p.privileges_on(oid, holders)
    return out


def allowed(p: policies.Policy, holders: frozenset[str], wanted: str, target: Securable) -> bool:
    have = effective(p, holders, target)
    if OWN in have or wanted in have:
        return True
    return wanted == USE and (bool(have) or (target.exists and p.holds_inside(target.ids[-1], holders)))


#: the kinds of object ``ushas grant`` names (``... ON KIND NAME``)
_GRANTABLE = ("table", "view", "database", "catalog", "function", "location")


def denied_message(user: str, wanted: str, target: Securable) -> str:
    """The refusal, with what would allow the call: the privilege it needs and how an owner grants it."""
    first = wanted.split(" or ")[0]
    out = f"User {user} does not have {wanted} on {target.kind} {target.name}"
    if first == USE:
        out += " (USE comes with any privilege on it, or on an object inside it)"
    if target.kind == "project":
        on = "PROJECT"
    elif target.kind in _GRANTABLE:
        on = f"{target.kind.upper()} {target.name}"
    else:
        return out
    return f"{out}; an owner allows it with: ushas grant {first} ON {on} TO user:{user}"


def authorize(tr: Transaction, layout: Layout, project: str, user: str, wanted: str, target: Securable,
              alternative: str = "", policy: policies.Policy | None = None) -> None:
    """Raise :class:`PermissionDenied` unless ``user`` (with its groups and roles) holds ``wanted`` (or
    ``alternative``) on ``target`` in ``project``, read in ``tr`` (one point read; one range read after a
    policy change; none when the caller passes the ``policy`` it has just read in ``tr``)."""
    p = policy if policy is not None else policies.load(tr, layout, project)
    holders = of_policy(p, user)
    if not allowed(p, holders, wanted, target) and not (alternative and allowed(p, holders, alternative, target)):
        shown = f"{wanted} or {alternative}" if alternative else wanted
        raise PermissionDenied(denied_message(user, shown, target), privilege=shown, object=target.name,
                               object_kind=target.kind, user=user)
