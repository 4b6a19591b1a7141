"""The metastore key tree (DESIGN.md "Keyspace"), declared once.

Every key the project writes is a path of this tree packed with ``fdb.tuple`` under a
configurable raw root prefix. ``ushas keyspace`` prints it.

Adding a subtree (lineage, metadata, usage, change feed): add directories to the
matching tuple below (``DATA_LINEAGE_CHILDREN`` ...) and nothing else; the tree is
rebuilt and validated when a :class:`Layout` is made, and stats / parse pick them up.
Codes must stay short (they are in every key) and unique among siblings.

Every directory is declared once below as a :class:`~ushas_catalog.keyspace.tree.Subspace` constant
(``TABLE_SCHEMA``) with what it holds: its codec and, for protobuf records, its message type and
primary key (a :class:`~ushas_catalog.keyspace.tree.RecordSubspace`). The tree is built from these
constants, the registries (:data:`RECORD_TYPES`, :data:`HEADS`) are derived from the tree, and code
builds paths with them (``path.add(TABLE_SCHEMA)``, ``RecordStore.of(table_path, TABLE_SCHEMA)``),
so a misspelt or mistyped subspace fails the type check and the import, not a write in production.

Where the metastore records live:

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
from typing import Any

from google.protobuf.message import Message

from .tree import (Codec, Directory, KeySpace, KeySpacePath, KeyType, RecordSubspace, Subspace, constant,
                       typed)
from ..records.catalog_pb2 import CatalogRecord, DatabaseRecord
from ..records.commit_pb2 import Commit, HistoryEntry
from ..records.function_pb2 import FunctionRecord
from ..records.hook_pb2 import HookDeadLetter, HookDefinition, HookDelivery, HookState
from ..records.governance_pb2 import AccessState, GrantRecord, LocationRecord, MemberRecord, RoleRecord
from ..records.names_pb2 import DroppedObjectName, ObjectName
from ..records.object_pb2 import ObjectRecord, ObjectType, ObjectVersion
from ..records.partition_pb2 import DataFileList, DataGarbage, Partition, PartitionChange, PartitionTagEntry
from ..records.table_pb2 import TableProperties, TableReference, TableSchema, TableStorage
from ..records.view_pb2 import ViewRecord
from ..records.share_pb2 import ShareRecord
from ..records.branch_pb2 import BranchPoints, SubBranchRecord
from ..records.work_pb2 import PendingWork
from ..records.write_pb2 import WriteOutcome
from ..records.time_travel_pb2 import DataFileListChange, PurgeMark, VersionTag

# --- the directories: every name of the tree, declared once ------------------------------------
# typed (variable) directories
PROJECT = Subspace("project")
CATALOG_ID = Subspace("catalogId")
DATABASE_ID = Subspace("databaseId")
VIEW_ID = Subspace("viewId")
FUNCTION_ID = Subspace("functionId")
TABLE_ID = Subspace("tableId")
NAME = Subspace("name")
ID = Subspace("id")
VERSION = Subspace("version")
TIME = Subspace("time")
RUN_ID = Subspace("runId")
DATASET_NAME = Subspace("datasetName")
COUNTER = Subspace("counter")
SOURCE = Subspace("source")
OBJECT_ID = Subspace("objectId")
WRITE_ID = Subspace("writeId")
OPERATION_ID = Subspace("operationId")
TOKEN_ID = Subspace("tokenId")
QUERY_ID = Subspace("queryId")
CONTAINER = Subspace("container")
MEMBER = Subspace("member")
PRINCIPAL = Subspace("principal")
PRIVILEGE_NAME = Subspace("privilege")

# catalogs, databases, views, tables
CATALOG = Subspace("Catalog")
CATALOG_OBJECT_NAME = RecordSubspace("CatalogObjectName", ObjectName, ("name",))
DROPPED_CATALOG_OBJECT_NAME = RecordSubspace("DroppedCatalogObjectName", DroppedObjectName, ("name", "id"))
CATALOG_RECORD = RecordSubspace("CatalogRecord", CatalogRecord, role="head")
CATALOG_HISTORY = RecordSubspace("CatalogHistory", CatalogRecord, ("version",), role="history")
CATALOG_COMMIT = RecordSubspace("CatalogCommit", Commit, ("version",), role="commit")
# branches of a catalog (catalog.branches): records, branch points, the parent's kept values, overlays
BRANCH_ID = Subspace("branchId")
BRANCH = RecordSubspace("Branch", SubBranchRecord, ("name",))
BRANCH_POINTS = RecordSubspace("BranchPoints", BranchPoints, ())
BRANCH_UNDO = Subspace("BranchUndo", codec=Codec.BYTES)
BRANCH_OVERLAY = Subspace("BranchOverlay", codec=Codec.BYTES)
DATABASE = Subspace("Database")
DATABASE_OBJECT_NAME = RecordSubspace("DatabaseObjectName", ObjectName, ("name",))
DROPPED_DATABASE_OBJECT_NAME = RecordSubspace("DroppedDatabaseObjectName", DroppedObjectName, ("name", "id"))
DATABASE_RECORD = RecordSubspace("DatabaseRecord", DatabaseRecord, role="head")
DATABASE_HISTORY = RecordSubspace("DatabaseHistory", DatabaseRecord, ("version",), role="history")
DATABASE_COMMIT = RecordSubspace("DatabaseCommit", Commit, ("version",), role="commit")
VIEW = Subspace("View")
VIEW_RECORD = RecordSubspace("ViewRecord", ViewRecord, role="head")
VIEW_HISTORY = RecordSubspace("ViewHistory", ViewRecord, ("version",), role="history")
VIEW_COMMIT = RecordSubspace("ViewCommit", Commit, ("version",), role="commit")
# persistent functions (catalog.functions): names, head record, history, commits, like a view
FUNCTION = Subspace("Function")
FUNCTION_OBJECT_NAME = RecordSubspace("FunctionObjectName", ObjectName, ("name",))
DROPPED_FUNCTION_OBJECT_NAME = RecordSubspace("DroppedFunctionObjectName", DroppedObjectName, ("name", "id"))
FUNCTION_RECORD = RecordSubspace("FunctionRecord", FunctionRecord, role="head")
FUNCTION_HISTORY = RecordSubspace("FunctionHistory", FunctionRecord, ("version",), role="history")
FUNCTION_COMMIT = RecordSubspace("FunctionCommit", Commit, ("version",), role="commit")
# versioned objects (catalog.objects): names, head record, history, commits like a function, plus their
# data versions, user-defined subspace types and those subspaces' records
OBJECT = Subspace("Object")
OBJECT_OBJECT_NAME = RecordSubspace("ObjectObjectName", ObjectName, ("name",))
DROPPED_OBJECT_OBJECT_NAME = RecordSubspace("DroppedObjectObjectName", DroppedObjectName, ("name", "id"))
OBJECT_RECORD = RecordSubspace("ObjectRecord", ObjectRecord, role="head")
OBJECT_HISTORY = RecordSubspace("ObjectHistory", ObjectRecord, ("version",), role="history")
OBJECT_COMMIT = RecordSubspace("ObjectCommit", Commit, ("version",), role="commit")
OBJECT_VERSION = RecordSubspace("ObjectVersion", ObjectVersion, ("version",))
OBJECT_TYPE = RecordSubspace("ObjectType", ObjectType, ("name",))
OBJECT_DATA = Subspace("ObjectData", codec=Codec.BYTES)
TABLE = Subspace("Table")
TABLE_OBJECT_NAME = RecordSubspace("TableObjectName", ObjectName, ("name",))
DROPPED_TABLE_OBJECT_NAME = RecordSubspace("DroppedTableObjectName", DroppedObjectName, ("name", "id"))
TABLE_REFERENCE = RecordSubspace("TableReference", TableReference, role="head")
TABLE_SCHEMA = RecordSubspace("TableSchema", TableSchema)
TABLE_SCHEMA_HISTORY = RecordSubspace("TableSchemaHistory", TableSchema, ("version",))
TABLE_STORAGE = RecordSubspace("TableStorage", TableStorage)
TABLE_STORAGE_HISTORY = RecordSubspace("TableStorageHistory", TableStorage, ("version",))
TABLE_PROPERTIES = RecordSubspace("TableProperties", TableProperties)
TABLE_PROPERTIES_HISTORY = RecordSubspace("TablePropertiesHistory", TableProperties, ("version",))
TABLE_PARTITION = RecordSubspace("TablePartition", Partition, None)  # one key element per partition column
TABLE_PARTITION_HISTORY = RecordSubspace("TablePartitionHistory", PartitionChange, None)  # version, values...
TABLE_COMMIT = RecordSubspace("TableCommit", Commit, ("version",), role="commit")
TABLE_HISTORY = RecordSubspace("TableHistory", HistoryEntry, ("version",), role="history")
TABLE_DATA_FILES = RecordSubspace("TableDataFiles", DataFileList)
# reads as of a version (catalog.time_travel)
TABLE_DATA_FILES_HISTORY = RecordSubspace("TableDataFilesHistory", DataFileListChange, ("version",))
TABLE_TAG = RecordSubspace("TableTag", VersionTag, ("name",))
TABLE_PURGE_MARK = RecordSubspace("TablePurgeMark", PurgeMark)
# partition tags (catalog.partition_tags): (tag key, tag value, partition values...) -> empty message
TABLE_PARTITION_TAG = RecordSubspace("TablePartitionTag", PartitionTagEntry, None)

# lineage (lineage.store)
DATA_LINEAGE = Subspace("DataLineage")
LINEAGE_RUN = Subspace("LineageRun", codec=Codec.JSON)
LINEAGE_RUN_BY_TIME = Subspace("LineageRunByTime", codec=Codec.EMPTY)
LINEAGE_RUN_DATASET = Subspace("LineageRunDataset", codec=Codec.JSON)
LINEAGE_RUN_EDGE = Subspace("LineageRunEdge", codec=Codec.TEXT)
LINEAGE_DATASET_ACCESS = Subspace("LineageDatasetAccess", codec=Codec.EMPTY)
LINEAGE_UPSTREAM = Subspace("LineageUpstream", codec=Codec.EMPTY)
LINEAGE_DOWNSTREAM = Subspace("LineageDownstream", codec=Codec.EMPTY)
LINEAGE_DATASET = Subspace("LineageDataset", codec=Codec.JSON)
LINEAGE_DATASET_NAME = Subspace("LineageDatasetName", codec=Codec.EMPTY)
LINEAGE_COUNTER = Subspace("LineageCounter", codec=Codec.COUNTER)
LINEAGE_CAPTURE_SOURCE = Subspace("LineageCaptureSource", codec=Codec.JSON)

# business and system metadata, search (metadata, search)
METADATA = Subspace("Metadata")
METADATA_OBJECT = Subspace("MetadataObject")
METADATA_STATE = Subspace("MetadataState", codec=Codec.JSON)
METADATA_ENTRY = Subspace("MetadataEntry", codec=Codec.TEXT)
METADATA_HISTORY = Subspace("MetadataHistory", codec=Codec.JSON)
METADATA_INDEX = Subspace("MetadataIndex", codec=Codec.BYTES)
METADATA_PENDING = Subspace("MetadataPending", codec=Codec.BYTES)

# usage, change feed, data garbage, fenced writes
USAGE_PROFILE = Subspace("UsageProfile")
DATASET_USAGE = Subspace("DatasetUsage", codec=Codec.COUNTER)
CHANGE_FEED = Subspace("ChangeFeed")
CHANGE_EVENT = Subspace("ChangeEvent", codec=Codec.PROTOBUF)  # records.ChangeEvent, chunked, versionstamped keys
CHANGE_FEED_STATE = Subspace("ChangeFeedState", codec=Codec.BYTES)
DATA_GARBAGE = RecordSubspace("DataGarbage", DataGarbage, ("tableId", "time", "id"))
WRITE_OUTCOME = RecordSubspace("WriteOutcome", WriteOutcome, ("writeId",))
PENDING_WORK = RecordSubspace("PendingWork", PendingWork, ("operationId",))
SERVICE_TOKEN = Subspace("ServiceToken", codec=Codec.JSON)
# streaming writers (ushas_catalog.changes.streams): the last micro-batch each query committed per table
STREAM_PROGRESS = Subspace("StreamProgress", codec=Codec.JSON)
# change hooks (ushas_catalog.hooks): definitions, progress, deliveries, dead letters, by hook name
HOOK = Subspace("Hook")
HOOK_NAME = Subspace("hookName")
STAMP = Subspace("stamp")
HOOK_DEFINITION = RecordSubspace("HookDefinition", HookDefinition, ("hookName",))
HOOK_STATE = RecordSubspace("HookState", HookState, ("hookName",))
HOOK_DELIVERY = RecordSubspace("HookDelivery", HookDelivery, ("hookName", "stamp"))
HOOK_DEAD_LETTER = RecordSubspace("HookDeadLetter", HookDeadLetter, ("hookName", "stamp"))
# shares between projects (governance.shares): the owner project's shares, by name
SHARE = RecordSubspace("Share", ShareRecord, ("name",))

# governance (ushas_catalog.governance): roles, members, privileges, one state record
ACCESS = Subspace("Access")
ROLE = RecordSubspace("Role", RoleRecord, ("name",))
ROLE_MEMBER = RecordSubspace("RoleMember", MemberRecord, ("container", "member"))
PRIVILEGE = RecordSubspace("Privilege", GrantRecord, ("objectId", "principal", "privilege"))
ACCESS_STATE = RecordSubspace("AccessState", AccessState, ())
LOCATION = RecordSubspace("Location", LocationRecord, ("name",))


# --- extension points: other subtrees of a project -----------------------------------
def _by_dataset(name: Subspace, code: str, doc: str) -> Directory:
    """A lineage / usage index keyed by dataset: a metastore table's id, or a name (Hive table, path)."""
    return constant(name, code, typed(TABLE_ID, KeyType.UUID), typed(DATASET_NAME, KeyType.STRING), doc=doc)


#: runs, dataset accesses, column edges (the lineage store adds its directories here);
#: written by ``lineage.store`` (one transaction per run), times are epoch ms of the run's end
DATA_LINEAGE_CHILDREN: tuple[Directory, ...] = (
    constant(LINEAGE_RUN, "Lr", typed(RUN_ID, KeyType.UUID), doc="-> run record"),
    constant(LINEAGE_RUN_BY_TIME, "Lt", typed(TIME, KeyType.LONG, typed(RUN_ID, KeyType.UUID)),
             doc="runs in time order"),
    constant(LINEAGE_RUN_DATASET, "La", typed(RUN_ID, KeyType.UUID),
             doc="(access, dataset) -> dataset a run read / wrote"),
    constant(LINEAGE_RUN_EDGE, "Le", typed(RUN_ID, KeyType.UUID),
             doc="(target, column, source, column, subtype) -> expression"),
    _by_dataset(LINEAGE_DATASET_ACCESS, "Ld", "(time, runId, access): who read / wrote it"),
    _by_dataset(LINEAGE_UPSTREAM, "Lu", "(column, time, runId, source, column, subtype): by target"),
    _by_dataset(LINEAGE_DOWNSTREAM, "Lw", "(column, time, runId, target, column, subtype): by source"),
    _by_dataset(LINEAGE_DATASET, "Ln", "-> the dataset as last captured"),
    constant(LINEAGE_DATASET_NAME, "Lm", typed(NAME, KeyType.STRING), doc="(dataset,): every dataset seen under a name"),
    constant(LINEAGE_COUNTER, "Lk", typed(COUNTER, KeyType.STRING), doc="captured / failed / dropped (atomic adds)"),
    constant(LINEAGE_CAPTURE_SOURCE, "Ls", typed(SOURCE, KeyType.STRING), doc="-> counters of one capturing process"),
)
#: user / system properties and tags, search index (written by ``ushas_catalog.metadata``,
#: read by ``ushas_catalog.metadata.search``); objects are keyed by their metastore id, so a rename or a
#: move between databases leaves their metadata in place
METADATA_CHILDREN: tuple[Directory, ...] = (
    constant(METADATA_OBJECT, "Mo", typed(
        OBJECT_ID, KeyType.UUID,
        constant(METADATA_STATE, "Ms", doc="-> JSON: kind, name, indexed, schema fields, mirrored Spark values"),
        constant(METADATA_ENTRY, "Me", doc="(column | None, scope, 'p' | 't', key) -> value"),
        constant(METADATA_HISTORY, "Mh", doc="(versionstamp) -> JSON: who changed what, when")),
        doc="catalogs, databases, tables, views (their columns inside)"),
    constant(METADATA_INDEX, "Mi",
             doc="(field, term, kind code, scope code, objectId, column | None, key) -> (name[, value]): "
                 "search index"),
    constant(METADATA_PENDING, "Mp", typed(OBJECT_ID, KeyType.UUID),
             doc="-> the index entries of an object created since the last merge into MetadataIndex"),
)
#: read / write counters per object
USAGE_PROFILE_CHILDREN: tuple[Directory, ...] = (
    _by_dataset(DATASET_USAGE, "Ud", "(day, reads | writes) -> count (atomic adds)"),
)
#: ordered log of catalog changes (written by ``Metastore._commit``, read by
#: ``ushas_catalog.changes.feed``): versionstamped keys, so commit order across processes
CHANGE_FEED_CHILDREN: tuple[Directory, ...] = (
    constant(CHANGE_EVENT, "Fe", doc="(versionstamp[, chunk]) -> ChangeEvent, in commit order"),
    constant(CHANGE_FEED_STATE, "Fs", typed(NAME, KeyType.STRING),
             doc="('trimmed',) -> versionstamp of the last event removed by retention"),
)

#: change hooks (``ushas_catalog.hooks``), keyed by hook name; deliveries and dead letters by the
#: 12-byte versionstamp of their change feed event
HOOK_CHILDREN: tuple[Directory, ...] = (
    constant(HOOK_DEFINITION, "Hd", typed(HOOK_NAME, KeyType.STRING), doc="-> HookDefinition"),
    constant(HOOK_STATE, "Hs", typed(HOOK_NAME, KeyType.STRING), doc="-> HookState: cursor, attempts, lease"),
    constant(HOOK_DELIVERY, "Hv", typed(HOOK_NAME, KeyType.STRING, typed(STAMP, KeyType.BYTES)),
             doc="(versionstamp) -> HookDelivery, in feed order"),
    constant(HOOK_DEAD_LETTER, "Hx", typed(HOOK_NAME, KeyType.STRING, typed(STAMP, KeyType.BYTES)),
             doc="(versionstamp) -> HookDeadLetter"),
)

#: roles, their members and privilege grants of a project (``ushas_catalog.governance``); the whole
#: subspace is small and read at once (one range read) when its state record changes
ACCESS_CHILDREN: tuple[Directory, ...] = (
    constant(ROLE, "Ar", typed(NAME, KeyType.STRING), doc="(name) -> RoleRecord"),
    constant(ROLE_MEMBER, "Am", typed(CONTAINER, KeyType.STRING, typed(MEMBER, KeyType.STRING)),
             doc="(role:R | group:G, member principal) -> MemberRecord"),
    constant(PRIVILEGE, "Ap", typed(OBJECT_ID, KeyType.UUID, typed(PRINCIPAL, KeyType.STRING,
                                                                       typed(PRIVILEGE_NAME, KeyType.STRING))),
             doc="(objectId, principal, privilege) -> GrantRecord; objectId 0: the project"),
    constant(ACCESS_STATE, "As", doc="-> AccessState: a new token on every grant, revoke, role change"),
    constant(LOCATION, "Al", typed(NAME, KeyType.STRING), doc="(name) -> LocationRecord: a declared external location"),
)


def _version(doc: str = "") -> Directory:
    return typed(VERSION, KeyType.LONG, doc=doc)


def _names(names: RecordSubspace[ObjectName], dropped: RecordSubspace[DroppedObjectName]) -> tuple[Directory, Directory]:
    return (
        constant(names, "n", typed(NAME, KeyType.STRING), doc="name -> id"),
        constant(dropped, "d", typed(NAME, KeyType.STRING, typed(ID, KeyType.UUID)), doc="dropped names, until purge"),
    )


def _table() -> Directory:
    return constant(
        TABLE, "T",
        *_names(TABLE_OBJECT_NAME, DROPPED_TABLE_OBJECT_NAME),
        typed(TABLE_ID, KeyType.UUID,
              constant(TABLE_REFERENCE, "Tr", doc="version: concurrent writers serialize here"),
              constant(TABLE_SCHEMA, "Ts", doc="current schema"),
              constant(TABLE_SCHEMA_HISTORY, "Tsh", _version()),
              constant(TABLE_STORAGE, "To", doc="format, location"),
              constant(TABLE_STORAGE_HISTORY, "Toh", _version()),
              constant(TABLE_PROPERTIES, "Tp", doc="properties, comment, owner"),
              constant(TABLE_PROPERTIES_HISTORY, "Tph", _version()),
              constant(TABLE_PARTITION, "Tx", doc="(partition values...) in value order"),
              constant(TABLE_PARTITION_HISTORY, "Txh", _version(doc="then partition values")),
              constant(TABLE_COMMIT, "Tc", _version()),
              constant(TABLE_HISTORY, "Th", _version()),
              constant(TABLE_DATA_FILES, "Tf", doc="an unpartitioned table's data files, as its last write "
                                                   "registered them (absent: list the location)"),
              constant(TABLE_DATA_FILES_HISTORY, "Tfh", _version(doc="the file list before that commit")),
              constant(TABLE_TAG, "Tg", typed(NAME, KeyType.STRING), doc="(tag name) -> a named version"),
              constant(TABLE_PURGE_MARK, "Tpm", doc="the last purge of replaced files (what is readable)"),
              constant(TABLE_PARTITION_TAG, "Txt", doc="(tag key, tag value, partition values...): the "
                                                       "partitions by user tag (an index of TablePartition)")),
    )


def _view() -> Directory:
    return constant(
        VIEW, "V",
        typed(VIEW_ID, KeyType.UUID,
              constant(VIEW_RECORD, "Vr"),
              constant(VIEW_HISTORY, "Vh", _version()),
              constant(VIEW_COMMIT, "Vc", _version())),
        doc="names live in TableObjectName",
    )


def _function() -> Directory:
    return constant(
        FUNCTION, "Fn",
        *_names(FUNCTION_OBJECT_NAME, DROPPED_FUNCTION_OBJECT_NAME),
        typed(FUNCTION_ID, KeyType.UUID,
              constant(FUNCTION_RECORD, "Fr"),
              constant(FUNCTION_HISTORY, "Fh", _version()),
              constant(FUNCTION_COMMIT, "Fc", _version())),
        doc="persistent functions: their own name space in the database",
    )


def _object() -> Directory:
    return constant(
        OBJECT, "Ob",
        *_names(OBJECT_OBJECT_NAME, DROPPED_OBJECT_OBJECT_NAME),
        typed(OBJECT_ID, KeyType.UUID,
              constant(OBJECT_RECORD, "Or", doc="kind, location, properties, current version"),
              constant(OBJECT_HISTORY, "Oh", _version()),
              constant(OBJECT_COMMIT, "Oc", _version()),
              constant(OBJECT_VERSION, "Ov", _version(doc="-> ObjectVersion: a data version")),
              constant(OBJECT_TYPE, "Ot", typed(NAME, KeyType.STRING),
                       doc="(subspace) -> ObjectType: a user-defined subspace's message type"),
              constant(OBJECT_DATA, "Od", doc="(subspace, primary key...) -> serialized message of its type")),
        doc="versioned objects (volumes, models, files): their own name space, tables' names refused",
    )


def _catalog() -> Directory:
    return constant(
        CATALOG, "C",
        *_names(CATALOG_OBJECT_NAME, DROPPED_CATALOG_OBJECT_NAME),
        typed(CATALOG_ID, KeyType.UUID,
              constant(CATALOG_RECORD, "Cr"),
              constant(CATALOG_HISTORY, "Ch", _version()),
              constant(CATALOG_COMMIT, "Cc", _version()),
              constant(BRANCH, "Cb", typed(NAME, KeyType.STRING), doc="(name) -> SubBranchRecord"),
              constant(BRANCH_POINTS, "Cbp", doc="-> BranchPoints: the latest branch point, live branches"),
              constant(BRANCH_UNDO, "Cbu", doc="(key below the catalog, branch point) -> the key's value at that "
                                                "point, kept when the catalog changes it while branches live"),
              constant(BRANCH_OVERLAY, "Cbo", typed(BRANCH_ID, KeyType.UUID),
                       doc="(key below the catalog) -> the branch's own value of the key (or its removal)"),
              constant(DATABASE, "D",
                       *_names(DATABASE_OBJECT_NAME, DROPPED_DATABASE_OBJECT_NAME),
                       typed(DATABASE_ID, KeyType.UUID,
                             constant(DATABASE_RECORD, "Dr"),
                             constant(DATABASE_HISTORY, "Dh", _version()),
                             constant(DATABASE_COMMIT, "Dc", _version()),
                             _view(),
                             _table(),
                             _function(),
                             _object()))),
    )


def build_tree() -> Directory:
    """The project directory and everything below it."""
    return typed(
        PROJECT, KeyType.STRING,
        _catalog(),
        constant(DATA_LINEAGE, "L", *DATA_LINEAGE_CHILDREN),
        constant(METADATA, "M", *METADATA_CHILDREN),
        constant(USAGE_PROFILE, "U", *USAGE_PROFILE_CHILDREN),
        constant(CHANGE_FEED, "F", *CHANGE_FEED_CHILDREN),
        constant(DATA_GARBAGE, "G", typed(TABLE_ID, KeyType.UUID, typed(TIME, KeyType.LONG, typed(ID, KeyType.UUID))),
                 doc="(tableId, time, id) -> DataGarbage: files an overwrite / drop made unreachable, "
                     "deleted at purge"),
        constant(WRITE_OUTCOME, "W", typed(WRITE_ID, KeyType.STRING),
                 doc="(writeId) -> WriteOutcome: a fenced write COMMITTED (its answer) or ABORTED (why)"),
        constant(PENDING_WORK, "P", typed(OPERATION_ID, KeyType.UUID),
                 doc="(operationId) -> PendingWork: an operation bigger than one transaction, in chunks"),
        constant(STREAM_PROGRESS, "Sq", typed(TABLE_ID, KeyType.UUID, typed(QUERY_ID, KeyType.STRING)),
                 doc="(tableId, queryId) -> JSON: the last micro-batch a streaming query committed into "
                     "a table (written in that commit's transaction: a batch commits once)"),
        constant(SERVICE_TOKEN, "S", typed(TOKEN_ID, KeyType.STRING),
                 doc="(tokenId) -> JSON: an API token of ushas serve (its secret hashed), ushas tokens"),
        constant(HOOK, "Hk", *HOOK_CHILDREN,
                 doc="change hooks (ushas hooks): definition, progress, deliveries, dead letters"),
        constant(ACCESS, "A", *ACCESS_CHILDREN, doc="roles, members, privileges (ushas roles, ushas grant)"),
        constant(SHARE, "Sh", typed(NAME, KeyType.STRING),
                 doc="(name) -> ShareRecord: tables / databases this project shares read-only with other projects"),
        doc="one tenant; deleting it = one clear_range",
    )


def _walk(d: Directory) -> list[Directory]:
    out = [d]
    for c in d.children:
        out.extend(_walk(c))
    return out


def record_types(tree: Directory) -> dict[str, tuple[type[Message], tuple[str, ...] | None]]:
    """Subspace name -> (message type, primary key element names; ``None``: per-store arity), from the tree."""
    out: dict[str, tuple[type[Message], tuple[str, ...] | None]] = {}
    for d in _walk(tree):
        if d.record is not None:
            out[d.name] = (d.record.record, d.record.key)
    return out


def heads(tree: Directory) -> dict[str, tuple[RecordSubspace[Any], RecordSubspace[Any], RecordSubspace[Any]]]:
    """Versioned object kind (``catalog``, ``database``, ``view``, ``table``) -> its head, history and commit
    subspaces, from the roles declared on the children of its id directory (``tableId``...)."""
    out: dict[str, tuple[RecordSubspace[Any], RecordSubspace[Any], RecordSubspace[Any]]] = {}
    for d in _walk(tree):
        roles = {c.record.role: c.record for c in d.children if c.record is not None and c.record.role}
        if roles:
            out[d.name.removesuffix("Id")] = (roles["head"], roles["history"], roles["commit"])
    return out


#: subspace name -> (message type, primary key names): the record registry, derived from the tree
RECORD_TYPES = record_types(build_tree())
#: object kind -> (head, history, commit) subspaces of a versioned object, derived from the tree
HEADS = heads(build_tree())


class Layout:
    """The key space of one store (all projects) under ``prefix``, with path helpers."""

    def __init__(self, prefix: bytes = b"") -> None:
        self.keyspace = KeySpace(build_tree(), prefix=prefix)

    @property
    def prefix(self) -> bytes:
        return self.keyspace.prefix

    def project(self, project: str) -> KeySpacePath:
        return self.keyspace.path(PROJECT, project)

    def catalog(self, project: str | KeySpacePath, catalog_id: uuid.UUID) -> KeySpacePath:
        base = self.project(project) if isinstance(project, str) else project
        return base.add(CATALOG).add(CATALOG_ID, catalog_id)

    @staticmethod
    def database(catalog: KeySpacePath, database_id: uuid.UUID) -> KeySpacePath:
        return catalog.add(DATABASE).add(DATABASE_ID, database_id)

    @staticmethod
    def table(database: KeySpacePath, table_id: uuid.UUID) -> KeySpacePath:
        return database.add(TABLE).add(TABLE_ID, table_id)

    @staticmethod
    def view(database: KeySpacePath, view_id: uuid.UUID) -> KeySpacePath:
        return database.add(VIEW).add(VIEW_ID, view_id)

    @staticmethod
    def function(database: KeySpacePath, function_id: uuid.UUID) -> KeySpacePath:
        return database.add(FUNCTION).add(FUNCTION_ID, function_id)

    @staticmethod
    def object(database: KeySpacePath, object_id: uuid.UUID) -> KeySpacePath:
        return database.add(OBJECT).add(OBJECT_ID, object_id)

    def render(self) -> str:
        return self.keyspace.render()


DEFAULT_LAYOUT = Layout()
