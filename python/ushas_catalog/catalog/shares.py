"""Shares between projects: the operations (``Metastore.shares``), each one transaction, each an event of
the change feed (kind ``share``; a mount is an event of the recipient's feed).

Owner side: :meth:`Shares.create`, :meth:`~Shares.add`, :meth:`~Shares.remove`, :meth:`~Shares.grant`,
:meth:`~Shares.revoke`, :meth:`~Shares.drop`, :meth:`~Shares.list`, :meth:`~Shares.show`,
:meth:`~Shares.usage` (who in the recipient projects read the shared tables: their lineage).
Recipient side: :meth:`~Shares.mount` (a catalog name of kind SHARE), :meth:`~Shares.unmount`,
:meth:`~Shares.open` (the read-only metastore over the mount: :mod:`.share_view`).
The records and rules are :mod:`ushas_catalog.governance.shares`.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import fdb.tuple as fdbtuple

from .. import records as rec
from ..governance.privileges import CREATE, MANAGE, USE
from ..errors import CatalogAlreadyExists, InvalidArgument, NoSuchCatalog, NoSuchShare, NoSuchTable
from ..governance import shares as gs
from ..keyspace.layout import CATALOG_ID, CATALOG_RECORD, DATABASE, DATABASE_ID, TABLE, Layout
from ..kv.base import Transaction
from ..model.names import CatalogName, DatabaseName, TableName, new_catalog_name, split_name
from ..model.objects import micros_to_datetime
from ..records.share_pb2 import ShareRecord
from ..records.store import RecordStore
from .authorization import PROJECT, Requirement, requiring
from .commits import Mutation
from .resolver import Resolver
from .share_view import mounted, open_view
from .values import now_micros

Change = rec.ChangeEvent.Change


@dataclass(frozen=True)
class SharedObject:
    """One object of a share as its owner sees it now (``status``: live, dropped, missing)."""

    kind: str              # "table" or "database"
    name: str | None       # its current qualified name (None: missing)
    catalog_id: str
    database_id: str
    table_id: str | None
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "catalog_id": self.catalog_id, "database_id": self.database_id,
                "table_id": self.table_id, "status": self.status}


@dataclass(frozen=True)
class ShareInfo:
    name: str
    project: str
    id: str
    comment: str | None
    recipients: list[str]
    privileges: list[str]
    owner: str
    version: int
    created_at: Any
    updated_at: Any
    objects: list[SharedObject] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "project": self.project, "id": self.id, "comment": self.comment,
                "recipients": self.recipients, "privileges": self.privileges, "owner": self.owner,
                "version": self.version, "created_at": self.created_at.isoformat() if self.created_at else None,
                "updated_at": self.updated_at.isoformat() if self.updated_at else None,
                "objects": [o.to_json() for o in self.objects]}


class Shares:
    """The shares of ``ms``'s project and the shares it mounts (``Metastore.shares``)."""

    def __init__(self, ms: Any) -> None:
        self.ms = ms
        self.layout: Layout = ms.layout
        self.project: str = ms.project

    # ---- owner side ----------------------------------------------------------------------------
    def create(self, name: str, comment: str | None = None, *, if_not_exists: bool = False) -> ShareInfo:
        sn = gs.share_name(name)

        def fn(tr: Transaction) -> ShareInfo:
            store = gs.store(self.layout, self.project)
            found = store.load(tr, (sn,))
            if found is not None:
                if if_not_exists:
                    return self._info(tr, sn, found)
                raise InvalidArgument(f"share {sn!r} already exists in project {self.project!r}", share=sn)
            now = now_micros()
            record = ShareRecord(id=uuid.uuid4().bytes, comment=comment or "", privileges=list(gs.PRIVILEGES),
                                 owner=self.ms.user, created_at_micros=now, updated_at_micros=now, version=1)
            store.save(tr, (sn,), record, new=True)
            self._event(tr, sn, "CREATE SHARE", Change.CREATED, None, record, {"comment": comment})
            return self._info(tr, sn, record)

        return self._run(MANAGE, fn)

    def add(self, name: str, obj: str) -> ShareInfo:
        """Add a table (``catalog.db.table``) or a whole database (``catalog.db``: its tables, also those
        created later) of this project; every object of a share is in one catalog."""
        return self._change(name, "ADD TO SHARE", obj, lambda tr, r, o: self._add(tr, r, o))

    def remove(self, name: str, obj: str) -> ShareInfo:
        """Remove an object (named as for :meth:`add`, or by its id: a dropped table's)."""
        return self._change(name, "REMOVE FROM SHARE", obj, lambda tr, r, o: self._remove(tr, r, o))

    def grant(self, name: str, recipient: str) -> ShareInfo:
        """Share with project ``recipient`` (``project:NAME`` or ``NAME``)."""
        project = gs.recipient(recipient)
        if project == self.project:
            raise InvalidArgument(f"share {name!r}: project {project!r} owns it; grant it to another project")

        def apply(tr: Transaction, record: ShareRecord, _: str) -> str:
            if project not in record.recipients:
                recipients = sorted({*record.recipients, project})
                del record.recipients[:]
                record.recipients.extend(recipients)
            return f"project:{project}"

        return self._change(name, "GRANT SHARE", recipient, apply)

    def revoke(self, name: str, recipient: str) -> ShareInfo:
        """Stop sharing with ``recipient``: its next catalog call no longer sees the share."""
        project = gs.recipient(recipient)

        def apply(tr: Transaction, record: ShareRecord, _: str) -> str:
            if project not in record.recipients:
                raise InvalidArgument(f"share {name!r} is not granted to project {project!r}")
            record.recipients.remove(project)
            return f"project:{project}"

        return self._change(name, "REVOKE SHARE", recipient, apply)

    def drop(self, name: str, *, if_exists: bool = False) -> bool:
        sn = gs.share_name(name)

        def fn(tr: Transaction) -> bool:
            store = gs.store(self.layout, self.project)
            record = store.load(tr, (sn,))
            if record is None:
                if if_exists:
                    return False
                raise NoSuchShare(f"share {sn!r} does not exist in project {self.project!r}", share=sn)
            store.delete(tr, (sn,))
            self._event(tr, sn, "DROP SHARE", Change.DROPPED, record, None, {})
            return True

        return bool(self._run(MANAGE, fn))

    def list(self) -> list[ShareInfo]:
        def fn(tr: Transaction) -> list[ShareInfo]:
            return [self._info(tr, r.key[0], r.record) for r in gs.store(self.layout, self.project).scan(tr)]

        return list(self._run(USE, fn))

    def show(self, name: str) -> ShareInfo:
        sn = gs.share_name(name)

        def fn(tr: Transaction) -> ShareInfo:
            return self._info(tr, sn, self._load(tr, sn), objects=True)

        return self._run(USE, fn)

    def usage(self, name: str, limit: int = 100) -> list[dict[str, Any]]:
        """The reads of the share's tables recorded in the recipient projects' lineage (a recipient's
        run keeps the owner's table id as its input): project, table, run, time, access."""
        from ..keyspace.layout import DATA_LINEAGE, LINEAGE_DATASET_ACCESS, TABLE_ID

        info = self.show(name)
        tables = {o.table_id: o.name for o in info.objects if o.table_id}

        def fn(tr: Transaction) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for project in info.recipients:
                base = self.layout.project(project).add(DATA_LINEAGE).add(LINEAGE_DATASET_ACCESS)
                for tid, shown in tables.items():
                    path = base.add(TABLE_ID, uuid.UUID(tid))
                    for kv in tr.get_range(*path.range(), limit=limit, reverse=True, snapshot=True):
                        when, run, access = fdbtuple.unpack(kv.key[len(path.key()):])[:3]
                        out.append({"project": project, "table": shown, "table_id": tid, "run_id": str(run),
                                    "time": micros_to_datetime(int(when) * 1000).isoformat(), "access": access})
            return out

        return list(self._run(USE, fn))

    # ---- recipient side ------------------------------------------------------------------------
    def mount(self, share: str, catalog: str) -> dict[str, Any]:
        """Mount share ``OWNER_PROJECT.SHARE`` (granted to this project) as catalog ``catalog`` of this
        project: a catalog name of kind SHARE; nothing of the owner's metadata is copied."""
        ref = gs.ShareRef.parse(share)
        cn = new_catalog_name(catalog)

        def fn(tr: Transaction) -> dict[str, Any]:
            gs.accessible(tr, self.layout, ref, self.project)
            catalogs = self.ms.resolver.catalogs
            names = Resolver.names(catalogs, "Catalog")
            if names.load(tr, (cn.catalog,)) is not None:
                raise CatalogAlreadyExists(f"catalog {cn} already exists in project {self.project!r}",
                                           catalog=cn.catalog)
            now = now_micros()
            cid = uuid.uuid4()
            path = catalogs.add(CATALOG_ID, cid)
            names.save(tr, (cn.catalog,), rec.ObjectName(id=cid.bytes, kind=rec.ObjectKind.SHARE,
                                                         created_at_micros=now), new=True)
            record = rec.CatalogRecord(comment=f"share {ref}", owner=self.ms.user, created_at_micros=now)
            record.properties[gs.MOUNT_PROJECT] = ref.project
            record.properties[gs.MOUNT_SHARE] = ref.name
            self.ms.commit(tr, Mutation("catalog", str(cn), path, "MOUNT SHARE", 1, record, time_micros=now,
                                        detail={"share": str(ref)}))
            return {"catalog": cn.catalog, "share": str(ref), "id": str(cid)}

        return dict(self._run(CREATE, fn))

    def unmount(self, catalog: str) -> bool:
        cn = CatalogName.parse(catalog)

        def fn(tr: Transaction) -> bool:
            catalogs = self.ms.resolver.catalogs
            names = Resolver.names(catalogs, "Catalog")
            entry = names.load(tr, (cn.catalog,))
            if entry is None or entry.kind != rec.ObjectKind.SHARE:
                raise NoSuchCatalog(f"catalog {cn} is not a share mount of project {self.project!r}",
                                    catalog=cn.catalog)
            cid = uuid.UUID(bytes=entry.id)
            path = catalogs.add(CATALOG_ID, cid)
            record = RecordStore.at(path.add(CATALOG_RECORD)).load(tr, ())
            self.ms.hooks.purged(tr, path)
            names.delete(tr, (cn.catalog,))
            tr.clear_range(*path.range())
            self.ms.hooks.removed(tr, kind="catalog", name=str(cn), object_id=cid,
                                  version=(record.version if record else 0) + 1, operation="UNMOUNT SHARE",
                                  change=Change.DROPPED, before=record)
            return True

        return bool(self._run(MANAGE, fn))

    def mounts(self) -> list[dict[str, Any]]:
        def fn(tr: Transaction) -> list[dict[str, Any]]:
            out = []
            for r in Resolver.names(self.ms.resolver.catalogs, "Catalog").scan(tr):
                if r.record.kind == rec.ObjectKind.SHARE:
                    ref = mounted(tr, self.layout, self.project, r.key[0])
                    out.append({"catalog": r.key[0], "share": str(ref) if ref else None})
            return out

        return list(self._run(USE, fn))

    def mounted(self, catalog: str) -> gs.ShareRef | None:
        """The share catalog name ``catalog`` mounts (None: it is not a mount)."""
        cn = CatalogName.parse(catalog)
        return self._run(USE, lambda tr: mounted(tr, self.layout, self.project, cn.catalog))

    def open(self, catalog: str) -> Any:
        """The read-only metastore of mount ``catalog``: its names are ``catalog.db.table``."""
        cn = CatalogName.parse(catalog)
        # which share the name mounts is no secret of the project: read unchecked (the view's reads are checked)
        ref = self.ms.db.run(lambda tr: mounted(tr, self.layout, self.project, cn.catalog))
        if ref is None:
            raise NoSuchCatalog(f"catalog {cn} is not a share mount of project {self.project!r}", catalog=cn.catalog)
        return open_view(self.ms, cn.catalog, ref)

    # ---- internals -----------------------------------------------------------------------------
    def _run(self, privilege: str, fn: Any) -> Any:
        """``fn`` in one transaction of the project's metastore; under authorization the caller needs
        ``privilege`` on the project (sharing, mounting: MANAGE / CREATE; listing: USE)."""
        with requiring(Requirement(privilege, PROJECT)):
            return self.ms.run(fn)

    def _load(self, tr: Transaction, sn: str) -> ShareRecord:
        record = gs.load(tr, self.layout, self.project, sn)
        if record is None:
            raise NoSuchShare(f"share {sn!r} does not exist in project {self.project!r}", share=sn)
        return record

    def _change(self, name: str, operation: str, arg: str, apply: Any) -> ShareInfo:
        sn = gs.share_name(name)

        def fn(tr: Transaction) -> ShareInfo:
            record = self._load(tr, sn)
            before = ShareRecord()
            before.CopyFrom(record)
            target = apply(tr, record, arg)
            if record == before:
                return self._info(tr, sn, record, objects=True)  # nothing changed: no new version, no event
            record.version += 1
            record.updated_at_micros = now_micros()
            gs.store(self.layout, self.project).save(tr, (sn,), record)
            self._event(tr, sn, operation, Change.ALTERED, before, record, {"object": target})
            return self._info(tr, sn, record, objects=True)

        return self._run(MANAGE, fn)

    def _object(self, tr: Transaction, text: str) -> tuple[str, Any]:
        """``catalog.db`` (a database) or ``catalog.db.table`` (a table, not a view) of this project."""
        parts = split_name(text) if isinstance(text, str) else list(text)
        if len(parts) == 3:
            t = self.ms.resolver.table(tr, TableName.parse(parts))
            return "table", t
        if len(parts) == 2:
            return "database", self.ms.resolver.database(tr, DatabaseName.parse(parts), load=False)
        raise InvalidArgument(f"share object {text!r}: expected catalog.database (a whole database) or "
                              f"catalog.database.table")

    def _add(self, tr: Transaction, record: ShareRecord, text: str) -> str:
        kind, found = self._object(tr, text)
        cat = found.path.find("catalogId").value
        did = found.path.find("databaseId").value
        tid = found.id.bytes if kind == "table" else b""
        for o in record.objects:
            if o.catalog_id != cat.bytes:
                raise InvalidArgument(f"share object {text!r} is in another catalog than the share's objects: a "
                                      f"share holds objects of one catalog (make another share)")
            if o.database_id == did.bytes and o.table_id == tid:
                return f"{kind}:{found.name}"  # already in the share
        record.objects.add(catalog_id=cat.bytes, database_id=did.bytes, table_id=tid, added_by=self.ms.user,
                           added_at_micros=now_micros())
        return f"{kind}:{found.name}"

    def _remove(self, tr: Transaction, record: ShareRecord, text: str) -> str:
        try:
            oid = uuid.UUID(text)
        except (ValueError, AttributeError, TypeError):
            oid = None
        if oid is not None:
            keep = [o for o in record.objects if oid.bytes not in (o.table_id, o.database_id if not o.table_id else b"")]
            shown = f"id:{oid}"
        else:
            kind, found = self._object(tr, text)
            did = found.path.find("databaseId").value.bytes
            tid = found.id.bytes if kind == "table" else b""
            keep = [o for o in record.objects if not (o.database_id == did and o.table_id == tid)]
            shown = f"{kind}:{found.name}"
        if len(keep) == len(record.objects):
            raise NoSuchTable(f"{text!r} is not in the share", table=str(text))
        del record.objects[:]
        record.objects.extend(keep)
        return shown

    def _objects(self, tr: Transaction, record: ShareRecord) -> list[SharedObject]:
        out = []
        for o in record.objects:
            cid, did = uuid.UUID(bytes=o.catalog_id), uuid.UUID(bytes=o.database_id)
            tid = uuid.UUID(bytes=o.table_id) if o.table_id else None
            name, status = self._name_of(tr, cid, did, tid)
            out.append(SharedObject("table" if tid else "database", name, str(cid), str(did),
                                    str(tid) if tid else None, status))
        return out

    def _name_of(self, tr: Transaction, cid: uuid.UUID, did: uuid.UUID,
                 tid: uuid.UUID | None) -> tuple[str | None, str]:
        catalogs = self.ms.resolver.catalogs
        cat = _find(tr, Resolver.names(catalogs, "Catalog"), cid)
        if cat is None:
            return None, "missing"
        dbs = catalogs.add(CATALOG_ID, cid).add(DATABASE)
        db = _find(tr, Resolver.names(dbs, "Database"), did)
        if db is None:
            return None, "missing"
        if tid is None:
            return str(DatabaseName(cat, db)), "live"
        tables = dbs.add(DATABASE_ID, did).add(TABLE)
        t = _find(tr, Resolver.names(tables, "Table"), tid)
        if t is not None:
            return str(TableName(cat, db, t)), "live"
        for r in Resolver.dropped(tables, "Table").scan(tr):
            if r.key[1] == tid:
                return str(TableName(cat, db, r.key[0])), "dropped"
        return None, "missing"

    def _info(self, tr: Transaction, sn: str, r: ShareRecord, *, objects: bool = False) -> ShareInfo:
        return ShareInfo(sn, self.project, str(uuid.UUID(bytes=r.id)) if r.id else "", r.comment or None,
                         list(r.recipients), list(r.privileges), r.owner, r.version,
                         micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros),
                         self._objects(tr, r) if objects else [])

    def _event(self, tr: Transaction, sn: str, operation: str, change: int, before: ShareRecord | None,
               after: ShareRecord | None, detail: dict[str, Any]) -> None:
        feed = getattr(self.ms, "change_feed", None)
        if feed is None:
            return
        head = after if after is not None else before
        assert head is not None
        feed.append(tr, rec.ChangeEvent(
            change=change, kind="share", operation=operation, object_id=head.id, name=sn,
            version=head.version + (1 if after is None else 0), user=self.ms.user, committed_at_micros=now_micros(),
            before_json=json.dumps(gs.describe(before) | {"recipients": list(before.recipients)}) if before else "",
            after_json=json.dumps(gs.describe(after)) if after else "",
            detail_json=json.dumps(detail, default=str, ensure_ascii=False)))


def _find(tr: Transaction, names: RecordStore[rec.ObjectName], oid: uuid.UUID) -> str | None:
    for r in names.scan(tr):
        if r.record.id == oid.bytes:
            return str(r.key[0])
    return None


__all__ = ["Shares", "ShareInfo", "SharedObject"]
