"""Table ids for the lineage store, from the metastore of the same project.

Lineage keys a metastore table by its UUID (so a rename keeps its lineage and a dropped table
shows as dropped); everything else (session-catalog / Hive tables, paths) by name. A Spark
catalog name maps to a metastore catalog (``spark.sql.catalog.<name>.catalog``, default the
same name): the capture passes that mapping; the CLI, which has none, treats any three-part
name as ``catalog.database.table`` of the metastore.

Reading a table's current name from its id looks in the database where the lineage store last
saw it (its names, then its dropped names), and only if the table moved to another database
scans the project's databases.
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Iterator, Mapping

from ushas_catalog.errors import InvalidName, NotFound, ShareCatalog
from ushas_catalog.kv.base import Transaction
from ushas_catalog.keyspace.layout import CATALOG_ID, DATABASE, TABLE, TABLE_STORAGE

from .identity import TableLocation, TableLocations, canonical_uri, linked
from .model import Dataset, DatasetKind
from .store import TableState

#: how long a scan of the tables' locations answers path lookups before it is read again
LOCATIONS_TTL_S = 2.0


class MetastoreTableIds:
    """:class:`~lineage.store.TableIds` over a :class:`~ushas_catalog.metastore.Metastore`
    (read inside the lineage store's own transaction: same database, same project)."""

    def __init__(self, metastore: Any, catalogs: Mapping[str, str] | None = None) -> None:
        self.metastore = metastore
        #: Spark catalog name -> metastore catalog name; None: any catalog name is a metastore one
        self.catalogs = dict(catalogs) if catalogs else None

    def _name(self, dataset: Dataset) -> Any:
        from ushas_catalog.model.names import TableName

        if dataset.kind is not DatasetKind.TABLE or len(dataset.identifier) != 2 or not dataset.catalog:
            return None
        catalog = dataset.catalog
        if self.catalogs is not None:
            if catalog not in self.catalogs:
                return None
            catalog = self.catalogs[catalog]
        try:
            return TableName.parse((catalog, *dataset.identifier))
        except InvalidName:
            return None

    def table_id(self, tr: Transaction, dataset: Dataset) -> uuid.UUID | None:
        """The metastore table's id; a table read through a mounted share is the OWNER's table (its id)."""
        name = self._name(dataset)
        if name is None:
            return None
        try:
            return self.metastore.resolver.table(tr, name).id
        except NotFound:
            return None
        except ShareCatalog:
            return self._shared_id(tr, name)

    def is_view(self, tr: Transaction, dataset: Dataset) -> bool:
        """Whether ``dataset`` names a view of this metastore (views are known to lineage by name)."""
        name = self._name(dataset)
        if name is None:
            return False
        try:
            self.metastore.resolver.view(tr, name)
        except (NotFound, ShareCatalog):
            return False
        return True

    def _shared_id(self, tr: Transaction, name: Any) -> uuid.UUID | None:
        """The owner's id of a table of a mounted share (None: not shared, or no longer)."""
        from ushas_catalog.catalog.share_view import mounted, open_view

        ms = self.metastore
        try:  # in the caller's transaction: the mount, the share and the table, read once
            ref = mounted(tr, ms.layout, ms.project, name.catalog)
            return open_view(ms, name.catalog, ref).resolver.table(tr, name).id if ref is not None else None
        except NotFound:
            return None

    # ---- paths: one identity per dataset (lineage.identity) ------------------------------------
    def locations(self, tr: Transaction) -> TableLocations:
        """The tables' locations, read at most every :data:`LOCATIONS_TTL_S` seconds (capture)."""
        cached = getattr(self, "_locations", None)
        if cached is None or time.monotonic() - cached.built > LOCATIONS_TTL_S:
            cached = self._locations = self.scan_locations(tr)
        return cached

    def location_of(self, tr: Transaction, table_id: uuid.UUID, last_name: str | None = None) -> str | None:
        """The location (canonical) of a live metastore table, None when it has none or is gone."""
        from ushas_catalog.model.names import TableName
        from ushas_catalog.records.store import RecordStore

        state = self.table_state(tr, table_id, last_name)
        if state is None or state.dropped:
            return None
        try:
            t = self.metastore.resolver.table(tr, TableName.parse(tuple(state.name.split("."))))
        except (NotFound, InvalidName, ShareCatalog):
            return None
        storage = RecordStore.at(t.path.add(TABLE_STORAGE)).load(tr, ())
        location = getattr(storage, "location", "") if storage is not None else ""
        return canonical_uri(location) if location else None

    def scan_locations(self, tr: Transaction) -> TableLocations:
        """The tables' locations, read now."""
        return TableLocations.of(table_locations(self.metastore, tr))

    def table_for_path(self, tr: Transaction, dataset: Dataset) -> tuple[uuid.UUID | str, Dataset] | None:
        """The metastore table a path dataset is (or lies under): its id and the dataset as a
        table that keeps the path (``uri``); a versioned object's location: its qualified name and
        the object as a dataset; None when no table or object holds the path."""
        if dataset.kind is not DatasetKind.PATH or not dataset.uri:
            return None
        found = self.locations(tr).find(dataset.uri)
        if found is None:
            return None
        t = found.table
        if t.kind == "object":  # named by the metastore's catalog name: objects are not Spark tables
            return t.qualified_name, linked(dataset, Dataset.table(t.catalog, t.database, t.table))
        catalog = t.catalog
        if self.catalogs is not None:  # name it as the session does (its Spark catalog name)
            spark_names = [k for k, v in self.catalogs.items() if v == t.catalog]
            catalog = spark_names[0] if spark_names else catalog
        return t.table_id, linked(dataset, Dataset.table(catalog, t.database, t.table))

    def table_state(self, tr: Transaction, table_id: uuid.UUID, last_name: str | None = None) -> TableState | None:
        ms = self.metastore
        if last_name:
            parts = last_name.split(".")
            if len(parts) == 3:
                from ushas_catalog.model.names import DatabaseName, TableName

                try:
                    db = ms.resolver.database(tr, DatabaseName.parse((parts[0], parts[1])), load=False)
                except (NotFound, InvalidName):
                    db = None
                except ShareCatalog:  # a mounted share's table: its name as the recipient reads it
                    return TableState(last_name) if self._shared_id(tr, TableName.parse(tuple(parts))) == table_id else None
                if db is not None:  # most often still its name: one point read before any scan
                    entry = ms.resolver.names(db.path.add(TABLE), "Table").load(tr, (parts[2],), snapshot=True)
                    if entry is not None and uuid.UUID(bytes=entry.id) == table_id:
                        return TableState(last_name)
                    found = _find_in(ms, tr, db, table_id, f"{parts[0]}.{parts[1]}")
                    if found is not None:
                        return found
        for db, shown in databases_of(ms, tr):
            found = _find_in(ms, tr, db, table_id, shown)
            if found is not None:
                return found
        return None


def _find_in(ms: Any, tr: Transaction, db: Any, table_id: uuid.UUID, shown: str) -> TableState | None:
    tables = db.path.add(TABLE)
    for r in ms.resolver.names(tables, "Table").scan(tr, snapshot=True):
        if uuid.UUID(bytes=r.record.id) == table_id:
            return TableState(f"{shown}.{r.key[0]}")
    for r in ms.resolver.dropped(tables, "Table").scan(tr, snapshot=True):
        if r.key[1] == table_id:
            return TableState(f"{shown}.{r.key[0]}", dropped=True)
    return None


def table_locations(ms: Any, tr: Transaction) -> Iterator[TableLocation]:
    """Every live table of the metastore with a location (views and location-less tables skipped)."""
    from ushas_catalog import records as rec
    from ushas_catalog.keyspace.layout import Layout
    from ushas_catalog.records.store import RecordStore

    for db, shown in databases_of(ms, tr):
        catalog, database = shown.split(".", 1)
        for r in ms.resolver.names(db.path.add(TABLE), "Table").scan(tr, snapshot=True):
            if r.record.kind != rec.ObjectKind.TABLE:
                continue
            tid = uuid.UUID(bytes=r.record.id)
            storage = RecordStore.at(Layout.table(db.path, tid).add(TABLE_STORAGE)).load(tr, ())
            location = getattr(storage, "location", "") if storage is not None else ""
            if location:
                yield TableLocation(tid, catalog, database, r.key[0], canonical_uri(location))
    for db, shown in databases_of(ms, tr):  # after every table: a table's location wins over an object's
        catalog, database = shown.split(".", 1)
        for name, oid, location in object_locations(tr, db.path):
            yield TableLocation(oid, catalog, database, name, canonical_uri(location), kind="object")


def object_locations(tr: Transaction, database: Any) -> Iterator[tuple[str, uuid.UUID, str]]:
    """(name, id, location) of each live versioned object of the database at ``database``."""
    from ushas_catalog.keyspace.layout import OBJECT, OBJECT_ID, OBJECT_OBJECT_NAME, OBJECT_RECORD
    from ushas_catalog.records.store import RecordStore

    base = database.add(OBJECT)
    for r in RecordStore.of(base, OBJECT_OBJECT_NAME).scan(tr, snapshot=True):
        oid = uuid.UUID(bytes=r.record.id)
        record = RecordStore.of(base.add(OBJECT_ID, oid), OBJECT_RECORD).load(tr, ())
        if record is not None and record.location:
            yield r.key[0], oid, record.location


def databases_of(ms: Any, tr: Transaction) -> Iterator[tuple[Any, str]]:
    from ushas_catalog.model.names import DatabaseName

    for c in ms.resolver.names(ms.resolver.catalogs, "Catalog").scan(tr, snapshot=True):
        cid = uuid.UUID(bytes=c.record.id)
        dbs = ms.resolver.catalogs.add(CATALOG_ID, cid).add(DATABASE)
        for d in ms.resolver.names(dbs, "Database").scan(tr, snapshot=True):
            try:
                db = ms.resolver.database(tr, DatabaseName.parse((c.key[0], d.key[0])), load=False)
            except (NotFound, InvalidName):
                continue
            yield db, f"{c.key[0]}.{d.key[0]}"


def open_lineage_store(uri: str, project: str = "default", catalogs: Mapping[str, str] | None = None, *,
                       create: bool = True) -> Any:
    """The lineage store of ``project`` at ``uri``, its table ids read from the metastore of the
    same store (one database handle shared by both). ``create=False``: never create the store."""
    from ushas_catalog.metastore import Metastore

    from .store import LineageStore

    ms = Metastore.open(uri, project=project, create=create)
    return LineageStore(ms.db, project, layout=ms.layout, tables=MetastoreTableIds(ms, catalogs), owns_db=True)
