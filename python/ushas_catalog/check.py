"""``ushas check``: is a store whole? A registry of named, read-only checks.

Size (over 600 lines): one module per check would each need the inventory walk and the scans
below; the checks are short functions over one shared inventory.

Each :class:`Check` is a name and a function of an opened
:class:`~ushas_catalog.metastore.Metastore` that yields what it found wrong: :class:`Finding`
values (or anything else, shown with ``str()``: a check can be a function that already lists
problems, such as pending work left by an interrupted operation). No finding is a pass.
Adding a check is one line::

    register(Check("pending-work", pending_work, "big operations a crash left unfinished"))

The checks (:data:`CHECKS`, in this order):

- ``engine``: the engine's own integrity: SQLite's ``PRAGMA quick_check`` (``integrity_check``
  with ``full=True``) on the embedded engine; on FoundationDB (whose cluster checks its own
  storage: ``fdbcli consistencycheck``) every key of the project is read back in batches.
- ``counter``: the store's commit version counter is at least every commit version recorded
  in its keys (change feed, metadata history), so the next commit's version is above them
  (:mod:`ushas_catalog.kv.counter`; FoundationDB owns its versions: nothing to check).
- ``names``: the name indexes against the object records: every name (live or dropped) leads
  to an object record of its kind, every object record is reachable from a name, no object has
  two live names or is both live and dropped, no keys of an object without its record.
- ``versions``: every object's head version is at least every version in its commit log and
  history.
- ``partitions``: every partition key has one value per partition column (none for an
  unpartitioned table), every live table's partitions are listable to the end, and the
  ``partition_count`` SYSTEM property matches the records.
- ``data-files``: recorded data-file lists against their partitions: a partition that records
  its files has each path once and ``files`` / ``bytes`` matching the list; an unpartitioned
  table's file list was written at or before the table's version; a partitioned table has none.
- ``search-index``: the search index (merged and pending entries) is exactly what the objects'
  metadata states and entries call for, and every metadata object is a catalog object.
- ``change-feed``: the change feed reads to its end, in strictly increasing commit order.
- ``partition-tags``: the tag index of each table holds exactly the tags of its partition records
  (:mod:`ushas_catalog.catalog.partition_tags`).
- ``staged-writes``: atomic CTAS / RTAS writes (:mod:`ushas_catalog.data.staged`) that will never
  commit (aborted, or their driver is gone) and left a staging directory or files: ``ushas purge``
  removes them.

Read-only: :func:`check_store` opens the store read-only (``mode=ro`` on the embedded engine)
and no check writes. A check that fails to run is itself a finding (``could not run: ...``).
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import parse_qs, urlsplit

import fdb.tuple as fdbtuple

from . import records as rec
from .errors import InvalidArgument, UshasError
from .keyspace.tree import KeySpacePath
from .kv.base import Database, KeyValue
from .model.names import CatalogName, DatabaseName, TableName
from .records.store import RecordStore

if TYPE_CHECKING:
    from .metastore import Metastore

#: keys read per transaction while scanning (each read well inside the 5 s limit)
SCAN_BATCH = 5_000
#: ``ushas check`` exit status when it found problems (0: healthy; 1 / 2: the usual CLI errors,
#: e.g. ``store not found`` is 2)
EXIT_PROBLEMS = 3


@dataclass(frozen=True)
class Finding:
    """One problem: the check that found it, where (an object name or a key path) and what."""

    check: str
    problem: str
    where: str = ""

    def line(self) -> str:
        return f"{self.check}: {self.where}: {self.problem}" if self.where else f"{self.check}: {self.problem}"

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "where": self.where, "problem": self.problem}


@dataclass(frozen=True)
class Check:
    """A named check: ``run(metastore)`` yields findings (none: the check passed)."""

    name: str
    run: Callable[["Metastore"], Iterable[Any]]
    doc: str = ""


#: the registered checks, in the order they run
CHECKS: list[Check] = []


def register(check: Check) -> Check:
    """Add ``check`` to :data:`CHECKS` (replacing one of the same name)."""
    for i, c in enumerate(CHECKS):
        if c.name == check.name:
            CHECKS[i] = check
            return check
    CHECKS.append(check)
    return check


@dataclass
class CheckResult:
    name: str
    findings: list[Finding]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "seconds": round(self.seconds, 3),
                "findings": [f.to_json() for f in self.findings]}


@dataclass
class CheckReport:
    """What :func:`run_checks` found, check by check."""

    uri: str
    project: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "project": self.project, "ok": self.ok, "problems": len(self.findings),
                "checks": [r.to_json() for r in self.results]}

    def lines(self) -> list[str]:
        """One line per problem, then a summary line."""
        out = [f.line() for f in self.findings]
        names = ", ".join(r.name for r in self.results)
        if self.ok:
            out.append(f"ok: {len(self.results)} check(s) passed ({names})")
        else:
            out.append(f"{len(self.findings)} problem(s) found by {sum(not r.ok for r in self.results)} of "
                       f"{len(self.results)} check(s)")
        return out


def _as_finding(check: str, item: Any) -> Finding:
    if isinstance(item, Finding):
        return item
    return Finding(check, str(item))


def run_checks(ms: "Metastore", names: Sequence[str] | None = None, *, full: bool = False) -> CheckReport:
    """Run the registered checks (only ``names`` when given) on ``ms``. ``full``: the engine's
    slower, complete integrity check."""
    known = {c.name: c for c in CHECKS}
    unknown = [n for n in names or () if n not in known]
    if unknown:
        raise InvalidArgument(f"unknown check(s) {', '.join(unknown)}: expected {', '.join(known)}")
    selected = [c for c in CHECKS if not names or c.name in names]
    report = CheckReport(ms.db.uri, ms.project)
    _FULL[id(ms)] = full
    try:
        for c in selected:
            started = time.monotonic()
            findings: list[Finding] = []
            try:
                findings = [_as_finding(c.name, item) for item in c.run(ms)]
            except (UshasError, Exception) as exc:  # noqa: BLE001 - a check that cannot run is a problem
                message = exc.message if isinstance(exc, UshasError) else f"{type(exc).__name__}: {exc}"
                findings.append(Finding(c.name, f"could not run: {message}"))
            report.results.append(CheckResult(c.name, findings, time.monotonic() - started))
    finally:
        _FULL.pop(id(ms), None)
        _INVENTORIES.pop(id(ms), None)
    return report


def read_only_uri(uri: str) -> str:
    """``uri`` opened read-only: ``mode=ro`` added to a ``sqlite://`` or ``postgresql://`` URI (others
    unchanged)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("sqlite", "postgresql", "postgres") or "mode" in parse_qs(parts.query):
        return uri
    return f"{uri}&mode=ro" if parts.query else f"{uri}?mode=ro"


def check_store(uri: str, project: str = "default", names: Sequence[str] | None = None, *,
                full: bool = False, root_prefix: bytes = b"") -> CheckReport:
    """Open the store at ``uri`` read-only (never creating it: ``StoreNotFound``) and run the
    checks on ``project``."""
    from .metastore import Metastore

    with Metastore.open(read_only_uri(uri), project, root_prefix=root_prefix, create=False) as ms:
        report = run_checks(ms, names, full=full)
    report.uri = uri
    return report


# ---- reading in bounded transactions --------------------------------------------------------------
_FULL: dict[int, bool] = {}


def scan(db: Database, begin: bytes, end: bytes, batch: int = SCAN_BATCH) -> Iterator[KeyValue]:
    """Every key-value in ``[begin, end)``, ``batch`` keys per read transaction."""
    while True:
        rows = db.run(lambda tr, b=begin: list(tr.get_range(b, end, limit=batch, snapshot=True)))
        yield from rows
        if len(rows) < batch:
            return
        begin = rows[-1].key + b"\x00"


def _records(db: Database, store: RecordStore[Any]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(primary key, record) of every record in ``store`` (split records joined), read in batches;
    a key whose primary key has another arity than the store's is yielded as (key elements, None)."""
    begin, end = store.range()
    plen = len(store.prefix)
    pk_pending: tuple[Any, ...] | None = None
    chunks: list[bytes] = []
    for kv in scan(db, begin, end):
        elements = fdbtuple.unpack(kv.key[plen:]) if len(kv.key) > plen else ()
        if len(elements) == store.arity:
            if pk_pending is not None:
                yield pk_pending, store.message_type.FromString(b"".join(chunks))
                pk_pending, chunks = None, []
            yield elements, store.message_type.FromString(kv.value)
        elif len(elements) == store.arity + 1 and isinstance(elements[-1], int):
            pk = elements[:-1]
            if pk_pending is not None and pk != pk_pending:
                yield pk_pending, store.message_type.FromString(b"".join(chunks))
                chunks = []
            pk_pending = pk
            chunks.append(kv.value)
        else:
            yield elements, None
    if pk_pending is not None:
        yield pk_pending, store.message_type.FromString(b"".join(chunks))


def _child_ids(db: Database, parent: KeySpacePath) -> Iterator[uuid.UUID]:
    """The distinct UUIDs of the typed directory under ``parent`` (one short read per id)."""
    base = parent.key()
    begin, end = base + b"\x30", base + b"\x31"  # the tuple code of a UUID
    while True:
        rows = db.run(lambda tr, b=begin: list(tr.get_range(b, end, limit=1, snapshot=True)))
        if not rows:
            return
        (oid,) = fdbtuple.unpack(rows[0].key[len(base):len(base) + 17])
        yield oid
        begin = base + fdbtuple.pack((oid,)) + b"\xff"


# ---- the inventory of a project's objects -----------------------------------------------------------
@dataclass
class CatalogObject:
    """One object found under the project: a catalog, database, table or view."""

    kind: str                 # "catalog", "database", "table", "view"
    id: uuid.UUID
    path: KeySpacePath
    #: the qualified name it is reachable by (live first, else dropped); "" when unreachable
    name: str = ""
    #: its own name part (live or dropped)
    part: str = ""
    live: bool = False
    dropped: bool = False
    #: live, and so is every parent: the API resolves its name
    reachable: bool = False
    record: Any = None        # the head record (TableReference for tables)

    @property
    def shown(self) -> str:
        return self.name or str(self.path)


@dataclass
class Inventory:
    objects: list[CatalogObject] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: the paths (keys) of hidden tables a CTAS bigger than one transaction is staging (:mod:`.bulk_ctas`):
    #: no name yet by design; a dead one is reported by the pending-work check
    staged: set[bytes] = field(default_factory=set)

    def by_id(self) -> dict[uuid.UUID, CatalogObject]:
        return {o.id: o for o in self.objects}


_INVENTORIES: dict[int, Inventory] = {}
_HEAD = {"catalog": "CatalogRecord", "database": "DatabaseRecord", "table": "TableReference", "view": "ViewRecord",
         "object": "ObjectRecord"}
_KIND = {rec.ObjectKind.CATALOG: "catalog", rec.ObjectKind.DATABASE: "database", rec.ObjectKind.TABLE: "table",
         rec.ObjectKind.VIEW: "view", rec.ObjectKind.SHARE: "catalog",  # a mounted share: a catalog record
         rec.ObjectKind.OBJECT: "object"}


def inventory(ms: "Metastore") -> Inventory:
    """Every object of the project with how it is named (built once per :func:`run_checks`)."""
    inv = _INVENTORIES.get(id(ms))
    if inv is None:
        inv = _build_inventory(ms)
        if id(ms) in _FULL:  # inside run_checks: the checks share it
            _INVENTORIES[id(ms)] = inv
    return inv


def _build_inventory(ms: "Metastore") -> Inventory:
    from .bulk_ctas import CTAS
    from .bulk_work import work_store

    inv = Inventory()
    db = ms.db
    store = work_store(ms.project_path)
    inv.staged = db.run(lambda tr: {r.record.object_key for r in store.scan(tr) if r.record.kind == CTAS})
    for cat in _level(db, inv, ms.project_path.add("Catalog"), "Catalog", ("catalogId",), True,
                      lambda n: str(CatalogName(n))):
        c = cat.part
        for d in _level(db, inv, cat.path.add("Database"), "Database", ("databaseId",), cat.reachable,
                        lambda n, c=c: str(DatabaseName(c, n))):
            dn = d.part
            _level(db, inv, d.path.add("Table"), "Table", ("tableId",), d.reachable,
                   lambda n, c=c, dn=dn: str(TableName(c, dn, n)), views=d.path.add("View"))
            _level(db, inv, d.path.add("Object"), "Object", ("objectId",), d.reachable,  # versioned objects
                   lambda n, c=c, dn=dn: str(TableName(c, dn, n)))
    return inv


def _level(db: Database, inv: Inventory, parent: KeySpacePath, kind: str, id_dir: tuple[str], reachable: bool,
           show: Callable[[str], str], views: KeySpacePath | None = None) -> list[CatalogObject]:
    """The objects of one level (the catalogs of a project, the databases of a catalog, the tables
    and views of a database): their name entries against their id subtrees. Returns those with a
    record."""
    found: dict[uuid.UUID, CatalogObject] = {}
    subtrees: list[tuple[KeySpacePath, str, str]] = [(parent, id_dir[0], kind.lower())]
    if views is not None:
        subtrees.append((views, "viewId", "view"))
    for base, directory, okind in subtrees:
        for oid in _child_ids(db, base):
            path = base.add(directory, oid)
            if path.key() in inv.staged:
                continue
            head = db.run(lambda tr, p=path, k=okind: RecordStore.at(p.add(_HEAD[k])).load(tr, (), snapshot=True))
            found[oid] = CatalogObject(okind, oid, path, record=head)
    where = str(parent)
    for pk, entry in _records(db, RecordStore.at(parent.add(f"{kind}ObjectName"))):
        if entry is None:
            inv.findings.append(Finding("names", f"a name key with an unexpected key {pk!r}", where))
            continue
        (name,) = pk
        shown = show(name)
        oid = uuid.UUID(bytes=entry.id)
        okind = _KIND.get(entry.kind, "?")
        obj = found.get(oid)
        if obj is None or obj.record is None:
            inv.findings.append(Finding("names", f"the {okind} name points to id {oid}, which has no record", shown))
            continue
        if obj.kind != okind:
            inv.findings.append(Finding("names", f"the name says {okind} but id {oid} is a {obj.kind}", shown))
        if obj.live:
            inv.findings.append(Finding("names", f"id {oid} has a second live name (also {obj.name})", shown))
            continue
        obj.live, obj.name, obj.part, obj.reachable = True, shown, name, reachable
    for pk, entry in _records(db, RecordStore.at(parent.add(f"Dropped{kind}ObjectName"))):
        if entry is None:
            inv.findings.append(Finding("names", f"a dropped-name key with an unexpected key {pk!r}", where))
            continue
        name, oid = pk
        shown = show(name) + " (dropped)"
        obj = found.get(oid)
        if obj is None or obj.record is None:
            inv.findings.append(Finding("names", f"the dropped name points to id {oid}, which has no record", shown))
            continue
        if obj.live:
            inv.findings.append(Finding("names", f"id {oid} is both live (as {obj.name}) and dropped", shown))
            continue
        obj.dropped = True
        if not obj.name:
            obj.name, obj.part = shown, name
    for obj in found.values():
        if obj.record is None:
            inv.findings.append(Finding("names", f"keys of {obj.kind} id {obj.id} without its "
                                                 f"{_HEAD[obj.kind]} record (half-written or half-removed)",
                                        str(obj.path)))
        elif not obj.live and not obj.dropped:
            inv.findings.append(Finding("names", f"{obj.kind} id {obj.id} has a record but no name "
                                                 f"(live or dropped): unreachable", str(obj.path)))
    inv.objects.extend(found.values())
    return [o for o in found.values() if o.record is not None]


# ---- the checks ----------------------------------------------------------------------------------
def check_engine(ms: "Metastore") -> Iterator[Finding]:
    db = ms.db
    integrity = getattr(db, "integrity_check", None)
    if integrity is not None:
        for problem in integrity(full=_FULL.get(id(ms), False)):
            yield Finding("engine", problem, str(getattr(db, "uri", "")))
        return
    for _ in scan(db, *ms.project_path.range()):  # every key of the project reads back
        pass


def check_counter(ms: "Metastore") -> Iterator[Finding]:
    state = getattr(ms.db, "state", None)
    if state is None:  # FoundationDB: the cluster owns its versions
        return
    from .kv.counter import max_recorded_version

    current = state()
    if current.problem is not None or current.commit_version is None:
        yield Finding("counter", f"the commit version counter is unreadable: {current.problem}; "
                                 f"run 'ushas repair --counter'")
        return
    best, _ = max_recorded_version(ms.db)
    if current.commit_version < best:
        yield Finding("counter", f"the commit version counter ({current.commit_version}) is below a recorded "
                                 f"commit version ({best}); run 'ushas repair --counter'")


def check_names(ms: "Metastore") -> Iterator[Finding]:
    yield from inventory(ms).findings


_LOGS = {"catalog": ("CatalogCommit", "CatalogHistory"), "database": ("DatabaseCommit", "DatabaseHistory"),
         "view": ("ViewCommit", "ViewHistory"), "object": ("ObjectCommit", "ObjectHistory"),
         "table": ("TableCommit", "TableHistory", "TableSchemaHistory", "TableStorageHistory",
                   "TablePropertiesHistory")}


def check_versions(ms: "Metastore") -> Iterator[Finding]:
    for obj in inventory(ms).objects:
        if obj.record is None:
            continue
        head = obj.record.version
        for sub in _LOGS[obj.kind]:
            store = RecordStore.at(obj.path.add(sub))
            rows = ms.db.run(lambda tr, s=store: list(tr.get_range(*s.range(), limit=1, reverse=True,
                                                                    snapshot=True)))
            if not rows:
                continue
            top = fdbtuple.unpack(rows[0].key[len(store.prefix):])[0]
            if isinstance(top, int) and top > head:
                yield Finding("versions", f"{sub} has version {top} above the object's version {head}",
                              obj.shown)


def _tables(ms: "Metastore") -> Iterator[tuple[CatalogObject, rec.TableSchema | None]]:
    for obj in inventory(ms).objects:
        if obj.kind == "table" and obj.record is not None:
            schema = ms.db.run(lambda tr, o=obj: RecordStore.at(o.path.add("TableSchema")).load(tr, (), snapshot=True))
            yield obj, schema


def _partition_count_property(ms: "Metastore", oid: uuid.UUID) -> str | None:
    from .metadata.store import PROPERTY, MetadataKeys, Scope, pack_element

    keys = MetadataKeys(ms.project_path)
    key = b"".join((keys.entry_prefix(oid), pack_element(None), pack_element(Scope.SYSTEM.value),
                    pack_element(PROPERTY), pack_element("partition_count")))
    raw = ms.db.run(lambda tr: tr.get(key, snapshot=True))
    return None if raw is None else raw.decode("utf-8", "replace")


def check_partitions(ms: "Metastore") -> Iterator[Finding]:
    for obj, schema in _tables(ms):
        where = obj.shown
        if schema is None:
            yield Finding("partitions", "the table has no TableSchema record", where)
            continue
        columns = tuple(schema.partition_columns)
        store = RecordStore.at(obj.path.add("TablePartition"), columns)
        ref = ms.db.run(lambda tr: RecordStore.at(obj.path.add("TableReference")).load(tr, ()))
        version = ref.version if ref is not None else 0
        count = 0
        for pk, record in _records(ms.db, store):
            if record is None:
                yield Finding("partitions", f"a partition key with {len(pk)} value(s) for "
                                            f"{len(columns)} partition column(s): {pk!r}", where)
                continue
            if version and record.added_version > version and not record.HasField("replaced"):
                continue  # staged by a bulk operation in progress (reported by pending-work if it died)
            count += 1
        if count and not columns:
            yield Finding("partitions", f"an unpartitioned table with {count} partition record(s)", where)
        if not obj.reachable:
            continue
        try:
            listed = sum(1 for _ in ms.list_partitions(obj.name)) if columns else 0
        except (UshasError, Exception) as exc:  # noqa: BLE001 - unlistable is the finding
            yield Finding("partitions", f"the partitions cannot be listed: {exc}", where)
            continue
        if listed != count:
            yield Finding("partitions", f"listing gives {listed} partition(s), the records hold {count}", where)
        recorded = _partition_count_property(ms, obj.id)
        if columns and recorded is not None and recorded != str(count):
            yield Finding("partitions", f"the partition_count property says {recorded}, the table has {count} "
                                        f"partition(s)", where)


def _file_problems(files: Sequence[Any]) -> list[str]:
    out = []
    paths = [f.path for f in files]
    if len(set(paths)) != len(paths):
        out.append("the file list names a file more than once")
    if any(not p for p in paths):
        out.append("the file list has an empty path")
    if any(f.size < 0 for f in files):
        out.append("the file list has a negative size")
    return out


def check_data_files(ms: "Metastore") -> Iterator[Finding]:
    for obj, schema in _tables(ms):
        where = obj.shown
        columns = tuple(schema.partition_columns) if schema is not None else ()
        listed = ms.db.run(lambda tr, o=obj: RecordStore.at(o.path.add("TableDataFiles")).load(tr, (), snapshot=True))
        if listed is not None:
            if columns:
                yield Finding("data-files", "a partitioned table has a table-level file list", where)
            if listed.version > obj.record.version:
                yield Finding("data-files", f"the file list was written at version {listed.version}, after the "
                                            f"table's version {obj.record.version}", where)
            for problem in _file_problems(listed.files):
                yield Finding("data-files", problem, where)
        if not columns:
            continue
        for pk, part in _records(ms.db, RecordStore.at(obj.path.add("TablePartition"), columns)):
            if part is None:
                continue
            at = f"{where} partition {pk!r}"
            if not part.files_recorded:
                if part.data_files:
                    yield Finding("data-files", "files are listed but not marked as recorded", at)
                continue
            for problem in _file_problems(part.data_files):
                yield Finding("data-files", problem, at)
            if part.HasField("files") and part.files != len(part.data_files):
                yield Finding("data-files", f"files={part.files} but {len(part.data_files)} file(s) recorded", at)
            size = sum(f.size for f in part.data_files)
            if part.HasField("bytes") and part.bytes != size:
                yield Finding("data-files", f"bytes={part.bytes} but the recorded files hold {size}", at)


def check_search_index(ms: "Metastore") -> Iterator[Finding]:
    from .metadata.store import (F_FIELD, ObjectState, ObjectType, MetadataKeys, Scope, decode_pending, field_terms,
                           index_value, pack_element)

    keys = MetadataKeys(ms.project_path)
    objects = inventory(ms).by_id()
    expected: dict[bytes, bytes] = {}
    empty = pack_element("")
    objects_prefix = keys.objects.key()
    # every object's state and entries: what the index must hold
    current: uuid.UUID | None = None
    state_raw: list[bytes] = []
    entries: list[tuple[Any, ...]] = []

    def flush(oid: uuid.UUID | None) -> Iterator[Finding]:
        if oid is None:
            return
        if oid not in objects:
            yield Finding("search-index", f"metadata of id {oid}, which is no catalog object (left by a purge?)",
                          str(keys.obj(oid)))
        if not state_raw:
            if entries:
                yield Finding("search-index", f"metadata entries of id {oid} without its state record",
                              str(keys.obj(oid)))
            return
        state = ObjectState.from_bytes(b"".join(state_raw))
        if not state.indexed:
            return
        from .metadata.store import Entry

        all_entries = [Entry(c, Scope(s), k, key, v) for c, s, k, key, v in entries] + state.comment_entries()
        for e in all_entries:
            otype = ObjectType.COLUMN if e.column is not None else state.type
            tail = keys.index_tail(otype, e.scope, oid) + pack_element(e.column) + pack_element(e.key)
            for fld, term in e.index_terms():
                expected[keys.index_head(fld, term) + tail] = index_value(fld, state.name, e.value)
        tail = keys.index_tail(state.type, Scope.SYSTEM, oid)
        for path in state.fields:
            for term in field_terms(path):
                expected[keys.index_head(F_FIELD, term) + tail + pack_element(path) + empty] = \
                    index_value(F_FIELD, state.name, "")

    plen = len(objects_prefix)
    for kv in scan(ms.db, *keys.objects.range()):
        oid = fdbtuple.unpack(kv.key[plen:plen + 17])[0]
        if oid != current:
            yield from flush(current)
            current, state_raw, entries = oid, [], []
        entry_prefix = keys.entry_prefix(oid)
        if kv.key.startswith(keys.state(oid)):
            state_raw.append(kv.value)
        elif kv.key.startswith(entry_prefix):
            col, scope, kind, key = fdbtuple.unpack(kv.key[len(entry_prefix):])
            entries.append((col, scope, kind, key, kv.value.decode("utf-8")))
    yield from flush(current)
    # what the index holds: merged entries and pending ones
    actual: dict[bytes, bytes] = {}
    for kv in scan(ms.db, *keys.index.range()):
        actual[kv.key] = kv.value
    prefix = keys.index_prefix
    plen = len(keys.pending_prefix)
    for kv in scan(ms.db, *keys.pending_range()):
        oid = fdbtuple.unpack(kv.key[plen:])[0]
        if oid not in objects:
            yield Finding("search-index", f"pending index entries of id {oid}, which is no catalog object")
        for key, value in decode_pending(kv.value):
            if len(prefix + key) > ms.db.limits.key_bytes:
                yield Finding("search-index", f"a pending index entry of id {oid} is {len(prefix + key):,} bytes "
                                              f"long: too long for a key, it can never be merged")
            if prefix + key in actual:
                yield Finding("search-index", f"an index entry of id {oid} is both pending and merged")
            actual[prefix + key] = value
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    wrong = [k for k in expected if k in actual and actual[k] != expected[k]]
    for what, found in (("missing", missing), ("stale (no such entry)", extra), ("with a wrong value", wrong)):
        for key in found[:10]:
            yield Finding("search-index", f"index entry {what}: {_show_index_key(key, prefix)}")
        if len(found) > 10:
            yield Finding("search-index", f"... and {len(found) - 10} more index entries {what}")


def _show_index_key(key: bytes, prefix: bytes) -> str:
    try:
        return repr(fdbtuple.unpack(key[len(prefix):]))
    except Exception:  # noqa: BLE001 - shown as bytes then
        return repr(key)


def check_change_feed(ms: "Metastore") -> Iterator[Finding]:
    last = ""
    count = 0
    for change in ms.changes(None):
        cursor = change.cursor
        if cursor <= last:
            yield Finding("change-feed", f"event {cursor} is not after {last}")
        last = cursor
        count += 1


def check_pending_work(ms: "Metastore") -> Iterator[Finding]:
    """Operations bigger than one transaction (:mod:`ushas_catalog.bulk`) whose process died before
    they finished; one still running is not a problem."""
    from .bulk import pending_work

    for w in pending_work(ms):
        if not w.running:
            yield Finding("pending-work", f"{w.kind} {w.state.lower()}, {w.progress} done, its process "
                                          f"({w.owner}) is gone: run `ushas repair --pending`", w.object)


def check_staged_writes(ms: "Metastore") -> Iterator[Finding]:
    """Atomic CTAS / RTAS writes (:mod:`ushas_catalog.data.staged`) that will never commit (aborted, or
    their driver is gone) and left files behind; one still running is not a problem."""
    from .data.purge import STAGING_GRACE, staging_owner_alive
    from .data.staged import staged_write, writer_gone

    now = int(time.time() * 1e6)
    gone: dict[str, list[Any]] = {}  # write id -> its entries (a write of very many files has several)
    for e in ms.garbage():
        write_id = staged_write(e)
        if write_id is not None and writer_gone(ms, e, staging_owner_alive,
                                                int(STAGING_GRACE.total_seconds() * 1e6), now):
            gone.setdefault(write_id, []).append(e)
    for entries in gone.values():
        paths = len({f.path for e in entries for f in e.files})
        yield Finding("staged-writes", f"{entries[0].operation} left {paths} path(s) and will never commit: "
                                       f"run `ushas purge`", entries[0].table)


for _check in (
    Check("engine", check_engine, "the engine's own integrity (SQLite quick_check / integrity_check)"),
    Check("counter", check_counter, "the commit version counter is above every recorded commit version"),
    Check("names", check_names, "name indexes <-> object records"),
    Check("versions", check_versions, "every object's version >= every version in its commit log and history"),
    Check("partitions", check_partitions, "partition keys, listing and partition_count <-> partition records"),
    Check("data-files", check_data_files, "recorded data-file lists <-> partitions and tables"),
    Check("search-index", check_search_index, "search index entries <-> object metadata"),
    Check("change-feed", check_change_feed, "the change feed reads to its end, in commit order"),
    Check("pending-work", check_pending_work, "big operations a crash left unfinished (ushas repair --pending)"),
    Check("staged-writes", check_staged_writes, "atomic CTAS / RTAS writes a crash left behind (ushas purge)"),
):
    register(_check)


def check_partition_tags(ms: "Metastore") -> Iterator[Finding]:
    """The tag index (``TablePartitionTag``) holds exactly one entry per tag of every partition record."""
    from .catalog.partition_tags import index_path

    for obj, schema in _tables(ms):
        if schema is None or not schema.partition_columns:
            continue
        store = RecordStore.at(obj.path.add("TablePartition"), tuple(schema.partition_columns))
        expected = {(k, v, *pk) for pk, part in _records(ms.db, store) if part is not None
                    for k, v in part.tags.items()}
        base = index_path(obj.path).key()
        found = {fdbtuple.unpack(kv.key[len(base):]) for kv in scan(ms.db, base + b"\x00", base + b"\xff")}
        for entry in sorted(found - expected, key=repr)[:20]:
            yield Finding("partition-tags", f"an index entry names a partition without that tag: {entry!r}", obj.shown)
        for entry in sorted(expected - found, key=repr)[:20]:
            yield Finding("partition-tags", f"a partition's tag is not in the index: {entry!r}", obj.shown)


register(Check("partition-tags", check_partition_tags, "partition tag index <-> partition records' tags"))
