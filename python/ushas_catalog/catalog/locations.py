"""External locations as metastore operations (``Metastore.create_location`` ...) and the two checks that use
them (docs/governance.md, "External locations"):

- :meth:`LocationOps.check_placement`: a table's or a partition's data placed at a path (CREATE TABLE …
  LOCATION, ALTER … SET LOCATION, ADD PARTITION … LOCATION, repair) needs ``CREATE EXTERNAL TABLE`` on the
  declared location holding the path; once a project declares a location, a governed caller's path must lie
  in one (a partition's outside its table's location must, declared or not: :data:`A_PARTITION`); and it may
  not overlap another table's location anywhere in the project.
- :meth:`LocationOps.check_path_read`: a read of files by path (``parquet.`…```, ``spark.read.load``) that
  reaches a table's data needs SELECT on that table without a row filter or a column mask applying to the
  caller, or ``READ FILES`` on the declared location holding the path; a path in a declared location that no
  table owns needs ``READ FILES``.
- :meth:`LocationOps.check_path_write`: a write of files by path (``df.write.parquet(path)``, ``df.write.save``,
  ``INSERT OVERWRITE DIRECTORY``) into a declared location, or over a declared location, needs ``WRITE FILES``
  on it; one reaching a table's data (its directory, inside it or a directory holding it) needs ``WRITE FILES``
  on the declared location holding the path, or OWN on the table (else a filtered user could overwrite it).

:meth:`LocationOps.check_paths` checks one statement's reads and writes by path in one transaction (what the
Spark shim's path check sends). They read the declared locations from the policy snapshot the privilege check
reads anyway, and refuse with
:class:`~ushas_catalog.errors.PermissionDenied` (Spark's ``INSUFFICIENT_PERMISSIONS``), audited. A caller whose
calls are not checked (authorization off) passes them all.
"""
from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from .. import records as rec
from ..data.locations import dotted, normalized, outside, overlaps
from ..errors import InvalidArgument, PermissionDenied, UshasError
from ..governance import locations as locs
from ..governance import policy as policies
from ..governance.principals import of_policy
from ..governance.privileges import (CREATE_EXTERNAL_TABLE, OWN, READ_FILES, SELECT, WRITE_FILES, Securable, allowed,
                                     authorize)
from ..keyspace.layout import (CATALOG_ID, CHANGE_EVENT, CHANGE_FEED, DATABASE, DATABASE_ID, TABLE, TABLE_PROPERTIES,
                               TABLE_STORAGE, Layout)
from ..kv.base import Transaction
from ..model.names import TableName
from ..records.store import RecordStore
from .authorization import ANYONE, PROJECT, Requirement, requiring
from .base import MetastoreBase
from .branch_view import main_transaction


#: ``what`` of a placement that is a partition's: outside its table's own location it needs a declared location the
#: caller may place data in, even in a project that declares none (else a partition, then purge, could reach any
#: directory: another user's files)
A_PARTITION = "a partition of"


@dataclass(frozen=True)
class PlacedTable:
    """A live table of the project with an explicit location: its name, ids and location."""

    name: TableName
    ids: tuple[uuid.UUID, ...]  # project, catalog, database, table
    location: str
    properties: Any = None


def placed_tables(tr: Transaction, resolver: Any, *, properties: bool = False,
                  managed: bool = False) -> Iterator[PlacedTable]:
    """Every live table of the project (every catalog, database) with its location, read in ``tr``;
    ``managed``: the managed ones only."""
    catalogs = resolver.catalogs
    for c in resolver.names(catalogs, "Catalog").scan(tr):
        if c.record.kind == rec.ObjectKind.SHARE:
            continue
        cid = uuid.UUID(bytes=c.record.id)
        cpath = catalogs.add(CATALOG_ID, cid)
        for d in resolver.names(cpath.add(DATABASE), "Database").scan(tr):
            did = uuid.UUID(bytes=d.record.id)
            dpath = cpath.add(DATABASE).add(DATABASE_ID, did)
            for t in resolver.names(dpath.add(TABLE), "Table").scan(tr):
                if t.record.kind != rec.ObjectKind.TABLE:
                    continue
                tid = uuid.UUID(bytes=t.record.id)
                tpath = Layout.table(dpath, tid)
                storage = RecordStore.at(tpath.add(TABLE_STORAGE)).load(tr, ())
                if storage is None or not storage.location or (managed and storage.external):
                    continue
                props = RecordStore.at(tpath.add(TABLE_PROPERTIES)).load(tr, ()) if properties else None
                yield PlacedTable(TableName(c.key[0], d.key[0], t.key[0]), (policies.PROJECT_ID, cid, did, tid),
                                  storage.location, props)


@dataclass
class _Index:
    """The placed tables of one project as of one change-feed key (the newest when they were read)."""

    key: bytes
    tables: dict[uuid.UUID, PlacedTable]


#: (store and project key, with properties) -> the placed tables as of a change-feed key. Every table create,
#: alter, rename, drop writes a change event in its commit's transaction: when the newest event key moved, the
#: events since say which tables to read again (a catalog or database moved or dropped: all of them)
_INDEX: "OrderedDict[tuple[bytes, bool], _Index]" = OrderedDict()
_INDEX_LOCK = threading.Lock()
_INDEX_SIZE = 32
#: more new events than this: read every table again
_MAX_DELTA = 256
_STAMP = 13  # the versionstamp's length after the events' prefix and its type code (changes.feed)
_REREAD = frozenset({rec.ChangeEvent.Change.RENAMED, rec.ChangeEvent.Change.DROPPED, rec.ChangeEvent.Change.UNDROPPED,
                     rec.ChangeEvent.Change.PURGED, rec.ChangeEvent.Change.REPLACED})
#: a table's last event that leaves no live table of its id (an undrop is an event of its own)
_GONE = frozenset({rec.ChangeEvent.Change.DROPPED, rec.ChangeEvent.Change.PURGED})


def indexed_tables(tr: Transaction, ms: Any, *, properties: bool = False) -> list[PlacedTable]:
    """:func:`placed_tables` of ``ms``'s project as ``tr`` sees them, kept per change-feed state: one reverse
    read of the newest event when nothing changed, the new events and the tables they name when something did
    (all in ``tr``: its read set covers what the answer depends on). A branch reads every catalog's tables as
    ``main`` has them, every time (a branch's transaction reads its own catalog only: the others have no such
    branch); a table made in the branch alone is not among them."""
    if getattr(ms, "parent", None) is not None:
        return list(placed_tables(main_transaction(tr) or tr, ms.resolver, properties=properties))
    feed = ms.project_path.add(CHANGE_FEED).add(CHANGE_EVENT).key()
    newest = b""
    for kv in tr.get_range(feed, feed + b"\xff", limit=1, reverse=True):
        newest = bytes(kv.key)
    if not newest:
        return list(placed_tables(tr, ms.resolver, properties=properties))
    db = getattr(ms.db, "base", ms.db)
    key = (str(getattr(db, "uri", id(db))).encode() + b"\0" + ms.project_path.key(), properties)
    with _INDEX_LOCK:
        found = _INDEX.get(key)
    if found is not None and found.key == newest:
        return list(found.tables.values())
    tables = _updated(tr, ms, feed, found, newest, properties) if found is not None and found.key < newest else None
    if tables is None:
        tables = {t.ids[-1]: t for t in placed_tables(tr, ms.resolver, properties=properties)}
    with _INDEX_LOCK:
        _INDEX[key] = _Index(newest, tables)
        _INDEX.move_to_end(key)
        while len(_INDEX) > _INDEX_SIZE:
            _INDEX.popitem(last=False)
    return list(tables.values())


def _updated(tr: Transaction, ms: Any, feed: bytes, old: _Index, newest: bytes,
             properties: bool) -> dict[uuid.UUID, PlacedTable] | None:
    """``old``'s tables after the events up to ``newest``; None: read them all again."""
    rows = list(tr.get_range(old.key + b"\x00", newest + b"\x00", limit=_MAX_DELTA + 1))
    if len(rows) > _MAX_DELTA:
        return None
    events: list[tuple[bytes, list[bytes]]] = []
    head = len(feed) + 1 + _STAMP
    for kv in rows:
        stamp = bytes(kv.key[:head])
        if events and events[-1][0] == stamp:
            events[-1][1].append(bytes(kv.value))
        else:
            events.append((stamp, [bytes(kv.value)]))
    last: dict[uuid.UUID, rec.ChangeEvent] = {}  # each changed table's last event: its name and state now
    for _, parts in events:
        try:
            ev = rec.ChangeEvent.FromString(b"".join(parts))
        except Exception:  # noqa: BLE001 - a chunked event cut at the old key: read everything again
            return None
        if ev.kind in ("catalog", "database"):
            if ev.change in _REREAD:
                return None
            continue
        if ev.kind != "table" or len(ev.object_id) != 16:
            continue
        tid = uuid.UUID(bytes=ev.object_id)
        last.pop(tid, None)
        last[tid] = ev
    tables = dict(old.tables)
    for tid, ev in last.items():
        tables.pop(tid, None)
        if ev.change in _GONE:  # dropped or purged since, and not undropped: nothing to read
            continue
        found = _placed(tr, ms.resolver, ev.name, tid, properties)  # an event names the table as it is after it
        if found is not None:
            tables[tid] = found
    return tables


def _placed(tr: Transaction, resolver: Any, name: str, tid: uuid.UUID, properties: bool) -> PlacedTable | None:
    """The live table ``name`` when it is table ``tid`` and has a location."""
    try:
        tn = TableName.parse(name)
        cat = resolver.catalog(tr, tn.database_name.catalog_name, load=False)
        db = resolver.database(tr, tn.database_name, load=False)
    except (UshasError, ValueError):
        return None
    entry = resolver.names(db.path.add(TABLE), "Table").load(tr, (tn.name,))
    if entry is None or entry.kind != rec.ObjectKind.TABLE or uuid.UUID(bytes=entry.id) != tid:
        return None
    tpath = Layout.table(db.path, tid)
    storage = RecordStore.at(tpath.add(TABLE_STORAGE)).load(tr, ())
    if storage is None or not storage.location:
        return None
    props = RecordStore.at(tpath.add(TABLE_PROPERTIES)).load(tr, ()) if properties else None
    return PlacedTable(tn, (policies.PROJECT_ID, cat.id, db.id, tid), storage.location, props)


def _refused(user: str, privilege: str, what: str, why: str, obj: str, kind: str = "location") -> PermissionDenied:
    return PermissionDenied(f"User {user} may not {what}: {why}", privilege=privilege, object=obj,
                            object_kind=kind, user=user)


class LocationOps(MetastoreBase):
    """Declared external locations and the placement and path-read checks."""

    def create_location(self, name: str, url: str, comment: str = "") -> locs.Location:
        """Declare external location ``name`` at ``url`` (needs MANAGE on the project; the creator owns it)."""
        def fn(tr: Transaction) -> locs.Location:
            caller = self.caller()
            for t in placed_tables(tr, self.resolver, managed=True):  # the managed warehouse's tables
                if overlaps(url, t.location):
                    raise InvalidArgument(f"external location {name} at {url} overlaps the managed storage of "
                                          f"table {t.name} ({t.location}): the managed warehouse is the catalog's "
                                          f"own, not an external location")
            loc, event = locs.create(tr, self.layout, self.project, name, url, by=caller.principal, comment=comment)
            self.hooks.removed(tr, **event)
            if caller.authorization:
                from ..governance import grants

                granted = grants.grant(tr, self.layout, self.project, loc.securable(), OWN, caller.principal,
                                       by=caller.principal)
                if granted is not None:
                    self.hooks.removed(tr, **granted)
            return loc

        return self.run(fn)

    def drop_location(self, name: str) -> None:
        """Drop external location ``name`` and its grants (MANAGE on it). Tables placed in it stay where they
        are; placing new data there is then governed as any undeclared path."""
        self.run(lambda tr: self.hooks.removed(tr, **locs.drop(tr, self.layout, self.project, name,
                                                               by=self.caller().principal)))

    def get_location(self, name: str) -> locs.Location:
        return self.run(lambda tr: locs.get(policies.load(tr, self.layout, self.project), self.project, name))

    def list_locations(self) -> list[locs.Location]:
        """Every declared external location of the project."""
        return self.run(lambda tr: locs.listed(policies.load(tr, self.layout, self.project)))

    # ---- the checks ----------------------------------------------------------------------------------
    def check_placement(self, location: str, table: Any, *, own: str | None = None,
                        what: str = "the table") -> None:
        """Refuse (PermissionDenied) placing ``what`` of table ``table`` at ``location`` (see the module);
        ``own``: the table's own location, inside which a partition may lie. Nothing when not governed."""
        if not location or not self.caller().authorization:
            return
        with requiring(Requirement(ANYONE, PROJECT)):
            self.run(lambda tr: self._check_placement(tr, location, table, own=own, what=what))

    def _check_placement(self, tr: Transaction, location: str, table: Any, *, own: str | None = None,
                         what: str = "the table") -> None:
        """:meth:`check_placement` in ``tr``: the transaction of the call that places the data (a create's own,
        so that its overlap check and the new table commit together), or the check's own."""
        caller = self.caller()
        if not location or not caller.authorization:
            return
        tn = TableName.parse(table)
        if own and locs.inside(location, own):
            return
        p = policies.load(tr, self.layout, self.project)
        user = caller.user
        doing = f"place {what} {tn} at {location}"
        held = locs.holding(p, location)
        if held is not None:
            authorize(tr, self.layout, self.project, user, CREATE_EXTERNAL_TABLE, held.securable(), policy=p)
        elif what == A_PARTITION:
            raise _refused(user, CREATE_EXTERNAL_TABLE, doing, f"it lies outside the table's location "
                           f"{own or '(none)'} and in no declared external location (ushas locations list)",
                           str(location))
        elif p.locations:
            raise _refused(user, CREATE_EXTERNAL_TABLE, doing, "it lies in no declared external location "
                           "(ushas locations list)", str(location))
        for inner in locs.within(p, location):
            raise _refused(user, CREATE_EXTERNAL_TABLE, doing, f"it holds external location {inner.name}",
                           inner.name)
        for other in indexed_tables(tr, self):
            if other.name == tn or (own and locs.inside(other.location, own)):
                continue
            if overlaps(location, other.location):
                raise _refused(user, CREATE_EXTERNAL_TABLE, doing, "it overlaps the location of another table",
                               str(location))

    def _check_default_placement(self, tr: Transaction, location: str, table: Any) -> None:
        """In a create's transaction: a table's default location (the catalog's choice, from its database's location
        or a Spark catalog's warehouse — which a remote client states) may not overlap another table's location
        anywhere in the project (inside it, even an empty directory of it, or holding it); in a declared external
        location it needs CREATE EXTERNAL TABLE on it, and may not hold one, as a chosen one (:meth:`check_placement`)."""
        caller = self.caller()
        if not location or not caller.authorization:
            return
        tn = TableName.parse(table)
        doing = f"place the table {tn} at {location}"
        for other in indexed_tables(tr, self):
            if other.name != tn and overlaps(location, other.location):
                raise _refused(caller.user, CREATE_EXTERNAL_TABLE, doing, "it overlaps the location of another table",
                               str(location))
        p = policies.load(tr, self.layout, self.project)
        if not p.locations:
            return
        held = locs.holding(p, location)
        if held is not None:
            authorize(tr, self.layout, self.project, caller.user, CREATE_EXTERNAL_TABLE, held.securable(), policy=p)
        for inner in locs.within(p, location):
            raise _refused(caller.user, CREATE_EXTERNAL_TABLE, doing, f"it holds external location {inner.name}",
                           inner.name)

    def check_warehouse(self, url: str, catalog: str) -> None:
        """Refuse (PermissionDenied) a governed caller's own choice of Spark catalog ``catalog``'s managed warehouse
        (a remote client's that is not the catalog service's, ``ushas serve --warehouse``): it must lie in a declared
        external location the caller holds CREATE EXTERNAL TABLE on, and not inside another table's location."""
        caller = self.caller()
        if not caller.authorization:
            return

        def fn(tr: Transaction) -> None:
            p = policies.load(tr, self.layout, self.project)
            doing = f"use {url} as the warehouse of catalog {catalog}"
            held = locs.holding(p, url)
            if held is None:
                raise _refused(caller.user, CREATE_EXTERNAL_TABLE, doing, "it is not the catalog service's "
                               "warehouse and lies in no declared external location (ushas locations list)", url)
            authorize(tr, self.layout, self.project, caller.user, CREATE_EXTERNAL_TABLE, held.securable(), policy=p)
            for other in indexed_tables(tr, self):
                if locs.inside(url, other.location):
                    raise _refused(caller.user, CREATE_EXTERNAL_TABLE, doing, "it lies in the location of another "
                                   "table", url)

        with requiring(Requirement(ANYONE, PROJECT)):
            self.run(fn)

    def check_paths(self, reads: list[str] | None = None, writes: list[str] | None = None,
                    roots: list[str] | None = None, read_only: bool = False) -> None:
        """Refuse (PermissionDenied) what one statement does to files by path (see the module): writing at
        ``writes`` (checked first), reading at ``reads``; ``roots``: more governed directories (a Spark
        catalog's managed warehouse) whose files only the catalog reads. One transaction: one policy snapshot,
        the caller's principals once, the project's tables once. Nothing when not governed. ``read_only`` (a
        service's read token): every governed write is refused (a declared location's files, a table's data)."""
        caller = self.caller()
        reads, writes = list(reads or ()), list(writes or ())
        if not (reads or writes) or not caller.authorization:
            return

        def fn(tr: Transaction) -> None:
            p = policies.load(tr, self.layout, self.project)
            user = caller.user
            holders = of_policy(p, user)
            tables = indexed_tables(tr, self, properties=bool(reads))
            for path in writes:
                _check_one_write(p, holders, user, normalized(path), tables, read_only)
            for path in reads:
                self._check_one_read(tr, p, holders, user, normalized(path), tables, roots or [])

        with requiring(Requirement(ANYONE, PROJECT)):
            self.run(fn)

    def check_path_read(self, paths: list[str], roots: list[str] | None = None) -> None:
        """Refuse (PermissionDenied) reading files at ``paths`` by path: :meth:`check_paths` of reads."""
        self.check_paths(reads=paths, roots=roots)

    def _check_one_read(self, tr: Transaction, p: policies.Policy, holders: frozenset[str], user: str, path: str,
                        tables: list[PlacedTable], roots: list[str]) -> None:
        doing = f"read files at {path} by path"
        held = locs.holding(p, path)
        if held is not None and allowed(p, holders, READ_FILES, held.securable()):
            return
        owners = [t for t in tables if overlaps(path, t.location)]
        for t in owners:
            target = Securable("table", str(t.name), t.ids)
            if not allowed(p, holders, SELECT, target):
                raise _refused(user, f"SELECT or {READ_FILES}", doing, f"it holds data of table {t.name}, and you "
                               f"hold neither SELECT on it nor READ FILES on its location", str(t.name), "table")
            props = t.properties
            if props is not None and (props.row_filter.expression or len(props.column_masks)) and \
                    not _exempt(p, holders, props):
                raise _refused(user, f"SELECT or {READ_FILES}", doing, f"table {t.name} has a row filter or a column "
                               f"mask for you, which a path read would bypass (read the table instead)",
                               str(t.name), "table")
        if owners:
            return
        if held is not None:
            raise _refused(user, READ_FILES, doing, f"it lies in external location {held.name}, and you do not hold "
                           f"READ FILES on location {held.name}", held.name)
        inner = locs.within(p, path)
        if inner:
            raise _refused(user, READ_FILES, doing, f"it holds external location {inner[0].name}, and you do not hold "
                           f"READ FILES on location {inner[0].name}", inner[0].name)
        for root in roots:
            if root and overlaps(path, root):
                raise _refused(user, SELECT, doing, "it lies in the catalog's managed storage, which only the "
                               "catalog reads", path, "project")


    def _check_registered(self, tr: Transaction, table: Any, roots: list[str], paths: Iterable[str],
                          what: str = "data file") -> None:
        """Refuse (PermissionDenied, in ``tr``) registering ``paths`` (data files, or what a write lets go) in
        table ``table`` when one lies outside ``roots`` (the table's location, then its partition's): purging
        the table deletes them, so a file elsewhere needs what deleting it needs, WRITE FILES on the declared
        external location holding it, and what reading it by path needs (the table serves its rows). A path in
        no declared location is refused: nobody can be granted it. A string prefix check per path; the policy
        is read only when one lies outside. Nothing when the caller is not governed."""
        caller = self.caller()
        if not caller.authorization:
            return
        far = outside(paths, roots)
        if not far:
            return
        p = policies.load(tr, self.layout, self.project)
        user = caller.user
        holders = of_policy(p, user)
        tables: list[PlacedTable] | None = None
        where = " or ".join(r for r in roots if r) or "(none)"
        for path in far:
            doing = f"register {what} {path} in table {table}"
            if dotted(normalized(path)):
                raise InvalidArgument(f"cannot {doing}: a path with a '.' or '..' segment is not a data file's "
                                      f"path (give it without them)")
            held = locs.holding(p, path)
            if held is None or not allowed(p, holders, WRITE_FILES, held.securable()):
                why = "it lies in no declared external location" if held is None else \
                    f"you do not hold WRITE FILES on external location {held.name} holding it"
                raise _refused(user, WRITE_FILES, doing, f"it lies outside the table's location {where}, and {why} "
                               f"(purging the table would delete it)", str(table), "table")
            if tables is None:
                tables = indexed_tables(tr, self, properties=True)
            self._check_one_read(tr, p, holders, user, normalized(path), tables, [])

    def check_path_write(self, paths: list[str]) -> None:
        """Refuse (PermissionDenied) writing files at ``paths`` by path: :meth:`check_paths` of writes."""
        self.check_paths(writes=paths)


def _check_one_write(p: policies.Policy, holders: frozenset[str], user: str, path: str,
                     tables: list[PlacedTable], read_only: bool = False) -> None:
    doing = f"write files at {path} by path"
    held = locs.holding(p, path)
    if read_only:
        governed = held or next(iter(locs.within(p, path)), None)
        if governed is not None:
            raise _refused(user, WRITE_FILES, doing, f"it is governed by external location {governed.name}, and a "
                           f"read token may only read", governed.name)
        owner = next((t for t in tables if overlaps(path, t.location)), None)
        if owner is not None:
            raise _refused(user, WRITE_FILES, doing, f"it holds data of table {owner.name}, and a read token may only "
                           f"read", str(owner.name), "table")
    if held is not None and not allowed(p, holders, WRITE_FILES, held.securable()):
        raise _refused(user, WRITE_FILES, doing, f"it lies in external location {held.name}, and you do not hold "
                       f"WRITE FILES on location {held.name}", held.name)
    for inner in locs.within(p, path):
        if not allowed(p, holders, WRITE_FILES, inner.securable()):
            raise _refused(user, WRITE_FILES, doing, f"it holds external location {inner.name}, and you do not hold "
                           f"WRITE FILES on location {inner.name}", inner.name)
    if held is not None:
        return  # WRITE FILES on the location holding the path: its tables' files are the location's
    for t in tables:
        if overlaps(path, t.location) and not allowed(p, holders, OWN, Securable("table", str(t.name), t.ids)):
            raise _refused(user, WRITE_FILES, doing, f"it holds data of table {t.name} (write through the table, "
                           f"or hold WRITE FILES on a declared location holding it)", str(t.name), "table")


def _exempt(p: policies.Policy, holders: frozenset[str], props: Any) -> bool:
    """Whether ``holders`` are exempt from every policy of the table (its filter and each mask)."""
    exempts = []
    if props.row_filter.expression:
        exempts.append(props.row_filter.exempt)
    exempts.extend(m.exempt for m in props.column_masks)
    return all(e and e in holders for e in exempts)


__all__ = ["LocationOps", "PlacedTable", "indexed_tables", "placed_tables"]
