"""Declared external locations of a project (docs/governance.md, "External locations"), as Unity Catalog's:
a name and a storage URL under which tables and partitions may be placed (``CREATE EXTERNAL TABLE``) and
files read or written by path (``READ FILES``, ``WRITE FILES``), each a privilege granted on the location.

The records live in the project's ``Access`` subspace next to the grants, so they are part of the policy
snapshot (:class:`~.policy.Policy`) every check reads anyway: finding the location that holds a path costs
no read of its own. Each change is made in the caller's transaction with a new policy state token."""
from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from .. import records as rec
from ..data.locations import normalized
from ..errors import AlreadyExists, InvalidArgument, NotFound
from ..keyspace.layout import ACCESS, LOCATION, PRIVILEGE, Layout
from ..kv.base import Transaction
from ..records.governance_pb2 import LocationRecord
from ..records.store import RecordStore
from . import policy as policies
from .privileges import Securable

Change = rec.ChangeEvent.Change
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")


@dataclass(frozen=True)
class Location:
    """A declared external location as listed."""

    name: str
    url: str
    id: uuid.UUID
    comment: str = ""
    created_by: str = ""
    created_micros: int = 0

    @staticmethod
    def of(name: str, r: LocationRecord) -> "Location":
        return Location(name, r.url, uuid.UUID(bytes=r.id), r.comment, r.created_by, r.created_micros)

    def securable(self) -> Securable:
        return Securable("location", self.name, (policies.PROJECT_ID, self.id))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "url": self.url, "id": str(self.id), "comment": self.comment,
                "created_by": self.created_by, "created_micros": self.created_micros}


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgument(f"location name {name!r}: letters, digits, _ and -, starting with a letter or _ "
                              f"(at most 128)")
    return name


def check_url(url: Any) -> str:
    """The URL as stored: absolute (a scheme, or a path from ``/``), normalized, not the root."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidArgument("a location's URL must be a non-empty string (s3a://bucket/dir, file:/dir, /dir)")
    text = url.strip()
    if "://" not in text and not text.startswith(("/", "file:")):
        raise InvalidArgument(f"location URL {url!r} is not absolute: give a scheme (s3a://…, file:/…) or a path "
                              f"from /")
    out = normalized(text).rstrip("/")
    if out in ("", "file:", "file://") or out.endswith(":") or out.endswith(":/"):
        raise InvalidArgument(f"location URL {url!r} names a whole file system: declare a directory")
    return out


def inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it (both normalized here)."""
    x, y = normalized(path).rstrip("/"), normalized(root).rstrip("/")
    return x == y or x.startswith(y + "/")


def holding(p: policies.Policy, path: str) -> Location | None:
    """The declared location ``path`` lies in (the deepest one), or None."""
    best: tuple[int, str, LocationRecord] | None = None
    for name, r in p.locations.items():
        if inside(path, r.url) and (best is None or len(r.url) > best[0]):
            best = (len(r.url), name, r)
    return None if best is None else Location.of(best[1], best[2])


def within(p: policies.Policy, path: str) -> list[Location]:
    """The declared locations lying under ``path`` (reading ``path`` reads them)."""
    return [Location.of(n, r) for n, r in sorted(p.locations.items()) if inside(r.url, path) and
            normalized(r.url).rstrip("/") != normalized(path).rstrip("/")]


def _now() -> int:
    return time.time_ns() // 1000


def _event(change: int, name: str, object_id: uuid.UUID, operation: str, by: str, **detail: Any) -> dict[str, Any]:
    return {"kind": "location", "name": name, "object_id": object_id, "version": 0, "operation": operation,
            "change": change, "purged": False, "detail": detail, "user": by.removeprefix("user:")}


def create(tr: Transaction, layout: Layout, project: str, name: str, url: str, *, by: str,
           comment: str = "") -> tuple[Location, dict[str, Any]]:
    """Declare location ``name`` at ``url``: AlreadyExists for a taken name, InvalidArgument for a URL
    inside, holding or equal to another location's (a path has one location)."""
    name, url = check_name(name), check_url(url)
    p = policies.load(tr, layout, project)
    if name in p.locations:
        raise AlreadyExists(f"external location {name} already exists in project {project!r}", location=name)
    for other, r in p.locations.items():
        if inside(url, r.url) or inside(r.url, url):
            raise InvalidArgument(f"external location {name} at {url} overlaps external location {other} at {r.url}: "
                                  f"locations may not lie inside one another")
    record = LocationRecord(id=uuid.uuid4().bytes, url=url, comment=comment or "", created_by=by,
                            created_micros=_now())
    RecordStore.of(layout.project(project).add(ACCESS), LOCATION).save(tr, (name,), record, new=True)
    policies.touch(tr, layout, project)
    loc = Location.of(name, record)
    return loc, _event(Change.CREATED, name, loc.id, "CREATE LOCATION", by, url=url)


def drop(tr: Transaction, layout: Layout, project: str, name: str, *, by: str) -> dict[str, Any]:
    """Drop location ``name`` and every grant on it."""
    p = policies.load(tr, layout, project)
    r = p.locations.get(name)
    if r is None:
        raise NotFound(f"external location {name} does not exist in project {project!r}", location=name)
    base = layout.project(project).add(ACCESS)
    RecordStore.of(base, LOCATION).delete(tr, (name,))
    lid = uuid.UUID(bytes=r.id)
    grants = RecordStore.of(base, PRIVILEGE)
    for holder, privs in p.grants.get(lid, {}).items():
        for priv in privs:
            grants.delete(tr, (lid, holder, priv))
    policies.touch(tr, layout, project)
    return _event(Change.DROPPED, name, lid, "DROP LOCATION", by, url=r.url)


def get(p: policies.Policy, project: str, name: str) -> Location:
    r = p.locations.get(name)
    if r is None:
        raise NotFound(f"external location {name} does not exist in project {project!r}: ushas locations list",
                       location=name)
    return Location.of(name, r)


def listed(p: policies.Policy) -> list[Location]:
    return [Location.of(n, r) for n, r in sorted(p.locations.items())]


__all__ = ["Location", "check_name", "check_url", "create", "drop", "get", "holding", "inside", "listed", "within"]
