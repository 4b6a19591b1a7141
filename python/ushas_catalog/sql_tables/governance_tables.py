"""The governance system tables (docs/governance.md): ``<catalog>.system.grants`` (the grants in force on
the project and on this catalog's objects) and ``<catalog>.system.audit`` (grants, revokes, role changes
and refused calls, from the change feed)."""
from __future__ import annotations

import json
import uuid
from typing import Any, Iterator

from ..governance import grants as g
from ..governance import policy as policies
from ..kv.base import Transaction
from ..model.names import CatalogName
from .columns import Column, TableDef, micros
from .context import ReadContext
from .filters import Filters

Rows = Iterator[tuple[Any, Any]]

#: the change-feed kinds the audit table shows
AUDITED = frozenset({"GRANTED", "REVOKED", "ROLE_CHANGED", "ACCESS_DENIED"})
#: table commits the audit shows too: row filters and column masks (catalog.row_policies)
AUDITED_OPERATIONS = frozenset({"SET ROW FILTER", "DROP ROW FILTER", "SET COLUMN MASK", "DROP COLUMN MASK"})


def _grants(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    def read(tr: Transaction) -> list[g.GrantRow]:
        p = policies.load(tr, ctx.ms.layout, ctx.ms.project)
        cid = ctx.ms.resolver.catalog(tr, CatalogName(ctx.catalog), load=False).id
        keep: list[g.GrantRow] = []
        for oid, holders in p.grants.items():
            for holder, privs in sorted(holders.items()):
                for priv, rec in sorted(privs.items()):
                    ancestors = {uuid.UUID(bytes=a) for a in rec.ancestor_ids}
                    if oid in (policies.PROJECT_ID, cid) or cid in ancestors:
                        keep.append(g.GrantRow(rec.object_kind, rec.object_name, holder, priv, rec.granted_by,
                                               rec.granted_micros))
        return keep

    done = token if isinstance(token, int) else 0
    for n, r in enumerate(ctx.ms.run(read), start=1):
        if n > done:
            yield n, [r.object_kind, r.object_name, r.principal, r.privilege, r.granted_by, r.granted_micros]


def _audit(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    for c in ctx.ms.changes(since=token if isinstance(token, str) else None):
        if c.change not in AUDITED and c.operation not in AUDITED_OPERATIONS:
            yield c.cursor, None
            continue
        d = dict(c.detail)
        yield c.cursor, [micros(c.committed_at), c.change, c.operation, c.user, c.kind, c.name,
                         d.pop("privilege", None), d.pop("principal", None) or d.pop("member", None) or d.pop("exempt", None) or None,
                         d.pop("message", None), json.dumps(d, default=str), c.cursor]


GOVERNANCE_TABLES: dict[str, TableDef] = {t.name: t for t in (
    TableDef("grants", (Column("object_kind", "string", "project, catalog, database, table, view, function"),
                        Column("object", "string", "its name when granted (grants follow renames)"),
                        Column("principal", "string", "user:NAME, group:NAME, role:NAME"),
                        Column("privilege", "string", "USE, SELECT, MODIFY, CREATE, MANAGE, OWN"),
                        Column("granted_by", "string"), Column("granted_at", "timestamp")),
             "the grants in force on the project and on this catalog's objects (``ushas grants``)", _grants),
    TableDef("audit", (Column("time", "timestamp"),
                       Column("change", "string", "GRANTED, REVOKED, ROLE_CHANGED, ACCESS_DENIED, "
                                                           "ALTERED (a row filter or column mask)"),
                       Column("operation", "string", "GRANT, REVOKE, CREATE ROLE, ADD MEMBER, DENIED, SET ROW FILTER, ..."),
                       Column("user", "string", "who made the call"),
                       Column("object_kind", "string"), Column("object", "string"),
                       Column("privilege", "string"), Column("principal", "string", "the grantee, member or exempt principal"),
                       Column("message", "string", "a refusal's message"), Column("detail", "string", "JSON"),
                       Column("cursor", "string", "the change-feed cursor of the event")),
             "governance events from the change feed (``ushas changes``)", _audit),
)}
