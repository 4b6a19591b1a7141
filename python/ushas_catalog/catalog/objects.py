"""Versioned objects of a database (``Metastore.objects``): volumes, models, files (docs/objects.md).
Each call is one transaction.

An object lives under its database (``.../Database/<id>/Object``): its name in ``ObjectObjectName``
(objects have their own name subspace, but a name taken by a table or view is refused, and the other
way round), its head record (:class:`~ushas_catalog.records.ObjectRecord`: kind, location,
properties, current data version) versioned like a function's (``ObjectHistory``, ``ObjectCommit``),
its data versions in ``ObjectVersion`` (version -> location, properties, who, when) and its
user-defined subspaces (``ObjectType``, ``ObjectData``: :mod:`.object_types`).

``add_version`` adds data version ``n + 1`` and makes it current; ``rollback(to)`` adds a new version
copying version ``to`` (history only grows). ``version(name, as_of=...)`` reads the version current
at a time. Drop moves the name to ``DroppedObjectObjectName`` (undrop until purge); purge removes
the object's keys, never the files at its locations (they are the user's). Dropping the database
removes its objects with it.
"""
from __future__ import annotations

import datetime as dt
import re
import uuid
from itertools import islice
from typing import Any, Iterator, Mapping, Sequence

import fdb.tuple as fdbtuple

from .. import records as rec
from ..errors import InvalidArgument, NoSuchObject, NoSuchVersion, ObjectAlreadyExists, TableAlreadyExists
from ..keyspace.layout import (DROPPED_OBJECT_OBJECT_NAME, OBJECT, OBJECT_COMMIT, OBJECT_HISTORY, OBJECT_ID,
                               OBJECT_DATA, OBJECT_OBJECT_NAME, OBJECT_RECORD, OBJECT_TYPE, OBJECT_VERSION)
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..model.names import DatabaseName, NameLike, TableName, new_table_name
from ..model.objects import HistoryItem, detail_from_json, micros_to_datetime
from ..model.versioned_objects import KNOWN_KINDS, ObjectInfo, ObjectVersionInfo
from ..records.object_pb2 import ObjectRecord, ObjectType, ObjectVersion
from ..records.store import RecordStore
from .authorization import OBJECT_RULES, guard_methods
from . import object_types as otypes
from .commits import Mutation, record_commit
from .object_types import SubspaceType
from .values import check_props, check_str, copy_record, exists_message, now_micros

KIND = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")


def check_kind(kind: Any) -> str:
    """``volume``, ``model``, ``file`` or another kind by name (a lower-case identifier)."""
    if not isinstance(kind, str) or not KIND.match(kind.strip().lower()):
        raise InvalidArgument(f"object kind {kind!r}: expected {', '.join(KNOWN_KINDS)} or another lower-case "
                              f"identifier (letters, digits, _)")
    return kind.strip().lower()


def check_location(location: Any) -> str:
    if not isinstance(location, str) or not location.strip():
        raise InvalidArgument("an object needs its location (a URI or path), not " + repr(location))
    check_str(location, "location")
    return location.strip()


def object_info(name: TableName, oid: uuid.UUID, r: ObjectRecord, types: list[str] | None = None) -> ObjectInfo:
    return ObjectInfo(name.catalog, name.database, name.name, str(oid), r.kind, r.location, dict(r.properties),
                      r.comment if r.HasField("comment") else None, r.owner or None, r.current_version, r.version,
                      micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros),
                      list(types or []))


def version_info(name: TableName, v: ObjectVersion, current: int) -> ObjectVersionInfo:
    return ObjectVersionInfo(str(name), v.version, v.location, dict(v.properties),
                             v.comment if v.HasField("comment") else None, v.created_by,
                             micros_to_datetime(v.created_at_micros), v.rolled_back_from or None, v.version == current)


def as_micros(when: dt.datetime | int | float | str) -> int:
    """A point in time: a datetime (naive = UTC), an ISO-8601 string or epoch microseconds."""
    if isinstance(when, bool):
        raise InvalidArgument(f"as_of: a time, not {when!r}")
    if isinstance(when, (int, float)):
        return int(when)
    if isinstance(when, str):
        try:
            when = dt.datetime.fromisoformat(when)
        except ValueError:
            raise InvalidArgument(f"as_of: {when!r} is not an ISO-8601 time") from None
    if not isinstance(when, dt.datetime):
        raise InvalidArgument(f"as_of: a datetime, ISO-8601 string or epoch microseconds, not {type(when).__name__}")
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1_000_000)


def object_name(name: NameLike) -> TableName:
    return TableName.parse(name)


class ResolvedObjectEntry:
    """An object found by name in a transaction: its id, id path and head record."""

    def __init__(self, name: TableName, database: KeySpacePath, oid: uuid.UUID, record: ObjectRecord) -> None:
        self.name, self.database, self.id, self.record = name, database, oid, record
        self.path = database.add(OBJECT).add(OBJECT_ID, oid)


class Objects:
    """The versioned objects of ``ms``'s project (``Metastore.objects``)."""

    def __init__(self, ms: Any) -> None:
        self.ms = ms

    # ---- lookups -------------------------------------------------------------------------
    def resolve(self, tr: Transaction, name: TableName) -> ResolvedObjectEntry:
        """The object ``name`` (``NoSuchObject`` if there is none), in ``tr``."""
        db = self.ms.resolver.database(tr, name.database_name, load=False)
        entry = self.ms.resolver.object_entry(tr, db.path, name.name)
        if entry is None:
            raise NoSuchObject(f"object {name} does not exist", object=str(name))
        oid = uuid.UUID(bytes=entry.id)
        found = ResolvedObjectEntry(name, db.path, oid, ObjectRecord())
        record = RecordStore.of(found.path, OBJECT_RECORD).load(tr, ())
        assert record is not None, f"object {name}: name without record"
        found.record = record
        return found

    def _info(self, tr: Transaction, o: ResolvedObjectEntry, record: ObjectRecord | None = None) -> ObjectInfo:
        types = [r.key[0] for r in RecordStore.of(o.path, OBJECT_TYPE).scan(tr)]
        return object_info(o.name, o.id, record or o.record, types)

    def _commit(self, tr: Transaction, o: ResolvedObjectEntry, operation: str, new: ObjectRecord,
                previous: ObjectRecord | None, **detail: object) -> None:
        m = Mutation("object", str(o.name), o.path, operation, (previous.version if previous else 0) + 1, new,
                     previous_head=previous, detail=dict(detail))
        record_commit(tr, m, self.ms.user)
        self.ms.hooks.committed(tr, m)  # metadata and search index, change feed

    # ---- create / alter / read -------------------------------------------------------------
    def create(self, name: NameLike, kind: str, location: str, *, properties: Mapping[str, str] | None = None,
               comment: str | None = None, owner: str | None = None, if_not_exists: bool = False) -> ObjectInfo:
        """A new object (metadata version 1, no data version yet: ``add_version``)."""
        on = new_table_name(name, "object")
        record = ObjectRecord(kind=check_kind(kind), location=check_location(location),
                              properties=check_props(properties, "properties"),
                              owner=check_str(owner, "owner") or self.ms.user)
        if comment is not None:
            record.comment = check_str(comment, "comment") or ""

        def run(tr: Transaction) -> ObjectInfo:
            db, relation = self.ms.resolver.relation(tr, on)
            if relation is not None:
                raise TableAlreadyExists(exists_message(on, relation) + ": an object needs a name of its own",
                                         table=str(on))
            names = RecordStore.of(db.path.add(OBJECT), OBJECT_OBJECT_NAME)
            if names.load(tr, (on.name,)) is not None:
                if if_not_exists:
                    return self._info(tr, self.resolve(tr, on))
                raise ObjectAlreadyExists(f"object {on} already exists", object=str(on))
            now = now_micros()
            oid = uuid.uuid4()
            names.save(tr, (on.name,), rec.ObjectName(id=oid.bytes, kind=rec.ObjectKind.OBJECT,
                                                      created_at_micros=now), new=True)
            new = copy_record(record)
            new.created_at_micros = now
            o = ResolvedObjectEntry(on, db.path, oid, new)
            self._commit(tr, o, "CREATE OBJECT", new, None, kind=new.kind, location=new.location)
            return self._info(tr, o, new)

        return self.ms.run(run)

    def get(self, name: NameLike, *, as_of: int | dt.datetime | str | None = None) -> ObjectInfo:
        """The object now, or as it was at metadata version ``as_of`` (an int), or at a time (a datetime or an
        ISO-8601 string: the last commit at or before it)."""
        on = object_name(name)
        at = None if as_of is None or (isinstance(as_of, int) and not isinstance(as_of, bool)) else as_micros(as_of)

        def run(tr: Transaction) -> ObjectInfo:
            o = self.resolve(tr, on)
            if at is not None:
                return self._info(tr, o, self._record_at(tr, o, self._version_at(tr, o, at)))
            assert as_of is None or isinstance(as_of, int)
            return self._info(tr, o, self._record_at(tr, o, as_of))

        return self.ms.run(run)

    def _version_at(self, tr: Transaction, o: ResolvedObjectEntry, at: int) -> int:
        for r in RecordStore.of(o.path, OBJECT_COMMIT).scan(tr, reverse=True):
            if r.record.committed_at_micros <= at:
                return int(r.key[0])
        raise NoSuchVersion(f"object {o.name} did not exist at {micros_to_datetime(at).isoformat()}",
                            object=str(o.name))

    def _record_at(self, tr: Transaction, o: ResolvedObjectEntry, as_of: int | None) -> ObjectRecord:
        on = o.name
        if as_of is None or as_of == o.record.version:
            return o.record
        if as_of < 1 or as_of > o.record.version:
            raise NoSuchVersion(f"object {on} has versions 1 to {o.record.version}, not {as_of}",
                                object=str(on), version=as_of)
        # the head as it was at as_of: the first history entry after as_of holds it
        for r in RecordStore.of(o.path, OBJECT_HISTORY).scan(tr):
            if r.key[0] > as_of:
                return r.record
        return o.record  # pragma: no cover - a version below the head always has an entry

    def exists(self, name: NameLike) -> bool:
        on = object_name(name)

        def run(tr: Transaction) -> bool:
            try:
                db = self.ms.resolver.database(tr, on.database_name, load=False)
            except Exception:  # noqa: BLE001 - a missing catalog or database: no such object
                return False
            return self.ms.resolver.object_entry(tr, db.path, on.name) is not None

        return bool(self.ms.run(run))

    def list(self, database: NameLike, *, dropped: bool = False, kind: str | None = None) -> list[ObjectInfo]:
        """The database's objects in name order (``dropped``: the dropped ones, until purge)."""
        dn = DatabaseName.parse(database)
        want = None if kind is None else check_kind(kind)

        def run(tr: Transaction) -> list[ObjectInfo]:
            db = self.ms.resolver.database(tr, dn, load=False)
            out = []
            for name, oid in _entries(tr, db.path.add(OBJECT), dropped):
                o = ResolvedObjectEntry(TableName(dn.catalog, dn.database, name), db.path, oid, ObjectRecord())
                record = RecordStore.of(o.path, OBJECT_RECORD).load(tr, ())
                if record is not None and (want is None or record.kind == want):
                    o.record = record
                    out.append(self._info(tr, o))
            return out

        return self.ms.run(run)

    def alter(self, name: NameLike, *, location: str | None = None, properties: Mapping[str, str] | None = None,
              unset_properties: tuple[str, ...] | list[str] = (), comment: str | None = None,
              owner: str | None = None) -> ObjectInfo:
        """Change the object's location, properties (set / unset), comment or owner: the next metadata version."""
        on = object_name(name)
        new_location = None if location is None else check_location(location)
        props = check_props(properties, "properties")
        if comment is not None:
            check_str(comment, "comment")
        if owner is not None:
            check_str(owner, "owner")

        def run(tr: Transaction) -> ObjectInfo:
            o = self.resolve(tr, on)
            old = o.record
            new = copy_record(old)
            if new_location is not None:
                new.location = new_location
            new.properties.update(props)
            for key in unset_properties:
                if key not in new.properties:
                    raise InvalidArgument(f"object {on} has no property {key!r} to unset")
                del new.properties[key]
            if comment == "":
                new.ClearField("comment")
            elif comment is not None:
                new.comment = comment
            if owner is not None:
                new.owner = owner
            self._commit(tr, o, "ALTER OBJECT", new, old, location=new_location, set=sorted(props),
                         unset=sorted(unset_properties))
            return self._info(tr, o, new)

        return self.ms.run(run)

    # ---- data versions ---------------------------------------------------------------------
    def add_version(self, name: NameLike, location: str | None = None, *,
                    properties: Mapping[str, str] | None = None, comment: str | None = None) -> ObjectVersionInfo:
        """Data version ``current + 1`` at ``location`` (default: the object's location), made current."""
        on = object_name(name)
        where = None if location is None else check_location(location)
        props = check_props(properties, "properties")
        if comment is not None:
            check_str(comment, "comment")

        def run(tr: Transaction) -> ObjectVersionInfo:
            o = self.resolve(tr, on)
            v = ObjectVersion(location=where or o.record.location, properties=props)
            if comment is not None:
                v.comment = comment
            return self._new_version(tr, o, v, "ADD VERSION")

        return self.ms.run(run)

    def _new_version(self, tr: Transaction, o: ResolvedObjectEntry, v: ObjectVersion,
                     operation: str) -> ObjectVersionInfo:
        versions = RecordStore.of(o.path, OBJECT_VERSION)
        last = next(iter(versions.scan(tr, reverse=True)), None)
        v.version = (last.key[0] if last is not None else 0) + 1
        v.created_by = self.ms.user
        v.created_at_micros = now_micros()
        versions.save(tr, (v.version,), v, new=True)
        new = copy_record(o.record)
        new.current_version = v.version
        self._commit(tr, o, operation, new, o.record, data_version=v.version, location=v.location,
                     rolled_back_from=v.rolled_back_from or None)
        return version_info(o.name, v, v.version)

    def rollback(self, name: NameLike, version: int) -> ObjectVersionInfo:
        """A new data version with the location and properties of ``version``: history only grows."""
        on = object_name(name)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidArgument(f"rollback: a version number >= 1, not {version!r}")

        def run(tr: Transaction) -> ObjectVersionInfo:
            o = self.resolve(tr, on)
            old = RecordStore.of(o.path, OBJECT_VERSION).load(tr, (version,))
            if old is None:
                raise NoSuchVersion(f"object {on} has no version {version}", object=str(on), version=version)
            v = ObjectVersion(location=old.location, properties=dict(old.properties), rolled_back_from=version)
            if old.HasField("comment"):
                v.comment = old.comment
            return self._new_version(tr, o, v, "ROLLBACK")

        return self.ms.run(run)

    def version(self, name: NameLike, version: int | None = None, *,
                as_of: dt.datetime | int | float | str | None = None) -> ObjectVersionInfo:
        """One data version: ``version``, the one current at time ``as_of``, or the current one."""
        on = object_name(name)
        if version is not None and as_of is not None:
            raise InvalidArgument("give a version or a time (as_of), not both")
        at = None if as_of is None else as_micros(as_of)

        def run(tr: Transaction) -> ObjectVersionInfo:
            o = self.resolve(tr, on)
            versions = RecordStore.of(o.path, OBJECT_VERSION)
            if at is not None:
                for r in versions.scan(tr, reverse=True):
                    if r.record.created_at_micros <= at:
                        return version_info(on, r.record, o.record.current_version)
                raise NoSuchVersion(f"object {on} had no version at {micros_to_datetime(at).isoformat()}",
                                    object=str(on))
            want = o.record.current_version if version is None else version
            found = versions.load(tr, (want,)) if want else None
            if found is None:
                raise NoSuchVersion(f"object {on} has no version {want}" if want else
                                    f"object {on} has no version yet (add_version)", object=str(on), version=want)
            return version_info(on, found, o.record.current_version)

        return self.ms.run(run)

    def versions(self, name: NameLike, limit: int | None = None) -> list[ObjectVersionInfo]:
        """The data versions of an object, newest first."""
        on = object_name(name)

        def run(tr: Transaction) -> list[ObjectVersionInfo]:
            o = self.resolve(tr, on)
            return [version_info(on, r.record, o.record.current_version)
                    for r in islice(RecordStore.of(o.path, OBJECT_VERSION).scan(tr, reverse=True), limit)]

        return self.ms.run(run)

    def history(self, name: NameLike, limit: int | None = None) -> list[HistoryItem]:
        """The commits of an object (create, alter, versions, rollbacks, drop, undrop), newest first."""
        on = object_name(name)

        def run(tr: Transaction) -> list[HistoryItem]:
            o = self.resolve(tr, on)
            return [HistoryItem(c.version, c.operation, c.user, micros_to_datetime(c.committed_at_micros),
                                detail_from_json(c.detail_json))
                    for c in (r.record for r in islice(RecordStore.of(o.path, OBJECT_COMMIT).scan(tr, reverse=True),
                                                       limit))]

        return self.ms.run(run)

    # ---- drop / undrop / purge -------------------------------------------------------------
    def drop(self, name: NameLike) -> None:
        """The name goes to the dropped names, the records stay (``undrop``) until ``purge``."""
        on = object_name(name)

        def run(tr: Transaction) -> None:
            o = self.resolve(tr, on)
            base = o.database.add(OBJECT)
            RecordStore.of(base, OBJECT_OBJECT_NAME).delete(tr, (on.name,))
            RecordStore.of(base, DROPPED_OBJECT_OBJECT_NAME).save(tr, (on.name, o.id), rec.DroppedObjectName(
                id=o.id.bytes, kind=rec.ObjectKind.OBJECT, dropped_at_micros=now_micros(), dropped_by=self.ms.user,
                created_at_micros=o.record.created_at_micros))
            self._commit(tr, o, "DROP OBJECT", copy_record(o.record), o.record)

        self.ms.run(run)

    def undrop(self, name: NameLike, object_id: str | None = None) -> ObjectInfo:
        """Bring a dropped object back under its name (the latest dropped one, or ``object_id``)."""
        on = object_name(name)

        def run(tr: Transaction) -> ObjectInfo:
            db, relation = self.ms.resolver.relation(tr, on)
            if relation is not None:
                raise TableAlreadyExists(exists_message(on, relation) + ": drop or rename it before undropping "
                                         "the object", table=str(on))
            base = db.path.add(OBJECT)
            names = RecordStore.of(base, OBJECT_OBJECT_NAME)
            if names.load(tr, (on.name,)) is not None:
                raise ObjectAlreadyExists(f"object {on} exists: drop it before undropping another", object=str(on))
            dropped = RecordStore.of(base, DROPPED_OBJECT_OBJECT_NAME)
            found = [r for r in dropped.scan(tr, *dropped.prefix_range((on.name,)))
                     if object_id is None or str(r.key[1]) == object_id]
            if not found:
                raise NoSuchObject(f"no dropped object {on}" + (f" with id {object_id}" if object_id else ""),
                                   object=str(on))
            last = max(found, key=lambda r: r.record.dropped_at_micros)
            oid = last.key[1]
            dropped.delete(tr, (on.name, oid))
            names.save(tr, (on.name,), rec.ObjectName(id=oid.bytes, kind=rec.ObjectKind.OBJECT,
                                                      created_at_micros=last.record.created_at_micros), new=True)
            o = ResolvedObjectEntry(on, db.path, oid, ObjectRecord())
            old = RecordStore.of(o.path, OBJECT_RECORD).load(tr, ())
            assert old is not None
            o.record = old
            new = copy_record(old)
            self._commit(tr, o, "UNDROP OBJECT", new, old)
            return self._info(tr, o, new)

        return self.ms.run(run)

    def purge(self, database: NameLike, *, name: str | None = None,
              older_than_micros: int | None = None) -> list[str]:
        """Remove dropped objects of a database for good (all, those named ``name``, or those dropped before
        ``older_than_micros``): their names and every record, never the files at their locations. Answers
        the names purged."""
        dn = DatabaseName.parse(database)

        def run(tr: Transaction) -> list[str]:
            base = self.ms.resolver.database(tr, dn, load=False).path.add(OBJECT)
            dropped = RecordStore.of(base, DROPPED_OBJECT_OBJECT_NAME)
            out = []
            for r in list(dropped.scan(tr, *dropped.prefix_range(() if name is None else (name,)))):
                if older_than_micros is not None and r.record.dropped_at_micros >= older_than_micros:
                    continue
                path = base.add(OBJECT_ID, r.key[1])
                head = RecordStore.of(path, OBJECT_RECORD).load(tr, ())
                self.ms.hooks.purged(tr, path)  # its metadata and index entries go too
                dropped.delete(tr, (r.key[0], r.key[1]))
                tr.clear_range(*path.range())
                self.ms.hooks.removed(tr, kind="object", name=f"{dn}.{r.key[0]}", object_id=r.key[1],
                                      version=head.version if head is not None else 0, operation="PURGE OBJECT",
                                      change=rec.ChangeEvent.PURGED)
                out.append(r.key[0])
            return out

        return self.ms.run(run)

    # ---- user-defined subspaces (object_types) ----------------------------------------------
    def register_type(self, name: NameLike, subspace: str, descriptor: Any, *, message_type: str | None = None,
                      primary_key: Sequence[str] | str) -> SubspaceType:
        """Register subspace ``subspace`` of the object: records of ``message_type`` (default: the one message
        of the .proto) from ``descriptor`` (a ``.proto`` path, a serialized ``FileDescriptorSet``, a message
        class), keyed by the ``primary_key`` fields. A commit of the object."""
        on = object_name(name)
        sub = _subspace_name(subspace)
        t = otypes.new_type(otypes.descriptor_set(descriptor), message_type or otypes.message_name(descriptor),
                            primary_key)

        def run(tr: Transaction) -> SubspaceType:
            o = self.resolve(tr, on)
            store = RecordStore.of(o.path, OBJECT_TYPE)
            if store.load(tr, (sub,)) is not None:
                raise ObjectAlreadyExists(f"object {on} already has a subspace {sub!r} (drop_type first)",
                                          object=str(on), subspace=sub)
            new_t = copy_record(t)
            new_t.created_at_micros = now_micros()
            new_t.created_by = self.ms.user
            store.save(tr, (sub,), new_t, new=True)
            self._commit(tr, o, "REGISTER TYPE", copy_record(o.record), o.record, subspace=sub,
                         message_type=t.message_type, primary_key=list(t.primary_key))
            return otypes.describe(sub, new_t)

        return self.ms.run(run)

    def drop_type(self, name: NameLike, subspace: str) -> int:
        """Remove a user-defined subspace and all its records (answers how many there were)."""
        on = object_name(name)

        def run(tr: Transaction) -> int:
            o = self.resolve(tr, on)
            self._type(tr, o, subspace)
            data = o.path.add(OBJECT_DATA)
            begin, end = data.pack((subspace,)) + b"\x00", data.pack((subspace,)) + b"\xff"
            count = sum(1 for _ in tr.get_range(begin, end))
            tr.clear_range(begin, end)
            RecordStore.of(o.path, OBJECT_TYPE).delete(tr, (subspace,))
            self._commit(tr, o, "DROP TYPE", copy_record(o.record), o.record, subspace=subspace, records=count)
            return count

        return int(self.ms.run(run))

    def types(self, name: NameLike) -> list[SubspaceType]:
        """The object's user-defined subspaces."""
        on = object_name(name)
        return list(self.ms.run(lambda tr: [otypes.describe(r.key[0], r.record) for r in
                                            RecordStore.of(self.resolve(tr, on).path, OBJECT_TYPE).scan(tr)]))

    def _type(self, tr: Transaction, o: ResolvedObjectEntry, subspace: str) -> ObjectType:
        t = RecordStore.of(o.path, OBJECT_TYPE).load(tr, (subspace,))
        if t is None:
            raise NoSuchObject(f"object {o.name} has no subspace {subspace!r} (register_type first)",
                               object=str(o.name), subspace=subspace)
        return t

    def put(self, name: NameLike, subspace: str, record: Any) -> tuple[Any, ...]:
        """Store ``record`` (a message of the subspace's type or a dict of its fields) under its primary key,
        replacing the record of that key; answers the key. Type-checked: another type or an unknown field
        is refused."""
        on = object_name(name)

        def run(tr: Transaction) -> tuple[Any, ...]:
            o = self.resolve(tr, on)
            key, data = otypes.checked_record(self._type(tr, o, subspace), record)
            tr.set(o.path.add(OBJECT_DATA).pack((subspace, *key)), data)
            return key

        return tuple(self.ms.run(run))

    def read(self, name: NameLike, subspace: str, key: Any) -> dict[str, Any] | None:
        """The record of primary key ``key`` as a dict of its fields (None: none)."""
        on = object_name(name)

        def run(tr: Transaction) -> dict[str, Any] | None:
            o = self.resolve(tr, on)
            t = self._type(tr, o, subspace)
            data = tr.get(o.path.add(OBJECT_DATA).pack((subspace, *otypes.key_of(t, key))))
            return None if data is None else otypes.as_dict(t, data)

        return self.ms.run(run)  # type: ignore[no-any-return]

    def scan(self, name: NameLike, subspace: str, start: Any = None, end: Any = None, *,
             limit: int | None = None, reverse: bool = False) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        """(key, record) in primary key order from ``start`` (inclusive) to ``end`` (exclusive); each bound a
        key or a prefix of one (``None``: open)."""
        on = object_name(name)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgument(f"limit must be an integer >= 0, not {limit!r}")

        def run(tr: Transaction) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
            o = self.resolve(tr, on)
            t = self._type(tr, o, subspace)
            data = o.path.add(OBJECT_DATA)
            head = data.pack((subspace,))
            begin = head + b"\x00" if start is None else data.pack((subspace, *otypes.key_of(t, start, prefix=True)))
            stop = head + b"\xff" if end is None else data.pack((subspace, *otypes.key_of(t, end, prefix=True)))
            out = []
            for kv in tr.get_range(begin, stop, limit=limit or 0, reverse=reverse):
                key = fdbtuple.unpack(kv.key[len(head):])
                out.append((key, otypes.as_dict(t, kv.value)))
            return out

        return list(self.ms.run(run))

    def delete(self, name: NameLike, subspace: str, key: Any) -> bool:
        """Remove the record of primary key ``key``; False if there was none."""
        on = object_name(name)

        def run(tr: Transaction) -> bool:
            o = self.resolve(tr, on)
            k = o.path.add(OBJECT_DATA).pack((subspace, *otypes.key_of(self._type(tr, o, subspace), key)))
            if tr.get(k) is None:
                return False
            tr.clear(k)
            return True

        return bool(self.ms.run(run))


def _subspace_name(name: Any) -> str:
    if not isinstance(name, str) or not re.match(r"[A-Za-z_][A-Za-z0-9_.-]{0,127}\Z", name):
        raise InvalidArgument(f"subspace name {name!r}: letters, digits, _ . - (starting with a letter or _)")
    return name


def _entries(tr: Transaction, base: KeySpacePath, dropped: bool) -> Iterator[tuple[str, uuid.UUID]]:
    if dropped:
        for r in RecordStore.of(base, DROPPED_OBJECT_OBJECT_NAME).scan(tr):
            yield r.key[0], r.key[1]
    else:
        for r in RecordStore.of(base, OBJECT_OBJECT_NAME).scan(tr):
            yield r.key[0], uuid.UUID(bytes=r.record.id)


guard_methods(Objects, OBJECT_RULES)  # checked when authorization is on (on the object's database)
