"""The metastore key tree (DESIGN.md "Keyspace"), declared once.

Every key the project writes is a path of this tree packed with ``fdb.tuple`` under a
configurable raw root prefix. ``ushas keyspace`` prints it.

Adding a subtree (lineage, metadata, usage, change feed): add directories to the
matching tuple below (``DATA_LINEAGE_CHILDREN`` ...) and nothing else; the tree is
rebuilt and validated when a :class:`Layout` is made, and stats / parse pick them up.
Codes must stay short (they are in every key) and unique among siblings.

Where the metastore records live (the record type per subspace is in
``ushas_catalog.records.store.RECORD_TYPES``):

- ``*ObjectName``       name -> :class:`ObjectName` (id + kind). Views and tables share
  ``TableObjectName``: one name space per database.
- ``Dropped*ObjectName`` (name, id) -> :class:`DroppedObjectName`; undrop until purge.
- ``*Record`` / ``TableReference`` / ``TableSchema`` / ``TableStorage`` /
  ``TableProperties``: the current ("head") record, one key each.
- ``*History``: (version,) -> the head record as it was *before* commit ``version``
  (``TableHistory``: one :class:`HistoryEntry` per version; ``TablePartitionHistory``:
  (version, partition values...) -> :class:`PartitionChange`).
- ``*Commit``: (version,) -> :class:`Commit` (operation, user, time, detail).
- ``TablePartition``: (partition values...) -> :class:`Partition`, in value order, with the
  partition's data files when the write recorded them.
- ``TableDataFiles``: an unpartitioned table's data files (:class:`DataFileList`).
- ``DataGarbage`` (project level): (tableId, time, id) -> :class:`DataGarbage`: files a change
  made unreachable (overwrite, drop, truncate), written in that change's transaction and
  deleted at purge (``ushas purge``).
"""
from __future__ import annotations

import uuid

from .keyspace import Directory, KeySpace, KeySpacePath, KeyType, constant, typed

# --- extension points: other subtrees of a project -----------------------------------
def _by_dataset(name: str, code: str, doc: str) -> Directory:
    """A lineage / usage index keyed by dataset: a metastore table's id, or a name (Hive table, path)."""
    return constant(name, code, typed("tableId", KeyType.UUID), typed("datasetName", KeyType.STRING), doc=doc)


#: runs, dataset accesses, column edges (the lineage store adds its directories here);
#: written by ``lineage.store`` (one transaction per run), times are epoch ms of the run's end
DATA_LINEAGE_CHILDREN: tuple[Directory, ...] = (
    constant("LineageRun", "Lr", typed("runId", KeyType.UUID), doc="-> run record"),
    constant("LineageRunByTime", "Lt", typed("time", KeyType.LONG, typed("runId", KeyType.UUID)),
             doc="runs in time order"),
    constant("LineageRunDataset", "La", typed("runId", KeyType.UUID),
             doc="(access, dataset) -> dataset a run read / wrote"),
    constant("LineageRunEdge", "Le", typed("runId", KeyType.UUID),
             doc="(target, column, source, column, subtype) -> expression"),
    _by_dataset("LineageDatasetAccess", "Ld", "(time, runId, access): who read / wrote it"),
    _by_dataset("LineageUpstream", "Lu", "(column, time, runId, source, column, subtype): by target"),
    _by_dataset("LineageDownstream", "Lw", "(column, time, runId, target, column, subtype): by source"),
    _by_dataset("LineageDataset", "Ln", "-> the dataset as last captured"),
    constant("LineageDatasetName", "Lm", typed("name", KeyType.STRING), doc="(dataset,): every dataset seen under a name"),
    constant("LineageCounter", "Lk", typed("counter", KeyType.STRING), doc="captured / failed / dropped (atomic adds)"),
    constant("LineageCaptureSource", "Ls", typed("source", KeyType.STRING), doc="-> counters of one capturing process"),
)
#: user / system properties and tags, search index (written by ``ushas_catalog.metadata``,
#: read by ``ushas_catalog.search``); objects are keyed by their metastore id, so a rename or a
#: move between databases leaves their metadata in place
METADATA_CHILDREN: tuple[Directory, ...] = (
    constant("MetadataObject", "Mo", typed(
        "objectId", KeyType.UUID,
        constant("MetadataState", "Ms", doc="-> JSON: kind, name, indexed, schema fields, mirrored Spark values"),
        constant("MetadataEntry", "Me", doc="(column | None, scope, 'p' | 't', key) -> value"),
        constant("MetadataHistory", "Mh", doc="(versionstamp) -> JSON: who changed what, when")),
        doc="catalogs, databases, tables, views (their columns inside)"),
    constant("MetadataIndex", "Mi",
             doc="(field, term, kind code, scope code, objectId, column | None, key) -> (name[, value]): "
                 "search index"),
    constant("MetadataPending", "Mp", typed("objectId", KeyType.UUID),
             doc="-> the index entries of an object created since the last merge into MetadataIndex"),
)
#: read / write counters per object
USAGE_PROFILE_CHILDREN: tuple[Directory, ...] = (
    _by_dataset("DatasetUsage", "Ud", "(day, reads | writes) -> count (atomic adds)"),
)
#: ordered log of catalog changes (written by ``Metastore._commit``, read by
#: ``ushas_catalog.change_feed``): versionstamped keys, so commit order across processes
CHANGE_FEED_CHILDREN: tuple[Directory, ...] = (
    constant("ChangeEvent", "Fe", doc="(versionstamp[, chunk]) -> ChangeEvent, in commit order"),
    constant("ChangeFeedState", "Fs", typed("name", KeyType.STRING),
             doc="('trimmed',) -> versionstamp of the last event removed by retention"),
)


def _version(doc: str = "") -> Directory:
    return typed("version", KeyType.LONG, doc=doc)


def _names(prefix: str) -> tuple[Directory, Directory]:
    return (
        constant(f"{prefix}ObjectName", "n", typed("name", KeyType.STRING), doc="name -> id"),
        constant(f"Dropped{prefix}ObjectName", "d",
                 typed("name", KeyType.STRING, typed("id", KeyType.UUID)), doc="dropped names, until purge"),
    )


def _table() -> Directory:
    return constant(
        "Table", "T",
        *_names("Table"),
        typed("tableId", KeyType.UUID,
              constant("TableReference", "Tr", doc="version: concurrent writers serialize here"),
              constant("TableSchema", "Ts", doc="current schema"),
              constant("TableSchemaHistory", "Tsh", _version()),
              constant("TableStorage", "To", doc="format, location"),
              constant("TableStorageHistory", "Toh", _version()),
              constant("TableProperties", "Tp", doc="properties, comment, owner"),
              constant("TablePropertiesHistory", "Tph", _version()),
              constant("TablePartition", "Tx", doc="(partition values...) in value order"),
              constant("TablePartitionHistory", "Txh", _version(doc="then partition values")),
              constant("TableCommit", "Tc", _version()),
              constant("TableHistory", "Th", _version()),
              constant("TableDataFiles", "Tf", doc="an unpartitioned table's data files, as its last write "
                                                   "registered them (absent: list the location)")),
    )


def _view() -> Directory:
    return constant(
        "View", "V",
        typed("viewId", KeyType.UUID,
              constant("ViewRecord", "Vr"),
              constant("ViewHistory", "Vh", _version()),
              constant("ViewCommit", "Vc", _version())),
        doc="names live in TableObjectName",
    )


def _catalog() -> Directory:
    return constant(
        "Catalog", "C",
        *_names("Catalog"),
        typed("catalogId", KeyType.UUID,
              constant("CatalogRecord", "Cr"),
              constant("CatalogHistory", "Ch", _version()),
              constant("CatalogCommit", "Cc", _version()),
              constant("Database", "D",
                       *_names("Database"),
                       typed("databaseId", KeyType.UUID,
                             constant("DatabaseRecord", "Dr"),
                             constant("DatabaseHistory", "Dh", _version()),
                             constant("DatabaseCommit", "Dc", _version()),
                             _view(),
                             _table()))),
    )


def build_tree() -> Directory:
    """The project directory and everything below it."""
    return typed(
        "project", KeyType.STRING,
        _catalog(),
        constant("DataLineage", "L", *DATA_LINEAGE_CHILDREN),
        constant("Metadata", "M", *METADATA_CHILDREN),
        constant("UsageProfile", "U", *USAGE_PROFILE_CHILDREN),
        constant("ChangeFeed", "F", *CHANGE_FEED_CHILDREN),
        constant("DataGarbage", "G", typed("tableId", KeyType.UUID, typed("time", KeyType.LONG, typed("id", KeyType.UUID))),
                 doc="(tableId, time, id) -> DataGarbage: files an overwrite / drop made unreachable, "
                     "deleted at purge"),
        constant("WriteOutcome", "W", typed("writeId", KeyType.STRING),
                 doc="(writeId) -> WriteOutcome: a fenced write COMMITTED (its answer) or ABORTED (why)"),
        constant("PendingWork", "P", typed("operationId", KeyType.UUID),
                 doc="(operationId) -> PendingWork: an operation bigger than one transaction, in chunks"),
        doc="one tenant; deleting it = one clear_range",
    )


class Layout:
    """The key space of one store (all projects) under ``prefix``, with path helpers."""

    def __init__(self, prefix: bytes = b"") -> None:
        self.keyspace = KeySpace(build_tree(), prefix=prefix)

    @property
    def prefix(self) -> bytes:
        return self.keyspace.prefix

    def project(self, project: str) -> KeySpacePath:
        return self.keyspace.path("project", project)

    def catalog(self, project: str | KeySpacePath, catalog_id: uuid.UUID) -> KeySpacePath:
        base = self.project(project) if isinstance(project, str) else project
        return base.add("Catalog").add("catalogId", catalog_id)

    @staticmethod
    def database(catalog: KeySpacePath, database_id: uuid.UUID) -> KeySpacePath:
        return catalog.add("Database").add("databaseId", database_id)

    @staticmethod
    def table(database: KeySpacePath, table_id: uuid.UUID) -> KeySpacePath:
        return database.add("Table").add("tableId", table_id)

    @staticmethod
    def view(database: KeySpacePath, view_id: uuid.UUID) -> KeySpacePath:
        return database.add("View").add("viewId", view_id)

    def render(self) -> str:
        return self.keyspace.render()


DEFAULT_LAYOUT = Layout()
