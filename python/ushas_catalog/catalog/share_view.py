"""Reading a share from the recipient project: a read-only metastore over the OWNER's keys, whose
resolver sees only what the share holds.

A mount is a catalog name of the recipient (an entry of kind ``SHARE``); :func:`open_view` gives the
metastore Spark, the CLI and ``Metastore.shares.open(name)`` read it through:

- its project is the owner's, so every key path points into the owner's subspace (nothing copied);
- its resolver (:class:`ShareResolver`) answers only the mount's catalog name, and, in every
  transaction, first reads the mount (recipient) and the share (owner) and checks the recipient is
  still granted it: a revoke, a removed object or a dropped share is seen by the next call;
- every name it reads (databases, tables) passes :class:`~ushas_catalog.governance.shares.Shared`:
  only the share's tables and the tables of its whole databases; views, functions, dropped names
  and other catalogs are invisible;
- its database refuses every write (:class:`ReadOnlyDatabase`): a write through a share fails with
  :class:`~ushas_catalog.errors.ShareReadOnly` and writes nothing.
"""
from __future__ import annotations

import uuid
import weakref
from typing import Any, Callable, Iterator, TypeVar

from .. import records as rec
from ..errors import NoSuchCatalog, ShareReadOnly
from ..governance.shares import MOUNT_PROJECT, MOUNT_SHARE, Shared, ShareRef, accessible
from ..keyspace.layout import CATALOG_ID, CATALOG_RECORD, Layout
from ..keyspace.tree import KeySpacePath
from ..kv.base import Database, Transaction
from ..model.names import CatalogName
from ..records.store import RecordStore
from .resolver import ResolvedObject, Resolver

T = TypeVar("T")


class ReadOnlyTransaction:
    """A transaction whose reads pass through and whose writes raise :class:`ShareReadOnly`."""

    def __init__(self, tr: Transaction, what: str) -> None:
        self._tr = tr
        self._what = what

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tr, name)

    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        return self._tr.get(key, snapshot=snapshot)

    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[Any]:
        return self._tr.get_range(begin, end, limit=limit, reverse=reverse, snapshot=snapshot)

    def refuse(self, *args: Any, **kwargs: Any) -> None:
        raise ShareReadOnly(f"{self._what} is read-only: shares grant SELECT only; nothing was written",
                            share=self._what)

    set = clear = clear_range = set_many = clear_range_startswith = add = set_versionstamped_key = refuse


class ReadOnlyDatabase:
    """The recipient's database handle, read-only: each transaction a :class:`ReadOnlyTransaction`.
    Closing it leaves the shared handle open."""

    def __init__(self, db: Database, what: str) -> None:
        self.inner = db
        self.what = what

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, fn: Callable[[Any], T]) -> T:
        return self.inner.run(lambda tr: fn(ReadOnlyTransaction(tr, self.what)))

    def close(self) -> None:
        pass


class FilteredNames(RecordStore[rec.ObjectName]):
    """The names under ``parent`` that the share shows (:meth:`ShareResolver.visible`)."""

    def __init__(self, resolver: "ShareResolver", parent: KeySpacePath, kind: str, dropped: bool = False) -> None:
        base = RecordStore.at(parent.add(f"{'Dropped' if dropped else ''}{kind}ObjectName"))
        super().__init__(base.path, base.message_type, base.key_names)
        self.resolver = resolver
        self.parent = parent
        self.kind = kind
        self.hidden = dropped  # dropped names are never shown through a share

    def load(self, tr: Transaction, pk: tuple[Any, ...], *, snapshot: bool = False) -> Any:
        entry = super().load(tr, pk, snapshot=snapshot)
        if entry is None or self.hidden or not self.resolver.visible(tr, self.parent, self.kind, entry):
            return None
        return entry

    def exists(self, tr: Transaction, pk: tuple[Any, ...], *, snapshot: bool = False) -> bool:
        return self.load(tr, pk, snapshot=snapshot) is not None

    def scan(self, tr: Transaction, begin: bytes | None = None, end: bytes | None = None, *,
             limit: int = 0, reverse: bool = False, snapshot: bool = False) -> Iterator[Any]:
        if self.hidden:
            return
        n = 0
        for r in super().scan(tr, begin, end, reverse=reverse, snapshot=snapshot):
            if self.resolver.visible(tr, self.parent, self.kind, r.record):
                yield r
                n += 1
                if limit and n >= limit:
                    return


class ShareResolver(Resolver):
    """The resolver of a mounted share: catalog name ``mount`` of project ``recipient`` -> the owner's
    catalog, its names filtered by the share (see the module docstring)."""

    def __init__(self, layout: Layout, ref: ShareRef, recipient: str, mount: str) -> None:
        super().__init__(layout.project(ref.project), ref.project)
        self.layout = layout
        self.ref = ref
        self.recipient = recipient
        self.mount = mount
        self._seen: "weakref.WeakKeyDictionary[Any, Shared]" = weakref.WeakKeyDictionary()

    def shared(self, tr: Transaction) -> Shared:
        """The share as the recipient may read it now (read once per transaction): the mount still
        points to it and the recipient is still granted it, else :class:`NoSuchCatalog` /
        :class:`~ushas_catalog.errors.NoSuchShare`."""
        found = self._seen.get(tr)
        if found is not None:
            return found
        mount = mounted(tr, self.layout, self.recipient, self.mount)
        if mount != self.ref:
            raise NoSuchCatalog(f"catalog {self.mount} no longer mounts share {self.ref}", catalog=self.mount,
                                share_changed=True)
        found = Shared.of(accessible(tr, self.layout, self.ref, self.recipient))
        self._seen[tr] = found
        return found

    def catalog(self, tr: Transaction, name: CatalogName, *, load: bool = True) -> ResolvedObject:
        if name.catalog != self.mount:
            raise NoSuchCatalog(f"catalog {name} is not readable through share catalog {self.mount}",
                                catalog=name.catalog)
        shared = self.shared(tr)
        cid = shared.catalog_id or uuid.UUID(int=0)  # an empty share: a catalog with nothing in it
        path = self.catalogs.add(CATALOG_ID, cid)
        record = None
        if load:
            record = RecordStore.at(path.add(CATALOG_RECORD)).load(tr, ()) or rec.CatalogRecord()
            record = _as_share(record, self.ref)
        return ResolvedObject("catalog", name, cid, path, record)

    def names(self, parent: KeySpacePath, kind: str) -> RecordStore[rec.ObjectName]:  # type: ignore[override]
        return FilteredNames(self, parent, kind)

    def dropped(self, parent: KeySpacePath, kind: str) -> RecordStore[rec.DroppedObjectName]:  # type: ignore[override]
        return FilteredNames(self, parent, kind, dropped=True)  # type: ignore[return-value]

    def visible(self, tr: Transaction, parent: KeySpacePath, kind: str, entry: rec.ObjectName) -> bool:
        shared = self.shared(tr)
        oid = uuid.UUID(bytes=entry.id)
        if kind == "Database":
            return parent.find("catalogId").value == shared.catalog_id and shared.database_visible(oid)
        if kind == "Table":
            if entry.kind != rec.ObjectKind.TABLE:
                return False  # views are not shared (their text names the owner's catalogs)
            return (parent.find("catalogId").value == shared.catalog_id
                    and shared.table_visible(parent.find("databaseId").value, oid))
        return False  # catalogs (other than the mount), functions


def _as_share(record: rec.CatalogRecord, ref: ShareRef) -> rec.CatalogRecord:
    """The owner's catalog record as the recipient sees it: its comment, the share in its properties."""
    out = rec.CatalogRecord(comment=record.comment or f"share {ref}", owner=record.owner,
                            created_at_micros=record.created_at_micros, updated_at_micros=record.updated_at_micros,
                            version=record.version)
    out.properties[MOUNT_PROJECT] = ref.project
    out.properties[MOUNT_SHARE] = ref.name
    return out


def mounted(tr: Transaction, layout: Layout, project: str, catalog: str) -> ShareRef | None:
    """The share that catalog name ``catalog`` of ``project`` mounts (None: not a mount)."""
    catalogs = Resolver(layout.project(project), project).catalogs
    entry = Resolver.names(catalogs, "Catalog").load(tr, (catalog,))
    if entry is None or entry.kind != rec.ObjectKind.SHARE:
        return None
    record = RecordStore.at(catalogs.add(CATALOG_ID, uuid.UUID(bytes=entry.id)).add(CATALOG_RECORD)).load(tr, ())
    if record is None:  # pragma: no cover - a mount always has its record
        return None
    return ShareRef(record.properties[MOUNT_PROJECT], record.properties[MOUNT_SHARE])


def open_view(ms: Any, mount: str, ref: ShareRef) -> Any:
    """A read-only metastore (the class of ``ms``) over share ``ref`` mounted as catalog ``mount`` of
    ``ms``'s project."""
    view = type(ms)(ReadOnlyDatabase(ms.db, f"share {ref} (catalog {mount})"), ref.project, layout=ms.layout,
                    user=ms.user, authorization=getattr(ms, "authorization", False))
    view.resolver = ShareResolver(ms.layout, ref, ms.project, mount)
    view.big = None
    view.index_merge_at = 0
    view.share = ref
    view.recipient = ms.project
    view.project = ms.project  # privileges (authorization on) are the recipient's: its project's grants

    def whole_project(*args: Any, **kwargs: Any) -> Any:
        raise ShareReadOnly(f"share {ref} (catalog {mount}) shows its tables only: the owner project's change "
                            f"feed and search are not read through it", share=str(ref))

    view.changes = view.search = whole_project  # the owner's whole feed and index: not the share's
    return view


__all__ = ["ReadOnlyTransaction", "ReadOnlyDatabase", "FilteredNames", "ShareResolver", "mounted", "open_view"]
