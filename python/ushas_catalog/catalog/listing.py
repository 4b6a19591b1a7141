"""What a caller sees of the catalog's objects in listings and in search, declared once: :data:`LISTED` on the
object (docs/governance.md, "Enforcement"). The system tables ask it object by object (``ms.may(LISTED, ...)``);
search asks it of all its hits at once (:func:`listed`: one policy read, one read per database)."""
from __future__ import annotations

import uuid
from typing import Any, Sequence

from ..errors import UshasError
from ..governance import policy as policies
from ..governance.identity import Caller
from ..governance.principals import of_policy
from ..governance.privileges import USE, Securable, allowed, effective
from ..kv.base import Transaction
from ..model.names import DatabaseName, TableName
from .authorization import DATABASE, RELATION, securable

#: what a caller sees of an object in listings and in search (docs/governance.md, "Enforcement"): USE on it, which
#: any privilege on it, on an ancestor or on something inside it gives (``governance.privileges.allowed``). The system
#: tables (``ms.may(LISTED, ...)``) and search (:func:`listed`) show exactly the objects a caller holds it on.
LISTED = USE


def listed(tr: Transaction, ms: Any, caller: Caller, objects: Sequence[tuple[str, Any, uuid.UUID | None]]) -> list[bool]:
    """For each ``(kind, name, id)`` (a kind of :func:`securable`; ``id``: the object's, None: whatever the name names):
    whether ``caller`` sees it in a listing or a search — it exists and the caller holds :data:`LISTED` on it. All
    True for a caller whose calls are not checked. Read in ``tr``: the policy once, each database once (a relation
    given with its id — a search hit, whose index entries change with its name in the same transaction — is that
    id in its database: no read of its own, and no check of its own when a privilege on the database or above
    already shows everything in it), other objects by name."""
    if not caller.authorization:
        return [True] * len(objects)
    p = policies.load(tr, ms.layout, ms.project)
    holders = of_policy(p, caller.user)
    #: database (as named) -> (its securable, whether a privilege on it or an ancestor shows all inside it)
    databases: dict[str, tuple[Securable, bool]] = {}

    def database(name: str) -> tuple[Securable, bool]:
        if name not in databases:
            db = securable(tr, ms.resolver, DATABASE, name)
            databases[name] = db, db.exists and bool(effective(p, holders, db))
        return databases[name]

    out = []
    for kind, name, oid in objects:
        try:
            if kind == RELATION and oid is not None:
                db, everything = database(_database_of(name))
                target = Securable("table", str(name), db.ids + (oid,), exists=db.exists)
                out.append(db.exists and (everything or allowed(p, holders, LISTED, target)))
                continue
            target = database(str(DatabaseName.parse(name)))[0] if kind == DATABASE else \
                securable(tr, ms.resolver, kind, name)
        except UshasError:  # a name no longer valid or reachable: not shown
            out.append(False)
            continue
        out.append(target.exists and (oid is None or target.ids[-1] == oid) and allowed(p, holders, LISTED, target))
    return out


def _database_of(relation: Any) -> str:
    """The database part of a relation's qualified name (parsed only when a part is quoted)."""
    if isinstance(relation, str) and "`" not in relation:
        return relation.rsplit(".", 1)[0]
    return str(TableName.parse(relation).database_name)


__all__ = ["LISTED", "listed"]
