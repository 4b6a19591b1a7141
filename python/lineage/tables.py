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

import uuid
from typing import Any, Iterator, Mapping

from ushas_catalog.errors import InvalidName, NotFound
from ushas_catalog.kv.base import Transaction

from .model import Dataset, DatasetKind
from .store import TableState


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
        name = self._name(dataset)
        if name is None:
            return None
        try:
            return self.metastore.resolver.table(tr, name).id
        except NotFound:
            return None

    def table_state(self, tr: Transaction, table_id: uuid.UUID, last_name: str | None = None) -> TableState | None:
        ms = self.metastore
        if last_name:
            parts = last_name.split(".")
            if len(parts) == 3:
                try:
                    from ushas_catalog.model.names import DatabaseName

                    db = ms.resolver.database(tr, DatabaseName.parse((parts[0], parts[1])), load=False)
                except (NotFound, InvalidName):
                    db = None
                if db is not None:
                    found = _find_in(ms, tr, db, table_id, f"{parts[0]}.{parts[1]}")
                    if found is not None:
                        return found
        for db, shown in _databases(ms, tr):
            found = _find_in(ms, tr, db, table_id, shown)
            if found is not None:
                return found
        return None


def _find_in(ms: Any, tr: Transaction, db: Any, table_id: uuid.UUID, shown: str) -> TableState | None:
    tables = db.path.add("Table")
    for r in ms.resolver.names(tables, "Table").scan(tr, snapshot=True):
        if uuid.UUID(bytes=r.record.id) == table_id:
            return TableState(f"{shown}.{r.key[0]}")
    for r in ms.resolver.dropped(tables, "Table").scan(tr, snapshot=True):
        if r.key[1] == table_id:
            return TableState(f"{shown}.{r.key[0]}", dropped=True)
    return None


def _databases(ms: Any, tr: Transaction) -> Iterator[tuple[Any, str]]:
    from ushas_catalog.model.names import DatabaseName

    for c in ms.resolver.names(ms.resolver.catalogs, "Catalog").scan(tr, snapshot=True):
        cid = uuid.UUID(bytes=c.record.id)
        dbs = ms.resolver.catalogs.add("catalogId", cid).add("Database")
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
