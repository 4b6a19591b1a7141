"""Drop, undrop and purge of catalogs, databases and tables (names move to ``Dropped*ObjectName``;
purge is one ``clear_range`` of the object's id prefix), and the data garbage they leave."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Callable, Iterable

import fdb.tuple as fdbtuple

from .. import records as rec
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..model.names import NameLike, TableName
from ..model.objects import DroppedObject, micros_to_datetime
from ..records.store import RecordStore
from .base import MetastoreBase
from .commits import Mutation
from .resolver import ResolvedObject, ResolvedTable
from .values import copy_record, now_micros


class DropOps(MetastoreBase):
    """Drop (names to ``Dropped*ObjectName``), undrop, purge and the data garbage they leave."""

    def _drop_object(self, tr: Transaction, parent: KeySpacePath, kind: str, key: str,
                     obj: ResolvedObject | ResolvedTable, purge: bool, operation: str, object_kind: int,
                     data_paths: list[str] | None = None) -> None:
        names = self.resolver.names(parent, kind)
        entry = names.load(tr, (key,))
        names.delete(tr, (key,))
        big = self.big is not None and self.big.big_object(self, tr, obj.path)
        if purge and big:  # the name is free now; the rest in chunks (ushas_catalog.bulk)
            assert self.big is not None
            head = obj.ref if isinstance(obj, ResolvedTable) else obj.record
            self.big.defer_purge(self, tr, str(obj.name), kind.lower(), obj.path, head.version, operation)
            return
        if not purge and big and not isinstance(obj, ResolvedTable):
            assert self.big is not None
            self.big.defer_unindex(self, tr, str(obj.name), obj.path, False)
        if purge:
            self._collect_data(tr, obj.path, kind, data_paths)
            self.hooks.purged(tr, obj.path)
            tr.clear_range(*obj.path.range())
            head = obj.ref if isinstance(obj, ResolvedTable) else obj.record
            self.hooks.removed(tr, kind="table" if isinstance(obj, ResolvedTable) else obj.kind,
                               name=str(obj.name), object_id=obj.id, version=head.version,
                               operation=operation, change=rec.ChangeEvent.DROPPED, before=head)
            return
        now = now_micros()
        created = entry.created_at_micros if entry is not None else 0
        self.resolver.dropped(parent, kind).save(tr, (key, obj.id), rec.DroppedObjectName(
            id=obj.id.bytes, kind=object_kind, dropped_at_micros=now, dropped_by=self.user,
            created_at_micros=created), new=True)
        if isinstance(obj, ResolvedTable):
            self._commit(tr, Mutation("table", str(obj.name), obj.path, operation, obj.ref.version + 1,
                                      copy_record(obj.ref), time_micros=now))
        else:
            self._commit(tr, Mutation(obj.kind, str(obj.name), obj.path, operation, obj.record.version + 1,
                                      copy_record(obj.record), previous_head=obj.record, time_micros=now))

    def _latest_dropped(self, tr: Transaction, parent: KeySpacePath, kind: str,
                        key: str) -> tuple[uuid.UUID, rec.DroppedObjectName] | None:
        store = self.resolver.dropped(parent, kind)
        best: tuple[uuid.UUID, rec.DroppedObjectName] | None = None
        for r in store.scan(tr, *store.prefix_range((key,))):
            if best is None or r.record.dropped_at_micros >= best[1].dropped_at_micros:
                best = (r.key[1], r.record)
        return best

    def _undrop_object(self, tr: Transaction, parent: KeySpacePath, kind: str, key: str, shown: str,
                       exists_error: type[Exception], missing_error: type[Exception]) -> uuid.UUID:
        names = self.resolver.names(parent, kind)
        latest = self._latest_dropped(tr, parent, kind, key)
        if latest is None:
            raise missing_error(f"no dropped {kind.lower()} named {shown}")
        if names.exists(tr, (key,)):
            raise exists_error(f"cannot undrop {shown}: a {kind.lower()} of that name exists")
        if kind == "Table" and self.resolver.object_entry(tr, parent.parent, key) is not None:
            raise exists_error(f"cannot undrop {shown}: a versioned object of that name exists")
        oid, dropped = latest
        self.resolver.dropped(parent, kind).delete(tr, (key, oid))
        names.save(tr, (key,), rec.ObjectName(id=oid.bytes, kind=dropped.kind,
                                              created_at_micros=dropped.created_at_micros or now_micros()), new=True)
        return oid

    def _collect_data(self, tr: Transaction, path: KeySpacePath, kind: str, data_paths: list[str] | None) -> None:
        """Purging the object at ``path``: the data paths of its tables go to ``data_paths`` (and their
        DataGarbage entries away), to be deleted by the caller after the commit."""
        from ..data.purge import table_data_paths, tables_under

        for table_path, tid, db_path in tables_under(tr, path, kind):
            found = table_data_paths(tr, self.project_path, table_path, tid, db_path, kept=self.kept_paths)
            if data_paths is not None:
                data_paths.extend(found)

    def garbage(self, table: NameLike | None = None, older_than: dt.timedelta | None = None) -> list[Any]:
        """The DataGarbage entries (:class:`~ushas_catalog.data.garbage.GarbageEntry`) of one live
        table or of the project, those recorded more than ``older_than`` ago when given."""
        from ..data.garbage import scan_garbage

        before = None if older_than is None else now_micros() - int(older_than.total_seconds() * 1_000_000)

        def fn(tr: Transaction) -> list[Any]:
            tid = self.resolver.table(tr, TableName.parse(table)).id if table is not None else None
            return list(scan_garbage(tr, self.project_path, tid, before))

        return self.run(fn)

    def forget_garbage(self, keys: Iterable[tuple[Any, ...]]) -> None:
        """Removes DataGarbage entries whose files were deleted."""
        from ..data.garbage import delete_garbage

        key_list = list(keys)

        def fn(tr: Transaction) -> None:
            for key in key_list:
                delete_garbage(tr, self.project_path, key)

        self.run(fn)

    def _purge_dropped(self, tr: Transaction, parent: KeySpacePath, kind: str, key: str, shown: str,
                       path_of: Callable[[uuid.UUID], KeySpacePath], missing_error: type[Exception],
                       data_paths: list[str] | None = None,
                       dropped_before: int | None = None) -> int:
        store = self.resolver.dropped(parent, kind)
        found = list(store.scan(tr, *store.prefix_range((key,))))
        if not found:
            raise missing_error(f"no dropped {kind.lower()} named {shown}")
        head_sub = {"Catalog": "CatalogRecord", "Database": "DatabaseRecord", "Table": "TableReference"}[kind]
        if dropped_before is not None:
            found = [r for r in found if r.record.dropped_at_micros < dropped_before]
        for r in found:
            oid = r.key[1]
            head = RecordStore.at(path_of(oid).add(head_sub)).load(tr, ())
            if self.big is not None and self.big.big_object(self, tr, path_of(oid)):  # its keys go in chunks
                store.delete(tr, (key, oid))
                self.big.defer_purge(self, tr, shown, kind.lower(), path_of(oid),
                                     head.version if head is not None else 0, f"PURGE {kind.upper()}")
                continue
            self._collect_data(tr, path_of(oid), kind, data_paths)
            self.hooks.purged(tr, path_of(oid))
            tr.clear_range(*path_of(oid).range())
            store.delete(tr, (key, oid))
            self.hooks.removed(tr, kind=kind.lower(), name=shown, object_id=oid,
                               version=head.version if head is not None else 0,
                               operation=f"PURGE {kind.upper()}", change=rec.ChangeEvent.PURGED)
        return len(found)

    def _list_dropped(self, tr: Transaction, parent: KeySpacePath, kind: str,
                      show: Callable[[str], str], *, name: str | None = None) -> list[DroppedObject]:
        store = self.resolver.dropped(parent, kind)
        begin = None if name is None else store.prefix + fdbtuple.pack((name,))
        end = None if begin is None else begin + b"\xff"
        return [DroppedObject(kind.upper(), show(r.key[0]), str(r.key[1]), micros_to_datetime(r.record.dropped_at_micros),
                              r.record.dropped_by)
                for r in store.scan(tr, begin, end)]
