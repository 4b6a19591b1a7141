"""The metastore's Python API: catalogs, databases, tables, views and partitions of one
project (tenant), each operation exactly one KV transaction (``Database.run``).

Where things live is :mod:`ushas_catalog.layout`; the records are
:mod:`ushas_catalog.records`. In short:

- Names map to UUIDs in ``*ObjectName``; tables and views share ``TableObjectName``.
- A table is its ``TableReference`` (version, current schema id: every mutation reads
  and writes it, so concurrent writers of one table serialize), ``TableSchema``,
  ``TableStorage``, ``TableProperties`` and its partitions in ``TablePartition``.
- Every mutation goes through :meth:`Metastore._commit`, the one bookkeeping function
  (version bump, ``*Commit`` record, history entry, previous head records into
  ``*History``). It is the hook point for the change feed, search index and cache
  versions.
- Drop moves the name to ``Dropped*ObjectName`` (the object's keys stay, invisible,
  so undrop works until purge); purge (or ``drop(purge=True)``) is one ``clear_range``
  of the object's id prefix plus clearing its name entries, in the same transaction.
- ``get_table(name, as_of=v)`` reads a head record as it was at version ``v``: the
  first ``*History`` entry after ``v`` (the value replaced later), else the current one.

Listing partitions streams: up to :data:`PARTITION_BATCH` partitions are read per
transaction, so a listing longer than that spans several (snapshot) transactions.
"""
from __future__ import annotations

import datetime as dt
import getpass
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import fdb.tuple as fdbtuple
from google.protobuf.message import Message

from . import records as rec
from .change_feed import Change, ChangeFeed
from .errors import (CatalogAlreadyExists, Conflict, InvalidArgument, NamespaceAlreadyExists, NamespaceNotEmpty,
                     NoSuchCatalog, NoSuchNamespace, NoSuchPartition, NoSuchTable, NoSuchVersion, NoSuchView,
                     PartitionAlreadyExists, TableAlreadyExists, UshasError, ViewAlreadyExists)
from .keyspace import KeySpacePath
from .kv import Database, Transaction, open_database
from .layout import DEFAULT_LAYOUT, Layout
from .metadata import INDEX_MERGE_AT
from .locations import location_in_use, overlaps
from .names import (CatalogName, DatabaseName, NameLike, TableName, new_catalog_name, new_database_name,
                    new_table_name, parse_any, validate_project)
from .objects import (CatalogInfo, DatabaseInfo, DroppedObject, HistoryItem, MutationResult, RelationSummary,
                      SubspaceStats, TableInfo, ViewInfo, detail_from_json, micros_to_datetime)
from .data_files import DataFile, from_records
from .data_garbage import Garbage, data_file_records, record_garbage
from .partitions import KeyDecoder, Partition, PartitionScheme
from .records.store import RecordStore, split_elements
from .schema import check_column_names, parse_schema, struct_from_proto, struct_to_proto
from .table_changes import (COLUMN_CHANGES, RemoveProperty, SchemaState, SetComment, SetLocation, SetOwner,
                            SetProperty, TableChange, change_to_json)

T = TypeVar("T")

FORMATS = ("parquet", "orc", "json", "csv")
#: Spark's reserved table properties, kept in their own fields, never in ``properties``
RESERVED_PROPERTIES = ("location", "comment", "owner", "provider", "external")
#: the longest property key (catalog, database, table, view, partition), in UTF-8 bytes
MAX_PROPERTY_KEY_BYTES = 4096
#: partitions read per transaction by ``list_partitions``
PARTITION_BATCH = 20_000


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "leave unchanged" for optional arguments where ``None`` means "clear"
UNSET: Any = _Unset()


def _version_answer(version: int) -> tuple[dict[str, Any], int | None]:
    return {"version": version}, version


def _version_of(answer: dict[str, Any]) -> int:
    return int(answer["version"])


def _now() -> int:
    return time.time_ns() // 1000


def _default_user() -> str:
    try:
        return os.environ.get("USHAS_USER") or getpass.getuser()
    except Exception:  # noqa: BLE001 - no user database entry (containers)
        return "unknown"


def _props(value: Mapping[str, Any] | None, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{what} must be a mapping of string -> string, not {type(value).__name__}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k:
            raise InvalidArgument(f"{what}: keys must be non-empty strings, not {k!r}")
        if not isinstance(v, str):
            raise InvalidArgument(f"{what}: the value of {k!r} must be a string, not {type(v).__name__}")
        if "\x00" in k or "\x00" in v:
            raise InvalidArgument(f"{what}: {k[:40]!r} contains a NUL character")
        if len(k.encode("utf-8", "surrogatepass")) > MAX_PROPERTY_KEY_BYTES:
            raise InvalidArgument(f"{what}: the key {k[:40]!r}... is {len(k.encode('utf-8', 'surrogatepass')):,} "
                                  f"UTF-8 bytes; the maximum is {MAX_PROPERTY_KEY_BYTES:,}")
        out[k] = v
    return out


def _opt_str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidArgument(f"{what} must be a string or None, not {type(value).__name__}")


def _format(value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in FORMATS:
        raise InvalidArgument(f"unknown table format {value!r}: expected one of {', '.join(FORMATS)}")
    return value.lower()


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"partition {what} must be an integer >= 0 or None, not {value!r}")
    return value


# --- internal handles --------------------------------------------------------------------
@dataclass
class _Object:
    """A resolved catalog / database / view: its id path and head record."""

    kind: str
    name: CatalogName | DatabaseName | TableName
    id: uuid.UUID
    path: KeySpacePath
    record: Any


@dataclass
class _Table:
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
class _PartitionRange:
    """The partitions of a table that a partial spec selects: ``[begin, end)`` in ``store``, then
    ``filters`` (key position -> value) for the named columns that do not lead."""

    scheme: PartitionScheme
    store: RecordStore[rec.Partition]
    begin: bytes
    end: bytes
    filters: dict[int, Any]


@dataclass
class Mutation:
    """One committed change of one object, as :meth:`Metastore._commit` records it."""

    kind: str                 # "catalog", "database", "table", "view"
    name: str                 # the object's qualified name
    path: KeySpacePath        # the object's id path
    operation: str            # "CREATE TABLE", "ADD PARTITIONS", ...
    version: int              # the version this commit makes (previous + 1)
    head: Any                 # the head record holding the version, written by _commit
    detail: dict[str, Any] = field(default_factory=dict)
    previous_head: Any = None  # catalog / database / view: the head before, into *History
    previous: dict[str, Message] = field(default_factory=dict)  # table: {"TableSchema": old, ...}
    changed: tuple[str, ...] = ()
    time_micros: int = field(default_factory=_now)
    # partition operations: (partition values, record) added / dropped, for the change feed
    partition_scheme: PartitionScheme | None = None
    added_partitions: Sequence[tuple[tuple[Any, ...], rec.Partition]] = ()
    dropped_partitions: Sequence[tuple[tuple[Any, ...], rec.Partition]] = ()
    partitions_cleared: bool = False  # every partition removed (REPLACE TABLE)


_HEADS = {
    "catalog": ("CatalogRecord", "CatalogHistory", "CatalogCommit"),
    "database": ("DatabaseRecord", "DatabaseHistory", "DatabaseCommit"),
    "view": ("ViewRecord", "ViewHistory", "ViewCommit"),
    "table": ("TableReference", "TableHistory", "TableCommit"),
}


class Metastore:
    """Catalog operations of one project. ``Metastore.open("sqlite:///tmp/u.db", project="acme")``."""

    def __init__(self, db: Database, project: str = "default", *, layout: Layout | None = None,
                 user: str | None = None) -> None:
        self.db = db
        self.project = validate_project(project)
        self.layout = layout or DEFAULT_LAYOUT
        self.user = user or _default_user()
        self.project_path = self.layout.project(self.project)
        self._catalogs = self.project_path.add("Catalog")
        #: the project's ordered log of mutations (written by _commit)
        self.change_feed = ChangeFeed(self)
        #: one create in this many (on average) runs :meth:`merge_index` after its commit (1:
        #: every create, 0: no pending entries; see :mod:`ushas_catalog.metadata`, "Pending
        #: index entries")
        self.index_merge_at = INDEX_MERGE_AT
        self._merge_due = False

    @classmethod
    def open(cls, uri: str, project: str = "default", *, root_prefix: bytes = b"",
             user: str | None = None, create: bool = True) -> "Metastore":
        """The metastore of ``project`` in the store at ``uri``. ``create=False`` (what every
        read-only caller passes: CLI reads, the UI) never creates a store: a missing one is
        ``StoreNotFound``. Opening never waits for another process's write; a store whose file
        is not writable opens read-only (its writes are ``StoreReadOnly``)."""
        layout = DEFAULT_LAYOUT if not root_prefix else Layout(prefix=root_prefix)
        return cls(open_database(uri, create=create), project, layout=layout, user=user)

    @property
    def created(self) -> bool:
        """Whether opening this metastore created its store."""
        return bool(getattr(self.db, "created", False))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Metastore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self, fn: Callable[[Transaction], T]) -> T:
        result = self.db.run(fn)
        if self._merge_due:  # a commit filled the pending index entries: merge them now
            self._merge_due = False
            try:
                self.merge_index()
            except UshasError as e:  # fn committed: its caller must not see this; the next commit retries
                logging.getLogger(__name__).warning("search index merge failed, left pending: %s", e)
        return result

    def _fenced(self, write_id: str | None, deadline_ms: int | None, tn: TableName,
                fn: Callable[[Transaction], T], encode: Callable[[T], tuple[dict[str, Any], int | None]],
                decode: Callable[[dict[str, Any]], T]) -> T:
        """``self._run(fn)``, as fenced write ``write_id`` when given (:mod:`ushas_catalog.write_fence`)."""
        from .write_fence import WriteFence, run_fenced

        return run_fenced(self._run, self.project_path, WriteFence.of(write_id, deadline_ms), str(tn), fn,
                          encode, decode)

    def merge_index(self) -> int:
        """Move the pending search index entries into the index (each transaction at most
        :data:`~ushas_catalog.metadata.MERGE_BATCH_BYTES` of them); returns the objects moved.
        Runs by itself after about one create in ``index_merge_at``; searches
        read pending entries too, so this changes how fast the index is written and read, never
        what a search finds."""
        from .metadata import MetadataKeys, merge_pending

        keys = MetadataKeys(self.project_path)
        total, more = 0, True
        while more:
            merged, more = self.db.run(lambda tr: merge_pending(tr, keys))
            total += merged
        return total

    # ==== the bookkeeping hook ====================================================
    def _commit(self, tr: Transaction, m: Mutation) -> int:
        """THE place every mutation is recorded; called once per mutating operation,
        after the operation wrote its data, in the same transaction.

        Writes: the head record with ``version`` and ``updated_at`` set (for tables the
        ``TableReference``), the ``*Commit`` record (operation, user, time, detail), the
        previous head (catalog / database / view) or the replaced table records
        (``TableSchema`` ... into ``TableSchemaHistory`` ...) and, for tables, the
        ``TableHistory`` entry, and the change feed event. Search index and cache versions
        hook in here too.
        """
        head_sub, history_sub, commit_sub = _HEADS[m.kind]
        v = m.version
        m.head.version = v
        m.head.updated_at_micros = m.time_micros
        RecordStore.at(m.path.add(head_sub)).save(tr, (), m.head)
        if m.kind == "table":
            for sub, old in m.previous.items():
                RecordStore.at(m.path.add(sub + "History")).save(tr, (v,), old, new=True)
            RecordStore.at(m.path.add(history_sub)).save(tr, (v,), rec.HistoryEntry(
                version=v, committed_at_micros=m.time_micros, operation=m.operation, schema_id=m.head.schema_id,
                changed=list(m.changed)), new=True)
        elif m.previous_head is not None:
            RecordStore.at(m.path.add(history_sub)).save(tr, (v,), m.previous_head, new=True)
        RecordStore.at(m.path.add(commit_sub)).save(tr, (v,), rec.Commit(
            version=v, operation=m.operation, user=self.user, committed_at_micros=m.time_micros,
            detail_json=json.dumps(m.detail, separators=(",", ":"), default=str, ensure_ascii=False)), new=True)
        self._metadata_commit(tr, m)
        self.change_feed.record(tr, m)
        return v

    # ---- change feed (issue 7) ------------------------------------------------------
    def changes(self, since: str | None = None, follow: bool = False, poll_interval: float = 1.0,
                batch: int = 500, stop: Callable[[], bool] | None = None) -> Iterator[Change]:
        """The project's change events after cursor ``since``, in commit order (see
        :mod:`ushas_catalog.change_feed`); ``follow`` keeps polling for new ones."""
        return self.change_feed.changes(since, follow=follow, poll_interval=poll_interval, batch=batch, stop=stop)

    # ---- metadata & search (issue 6): SYSTEM metadata, Spark-mirrored USER metadata, index --
    def _metadata_commit(self, tr: Transaction, m: "Mutation") -> None:
        from . import metadata_sync

        if metadata_sync.on_commit(self, tr, m):
            self._merge_due = True

    def _metadata_purge(self, tr: Transaction, path: KeySpacePath) -> None:
        """Before the keys of the object at ``path`` are cleared (purge, drop view)."""
        from . import metadata_sync

        metadata_sync.on_purge(self, tr, path)

    @property
    def metadata(self) -> Any:
        """USER / SYSTEM properties and tags of this project's objects: a
        :class:`ushas_catalog.metadata.MetadataStore`."""
        from .metadata import MetadataStore

        return MetadataStore(self)

    def search(self, query: str, **options: Any) -> Any:
        """Search metadata, tags and schema field names: see :func:`ushas_catalog.search.search`."""
        from .search import search

        return search(self, query, **options)

    # ==== resolution ==============================================================
    def _names(self, parent: KeySpacePath, kind: str) -> RecordStore[rec.ObjectName]:
        return RecordStore.at(parent.add(f"{kind}ObjectName"))

    def _dropped(self, parent: KeySpacePath, kind: str) -> RecordStore[rec.DroppedObjectName]:
        return RecordStore.at(parent.add(f"Dropped{kind}ObjectName"))

    def _catalog(self, tr: Transaction, name: CatalogName, *, load: bool = True) -> _Object:
        entry = self._names(self._catalogs, "Catalog").load(tr, (name.catalog,))
        if entry is None:
            raise NoSuchCatalog(f"catalog {name} does not exist in project {self.project!r}", catalog=name.catalog)
        cid = uuid.UUID(bytes=entry.id)
        path = self._catalogs.add("catalogId", cid)
        record = RecordStore.at(path.add("CatalogRecord")).load(tr, ()) if load else None
        return _Object("catalog", name, cid, path, record)

    def _database(self, tr: Transaction, name: DatabaseName, *, load: bool = True) -> _Object:
        cat = self._catalog(tr, name.catalog_name, load=False)
        dbs = cat.path.add("Database")
        entry = self._names(dbs, "Database").load(tr, (name.database,))
        if entry is None:
            raise NoSuchNamespace(f"database {name} does not exist", database=str(name))
        did = uuid.UUID(bytes=entry.id)
        path = dbs.add("databaseId", did)
        record = RecordStore.at(path.add("DatabaseRecord")).load(tr, ()) if load else None
        return _Object("database", name, did, path, record)

    def _relation(self, tr: Transaction, name: TableName) -> tuple[_Object, rec.ObjectName | None]:
        db = self._database(tr, name.database_name, load=False)
        return db, self._names(db.path.add("Table"), "Table").load(tr, (name.name,))

    def _table(self, tr: Transaction, name: TableName) -> _Table:
        db, entry = self._relation(tr, name)
        if entry is None:
            raise NoSuchTable(f"table {name} does not exist", table=str(name))
        if entry.kind != rec.ObjectKind.TABLE:
            raise NoSuchTable(f"{name} is a view, not a table", table=str(name))
        tid = uuid.UUID(bytes=entry.id)
        path = Layout.table(db.path, tid)
        ref = RecordStore.at(path.add("TableReference")).load(tr, ())
        if ref is None:  # pragma: no cover - a name entry always has its table
            raise NoSuchTable(f"table {name} has a name but no reference record", table=str(name))
        return _Table(name, db.path, tid, path, ref)

    def _view(self, tr: Transaction, name: TableName) -> _Object:
        db, entry = self._relation(tr, name)
        if entry is None:
            raise NoSuchView(f"view {name} does not exist", view=str(name))
        if entry.kind != rec.ObjectKind.VIEW:
            raise NoSuchView(f"{name} is a table, not a view", view=str(name))
        vid = uuid.UUID(bytes=entry.id)
        path = Layout.view(db.path, vid)
        return _Object("view", name, vid, path, RecordStore.at(path.add("ViewRecord")).load(tr, ()))

    def _scheme(self, tr: Transaction, t: _Table) -> PartitionScheme:
        schema = t.store("TableSchema").load(tr, ())
        return PartitionScheme.of(struct_from_proto(schema.schema), schema.partition_columns)

    # ==== catalogs ================================================================
    def create_catalog(self, name: NameLike, comment: str | None = None, properties: Mapping[str, str] | None = None,
                       if_not_exists: bool = False, owner: str | None = None) -> CatalogInfo:
        cn = new_catalog_name(name)
        comment = _opt_str(comment, "comment")
        props = _props(properties, "catalog properties")

        def fn(tr: Transaction) -> CatalogInfo:
            names = self._names(self._catalogs, "Catalog")
            if names.load(tr, (cn.catalog,)) is not None:
                if if_not_exists:
                    return self._catalog_info(self._catalog(tr, cn))
                raise CatalogAlreadyExists(f"catalog {cn} already exists", catalog=cn.catalog)
            now = _now()
            cid = uuid.uuid4()
            path = self._catalogs.add("catalogId", cid)
            names.save(tr, (cn.catalog,), rec.ObjectName(id=cid.bytes, kind=rec.ObjectKind.CATALOG,
                                                         created_at_micros=now), new=True)
            record = rec.CatalogRecord(comment=comment or "", properties=props, owner=owner or self.user,
                                       created_at_micros=now)
            self._commit(tr, Mutation("catalog", str(cn), path, "CREATE CATALOG", 1, record, time_micros=now,
                                      detail={"comment": comment, "properties": props}))
            return self._catalog_info(_Object("catalog", cn, cid, path, record))

        return self._run(fn)

    def ensure_catalog(self, name: NameLike) -> CatalogInfo:
        """The catalog, created if missing (idempotent, safe under concurrency)."""
        return self.create_catalog(name, if_not_exists=True)

    def get_catalog(self, name: NameLike) -> CatalogInfo:
        cn = CatalogName.parse(name)
        return self._run(lambda tr: self._catalog_info(self._catalog(tr, cn)))

    def catalog_exists(self, name: NameLike) -> bool:
        cn = CatalogName.parse(name)
        return self._run(lambda tr: self._names(self._catalogs, "Catalog").exists(tr, (cn.catalog,)))

    def list_catalogs(self) -> list[CatalogInfo]:
        def fn(tr: Transaction) -> list[CatalogInfo]:
            out = []
            for r in self._names(self._catalogs, "Catalog").scan(tr):
                cid = uuid.UUID(bytes=r.record.id)
                path = self._catalogs.add("catalogId", cid)
                record = RecordStore.at(path.add("CatalogRecord")).load(tr, ())
                out.append(self._catalog_info(_Object("catalog", CatalogName(r.key[0]), cid, path, record)))
            return out

        return self._run(fn)

    def alter_catalog(self, name: NameLike, set_properties: Mapping[str, str] | None = None,
                      remove_properties: Iterable[str] | None = None, comment: Any = UNSET, *,
                      expected_version: int | None = None) -> CatalogInfo:
        """``expected_version`` (here and on every mutation): fail with :class:`Conflict`
        naming both versions if the object is at another version."""
        cn = CatalogName.parse(name)
        _check_expected(expected_version)
        sets = _props(set_properties, "properties")
        removes = list(remove_properties or ())
        if comment is not UNSET:
            _opt_str(comment, "comment")

        def fn(tr: Transaction) -> CatalogInfo:
            cat = self._catalog(tr, cn)
            old = cat.record
            _expect("catalog", cn, old.version, expected_version)
            new = rec.CatalogRecord()
            new.CopyFrom(old)
            for k in removes:
                new.properties.pop(k, None)
            new.properties.update(sets)
            if comment is not UNSET:
                new.comment = comment or ""
            self._commit(tr, Mutation("catalog", str(cn), cat.path, "ALTER CATALOG", old.version + 1, new,
                                      previous_head=old, detail={"set": sets, "remove": removes}))
            return self._catalog_info(_Object("catalog", cn, cat.id, cat.path, new))

        return self._run(fn)

    def drop_catalog(self, name: NameLike, cascade: bool = False, purge: bool = False, *,
                     expected_version: int | None = None, data_paths: list[str] | None = None) -> None:
        cn = CatalogName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            cat = self._catalog(tr, cn)
            _expect("catalog", cn, cat.record.version, expected_version)
            dbs = cat.path.add("Database")
            if not cascade and any(True for _ in self._names(dbs, "Database").scan(tr, limit=1)):
                raise NamespaceNotEmpty(f"catalog {cn} is not empty (drop it with cascade)", catalog=cn.catalog)
            found: list[str] = []
            self._drop_object(tr, self._catalogs, "Catalog", cn.catalog, cat, purge, "DROP CATALOG",
                              rec.ObjectKind.CATALOG, found)
            _give(data_paths, found)

        self._run(fn)

    def undrop_catalog(self, name: NameLike, *, expected_version: int | None = None) -> CatalogInfo:
        """``expected_version``: the version of the dropped catalog (its DROP commit)."""
        cn = CatalogName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> CatalogInfo:
            cid = self._undrop_object(tr, self._catalogs, "Catalog", cn.catalog, str(cn), CatalogAlreadyExists,
                                      NoSuchCatalog)
            cat = self._catalog(tr, cn)
            _expect("dropped catalog", cn, cat.record.version, expected_version)
            self._commit(tr, Mutation("catalog", str(cn), cat.path, "UNDROP CATALOG", cat.record.version + 1,
                                      _copy(cat.record), previous_head=cat.record))
            assert cid == cat.id
            return self._catalog_info(self._catalog(tr, cn))

        return self._run(fn)

    def purge_catalog(self, name: NameLike, *, data_paths: list[str] | None = None,
                      older_than: dt.timedelta | None = None) -> int:
        """Remove every dropped catalog of that name with all it held; returns how many.
        ``data_paths`` receives the data paths to delete now (see :meth:`purge_table`)."""
        cn = CatalogName.parse(name)

        def fn(tr: Transaction) -> int:
            found: list[str] = []
            n = self._purge_dropped(tr, self._catalogs, "Catalog", cn.catalog, str(cn),
                                    lambda i: self._catalogs.add("catalogId", i), NoSuchCatalog, found,
                                    _cutoff(older_than))
            _give(data_paths, found)
            return n

        return self._run(fn)

    def list_dropped_catalogs(self) -> list[DroppedObject]:
        return self._run(lambda tr: self._list_dropped(tr, self._catalogs, "Catalog", lambda n: n))

    def _catalog_info(self, cat: _Object) -> CatalogInfo:
        r = cat.record
        assert isinstance(cat.name, CatalogName)
        return CatalogInfo(cat.name.catalog, str(cat.id), r.comment or None, dict(r.properties), r.owner or None,
                           micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros),
                           r.version)

    # ==== shared drop / undrop / purge ============================================
    def _drop_object(self, tr: Transaction, parent: KeySpacePath, kind: str, key: str, obj: _Object | _Table,
                     purge: bool, operation: str, object_kind: int, data_paths: list[str] | None = None) -> None:
        names = self._names(parent, kind)
        entry = names.load(tr, (key,))
        names.delete(tr, (key,))
        if purge:
            self._collect_data(tr, obj.path, kind, data_paths)
            self._metadata_purge(tr, obj.path)
            tr.clear_range(*obj.path.range())
            head = obj.ref if isinstance(obj, _Table) else obj.record
            self.change_feed.record_removal(tr, kind="table" if isinstance(obj, _Table) else obj.kind,
                                            name=str(obj.name), object_id=obj.id, version=head.version,
                                            operation=operation, change=rec.ChangeEvent.DROPPED, before=head)
            return
        now = _now()
        created = entry.created_at_micros if entry is not None else 0
        self._dropped(parent, kind).save(tr, (key, obj.id), rec.DroppedObjectName(
            id=obj.id.bytes, kind=object_kind, dropped_at_micros=now, dropped_by=self.user,
            created_at_micros=created), new=True)
        if isinstance(obj, _Table):
            self._commit(tr, Mutation("table", str(obj.name), obj.path, operation, obj.ref.version + 1,
                                      _copy(obj.ref), time_micros=now))
        else:
            self._commit(tr, Mutation(obj.kind, str(obj.name), obj.path, operation, obj.record.version + 1,
                                      _copy(obj.record), previous_head=obj.record, time_micros=now))

    def _latest_dropped(self, tr: Transaction, parent: KeySpacePath, kind: str,
                        key: str) -> tuple[uuid.UUID, rec.DroppedObjectName] | None:
        store = self._dropped(parent, kind)
        best: tuple[uuid.UUID, rec.DroppedObjectName] | None = None
        for r in store.scan(tr, *store.prefix_range((key,))):
            if best is None or r.record.dropped_at_micros >= best[1].dropped_at_micros:
                best = (r.key[1], r.record)
        return best

    def _undrop_object(self, tr: Transaction, parent: KeySpacePath, kind: str, key: str, shown: str,
                       exists_error: type[Exception], missing_error: type[Exception]) -> uuid.UUID:
        names = self._names(parent, kind)
        latest = self._latest_dropped(tr, parent, kind, key)
        if latest is None:
            raise missing_error(f"no dropped {kind.lower()} named {shown}")
        if names.exists(tr, (key,)):
            raise exists_error(f"cannot undrop {shown}: a {kind.lower()} of that name exists")
        oid, dropped = latest
        self._dropped(parent, kind).delete(tr, (key, oid))
        names.save(tr, (key,), rec.ObjectName(id=oid.bytes, kind=dropped.kind,
                                              created_at_micros=dropped.created_at_micros or _now()), new=True)
        return oid

    def _collect_data(self, tr: Transaction, path: KeySpacePath, kind: str, data_paths: list[str] | None) -> None:
        """Purging the object at ``path``: the data paths of its tables go to ``data_paths`` (and their
        DataGarbage entries away), to be deleted by the caller after the commit."""
        from .data_purge import table_data_paths, tables_under

        for table_path, tid, db_path in tables_under(tr, path, kind):
            found = table_data_paths(tr, self.project_path, table_path, tid, db_path)
            if data_paths is not None:
                data_paths.extend(found)

    def garbage(self, table: NameLike | None = None, older_than: dt.timedelta | None = None) -> list[Any]:
        """The DataGarbage entries (:class:`~ushas_catalog.data_garbage.GarbageEntry`) of one live
        table or of the project, those recorded more than ``older_than`` ago when given."""
        from .data_garbage import scan_garbage

        before = None if older_than is None else _now() - int(older_than.total_seconds() * 1_000_000)

        def fn(tr: Transaction) -> list[Any]:
            tid = self._table(tr, TableName.parse(table)).id if table is not None else None
            return list(scan_garbage(tr, self.project_path, tid, before))

        return self._run(fn)

    def forget_garbage(self, keys: Iterable[tuple[Any, ...]]) -> None:
        """Removes DataGarbage entries whose files were deleted."""
        from .data_garbage import delete_garbage

        key_list = list(keys)

        def fn(tr: Transaction) -> None:
            for key in key_list:
                delete_garbage(tr, self.project_path, key)

        self._run(fn)

    def _purge_dropped(self, tr: Transaction, parent: KeySpacePath, kind: str, key: str, shown: str,
                       path_of: Callable[[uuid.UUID], KeySpacePath], missing_error: type[Exception],
                       data_paths: list[str] | None = None,
                       dropped_before: int | None = None) -> int:
        store = self._dropped(parent, kind)
        found = list(store.scan(tr, *store.prefix_range((key,))))
        if not found:
            raise missing_error(f"no dropped {kind.lower()} named {shown}")
        head_sub = {"Catalog": "CatalogRecord", "Database": "DatabaseRecord", "Table": "TableReference"}[kind]
        if dropped_before is not None:
            found = [r for r in found if r.record.dropped_at_micros < dropped_before]
        for r in found:
            oid = r.key[1]
            head = RecordStore.at(path_of(oid).add(head_sub)).load(tr, ())
            self._collect_data(tr, path_of(oid), kind, data_paths)
            self._metadata_purge(tr, path_of(oid))
            tr.clear_range(*path_of(oid).range())
            store.delete(tr, (key, oid))
            self.change_feed.record_removal(tr, kind=kind.lower(), name=shown, object_id=oid,
                                            version=head.version if head is not None else 0,
                                            operation=f"PURGE {kind.upper()}", change=rec.ChangeEvent.PURGED)
        return len(found)

    def _list_dropped(self, tr: Transaction, parent: KeySpacePath, kind: str,
                      show: Callable[[str], str]) -> list[DroppedObject]:
        return [DroppedObject(kind.upper(), show(r.key[0]), str(r.key[1]), micros_to_datetime(r.record.dropped_at_micros),
                              r.record.dropped_by)
                for r in self._dropped(parent, kind).scan(tr)]

    # ==== databases ===============================================================
    def create_database(self, name: NameLike, comment: str | None = None, location: str | None = None,
                        properties: Mapping[str, str] | None = None, owner: str | None = None,
                        if_not_exists: bool = False) -> DatabaseInfo:
        dn = new_database_name(name)
        comment = _opt_str(comment, "comment")
        location = _opt_str(location, "location")
        props = _props(properties, "database properties")
        owner = _opt_str(owner, "owner")

        def fn(tr: Transaction) -> DatabaseInfo:
            cat = self._catalog(tr, dn.catalog_name, load=False)
            dbs = cat.path.add("Database")
            names = self._names(dbs, "Database")
            if names.load(tr, (dn.database,)) is not None:
                if if_not_exists:
                    return self._database_info(self._database(tr, dn))
                raise NamespaceAlreadyExists(f"database {dn} already exists", database=str(dn))
            now = _now()
            did = uuid.uuid4()
            path = dbs.add("databaseId", did)
            names.save(tr, (dn.database,), rec.ObjectName(id=did.bytes, kind=rec.ObjectKind.DATABASE,
                                                          created_at_micros=now), new=True)
            record = rec.DatabaseRecord(comment=comment or "", location=location or "", properties=props,
                                        owner=owner or self.user, created_at_micros=now)
            self._commit(tr, Mutation("database", str(dn), path, "CREATE DATABASE", 1, record, time_micros=now,
                                      detail={"comment": comment, "location": location, "properties": props}))
            return self._database_info(_Object("database", dn, did, path, record))

        return self._run(fn)

    def get_database(self, name: NameLike) -> DatabaseInfo:
        dn = DatabaseName.parse(name)
        return self._run(lambda tr: self._database_info(self._database(tr, dn)))

    def database_exists(self, name: NameLike) -> bool:
        dn = DatabaseName.parse(name)

        def fn(tr: Transaction) -> bool:
            try:
                self._database(tr, dn, load=False)
            except (NoSuchCatalog, NoSuchNamespace):
                return False
            return True

        return self._run(fn)

    def list_databases(self, catalog: NameLike) -> list[DatabaseInfo]:
        cn = CatalogName.parse(catalog)

        def fn(tr: Transaction) -> list[DatabaseInfo]:
            cat = self._catalog(tr, cn, load=False)
            dbs = cat.path.add("Database")
            out = []
            for r in self._names(dbs, "Database").scan(tr):
                did = uuid.UUID(bytes=r.record.id)
                path = dbs.add("databaseId", did)
                record = RecordStore.at(path.add("DatabaseRecord")).load(tr, ())
                out.append(self._database_info(_Object("database", DatabaseName(cn.catalog, r.key[0]), did, path,
                                                       record)))
            return out

        return self._run(fn)

    def alter_database(self, name: NameLike, set_properties: Mapping[str, str] | None = None,
                       remove_properties: Iterable[str] | None = None, comment: Any = UNSET,
                       location: Any = UNSET, owner: Any = UNSET, *,
                       expected_version: int | None = None) -> DatabaseInfo:
        """Change properties, comment (``None`` clears it), location or owner; arguments
        left out stay as they are."""
        dn = DatabaseName.parse(name)
        _check_expected(expected_version)
        sets = _props(set_properties, "properties")
        removes = list(remove_properties or ())
        for value, what in ((comment, "comment"), (location, "location"), (owner, "owner")):
            if value is not UNSET:
                _opt_str(value, what)

        def fn(tr: Transaction) -> DatabaseInfo:
            db = self._database(tr, dn)
            old = db.record
            _expect("database", dn, old.version, expected_version)
            new = _copy(old)
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
            return self._database_info(_Object("database", dn, db.id, db.path, new))

        return self._run(fn)

    def drop_database(self, name: NameLike, cascade: bool = False, purge: bool = False, *,
                      expected_version: int | None = None, data_paths: list[str] | None = None) -> None:
        dn = DatabaseName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            db = self._database(tr, dn)
            _expect("database", dn, db.record.version, expected_version)
            if not cascade and any(True for _ in self._names(db.path.add("Table"), "Table").scan(tr, limit=1)):
                raise NamespaceNotEmpty(f"database {dn} is not empty (drop it with cascade)", database=str(dn))
            cat = self._catalog(tr, dn.catalog_name, load=False)
            found: list[str] = []
            self._drop_object(tr, cat.path.add("Database"), "Database", dn.database, db, purge, "DROP DATABASE",
                              rec.ObjectKind.DATABASE, found)
            _give(data_paths, found)

        self._run(fn)

    def undrop_database(self, name: NameLike, *, expected_version: int | None = None) -> DatabaseInfo:
        dn = DatabaseName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> DatabaseInfo:
            cat = self._catalog(tr, dn.catalog_name, load=False)
            self._undrop_object(tr, cat.path.add("Database"), "Database", dn.database, str(dn),
                                NamespaceAlreadyExists, NoSuchNamespace)
            db = self._database(tr, dn)
            _expect("dropped database", dn, db.record.version, expected_version)
            new = _copy(db.record)
            self._commit(tr, Mutation("database", str(dn), db.path, "UNDROP DATABASE", db.record.version + 1, new,
                                      previous_head=db.record))
            return self._database_info(_Object("database", dn, db.id, db.path, new))

        return self._run(fn)

    def purge_database(self, name: NameLike, *, data_paths: list[str] | None = None,
                       older_than: dt.timedelta | None = None) -> int:
        """Remove every dropped database of that name with everything in it; returns how many.
        ``data_paths`` receives the data paths to delete now (see :meth:`purge_table`)."""
        dn = DatabaseName.parse(name)

        def fn(tr: Transaction) -> int:
            cat = self._catalog(tr, dn.catalog_name, load=False)
            dbs = cat.path.add("Database")
            found: list[str] = []
            n = self._purge_dropped(tr, dbs, "Database", dn.database, str(dn),
                                    lambda i: dbs.add("databaseId", i), NoSuchNamespace, found, _cutoff(older_than))
            _give(data_paths, found)
            return n

        return self._run(fn)

    def list_dropped_databases(self, catalog: NameLike) -> list[DroppedObject]:
        cn = CatalogName.parse(catalog)

        def fn(tr: Transaction) -> list[DroppedObject]:
            cat = self._catalog(tr, cn, load=False)
            return self._list_dropped(tr, cat.path.add("Database"), "Database",
                                      lambda n: str(DatabaseName(cn.catalog, n)))

        return self._run(fn)

    def _database_info(self, db: _Object) -> DatabaseInfo:
        r = db.record
        assert isinstance(db.name, DatabaseName)
        return DatabaseInfo(db.name.catalog, db.name.database, str(db.id), r.comment or None, r.location or None,
                            dict(r.properties), r.owner or None, micros_to_datetime(r.created_at_micros),
                            micros_to_datetime(r.updated_at_micros), r.version)

    # ==== tables ==================================================================
    def _table_records(self, tn: TableName, db_record: rec.DatabaseRecord, schema: Any, partition_by: Sequence[str],
                       format: str | None, location: str | None, properties: Mapping[str, str] | None,
                       comment: str | None, owner: str | None, external: bool, schema_id: int,
                       now: int) -> tuple[rec.TableSchema, rec.TableStorage, rec.TableProperties]:
        struct = parse_schema(schema)
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        scheme = PartitionScheme.of(struct, partition_by)
        props = _props(properties, "table properties")
        reserved = {k: props.pop(k) for k in list(props) if k in RESERVED_PROPERTIES}
        location = _opt_str(location, "location") or reserved.get("location")
        comment = _opt_str(comment, "comment") if comment is not None else reserved.get("comment")
        owner = _opt_str(owner, "owner") or reserved.get("owner") or self.user
        if format is None or (format == "parquet" and "provider" in reserved):
            format = reserved.get("provider", "parquet")
        external = bool(external) or reserved.get("external", "").lower() == "true"
        if not location and db_record.location:
            location = db_record.location.rstrip("/") + "/" + tn.name
        if external and not location:
            raise InvalidArgument(f"external table {tn} needs a location")
        check_column_names(struct, _format(format))
        schema_rec = rec.TableSchema(schema_id=schema_id, schema=struct_to_proto(struct),
                                     partition_columns=list(scheme.names), created_at_micros=now)
        storage = rec.TableStorage(format=_format(format), location=location or "", external=external)
        props_rec = rec.TableProperties(properties=props, owner=owner)
        if comment is not None:
            props_rec.comment = comment
        return schema_rec, storage, props_rec

    def create_table(self, name: NameLike, schema: Any, partition_by: Sequence[str] = (), format: str = "parquet",
                     location: str | None = None, properties: Mapping[str, str] | None = None,
                     comment: str | None = None, owner: str | None = None, external: bool = False, *,
                     default_location: bool | None = None) -> TableInfo:
        """Create a table. ``schema``: Spark StructType JSON, a DDL column list or a
        StructType. Spark's reserved properties (location, comment, owner, provider,
        external) in ``properties`` fill the matching arguments left out. Without a
        location the table goes under the database's location, if it has one.
        ``default_location``: the location is the table's default one, not one the user
        chose (default: no location given); it must then not overlap another table's
        location in the database (:class:`~ushas_catalog.errors.LocationInUse`)."""
        tn = new_table_name(name)
        schema = parse_schema(schema)  # outside the transaction: a wide DDL takes a while to parse
        if default_location is None:
            default_location = not location and "location" not in (properties or {})

        def fn(tr: Transaction) -> TableInfo:
            db, entry = self._relation(tr, tn)
            if entry is not None:
                raise TableAlreadyExists(_exists_message(tn, entry), table=str(tn))
            return self._create_in(tr, tn, db, schema, partition_by, format, location, properties, comment, owner,
                                   external, default_location=default_location)

        return self._run(fn)

    def replace_table(self, name: NameLike, schema: Any, partition_by: Sequence[str] = (), format: str = "parquet",
                      location: str | None = None, properties: Mapping[str, str] | None = None,
                      comment: str | None = None, owner: str | None = None, external: bool = False, *,
                      expected_version: int | None = None) -> TableInfo:
        """CREATE OR REPLACE TABLE in one transaction. An existing table keeps its id and
        history: the new definition is the next version (new schema id) and its
        partitions are removed; a missing table is created (unless ``expected_version``
        is given: then it must exist at that version)."""
        tn = new_table_name(name)
        schema = parse_schema(schema)  # outside the transaction
        _check_expected(expected_version)

        def fn(tr: Transaction) -> TableInfo:
            db, entry = self._relation(tr, tn)
            if entry is None:
                if expected_version is not None:
                    raise Conflict(f"table {tn} does not exist, not at the expected version {expected_version}",
                                   table=str(tn), expected_version=expected_version)
                return None  # type: ignore[return-value]
            if entry.kind != rec.ObjectKind.TABLE:
                raise TableAlreadyExists(_exists_message(tn, entry), table=str(tn))
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            db_record = RecordStore.at(db.path.add("DatabaseRecord")).load(tr, ())
            now = _now()
            old = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            records = self._table_records(tn, db_record, schema, partition_by, format, location, properties, comment,
                                          owner, external, old["TableSchema"].schema_id + 1, now)
            self._release_table_data(tr, t, tn, old["TableSchema"], old["TableStorage"], "REPLACE TABLE", now)
            for sub, r in zip(("TableSchema", "TableStorage", "TableProperties"), records):
                t.store(sub).save(tr, (), r)
            tr.clear_range(*t.store("TablePartition", ()).path.range())
            _init_table_files(t.path, tr, records, t.ref.version + 1)
            ref = _copy(t.ref)
            ref.schema_id = records[0].schema_id
            self._commit(tr, Mutation("table", str(tn), t.path, "REPLACE TABLE", t.ref.version + 1, ref,
                                      time_micros=now, previous=old, partitions_cleared=True,
                                      changed=("TableSchema", "TableStorage", "TableProperties", "TablePartition"),
                                      detail={"format": records[1].format,
                                              "partition_by": list(records[0].partition_columns)}))
            return self._table_info(tn, t.id, ref, *records)

        # one transaction: replace, or (table missing) create in the same retry loop
        def replace_or_create(tr: Transaction) -> TableInfo:
            info = fn(tr)
            if info is not None:
                return info
            db, _ = self._relation(tr, tn)
            return self._create_in(tr, tn, db, schema, partition_by, format, location, properties, comment, owner,
                                   external,
                                   default_location=not location and "location" not in (properties or {}))

        return self._run(replace_or_create)

    def _release_table_data(self, tr: Transaction, t: _Table, tn: TableName, schema: rec.TableSchema,
                            storage: rec.TableStorage, operation: str, now: int) -> None:
        """A managed table's data becomes unreachable (REPLACE TABLE): kept until purge (DataGarbage)."""
        if storage.external:
            return
        garbage = Garbage()
        if schema.partition_columns:
            for sr in RecordStore.at(t.path.add("TablePartition"), tuple(schema.partition_columns)).scan(tr):
                if sr.record.files_recorded:
                    garbage.files.extend(from_records(sr.record.data_files))
                elif sr.record.location:
                    garbage.directories.append(sr.record.location)
        else:
            listed = t.store("TableDataFiles").load(tr, ())
            if listed is not None:
                garbage.files.extend(from_records(listed.files))
            elif storage.location:
                garbage.directories.append(storage.location)
        record_garbage(tr, self.project_path, t.id, str(tn), operation, garbage, now)

    def _create_in(self, tr: Transaction, tn: TableName, db: _Object, *args: Any,
                   default_location: bool = False) -> TableInfo:
        """Create table ``tn`` (its name known to be free) in database ``db``."""
        db_record = RecordStore.at(db.path.add("DatabaseRecord")).load(tr, ())
        now = _now()
        records = self._table_records(tn, db_record, *args, 1, now)
        if default_location:
            self._check_location_free(tr, db, tn, records[1].location)
        tid = uuid.uuid4()
        path = Layout.table(db.path, tid)
        self._names(db.path.add("Table"), "Table").save(tr, (tn.name,), rec.ObjectName(
            id=tid.bytes, kind=rec.ObjectKind.TABLE, created_at_micros=now), new=True)
        for sub, r in zip(("TableSchema", "TableStorage", "TableProperties"), records):
            RecordStore.at(path.add(sub)).save(tr, (), r, new=True)
        _init_table_files(path, tr, records, 1)
        ref = rec.TableReference(schema_id=1, created_at_micros=now)
        self._commit(tr, Mutation("table", str(tn), path, "CREATE TABLE", 1, ref, time_micros=now,
                                  changed=("TableSchema", "TableStorage", "TableProperties"),
                                  detail={"format": records[1].format,
                                          "partition_by": list(records[0].partition_columns)}))
        return self._table_info(tn, tid, ref, *records)

    def get_table(self, name: NameLike, as_of: int | dt.datetime | None = None) -> TableInfo:
        """The table now, or as it was at version ``as_of`` (an int) or at time ``as_of``
        (a datetime; naive means UTC)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> TableInfo:
            t = self._table(tr, tn)
            current = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            if as_of is None:
                return self._table_info(tn, t.id, t.ref, current["TableSchema"], current["TableStorage"],
                                        current["TableProperties"])
            version = self._resolve_as_of(tr, t, as_of)
            past = {sub: self._head_at(tr, t, sub, version, r) for sub, r in current.items()}
            commit = t.store("TableCommit").load(tr, (version,))
            ref = rec.TableReference(version=version, schema_id=past["TableSchema"].schema_id,
                                     created_at_micros=t.ref.created_at_micros,
                                     updated_at_micros=commit.committed_at_micros)
            return self._table_info(tn, t.id, ref, past["TableSchema"], past["TableStorage"],
                                    past["TableProperties"])

        return self._run(fn)

    def _resolve_as_of(self, tr: Transaction, t: _Table, as_of: int | dt.datetime) -> int:
        current = t.ref.version
        if isinstance(as_of, bool):
            raise InvalidArgument("as_of must be a version number or a datetime, not a bool")
        if isinstance(as_of, int):
            if not 1 <= as_of <= current:
                raise NoSuchVersion(f"table {t.name} has versions 1 to {current}, not {as_of}", table=str(t.name))
            return as_of
        if isinstance(as_of, dt.datetime):
            when = as_of if as_of.tzinfo else as_of.replace(tzinfo=dt.timezone.utc)
            micros = (when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
            commits = t.store("TableCommit")

            def time_of(v: int) -> int:
                c = commits.load(tr, (v,))
                assert c is not None, f"missing commit {v}"
                return c.committed_at_micros

            if time_of(1) > micros:
                raise NoSuchVersion(f"table {t.name} did not exist at {when.isoformat()}", table=str(t.name))
            lo, hi = 1, current  # the greatest version committed at or before `micros`
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if time_of(mid) <= micros:
                    lo = mid
                else:
                    hi = mid - 1
            return lo
        raise InvalidArgument(f"as_of must be a version number or a datetime, not {type(as_of).__name__}")

    def _head_at(self, tr: Transaction, t: _Table, sub: str, version: int, current: Message) -> Message:
        history = t.store(sub + "History")
        begin = history.key((version + 1,))
        for r in history.scan(tr, begin, history.range()[1], limit=1):
            return r.record
        return current

    def table_exists(self, name: NameLike) -> bool:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> bool:
            try:
                _, entry = self._relation(tr, tn)
            except (NoSuchCatalog, NoSuchNamespace):
                return False
            return entry is not None and entry.kind == rec.ObjectKind.TABLE

        return self._run(fn)

    def list_tables(self, database: NameLike) -> list[RelationSummary]:
        """Tables of a database, by name (views are listed by :meth:`list_views`)."""
        return self._list_relations(database, rec.ObjectKind.TABLE)

    def list_relations(self, database: NameLike) -> list[RelationSummary]:
        """Tables and views of a database, by name."""
        return self._list_relations(database, None)

    def _list_relations(self, database: NameLike, kind: int | None) -> list[RelationSummary]:
        dn = DatabaseName.parse(database)

        def fn(tr: Transaction) -> list[RelationSummary]:
            db = self._database(tr, dn, load=False)
            return [RelationSummary(dn.catalog, dn.database, r.key[0], rec.ObjectKind.Name(r.record.kind),
                                    str(uuid.UUID(bytes=r.record.id)), micros_to_datetime(r.record.created_at_micros))
                    for r in self._names(db.path.add("Table"), "Table").scan(tr)
                    if kind is None or r.record.kind == kind]

        return self._run(fn)

    def alter_table(self, name: NameLike, changes: Sequence[TableChange],
                    expected_version: int | None = None) -> TableInfo:
        """Apply table changes in one commit (see :mod:`ushas_catalog.table_changes`).
        Column changes make one new schema id (the old schema is kept in history).
        ``expected_version``: fail with :class:`Conflict` if the table moved on."""
        tn = TableName.parse(name)
        _check_expected(expected_version)
        changes = list(changes)
        if not changes:
            raise InvalidArgument("alter_table needs at least one change")
        for c in changes:
            change_to_json(c)  # validates the kind

        def fn(tr: Transaction) -> TableInfo:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            old = {sub: t.store(sub).load(tr, ()) for sub in ("TableSchema", "TableStorage", "TableProperties")}
            state = SchemaState(struct_from_proto(old["TableSchema"].schema),
                                list(old["TableSchema"].partition_columns), (tn.catalog, tn.database, tn.name),
                                old["TableStorage"].format)
            storage = _copy(old["TableStorage"])
            props = _copy(old["TableProperties"])
            schema_changed = False
            for c in changes:
                if isinstance(c, COLUMN_CHANGES):
                    state.apply(c)  # type: ignore[arg-type]
                    schema_changed = True
                    continue
                if isinstance(c, SetProperty) and c.key in RESERVED_PROPERTIES:
                    c = _reserved_change(c.key, c.value)
                elif isinstance(c, RemoveProperty) and c.key in ("comment", "location"):
                    c = SetComment(None) if c.key == "comment" else SetLocation("")
                if isinstance(c, SetProperty):
                    _props({c.key: c.value}, "table properties")
                    props.properties[c.key] = c.value
                elif isinstance(c, RemoveProperty):
                    props.properties.pop(c.key, None)
                elif isinstance(c, SetLocation):
                    _opt_str(c.location, "location")
                    storage.location = c.location
                elif isinstance(c, SetComment):
                    _opt_str(c.comment, "comment")
                    if c.comment is None:
                        props.ClearField("comment")
                    else:
                        props.comment = c.comment
                elif isinstance(c, SetOwner):
                    _opt_str(c.owner, "owner")
                    props.owner = c.owner
            previous: dict[str, Message] = {}
            new_schema = old["TableSchema"]
            ref = _copy(t.ref)
            if schema_changed:
                new_schema = rec.TableSchema(schema_id=old["TableSchema"].schema_id + 1,
                                             schema=struct_to_proto(state.schema),
                                             partition_columns=state.partition_columns, created_at_micros=_now())
                if new_schema.schema != old["TableSchema"].schema or \
                        list(new_schema.partition_columns) != list(old["TableSchema"].partition_columns):
                    t.store("TableSchema").save(tr, (), new_schema)
                    previous["TableSchema"] = old["TableSchema"]
                    ref.schema_id = new_schema.schema_id
                else:
                    new_schema = old["TableSchema"]
            if storage != old["TableStorage"]:
                t.store("TableStorage").save(tr, (), storage)
                previous["TableStorage"] = old["TableStorage"]
            if props != old["TableProperties"]:
                t.store("TableProperties").save(tr, (), props)
                previous["TableProperties"] = old["TableProperties"]
            self._commit(tr, Mutation("table", str(tn), t.path, "ALTER TABLE", t.ref.version + 1, ref,
                                      previous=previous, changed=tuple(previous),
                                      detail={"changes": [change_to_json(c) for c in changes]}))
            return self._table_info(tn, t.id, ref, new_schema, storage, props)

        return self._run(fn)

    def rename_table(self, name: NameLike, new_name: NameLike, location: str | None = None, *,
                     expected_version: int | None = None) -> TableInfo:
        """Rename a table, possibly into another database of the same catalog (its keys
        then move, so the whole table must fit one transaction's 10 MB). ``location``: the
        table's new data location, in the same commit (a managed table's directory moves
        with its name; it must not overlap another table's location in the new database)."""
        src, dst = TableName.parse(name), new_table_name(new_name)
        _check_expected(expected_version)
        if location is not None:
            _opt_str(location, "location")

        def fn(tr: Transaction) -> TableInfo:
            t = self._table(tr, src)
            _expect("table", src, t.ref.version, expected_version)
            path = self._move_relation(tr, src, dst, t.id, t.path, rec.ObjectKind.TABLE)
            moved = _Table(dst, path.parent.parent, t.id, path, t.ref)  # type: ignore[union-attr]
            ref = _copy(t.ref)
            previous: dict[str, Message] = {}
            if location is not None:
                self._check_location_free(tr, self._database(tr, dst.database_name, load=False), dst, location,
                                          skip=t.id)
                old_storage = moved.store("TableStorage").load(tr, ())
                storage = _copy(old_storage)
                storage.location = location
                if storage != old_storage:
                    moved.store("TableStorage").save(tr, (), storage)
                    previous["TableStorage"] = old_storage
                    self._move_partition_locations(tr, moved, old_storage.location, location)
            self._commit(tr, Mutation("table", str(dst), path, "RENAME TABLE", t.ref.version + 1, ref,
                                      previous=previous, changed=tuple(previous),
                                      detail={"from": str(src), "to": str(dst)}))
            return self._table_info(dst, t.id, ref, *(moved.store(s).load(tr, ()) for s in
                                                      ("TableSchema", "TableStorage", "TableProperties")))

        return self._run(fn)

    def _check_location_free(self, tr: Transaction, db: _Object, tn: TableName, location: str,
                             skip: uuid.UUID | None = None) -> None:
        """:class:`~ushas_catalog.errors.LocationInUse` when ``location`` (the default location
        of table ``tn``) equals, is inside or holds the location of another table of ``db``."""
        if not location:
            return
        for r in self._names(db.path.add("Table"), "Table").scan(tr):
            tid = uuid.UUID(bytes=r.record.id)
            if r.record.kind != rec.ObjectKind.TABLE or tid == skip:
                continue
            other = RecordStore.at(Layout.table(db.path, tid).add("TableStorage")).load(tr, ())
            if other is not None and overlaps(location, other.location):
                raise location_in_use((tn.catalog, tn.database, tn.name), location,
                                      f"table {tn.catalog}.{tn.database}.{r.key[0]} has its data at "
                                      f"{other.location}")

    def _move_partition_locations(self, tr: Transaction, t: _Table, old: str, new: str) -> None:
        """Partitions under a table's old location follow its directory to the new one (same
        transaction as the move of the table location)."""
        from .data_garbage import garbage_store

        if not old:
            return
        prefix = old.rstrip("/") + "/"
        target = new.rstrip("/") + "/"

        def move_files(files: Any) -> bool:
            changed = False
            for f in files:
                if f.path.startswith(prefix):
                    f.path = target + f.path[len(prefix):]
                    changed = True
            return changed

        scheme = self._scheme(tr, t)
        if scheme:
            store = t.partitions(scheme)
            for stored in list(store.scan(tr)):
                moved = _copy(stored.record)
                changed = move_files(moved.data_files)
                if moved.location.startswith(prefix):
                    moved.location = target + moved.location[len(prefix):]
                    changed = True
                if changed:
                    store.save(tr, stored.key, moved)
        else:
            files = t.store("TableDataFiles")
            listed = files.load(tr, ())
            if listed is not None and move_files(listed.files):
                files.save(tr, (), listed)
        garbage = garbage_store(self.project_path)
        for stored in list(garbage.scan(tr, *garbage.prefix_range((t.id,)))):
            entry = _copy(stored.record)
            dirs = [target + d[len(prefix):] if d.startswith(prefix) else d for d in entry.directories]
            if move_files(entry.files) or dirs != list(entry.directories):
                del entry.directories[:]
                entry.directories.extend(dirs)
                garbage.save(tr, tuple(stored.key), entry)

    def _move_relation(self, tr: Transaction, src: TableName, dst: TableName, oid: uuid.UUID, path: KeySpacePath,
                       kind: int) -> KeySpacePath:
        if src.catalog != dst.catalog:
            raise InvalidArgument(f"cannot rename {src} to {dst}: a rename stays in its catalog")
        dst_db, existing = self._relation(tr, dst)
        if existing is not None:
            raise TableAlreadyExists(_exists_message(dst, existing), table=str(dst))
        src_db, entry = self._relation(tr, src)
        assert entry is not None
        self._names(src_db.path.add("Table"), "Table").delete(tr, (src.name,))
        self._names(dst_db.path.add("Table"), "Table").save(tr, (dst.name,), entry, new=True)
        if dst_db.id == src_db.id:
            return path
        new_path = (Layout.table if kind == rec.ObjectKind.TABLE else Layout.view)(dst_db.path, oid)
        old_prefix, new_prefix = path.key(), new_path.key()
        for kv in tr.get_range(*path.range()):
            tr.set(new_prefix + kv.key[len(old_prefix):], kv.value)
        tr.clear_range(*path.range())
        return new_path

    def drop_table(self, name: NameLike, purge: bool = False, *, expected_version: int | None = None,
                   data_paths: list[str] | None = None) -> None:
        """Drop a table: its name moves to DroppedTableObjectName (undrop_table restores
        it, data and all: nothing is deleted until purge); with ``purge`` every key of the table
        goes, in one clear_range, and ``data_paths`` receives the data to delete (see :meth:`purge_table`)."""
        tn = TableName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            found: list[str] = []
            self._drop_object(tr, t.database.add("Table"), "Table", tn.name, t, purge, "DROP TABLE",
                              rec.ObjectKind.TABLE, found)
            _give(data_paths, found)

        self._run(fn)

    def touch_table(self, name: NameLike, operation: str, detail: Mapping[str, Any] | None = None, *,
                    expected_version: int | None = None, write_id: str | None = None,
                    deadline_ms: int | None = None) -> int:
        """A change of a table's data that no metadata record holds (a write into an unpartitioned
        table, TRUNCATE TABLE): a new version with its commit, so whoever compares versions (the
        Spark catalog's cache) sees it. Returns the new version. ``write_id`` / ``deadline_ms``:
        a fenced write (:mod:`ushas_catalog.write_fence`): applied at most once, never after it
        was aborted or after the deadline."""
        tn = TableName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> int:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            return self._commit(tr, Mutation("table", str(tn), t.path, operation, t.ref.version + 1, _copy(t.ref),
                                             detail=dict(detail or {})))

        return self._fenced(write_id, deadline_ms, tn, fn, _version_answer, _version_of)

    def table_data_files(self, name: NameLike) -> list[DataFile] | None:
        """An unpartitioned table's data files as its last write registered them, or None: not
        recorded (reads list the table location)."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> list[DataFile] | None:
            r = self._table(tr, tn).store("TableDataFiles").load(tr, ())
            return None if r is None else from_records(r.files)

        return self._run(fn)

    def write_table_files(self, name: NameLike, files: Sequence[DataFile] | None, operation: str, *,
                          set_properties: Mapping[str, str] | None = None,
                          remove_properties: Sequence[str] = (), garbage: Garbage | None = None,
                          unchanged_since: int | None = None, expected_version: int | None = None,
                          detail: Mapping[str, Any] | None = None, write_id: str | None = None,
                          deadline_ms: int | None = None) -> int:
        """A write (or truncate) of an unpartitioned table in one commit: its data files become
        ``files`` (None: not recorded), the stats properties are set / removed, ``garbage`` (the files
        let go) is kept until purge. ``unchanged_since``: :class:`WriteConflict` if the table's
        files changed after that version. Returns the new version. ``write_id`` / ``deadline_ms``:
        a fenced write (:mod:`ushas_catalog.write_fence`)."""
        from .errors import WriteConflict

        tn = TableName.parse(name)
        _check_expected(expected_version)
        file_list = None if files is None else list(files)

        def fn(tr: Transaction) -> int:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            store = t.store("TableDataFiles")
            old_files = store.load(tr, ())
            if unchanged_since is not None and old_files is not None and old_files.version > unchanged_since:
                raise WriteConflict(f"{tn} was written by another write (version {old_files.version}) after this "
                                    f"overwrite started (version {unchanged_since}): the overwrite was not committed",
                                    table=str(tn))
            v = t.ref.version + 1
            now = _now()
            if file_list is None:
                store.delete(tr, ())
            else:
                store.save(tr, (), rec.DataFileList(files=data_file_records(file_list), version=v))
            previous: dict[str, Message] = {}
            old_props = t.store("TableProperties").load(tr, ())
            props = _copy(old_props)
            for key, value in (set_properties or {}).items():
                props.properties[key] = value
            for key in remove_properties:
                props.properties.pop(key, None)
            if props != old_props:
                t.store("TableProperties").save(tr, (), props)
                previous["TableProperties"] = old_props
            if garbage:
                record_garbage(tr, self.project_path, t.id, str(tn), operation, garbage, now)
            return self._commit(tr, Mutation("table", str(tn), t.path, operation, v, _copy(t.ref), time_micros=now,
                                             previous=previous, changed=tuple(previous),
                                             detail=dict(detail or {})))

        return self._fenced(write_id, deadline_ms, tn, fn, _version_answer, _version_of)

    def undrop_table(self, name: NameLike, *, expected_version: int | None = None) -> TableInfo:
        """Restore the most recently dropped table of that name (``expected_version``: the
        dropped table's version, i.e. that of its DROP commit)."""
        tn = TableName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> TableInfo:
            db = self._database(tr, tn.database_name, load=False)
            self._undrop_object(tr, db.path.add("Table"), "Table", tn.name, str(tn), TableAlreadyExists, NoSuchTable)
            t = self._table(tr, tn)
            _expect("dropped table", tn, t.ref.version, expected_version)
            ref = _copy(t.ref)
            self._commit(tr, Mutation("table", str(tn), t.path, "UNDROP TABLE", t.ref.version + 1, ref))
            return self._table_info(tn, t.id, ref, *(t.store(s).load(tr, ()) for s in
                                                     ("TableSchema", "TableStorage", "TableProperties")))

        return self._run(fn)

    def purge_table(self, name: NameLike, *, data_paths: list[str] | None = None,
                    older_than: dt.timedelta | None = None) -> int:
        """Remove every dropped table of that name (dropped more than ``older_than`` ago when given),
        keys and all; returns how many. ``data_paths`` (a list) receives the paths of their data to
        delete once this committed: a managed table's location, or its recorded files when a live
        table shares that location, and the files its overwrites let go; nothing of an external table."""
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> int:
            db = self._database(tr, tn.database_name, load=False)
            tables = db.path.add("Table")
            found: list[str] = []
            n = self._purge_dropped(tr, tables, "Table", tn.name, str(tn),
                                    lambda i: tables.add("tableId", i), NoSuchTable, found, _cutoff(older_than))
            _give(data_paths, found)
            return n

        return self._run(fn)

    def list_dropped_tables(self, database: NameLike) -> list[DroppedObject]:
        dn = DatabaseName.parse(database)

        def fn(tr: Transaction) -> list[DroppedObject]:
            db = self._database(tr, dn, load=False)
            return self._list_dropped(tr, db.path.add("Table"), "Table",
                                      lambda n: str(TableName(dn.catalog, dn.database, n)))

        return self._run(fn)

    def _table_info(self, tn: TableName, tid: uuid.UUID, ref: rec.TableReference, schema: rec.TableSchema,
                    storage: rec.TableStorage, props: rec.TableProperties) -> TableInfo:
        return TableInfo(tn.catalog, tn.database, tn.name, str(tid), ref.version, schema.schema_id,
                         struct_from_proto(schema.schema), list(schema.partition_columns), storage.format,
                         storage.location or None, storage.external, dict(props.properties),
                         props.comment if props.HasField("comment") else None, props.owner or None,
                         micros_to_datetime(ref.created_at_micros), micros_to_datetime(ref.updated_at_micros))

    # ==== views ===================================================================
    def create_view(self, name: NameLike, sql: str, schema: Any, comment: str | None = None,
                    properties: Mapping[str, str] | None = None, current_catalog: str | None = None,
                    current_namespace: Sequence[str] | None = None, query_column_names: Sequence[str] = (),
                    replace: bool = False, owner: str | None = None, *,
                    expected_version: int | None = None) -> ViewInfo:
        """Create (``replace=True``: or replace) a view. Views share the tables' name
        space: a table of that name fails with TableAlreadyExists. ``expected_version``:
        the view must exist at that version (and is replaced)."""
        tn = new_table_name(name, "view")
        _check_expected(expected_version)
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArgument("a view needs its SQL text")
        struct = parse_schema(schema)
        record = rec.ViewRecord(sql=sql, schema=struct_to_proto(struct), properties=_props(properties, "view properties"),
                                current_catalog=_opt_str(current_catalog, "current_catalog") or "",
                                current_namespace=list(current_namespace or ()),
                                query_column_names=list(query_column_names), owner=_opt_str(owner, "owner") or self.user)
        if comment is not None:
            record.comment = _opt_str(comment, "comment") or ""

        def fn(tr: Transaction) -> ViewInfo:
            db, entry = self._relation(tr, tn)
            now = _now()
            new = _copy(record)
            if entry is not None:
                if entry.kind != rec.ObjectKind.VIEW:
                    raise TableAlreadyExists(_exists_message(tn, entry), table=str(tn))
                if not replace:
                    raise ViewAlreadyExists(f"view {tn} already exists", view=str(tn))
                view = self._view(tr, tn)
                _expect("view", tn, view.record.version, expected_version)
                new.created_at_micros = view.record.created_at_micros
                self._commit(tr, Mutation("view", str(tn), view.path, "REPLACE VIEW", view.record.version + 1, new,
                                          previous_head=view.record, time_micros=now))
                return self._view_info(tn, view.id, new)
            if expected_version is not None:
                raise Conflict(f"view {tn} does not exist, not at the expected version {expected_version}",
                               view=str(tn), expected_version=expected_version)
            vid = uuid.uuid4()
            path = Layout.view(db.path, vid)
            self._names(db.path.add("Table"), "Table").save(tr, (tn.name,), rec.ObjectName(
                id=vid.bytes, kind=rec.ObjectKind.VIEW, created_at_micros=now), new=True)
            new.created_at_micros = now
            self._commit(tr, Mutation("view", str(tn), path, "CREATE VIEW", 1, new, time_micros=now))
            return self._view_info(tn, vid, new)

        return self._run(fn)

    def get_view(self, name: NameLike) -> ViewInfo:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> ViewInfo:
            v = self._view(tr, tn)
            return self._view_info(tn, v.id, v.record)

        return self._run(fn)

    def view_exists(self, name: NameLike) -> bool:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> bool:
            try:
                _, entry = self._relation(tr, tn)
            except (NoSuchCatalog, NoSuchNamespace):
                return False
            return entry is not None and entry.kind == rec.ObjectKind.VIEW

        return self._run(fn)

    def list_views(self, database: NameLike) -> list[RelationSummary]:
        return self._list_relations(database, rec.ObjectKind.VIEW)

    def alter_view(self, name: NameLike, *, sql: str | None = None, schema: Any = None,
                   query_column_names: Sequence[str] | None = None, current_catalog: str | None = None,
                   current_namespace: Sequence[str] | None = None, set_properties: Mapping[str, str] | None = None,
                   remove_properties: Iterable[str] | None = None, comment: Any = UNSET,
                   owner: str | None = None, expected_version: int | None = None) -> ViewInfo:
        """ALTER VIEW ... AS (``sql`` with its ``schema``) and / or SET / UNSET TBLPROPERTIES."""
        tn = TableName.parse(name)
        _check_expected(expected_version)
        if (sql is None) != (schema is None):
            raise InvalidArgument("alter_view: give the new sql and its schema together")
        struct = parse_schema(schema) if schema is not None else None
        sets = _props(set_properties, "view properties")
        removes = list(remove_properties or ())

        def fn(tr: Transaction) -> ViewInfo:
            v = self._view(tr, tn)
            _expect("view", tn, v.record.version, expected_version)
            new = _copy(v.record)
            if sql is not None:
                if not isinstance(sql, str) or not sql.strip():
                    raise InvalidArgument("a view needs its SQL text")
                new.sql = sql
                new.schema.CopyFrom(struct_to_proto(struct))  # type: ignore[arg-type]
            if query_column_names is not None:
                del new.query_column_names[:]
                new.query_column_names.extend(query_column_names)
            if current_catalog is not None:
                new.current_catalog = current_catalog
            if current_namespace is not None:
                del new.current_namespace[:]
                new.current_namespace.extend(current_namespace)
            for k in removes:
                new.properties.pop(k, None)
            new.properties.update(sets)
            if comment is not UNSET:
                if comment is None:
                    new.ClearField("comment")
                else:
                    new.comment = _opt_str(comment, "comment") or ""
            if owner is not None:
                new.owner = owner
            self._commit(tr, Mutation("view", str(tn), v.path, "ALTER VIEW", v.record.version + 1, new,
                                      previous_head=v.record, detail={"set": sets, "remove": removes,
                                                                      "sql_changed": sql is not None}))
            return self._view_info(tn, v.id, new)

        return self._run(fn)

    def rename_view(self, name: NameLike, new_name: NameLike, *, expected_version: int | None = None) -> ViewInfo:
        src, dst = TableName.parse(name), new_table_name(new_name, "view")
        _check_expected(expected_version)

        def fn(tr: Transaction) -> ViewInfo:
            v = self._view(tr, src)
            _expect("view", src, v.record.version, expected_version)
            path = self._move_relation(tr, src, dst, v.id, v.path, rec.ObjectKind.VIEW)
            new = _copy(v.record)
            self._commit(tr, Mutation("view", str(dst), path, "RENAME VIEW", v.record.version + 1, new,
                                      previous_head=v.record, detail={"from": str(src), "to": str(dst)}))
            return self._view_info(dst, v.id, new)

        return self._run(fn)

    def drop_view(self, name: NameLike, *, expected_version: int | None = None) -> None:
        """Drop a view: its name and every key of it go (views are not undroppable)."""
        tn = TableName.parse(name)
        _check_expected(expected_version)

        def fn(tr: Transaction) -> None:
            v = self._view(tr, tn)
            _expect("view", tn, v.record.version, expected_version)
            db = self._database(tr, tn.database_name, load=False)
            self._names(db.path.add("Table"), "Table").delete(tr, (tn.name,))
            self._metadata_purge(tr, v.path)
            tr.clear_range(*v.path.range())
            self.change_feed.record_removal(tr, kind="view", name=str(tn), object_id=v.id, version=v.record.version,
                                            operation="DROP VIEW", change=rec.ChangeEvent.DROPPED, before=v.record)

        self._run(fn)

    def _view_info(self, tn: TableName, vid: uuid.UUID, r: rec.ViewRecord) -> ViewInfo:
        return ViewInfo(tn.catalog, tn.database, tn.name, str(vid), r.version, r.sql, struct_from_proto(r.schema),
                        r.comment if r.HasField("comment") else None, dict(r.properties), r.current_catalog or None,
                        list(r.current_namespace), list(r.query_column_names), r.owner or None,
                        micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros))

    # ==== partitions ==============================================================
    def _partition_input(self, p: Partition | Mapping[str, Any]) -> Partition:
        if isinstance(p, Partition):
            return p
        if isinstance(p, Mapping):
            return Partition(values=dict(p))
        raise InvalidArgument(f"a partition must be a spec mapping or a Partition, not {type(p).__name__}")

    def _partition_record(self, p: Partition, location: str, now: int) -> rec.Partition:
        if not p.properties and p.files is None and p.bytes is None and p.rows is None \
                and p.data_files is None:  # ADD PARTITION
            return rec.Partition(location=_opt_str(location, "partition location") or "", created_at_micros=now)
        r = rec.Partition(location=_opt_str(location, "partition location") or "", created_at_micros=now,
                          properties=_props(p.properties, "partition properties"))
        if p.data_files is not None:
            r.files_recorded = True
            r.data_files.extend(data_file_records(p.data_files))
        for what in ("files", "bytes", "rows"):
            value = _count(getattr(p, what), what)
            if value is not None:
                setattr(r, what, value)
        return r

    def add_partitions(self, name: NameLike, partitions: Iterable[Partition | Mapping[str, Any]],
                       if_not_exists: bool = False, *, expected_version: int | None = None) -> MutationResult:
        """Add partitions in one transaction. Values are checked against the partition
        column types; without a location a partition goes to ``<table location>/k=v/...``."""
        tn = TableName.parse(name)
        _check_expected(expected_version)
        items = [self._partition_input(p) for p in partitions]

        def fn(tr: Transaction) -> MutationResult:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            scheme = self._scheme(tr, t)
            _require_partitioned(tn, scheme)
            storage = t.store("TableStorage").load(tr, ())
            store, history = t.partitions(scheme), t.partition_history(scheme)
            v = t.ref.version + 1
            now = _now()
            # every read before the first write (reads after writes merge with the write buffer)
            seen: set[tuple[Any, ...]] = set()
            new: list[tuple[bytes, rec.Partition]] = []
            keys: list[tuple[Any, ...]] = []
            skipped = 0
            keyed = [(scheme.key(p.values), p) for p in items]
            packed_keys = [fdbtuple.pack(key) for key, _ in keyed]
            existing = _existing_partitions(tr, store, packed_keys)
            for (key, p), packed in zip(keyed, packed_keys):
                if key in seen or packed in existing:
                    if if_not_exists:
                        skipped += 1
                        continue
                    raise PartitionAlreadyExists(f"partition {_spec_text(scheme, key)} of {tn} already exists",
                                                 table=str(tn), partition=scheme.spec(key))
                seen.add(key)
                location = p.location if p.location is not None else _default_location(storage, scheme, key)
                new.append((packed, self._partition_record(p, location, now)))
                keys.append(key)
            added_change = rec.PartitionChange(action=rec.PartitionChange.ADDED)
            version_prefix = fdbtuple.pack((v,))
            for packed, record in new:
                store.save_packed(tr, packed, record, new=True)
                history.save_packed(tr, version_prefix + packed, added_change, new=True)
            added = len(new)
            if not added:
                return MutationResult(None, skipped=skipped)
            self._commit(tr, Mutation("table", str(tn), t.path, "ADD PARTITIONS", v, _copy(t.ref), time_micros=now,
                                      changed=("TablePartition",), detail={"added": added, "skipped": skipped},
                                      partition_scheme=scheme,
                                      added_partitions=[(k, r) for k, (_, r) in zip(keys, new)]))
            return MutationResult(v, added=added, skipped=skipped)

        return self._run(fn)

    def _matching(self, tr: Transaction, store: RecordStore[rec.Partition], scheme: PartitionScheme,
                  spec: Mapping[str, Any] | None) -> Iterator[tuple[tuple[Any, ...], rec.Partition]]:
        lead, filters = scheme.selection(spec)
        if len(lead) == len(scheme.columns):
            r = store.load(tr, lead)
            if r is not None:
                yield lead, r
            return
        for sr in store.scan(tr, *store.prefix_range(lead)):
            if all(sr.key[i] == e for i, e in filters.items()):
                yield sr.key, sr.record

    def drop_partitions(self, name: NameLike, specs: Iterable[Mapping[str, Any]],
                        if_exists: bool = False, *, expected_version: int | None = None,
                        release_data: bool = False) -> MutationResult:
        """Drop partitions in one transaction. A partial spec drops every partition it
        matches; a spec matching nothing fails with NoSuchPartition unless ``if_exists``.
        ``release_data``: their files are kept until purge (a DataGarbage entry, same
        transaction)."""
        tn = TableName.parse(name)
        _check_expected(expected_version)
        spec_list = [dict(s.values) if isinstance(s, Partition) else s for s in specs]

        def fn(tr: Transaction) -> MutationResult:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            scheme = self._scheme(tr, t)
            _require_partitioned(tn, scheme)
            store, history = t.partitions(scheme), t.partition_history(scheme)
            v = t.ref.version + 1
            dropped: dict[tuple[Any, ...], rec.Partition] = {}
            missing = 0
            for spec in spec_list:
                found = list(self._matching(tr, store, scheme, spec))
                if not found:
                    if not if_exists:
                        raise NoSuchPartition(f"no partition {_show_spec(spec)} in {tn}", table=str(tn))
                    missing += 1
                dropped.update(found)
            for key, old in dropped.items():
                store.delete(tr, key)
                history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.DROPPED, previous=old),
                             new=True)
            if not dropped:
                return MutationResult(None, skipped=missing)
            if release_data:
                garbage = Garbage()
                for key, old in dropped.items():
                    garbage.add_partition(_partition_out(scheme, key, old))
                record_garbage(tr, self.project_path, t.id, str(tn), "DROP PARTITIONS", garbage, _now())
            self._commit(tr, Mutation("table", str(tn), t.path, "DROP PARTITIONS", v, _copy(t.ref),
                                      changed=("TablePartition",), detail={"dropped": len(dropped)},
                                      partition_scheme=scheme, dropped_partitions=list(dropped.items())))
            return MutationResult(v, dropped=len(dropped), skipped=missing)

        return self._run(fn)

    def replace_partitions(self, name: NameLike, drop_specs: Iterable[Mapping[str, Any]],
                           add: Iterable[Partition | Mapping[str, Any]], *,
                           expected_version: int | None = None, garbage: Garbage | None = None,
                           operation: str = "REPLACE PARTITIONS", unchanged_since: int | None = None,
                           detail: Mapping[str, Any] | None = None, write_id: str | None = None,
                           deadline_ms: int | None = None) -> MutationResult:
        """An overwrite in one transaction: partitions matching ``drop_specs`` (partial
        specs allowed; matching nothing is fine) go, ``add`` are written. A partition in
        both is REPLACED (one key, never duplicated). ``garbage``: the files this lets go, kept
        until purge (recorded in the same transaction). ``unchanged_since``: a table version;
        if a partition this replaces, drops or adds changed after it, :class:`WriteConflict`
        naming the partition (an overwrite planned from that version). ``write_id`` /
        ``deadline_ms``: a fenced write (:mod:`ushas_catalog.write_fence`): applied at most once
        (a retry answers the first result), never after it was aborted or after the deadline."""
        tn = TableName.parse(name)
        _check_expected(expected_version)
        drop_list = [dict(s.values) if isinstance(s, Partition) else s for s in drop_specs]
        items = [self._partition_input(p) for p in add]

        def fn(tr: Transaction) -> MutationResult:
            t = self._table(tr, tn)
            _expect("table", tn, t.ref.version, expected_version)
            scheme = self._scheme(tr, t)
            _require_partitioned(tn, scheme)
            storage = t.store("TableStorage").load(tr, ())
            store, history = t.partitions(scheme), t.partition_history(scheme)
            v = t.ref.version + 1
            now = _now()
            to_drop: dict[tuple[Any, ...], rec.Partition] = {}
            for spec in drop_list:
                to_drop.update(self._matching(tr, store, scheme, spec))
            new: dict[tuple[Any, ...], rec.Partition] = {}
            for p in items:
                key = scheme.key(p.values)
                if key in new:
                    raise InvalidArgument(f"partition {_spec_text(scheme, key)} is given twice")
                location = p.location if p.location is not None else _default_location(storage, scheme, key)
                new[key] = self._partition_record(p, location, now)
            existing = {key: to_drop.pop(key, None) or store.load(tr, key) for key in new}  # reads first
            if unchanged_since is not None:
                _check_unchanged(tr, tn, scheme, history, unchanged_since, t.ref.version,
                                 set(new) | set(to_drop))
            added = replaced = 0
            gone: list[tuple[tuple[Any, ...], rec.Partition]] = []
            for key, r in new.items():
                old = existing[key]
                if old is None:
                    store.save(tr, key, r, new=True)
                    history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.ADDED), new=True)
                    added += 1
                else:
                    store.save(tr, key, r)
                    history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.REPLACED,
                                                                     previous=old), new=True)
                    gone.append((key, old))
                    replaced += 1
            for key, old in to_drop.items():
                store.delete(tr, key)
                history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.DROPPED, previous=old),
                             new=True)
            if not (added or replaced or to_drop):
                return MutationResult(None)
            if garbage:
                record_garbage(tr, self.project_path, t.id, str(tn), operation, garbage, now)
            self._commit(tr, Mutation("table", str(tn), t.path, operation, v, _copy(t.ref),
                                      time_micros=now, changed=("TablePartition",),
                                      detail={"added": added, "replaced": replaced, "dropped": len(to_drop),
                                              **dict(detail or {})},
                                      partition_scheme=scheme, added_partitions=list(new.items()),
                                      dropped_partitions=gone + list(to_drop.items())))
            return MutationResult(v, added=added, dropped=len(to_drop), replaced=replaced)

        return self._fenced(write_id, deadline_ms, tn, fn, lambda r: (r.to_json(), r.version),
                            lambda a: MutationResult(a.get("version"), added=a.get("added", 0),
                                                     dropped=a.get("dropped", 0), replaced=a.get("replaced", 0)))

    def get_partition(self, name: NameLike, spec: Mapping[str, Any]) -> Partition:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> Partition:
            t = self._table(tr, tn)
            scheme = self._scheme(tr, t)
            _require_partitioned(tn, scheme)
            key = scheme.key(spec)
            r = t.partitions(scheme).load(tr, key)
            if r is None:
                raise NoSuchPartition(f"no partition {_spec_text(scheme, key)} in {tn}", table=str(tn))
            return _partition_out(scheme, key, r)

        return self._run(fn)

    def list_partitions(self, name: NameLike, prefix: Mapping[str, Any] | None = None,
                        limit: int | None = None) -> Iterator[Partition]:
        """Partitions in partition-value order, streamed. ``prefix`` is a partial spec:
        its leading partition columns narrow the key range read (only matching keys are
        touched); other named columns filter. The table is resolved (and errors raised)
        when this is called; the partitions are read in batches of
        :data:`PARTITION_BATCH`, one transaction each."""
        tn = TableName.parse(name)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgument(f"limit must be an integer >= 0, not {limit!r}")

        def first(tr: Transaction) -> tuple[_PartitionRange, list[Any]]:
            r = self._partition_range(tr, tn, prefix)
            return r, list(islice(r.store.scan_raw(tr, r.begin, r.end), PARTITION_BATCH))

        r, batch = self._run(first)
        return self._stream_partitions(r.scheme, r.store, r.end, r.filters, batch, limit)

    def _partition_range(self, tr: Transaction, tn: TableName, prefix: Mapping[str, Any] | None) -> _PartitionRange:
        """Where the partitions of ``tn`` matching the partial spec ``prefix`` are: the key range its
        leading columns narrow to, and the filters its other columns leave."""
        t = self._table(tr, tn)
        scheme = self._scheme(tr, t)
        _require_partitioned(tn, scheme)
        lead, filters = scheme.selection(prefix)
        store = t.partitions(scheme)
        begin, end = store.prefix_range(lead)
        return _PartitionRange(scheme, store, begin, end, filters)

    def _stream_partitions(self, scheme: PartitionScheme, store: RecordStore[rec.Partition], end: bytes,
                           filters: dict[int, Any], batch: list[tuple[list[bytes], bytes]],
                           limit: int | None) -> Iterator[Partition]:
        decoder = KeyDecoder(scheme)
        times: dict[int, dt.datetime] = {}
        parse = rec.Partition.FromString
        remaining = limit
        while True:
            for elements, data in batch:
                key, values, spec = decoder.decode(elements)
                if filters and not all(key[i] == e for i, e in filters.items()):
                    continue
                if remaining is not None:
                    if remaining <= 0:
                        return
                    remaining -= 1
                r = parse(data)
                created = times.get(r.created_at_micros)
                if created is None:
                    created = times[r.created_at_micros] = micros_to_datetime(r.created_at_micros)
                yield Partition(values, r.location or None, r.files if r.HasField("files") else None,
                                r.bytes if r.HasField("bytes") else None, r.rows if r.HasField("rows") else None,
                                dict(r.properties) if r.properties else {}, created, spec,
                                from_records(r.data_files) if r.files_recorded else None)
            if len(batch) < PARTITION_BATCH:
                return
            begin = store.prefix + b"".join(batch[-1][0]) + b"\xff"
            batch = self._run(lambda tr: list(islice(store.scan_raw(tr, begin, end), PARTITION_BATCH)))

    def scan_partitions(self, name: NameLike,
                        ranges: Callable[[PartitionScheme], Sequence[tuple[bytes, bytes]]] | None = None
                        ) -> tuple[PartitionScheme, Iterator[tuple[tuple[Any, ...], rec.Partition]]]:
        """The stored key (tuple elements) and record of each partition whose key falls in the ranges
        ``ranges(scheme)`` gives (packed partition keys relative to the table's partition subspace,
        sorted and disjoint: see :class:`ushas_catalog.pruning.Pruning`; None: every partition), in
        partition order, without building :class:`Partition` values: the read path's hot loop. Only
        keys inside the ranges are read, so the cost follows the partitions selected, not the table's
        size. The table is resolved (and errors raised) when this is called; the ranges are read in
        batches of up to :data:`PARTITION_BATCH` records, one transaction each."""
        tn = TableName.parse(name)

        bounds: list[tuple[bytes, bytes]] = []
        store: RecordStore[rec.Partition] | None = None

        def read(tr: Transaction, index: int, begin: bytes | None) -> tuple[list[Any], int, bytes | None]:
            assert store is not None
            out: list[Any] = []
            while index < len(bounds):
                b, e = bounds[index]
                for item in store.scan_raw(tr, begin or b, e):
                    out.append(item)
                    if len(out) >= PARTITION_BATCH:
                        return out, index, store.prefix + b"".join(item[0]) + b"\xff"
                index, begin = index + 1, None
            return out, index, None

        def first(tr: Transaction) -> tuple[PartitionScheme, tuple[list[Any], int, bytes | None]]:
            """The table resolved and the first batch read: one transaction for most scans."""
            nonlocal store
            t = self._table(tr, tn)
            scheme = self._scheme(tr, t)
            _require_partitioned(tn, scheme)
            store = t.partitions(scheme)
            bounds[:] = [(store.prefix + b, store.prefix + e)
                         for b, e in (ranges(scheme) if ranges else [(b"", b"\xff")])]
            return scheme, read(tr, 0, None)

        scheme, head = self._run(first)

        def stream() -> Iterator[tuple[tuple[Any, ...], rec.Partition]]:
            memo: dict[bytes, Any] = {}  # raw element -> element: each distinct value decoded once
            parse = rec.Partition.FromString
            batch, index, begin = head
            while True:
                for elements, data in batch:
                    key = []
                    for raw in elements:
                        e = memo.get(raw, memo)
                        if e is memo:
                            e = memo[raw] = fdbtuple.unpack(raw)[0]
                        key.append(e)
                    yield tuple(key), parse(data)
                if index >= len(bounds):
                    return
                i, b = index, begin
                batch, index, begin = self._run(lambda tr: read(tr, i, b))

        return scheme, stream()

    def list_partition_keys(self, name: NameLike, prefix: Mapping[str, Any] | None = None
                            ) -> tuple[PartitionScheme, list[tuple[Any, ...]]]:
        """The partition columns and the stored keys (tuple elements, in partition-value
        order) of the partitions matching ``prefix`` (a partial spec, as in
        :meth:`list_partitions`), without reading or decoding a single record: what SHOW
        PARTITIONS and existence checks need. Keys are read in batches of
        :data:`PARTITION_BATCH`, one transaction each."""
        tn = TableName.parse(name)
        memo: dict[bytes, Any] = {}  # raw element -> element: each distinct value decoded once

        def element(raw: bytes) -> Any:
            found = memo.get(raw, memo)
            if found is memo:
                # strings without NUL (the common case) directly; the tuple layer for the rest
                found = memo[raw] = (raw[1:-1].decode() if raw[0] == 0x02 and b"\x00\xff" not in raw
                                     else fdbtuple.unpack(raw)[0])
            return found

        def batch(tr: Transaction, store: RecordStore[rec.Partition], begin: bytes, end: bytes,
                  filters: dict[int, Any], last: tuple[Any, ...] | None
                  ) -> tuple[list[tuple[Any, ...]], bytes | None, tuple[Any, ...] | None]:
            """One batch: its keys, the key to continue from (None at the end), the last key seen."""
            plen, arity = len(store.prefix), store.arity
            out: list[tuple[Any, ...]] = []
            count, last_raw = 0, b""
            for kv in tr.get_range(begin, end, limit=PARTITION_BATCH):
                count += 1
                last_raw = kv.key
                suffix = kv.key[plen:]
                if arity == 1 and suffix[0] == 0x02 and suffix.find(b"\x00") == len(suffix) - 1:
                    out.append((suffix[1:-1].decode(),))  # the common case: one string without NUL
                    last = None
                    continue
                elements = split_elements(suffix)
                if len(elements) != arity:  # a record split over several keys: (pk..., chunk index)
                    elements = elements[:arity]
                key = tuple(map(element, elements))
                if key == last:
                    continue
                last = key
                if filters and not all(key[i] == e for i, e in filters.items()):
                    continue
                out.append(key)
            return out, (last_raw + b"\x00" if count == PARTITION_BATCH else None), last

        def first(tr: Transaction) -> tuple[_PartitionRange,
                                            tuple[list[tuple[Any, ...]], bytes | None, tuple[Any, ...] | None]]:
            r = self._partition_range(tr, tn, prefix)
            return r, batch(tr, r.store, r.begin, r.end, r.filters, None)

        r, (keys, more, last) = self._run(first)
        while more is not None:
            begin, seen = more, last
            found, more, last = self._run(lambda tr: batch(tr, r.store, begin, r.end, r.filters, seen))
            keys.extend(found)
        return r.scheme, keys

    # ==== history =================================================================
    def history(self, name: NameLike, limit: int | None = None) -> list[HistoryItem]:
        """Commits of a table or view (3-part name), database (2) or catalog (1), newest first."""
        parsed = parse_any(name)

        def fn(tr: Transaction) -> list[HistoryItem]:
            entries: dict[int, rec.HistoryEntry] = {}
            if isinstance(parsed, TableName):
                _, entry = self._relation(tr, parsed)
                if entry is not None and entry.kind == rec.ObjectKind.VIEW:
                    path, commit_sub = self._view(tr, parsed).path, "ViewCommit"
                else:
                    t = self._table(tr, parsed)
                    path, commit_sub = t.path, "TableCommit"
                    for r in islice(t.store("TableHistory").scan(tr, reverse=True), limit):
                        entries[r.key[0]] = r.record
            elif isinstance(parsed, DatabaseName):
                path, commit_sub = self._database(tr, parsed, load=False).path, "DatabaseCommit"
            else:
                path, commit_sub = self._catalog(tr, parsed, load=False).path, "CatalogCommit"
            out = []
            for r in islice(RecordStore.at(path.add(commit_sub)).scan(tr, reverse=True), limit):
                c = r.record
                h = entries.get(c.version)
                out.append(HistoryItem(c.version, c.operation, c.user, micros_to_datetime(c.committed_at_micros),
                                       detail_from_json(c.detail_json), h.schema_id if h else None,
                                       list(h.changed) if h else []))
            return out

        return self._run(fn)

    # ==== project =================================================================
    def drop_project(self) -> None:
        """Delete everything of this project: one clear_range."""
        self._run(lambda tr: tr.clear_range(*self.project_path.range()))

    def stats(self, all_projects: bool = False, batch: int = 50_000) -> list[SubspaceStats]:
        """Keys and bytes (key + value) per subspace (the deepest named constant
        directory of each key, found by parsing it with the key space) per project.
        Reads in batches of ``batch`` keys, one transaction each."""
        ks = self.layout.keyspace
        begin, end = ks.range() if all_projects else self.project_path.range()
        counts: dict[tuple[str, str], list[int]] = {}
        while True:
            rows = self._run(lambda tr: [(kv.key, len(kv.value)) for kv in tr.get_range(begin, end, limit=batch)])
            for key, size in rows:
                try:
                    resolved = ks.parse(key)
                    project = resolved.path.find("project").value if resolved.path else "?"
                    subspace = next((p.directory.name for p in reversed(resolved.path.lineage())
                                     if p.directory.is_constant), "project") if resolved.path else "?"
                except Exception:  # noqa: BLE001 - a foreign key in the range: count it, do not fail
                    project, subspace = "?", "(unparsed)"
                c = counts.setdefault((project, subspace), [0, 0])
                c[0] += 1
                c[1] += len(key) + size
            if len(rows) < batch:
                break
            begin = rows[-1][0] + b"\x00"
        return [SubspaceStats(p, s, k, b) for (p, s), (k, b) in sorted(counts.items())]


# --- helpers -------------------------------------------------------------------------------
M_ = TypeVar("M_", bound=Message)


def _copy(message: M_) -> M_:
    out = type(message)()
    out.CopyFrom(message)
    return out


def _exists_message(tn: TableName, entry: rec.ObjectName) -> str:
    what = "a view" if entry.kind == rec.ObjectKind.VIEW else "a table"
    return f"{tn} already exists as {what}"


def _reserved_change(key: str, value: str) -> TableChange:
    if key == "location":
        return SetLocation(value)
    if key == "comment":
        return SetComment(value)
    if key == "owner":
        return SetOwner(value)
    raise InvalidArgument(f"table property {key!r} is reserved and cannot be changed with SET TBLPROPERTIES")


def _require_partitioned(tn: TableName, scheme: PartitionScheme) -> None:
    if not scheme:
        raise InvalidArgument(f"table {tn} is not partitioned", table=str(tn))


def _existing_partitions(tr: Transaction, store: RecordStore[rec.Partition], packed: list[bytes]) -> set[bytes]:
    """Which of these packed partition keys are stored. A few: point reads. Many: one range read
    over their span (keys only, one read conflict range), unless that span holds more than four
    times as many partitions as asked about, then point reads after all."""
    if len(packed) < 32:
        return {k for k in packed if store.exists_packed(tr, k)}
    wanted = set(packed)
    plen, arity, limit = len(store.prefix), store.arity, 4 * len(packed)
    found: set[bytes] = set()
    count = 0
    for kv in tr.get_range(store.prefix + min(packed), store.prefix + max(packed) + b"\xff", limit=limit + 1):
        count += 1
        suffix = kv.key[plen:]
        if suffix not in wanted:  # a partition not asked about, or one chunk of a split record
            suffix = b"".join(split_elements(suffix)[:arity])
        if suffix in wanted:
            found.add(suffix)
    if count > limit:
        return {k for k in packed if store.exists_packed(tr, k)}
    return found


def _default_location(storage: rec.TableStorage, scheme: PartitionScheme, key: tuple[Any, ...]) -> str:
    return storage.location.rstrip("/") + "/" + scheme.path(key) if storage.location else ""


def _spec_text(scheme: PartitionScheme, key: tuple[Any, ...]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in scheme.spec(key).items()) + ")"


def _show_spec(spec: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in spec.items()) + ")"


def _partition_out(scheme: PartitionScheme, key: tuple[Any, ...], r: rec.Partition) -> Partition:
    return Partition(values=scheme.values(key), location=r.location or None,
                     files=r.files if r.HasField("files") else None,
                     bytes=r.bytes if r.HasField("bytes") else None,
                     rows=r.rows if r.HasField("rows") else None,
                     properties=dict(r.properties), created_at=micros_to_datetime(r.created_at_micros),
                     spec=scheme.spec(key), data_files=from_records(r.data_files) if r.files_recorded else None)


def _check_unchanged(tr: Transaction, tn: TableName, scheme: PartitionScheme, history: RecordStore[Any],
                     since: int, current: int, keys: set[tuple[Any, ...]]) -> None:
    """:class:`WriteConflict` if a commit after version ``since`` changed a partition of ``keys``."""
    from .errors import WriteConflict

    if not keys or current <= since:
        return
    for sr in history.scan(tr, *history.prefix_range((since + 1,))[:1], history.prefix_range((current,))[1]):
        key = tuple(sr.key[1:])
        if key in keys:
            raise WriteConflict(f"partition {_spec_text(scheme, key)} of {tn} was changed by another write "
                                f"(version {sr.key[0]}) after this overwrite started (version {since}): "
                                f"the overwrite was not committed", table=str(tn), partition=scheme.spec(key))


def _init_table_files(path: KeySpacePath, tr: Transaction, records: Sequence[Any], version: int) -> None:
    """A new (or replaced) managed unpartitioned table has no files: an empty list, so that files
    already in its directory (a dropped table's, kept until purge) are never read as its own."""
    store = RecordStore.at(path.add("TableDataFiles"))
    schema, storage = records[0], records[1]
    if storage.external or schema.partition_columns:
        store.delete(tr, ())
    else:
        store.save(tr, (), rec.DataFileList(version=version))


def _cutoff(older_than: dt.timedelta | None) -> int | None:
    return None if older_than is None else _now() - int(older_than.total_seconds() * 1_000_000)


def _give(out: list[str] | None, found: list[str]) -> None:
    """Hands a transaction's findings to the caller's list (each retry starts it again)."""
    if out is not None:
        out[:] = found


def _check_expected(expected: int | None) -> None:
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 1):
        raise InvalidArgument(f"expected_version must be an integer >= 1 or None, not {expected!r}")


def _expect(what: str, name: Any, actual: int, expected: int | None) -> None:
    """Optimistic concurrency: the object must still be at ``expected`` (checked inside
    the transaction, so every retry checks again)."""
    if expected is not None and actual != expected:
        raise Conflict(f"{what} {name} is at version {actual}, not the expected {expected}",
                       object=str(name), expected_version=expected, actual_version=actual)
