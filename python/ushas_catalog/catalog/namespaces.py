"""Catalogs and databases: create, get, list, alter, drop, undrop, purge."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Iterable, Mapping

from .. import records as rec
from ..errors import CatalogAlreadyExists, NamespaceAlreadyExists, NamespaceNotEmpty, NoSuchCatalog, NoSuchNamespace
from ..kv import Transaction
from ..model.names import CatalogName, DatabaseName, NameLike, new_catalog_name, new_database_name
from ..model.objects import CatalogInfo, DatabaseInfo, DroppedObject
from ..records.store import RecordStore
from .commits import Mutation
from .infos import catalog_info, database_info
from .resolver import ResolvedObject
from .values import (UNSET, check_expected, check_props, check_str, copy_record, cutoff_micros, expect_version,
                     give_paths, now_micros)
from .drops import DropOps
from ..keyspace.layout import CATALOG_ID, CATALOG_RECORD, DATABASE, DATABASE_ID, DATABASE_RECORD, OBJECT, TABLE


class NamespaceOps(DropOps):
    """Catalogs and databases."""

    def create_catalog(self, name: NameLike, comment: str | None = None, properties: Mapping[str, str] | None = None,
                       if_not_exists: bool = False, owner: str | None = None) -> CatalogInfo:
        cn = new_catalog_name(name)
        comment = check_str(comment, "comment")
        props = check_props(properties, "catalog properties")

        def fn(tr: Transaction) -> CatalogInfo:
            names = self.resolver.names(self.resolver.catalogs, "Catalog")
            if names.load(tr, (cn.catalog,)) is not None:
                if if_not_exists:
                    return catalog_info(self.resolver.catalog(tr, cn))
                raise CatalogAlreadyExists(f"catalog {cn} already exists", catalog=cn.catalog)
            now = now_micros()
            cid = uuid.uuid4()
            path = self.resolver.catalogs.add(CATALOG_ID, cid)
            names.save(tr, (cn.catalog,), rec.ObjectName(id=cid.bytes, kind=rec.ObjectKind.CATALOG,
                                                         created_at_micros=now), new=True)
            record = rec.CatalogRecord(comment=comment or "", properties=props, owner=owner or self.user,
                                       created_at_micros=now)
            self._commit(tr, Mutation("catalog", str(cn), path, "CREATE CATALOG", 1, record, time_micros=now,
                                      detail={"comment": comment, "properties": props}))
            return catalog_info(ResolvedObject("catalog", cn, cid, path, record))

        return self.run(fn)

    def ensure_catalog(self, name: NameLike) -> CatalogInfo:
        """The catalog, created if missing (idempotent, safe under concurrency)."""
        return self.create_catalog(name, if_not_exists=True)

    def get_catalog(self, name: NameLike) -> CatalogInfo:
        cn = CatalogName.parse(name)
        return self.run(lambda tr: catalog_info(self.resolver.catalog(tr, cn)))

    def catalog_exists(self, name: NameLike) -> bool:
        cn = CatalogName.parse(name)
        return self.run(lambda tr: self.resolver.names(self.resolver.catalogs, "Catalog").exists(tr, (cn.catalog,)))

    def list_catalogs(self) -> list[CatalogInfo]:
        def fn(tr: Transaction) -> list[CatalogInfo]:
            out = []
            for r in self.resolver.names(self.resolver.catalogs, "Catalog").scan(tr):
                if r.record.kind == rec.ObjectKind.SHARE:
                    continue  # a mounted share (Metastore.shares.mounts()): not one of the project's catalogs
                cid = uuid.UUID(bytes=r.record.id)
                path = self.resolver.catalogs.add(CATALOG_ID, cid)
                record = RecordStore.at(path.add(CATALOG_RECORD)).load(tr, ())
                out.append(catalog_info(ResolvedObject("catalog", CatalogName(r.key[0]), cid, path, record)))
            return out

        return self.run(fn)

    def alter_catalog(self, name: NameLike, set_properties: Mapping[str, str] | None = None,
                      remove_properties: Iterable[str] | None = None, comment: Any = UNSET, *,
                      expected_version: int | None = None) -> CatalogInfo:
        """``expected_version`` (here and on every mutation): fail with :class:`Conflict`
        naming both versions if the object is at another version."""
        cn = CatalogName.parse(name)
        check_expected(expected_version)
        sets = check_props(set_properties, "properties")
        removes = list(remove_properties or ())
        if comment is not UNSET:
            check_str(comment, "comment")

        def fn(tr: Transaction) -> CatalogInfo:
            cat = self.resolver.catalog(tr, cn)
            old = cat.record
            expect_version("catalog", cn, old.version, expected_version)
            new = rec.CatalogRecord()
            new.CopyFrom(old)
            for k in removes:
                new.properties.pop(k, None)
            new.properties.update(sets)
            if comment is not UNSET:
                new.comment = comment or ""
            self._commit(tr, Mutation("catalog", str(cn), cat.path, "ALTER CATALOG", old.version + 1, new,
                                      previous_head=old, detail={"set": sets, "remove": removes}))
            return catalog_info(ResolvedObject("catalog", cn, cat.id, cat.path, new))

        return self.run(fn)

    def drop_catalog(self, name: NameLike, cascade: bool = False, purge: bool = False, *,
                     expected_version: int | None = None, data_paths: list[str] | None = None) -> None:
        cn = CatalogName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            cat = self.resolver.catalog(tr, cn)
            expect_version("catalog", cn, cat.record.version, expected_version)
            dbs = cat.path.add(DATABASE)
            if not cascade and any(True for _ in self.resolver.names(dbs, "Database").scan(tr, limit=1)):
                raise NamespaceNotEmpty(f"catalog {cn} is not empty (drop it with cascade)", catalog=cn.catalog)
            found: list[str] = []
            self._drop_object(tr, self.resolver.catalogs, "Catalog", cn.catalog, cat, purge, "DROP CATALOG",
                              rec.ObjectKind.CATALOG, found)
            give_paths(data_paths, found)

        self.run(fn)
        self.more_paths(data_paths)

    def undrop_catalog(self, name: NameLike, *, expected_version: int | None = None) -> CatalogInfo:
        """``expected_version``: the version of the dropped catalog (its DROP commit)."""
        cn = CatalogName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> CatalogInfo:
            cid = self._undrop_object(tr, self.resolver.catalogs, "Catalog", cn.catalog, str(cn), CatalogAlreadyExists,
                                      NoSuchCatalog)
            cat = self.resolver.catalog(tr, cn)
            expect_version("dropped catalog", cn, cat.record.version, expected_version)
            if self.big is not None and self.big.big_object(self, tr, cat.path):
                self.big.defer_unindex(self, tr, str(cn), cat.path, True)
            self._commit(tr, Mutation("catalog", str(cn), cat.path, "UNDROP CATALOG", cat.record.version + 1,
                                      copy_record(cat.record), previous_head=cat.record))
            assert cid == cat.id
            return catalog_info(self.resolver.catalog(tr, cn))

        info = self.run(fn)
        self.more_paths(None)
        return info

    def purge_catalog(self, name: NameLike, *, data_paths: list[str] | None = None,
                      older_than: dt.timedelta | None = None) -> int:
        """Remove every dropped catalog of that name with all it held; returns how many.
        ``data_paths`` receives the data paths to delete now (see :meth:`purge_table`)."""
        cn = CatalogName.parse(name)

        def fn(tr: Transaction) -> int:
            found: list[str] = []
            n = self._purge_dropped(tr, self.resolver.catalogs, "Catalog", cn.catalog, str(cn),
                                    lambda i: self.resolver.catalogs.add(CATALOG_ID, i), NoSuchCatalog, found,
                                    cutoff_micros(older_than))
            give_paths(data_paths, found)
            return n

        n = self.run(fn)
        self.more_paths(data_paths)
        return n

    def list_dropped_catalogs(self) -> list[DroppedObject]:
        return self.run(lambda tr: self._list_dropped(tr, self.resolver.catalogs, "Catalog", lambda n: n))

    def create_database(self, name: NameLike, comment: str | None = None, location: str | None = None,
                        properties: Mapping[str, str] | None = None, owner: str | None = None,
                        if_not_exists: bool = False) -> DatabaseInfo:
        dn = new_database_name(name)
        comment = check_str(comment, "comment")
        location = check_str(location, "location")
        props = check_props(properties, "database properties")
        owner = check_str(owner, "owner")

        def fn(tr: Transaction) -> DatabaseInfo:
            cat = self.resolver.catalog(tr, dn.catalog_name, load=False)
            dbs = cat.path.add(DATABASE)
            names = self.resolver.names(dbs, "Database")
            if names.load(tr, (dn.database,)) is not None:
                if if_not_exists:
                    return database_info(self.resolver.database(tr, dn))
                raise NamespaceAlreadyExists(f"database {dn} already exists", database=str(dn))
            now = now_micros()
            did = uuid.uuid4()
            path = dbs.add(DATABASE_ID, did)
            names.save(tr, (dn.database,), rec.ObjectName(id=did.bytes, kind=rec.ObjectKind.DATABASE,
                                                          created_at_micros=now), new=True)
            record = rec.DatabaseRecord(comment=comment or "", location=location or "", properties=props,
                                        owner=owner or self.user, created_at_micros=now)
            self._commit(tr, Mutation("database", str(dn), path, "CREATE DATABASE", 1, record, time_micros=now,
                                      detail={"comment": comment, "location": location, "properties": props}))
            return database_info(ResolvedObject("database", dn, did, path, record))

        return self.run(fn)

    def get_database(self, name: NameLike) -> DatabaseInfo:
        dn = DatabaseName.parse(name)
        return self.run(lambda tr: database_info(self.resolver.database(tr, dn)))

    def database_exists(self, name: NameLike) -> bool:
        dn = DatabaseName.parse(name)

        def fn(tr: Transaction) -> bool:
            try:
                self.resolver.database(tr, dn, load=False)
            except (NoSuchCatalog, NoSuchNamespace):
                return False
            return True

        return self.run(fn)

    def list_databases(self, catalog: NameLike) -> list[DatabaseInfo]:
        cn = CatalogName.parse(catalog)

        def fn(tr: Transaction) -> list[DatabaseInfo]:
            cat = self.resolver.catalog(tr, cn, load=False)
            dbs = cat.path.add(DATABASE)
            out = []
            for r in self.resolver.names(dbs, "Database").scan(tr):
                did = uuid.UUID(bytes=r.record.id)
                path = dbs.add(DATABASE_ID, did)
                record = RecordStore.at(path.add(DATABASE_RECORD)).load(tr, ())
                out.append(database_info(ResolvedObject("database", DatabaseName(cn.catalog, r.key[0]), did, path,
                                                        record)))
            return out

        return self.run(fn)

    def alter_database(self, name: NameLike, set_properties: Mapping[str, str] | None = None,
                       remove_properties: Iterable[str] | None = None, comment: Any = UNSET,
                       location: Any = UNSET, owner: Any = UNSET, *,
                       expected_version: int | None = None) -> DatabaseInfo:
        """Change properties, comment (``None`` clears it), location or owner; arguments
        left out stay as they are."""
        dn = DatabaseName.parse(name)
        check_expected(expected_version)
        sets = check_props(set_properties, "properties")
        removes = list(remove_properties or ())
        for value, what in ((comment, "comment"), (location, "location"), (owner, "owner")):
            if value is not UNSET:
                check_str(value, what)

        def fn(tr: Transaction) -> DatabaseInfo:
            db = self.resolver.database(tr, dn)
            old = db.record
            expect_version("database", dn, old.version, expected_version)
            new = copy_record(old)
            for k in removes:
                new.properties.pop(k, None)
            new.properties.update(sets)
            detail: dict[str, Any] = {"set": sets, "remove": removes}
            if comment is not UNSET:
                new.comment = comment or ""
                detail["comment"] = comment
            if location is not UNSET:
                new.location = location or ""
                detail["location"] = location
            if owner is not UNSET:
                new.owner = owner or ""
                detail["owner"] = owner
            self._commit(tr, Mutation("database", str(dn), db.path, "ALTER DATABASE", old.version + 1, new,
                                      previous_head=old, detail=detail))
            return database_info(ResolvedObject("database", dn, db.id, db.path, new))

        return self.run(fn)

    def drop_database(self, name: NameLike, cascade: bool = False, purge: bool = False, *,
                      expected_version: int | None = None, data_paths: list[str] | None = None) -> None:
        dn = DatabaseName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            db = self.resolver.database(tr, dn)
            expect_version("database", dn, db.record.version, expected_version)
            if not cascade and any(True for _ in self.resolver.names(db.path.add(TABLE), "Table").scan(tr, limit=1)):
                raise NamespaceNotEmpty(f"database {dn} is not empty (drop it with cascade)", database=str(dn))
            if not cascade and any(True for _ in self.resolver.names(db.path.add(OBJECT), "Object").scan(tr, limit=1)):
                raise NamespaceNotEmpty(f"database {dn} holds versioned objects (ushas objects list {dn}): drop it "
                                        f"with cascade", database=str(dn))
            cat = self.resolver.catalog(tr, dn.catalog_name, load=False)
            found: list[str] = []
            self._drop_object(tr, cat.path.add(DATABASE), "Database", dn.database, db, purge, "DROP DATABASE",
                              rec.ObjectKind.DATABASE, found)
            give_paths(data_paths, found)

        self.run(fn)
        self.more_paths(data_paths)

    def undrop_database(self, name: NameLike, *, expected_version: int | None = None) -> DatabaseInfo:
        dn = DatabaseName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> DatabaseInfo:
            cat = self.resolver.catalog(tr, dn.catalog_name, load=False)
            self._undrop_object(tr, cat.path.add(DATABASE), "Database", dn.database, str(dn),
                                NamespaceAlreadyExists, NoSuchNamespace)
            db = self.resolver.database(tr, dn)
            expect_version("dropped database", dn, db.record.version, expected_version)
            if self.big is not None and self.big.big_object(self, tr, db.path):
                self.big.defer_unindex(self, tr, str(dn), db.path, True)
            new = copy_record(db.record)
            self._commit(tr, Mutation("database", str(dn), db.path, "UNDROP DATABASE", db.record.version + 1, new,
                                      previous_head=db.record))
            return database_info(ResolvedObject("database", dn, db.id, db.path, new))

        info = self.run(fn)
        self.more_paths(None)
        return info

    def purge_database(self, name: NameLike, *, data_paths: list[str] | None = None,
                       older_than: dt.timedelta | None = None) -> int:
        """Remove every dropped database of that name with everything in it; returns how many.
        ``data_paths`` receives the data paths to delete now (see :meth:`purge_table`)."""
        dn = DatabaseName.parse(name)

        def fn(tr: Transaction) -> int:
            cat = self.resolver.catalog(tr, dn.catalog_name, load=False)
            dbs = cat.path.add(DATABASE)
            found: list[str] = []
            n = self._purge_dropped(tr, dbs, "Database", dn.database, str(dn),
                                    lambda i: dbs.add(DATABASE_ID, i), NoSuchNamespace, found,
                                    cutoff_micros(older_than))
            give_paths(data_paths, found)
            return n

        n = self.run(fn)
        self.more_paths(data_paths)
        return n

    def list_dropped_databases(self, catalog: NameLike) -> list[DroppedObject]:
        cn = CatalogName.parse(catalog)

        def fn(tr: Transaction) -> list[DroppedObject]:
            cat = self.resolver.catalog(tr, cn, load=False)
            return self._list_dropped(tr, cat.path.add(DATABASE), "Database",
                                      lambda n: str(DatabaseName(cn.catalog, n)))

        return self.run(fn)
