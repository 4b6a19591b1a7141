"""The one resolver: name -> id (``*ObjectName``) -> head record, for catalogs, databases, tables and
views. Every module that resolves names uses it (the operations, metadata, search, the Spark cache,
the lineage store's table ids); handles are plain dataclasses."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from .. import records as rec
from ..errors import NoSuchCatalog, NoSuchNamespace, NoSuchTable, NoSuchView, ShareCatalog, TableAlreadyExists
from ..keyspace.layout import OBJECT, OBJECT_OBJECT_NAME, Layout
from ..keyspace.tree import KeySpacePath
from ..kv.base import Transaction
from ..model.names import CatalogName, DatabaseName, TableName
from ..model.partitions import PartitionScheme
from ..model.schema import struct_from_proto
from ..records.store import RecordStore
from ..keyspace.layout import (CATALOG, CATALOG_ID, CATALOG_RECORD, DATABASE, DATABASE_ID, DATABASE_RECORD,
                               TABLE, TABLE_REFERENCE, VIEW_RECORD)


@dataclass
class ResolvedObject:
    """A resolved catalog / database / view: its id path and head record (None: not loaded)."""

    kind: str
    name: CatalogName | DatabaseName | TableName
    id: uuid.UUID
    path: KeySpacePath
    record: Any


@dataclass
class ResolvedTable:
    """A resolved table: its database's path, id path and ``TableReference``."""

    name: TableName
    database: KeySpacePath
    id: uuid.UUID
    path: KeySpacePath
    ref: rec.TableReference

    def store(self, subspace: str, key_names: tuple[str, ...] | None = None) -> RecordStore[Any]:
        return RecordStore.at(self.path.add(subspace), key_names)

    def partitions(self, scheme: PartitionScheme) -> RecordStore[rec.Partition]:
        return self.store("TablePartition", scheme.names)

    def partition_history(self, scheme: PartitionScheme) -> RecordStore[rec.PartitionChange]:
        return self.store("TablePartitionHistory", ("version",) + scheme.names)


@dataclass(frozen=True)
class CheckedNames:
    """The names a privilege check has just resolved in a transaction (:mod:`.authorization`), for the checked
    call's own first lookup to take instead of reading them again: a database, and the name entry of a relation
    in it when the check was about one (``entry`` None: no such relation). Valid because nothing runs between the
    check and the call's first lookup, which takes it (once: :func:`remember_checked`)."""

    resolver: "Resolver"
    database: str
    database_id: uuid.UUID
    database_path: KeySpacePath
    relation: str | None = None
    entry: rec.ObjectName | None = None


#: the transaction attribute holding the :class:`CheckedNames` of the running checked call
_CHECKED = "ushas_checked_names"


def remember_checked(tr: Transaction, found: CheckedNames | None) -> None:
    """Keep ``found`` in ``tr`` for the next lookup of ``found.resolver`` (None: forget what is kept)."""
    attrs = getattr(tr, "__dict__", None)
    if attrs is None:  # a transaction that takes no attributes: the call reads the names itself
        return
    if found is None:
        attrs.pop(_CHECKED, None)
    else:
        attrs[_CHECKED] = found


def _taken(tr: Transaction, resolver: "Resolver") -> CheckedNames | None:
    found = getattr(tr, "__dict__", {}).pop(_CHECKED, None)
    return found if found is not None and found.resolver is resolver else None


class Resolver:
    """Resolution inside one project (``project_path``): every method reads in the caller's
    transaction ``tr`` and raises the ``NoSuch*`` error of the first missing level. The first database or
    relation lookup after a privilege check in the same transaction takes the names the check resolved
    (:class:`CheckedNames`) when they are the ones it looks up."""

    def __init__(self, project_path: KeySpacePath, project: str) -> None:
        self.project = project
        #: the project's ``Catalog`` directory
        self.catalogs = project_path.add(CATALOG)

    @staticmethod
    def names(parent: KeySpacePath, kind: str) -> RecordStore[rec.ObjectName]:
        """The live names of ``kind`` ("Catalog", "Database", "Table") under ``parent``."""
        return RecordStore.at(parent.add(f"{kind}ObjectName"))

    @staticmethod
    def dropped(parent: KeySpacePath, kind: str) -> RecordStore[rec.DroppedObjectName]:
        """The dropped names of ``kind`` under ``parent``, keyed (name, id)."""
        return RecordStore.at(parent.add(f"Dropped{kind}ObjectName"))

    def catalog(self, tr: Transaction, name: CatalogName, *, load: bool = True) -> ResolvedObject:
        entry = self.names(self.catalogs, "Catalog").load(tr, (name.catalog,))
        if entry is None:
            raise NoSuchCatalog(f"catalog {name} does not exist in project {self.project!r}", catalog=name.catalog)
        if entry.kind == rec.ObjectKind.SHARE:  # read through catalog.share_view (Spark, Metastore.shares.open)
            raise ShareCatalog(f"catalog {name} mounts a share of another project: read it through a Spark catalog "
                               f"of that name or Metastore.shares.open({name.catalog!r}); remove it with ushas shares unmount",
                               catalog=name.catalog)
        cid = uuid.UUID(bytes=entry.id)
        path = self.catalogs.add(CATALOG_ID, cid)
        record = RecordStore.at(path.add(CATALOG_RECORD)).load(tr, ()) if load else None
        return ResolvedObject("catalog", name, cid, path, record)

    def database(self, tr: Transaction, name: DatabaseName, *, load: bool = True) -> ResolvedObject:
        found = _taken(tr, self)
        if found is not None and found.database == str(name):
            record = RecordStore.at(found.database_path.add(DATABASE_RECORD)).load(tr, ()) if load else None
            return ResolvedObject("database", name, found.database_id, found.database_path, record)
        cat = self.catalog(tr, name.catalog_name, load=False)
        dbs = cat.path.add(DATABASE)
        entry = self.names(dbs, "Database").load(tr, (name.database,))
        if entry is None:
            raise NoSuchNamespace(f"database {name} does not exist", database=str(name))
        did = uuid.UUID(bytes=entry.id)
        path = dbs.add(DATABASE_ID, did)
        record = RecordStore.at(path.add(DATABASE_RECORD)).load(tr, ()) if load else None
        return ResolvedObject("database", name, did, path, record)

    def relation(self, tr: Transaction, name: TableName) -> tuple[ResolvedObject, rec.ObjectName | None]:
        """The database of ``name`` and the name entry of the table or view (None: no such relation)."""
        found = _taken(tr, self)
        if found is not None and found.database == str(name.database_name):
            db = ResolvedObject("database", name.database_name, found.database_id, found.database_path, None)
            if found.relation == str(name):
                return db, found.entry
        else:
            db = self.database(tr, name.database_name, load=False)
        return db, self.names(db.path.add(TABLE), "Table").load(tr, (name.name,))

    @staticmethod
    def object_entry(tr: Transaction, database: KeySpacePath, name: str) -> rec.ObjectName | None:
        """The name entry of the versioned object ``name`` of the database at ``database`` (None: none)."""
        return RecordStore.of(database.add(OBJECT), OBJECT_OBJECT_NAME).load(tr, (name,))

    def refuse_object_name(self, tr: Transaction, database: KeySpacePath, name: TableName) -> None:
        """A new table or view may not take the name of a versioned object of its database."""
        if self.object_entry(tr, database, name.name) is not None:
            raise TableAlreadyExists(f"{name} already exists as a versioned object (ushas objects show {name})",
                                     table=str(name))

    def head(self, tr: Transaction, name: TableName, db: ResolvedObject,
             entry: rec.ObjectName) -> ResolvedTable | ResolvedObject:
        """The table (a :class:`ResolvedTable`) or view (a :class:`ResolvedObject`) that the name entry
        ``entry`` of database ``db`` points to, with its head record."""
        oid = uuid.UUID(bytes=entry.id)
        if entry.kind == rec.ObjectKind.VIEW:
            path = Layout.view(db.path, oid)
            record = RecordStore.at(path.add(VIEW_RECORD)).load(tr, ())
            if record is None:  # pragma: no cover - a name entry always has its view
                raise NoSuchView(f"view {name} has a name but no record", view=str(name))
            return ResolvedObject("view", name, oid, path, record)
        path = Layout.table(db.path, oid)
        ref = RecordStore.at(path.add(TABLE_REFERENCE)).load(tr, ())
        if ref is None:  # pragma: no cover - a name entry always has its table
            raise NoSuchTable(f"table {name} has a name but no reference record", table=str(name))
        return ResolvedTable(name, db.path, oid, path, ref)

    def table(self, tr: Transaction, name: TableName) -> ResolvedTable:
        db, entry = self.relation(tr, name)
        if entry is None:
            raise NoSuchTable(f"table {name} does not exist", table=str(name))
        if entry.kind != rec.ObjectKind.TABLE:
            raise NoSuchTable(f"{name} is a view, not a table", table=str(name))
        found = self.head(tr, name, db, entry)
        assert isinstance(found, ResolvedTable)
        return found

    def view(self, tr: Transaction, name: TableName) -> ResolvedObject:
        db, entry = self.relation(tr, name)
        if entry is None:
            raise NoSuchView(f"view {name} does not exist", view=str(name))
        if entry.kind != rec.ObjectKind.VIEW:
            raise NoSuchView(f"{name} is a table, not a view", view=str(name))
        found = self.head(tr, name, db, entry)
        assert isinstance(found, ResolvedObject)
        return found

    @staticmethod
    def scheme(tr: Transaction, t: ResolvedTable) -> PartitionScheme:
        """The partition scheme of table ``t`` (from its current ``TableSchema``)."""
        schema = t.store("TableSchema").load(tr, ())
        return PartitionScheme.of(struct_from_proto(schema.schema), schema.partition_columns)
