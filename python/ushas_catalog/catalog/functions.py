"""Persistent functions of a database (``CREATE FUNCTION``): create or replace, get, list, drop,
undrop, history. Each is one transaction.

A function lives under its database (``.../Database/<id>/Function``): its name in
``FunctionObjectName`` (functions have their own name space, as in Spark), its head record
(:class:`~ushas_catalog.records.FunctionRecord`) versioned like a view's (``FunctionHistory``,
``FunctionCommit``). Dropping keeps the records and moves the name to ``DroppedFunctionObjectName``,
so ``undrop_function`` brings the function back; dropping the database removes its functions with it.
Functions are not in the search index or the change feed (their commit is recorded directly, not
through the commit hook, whose subscribers know catalogs, databases, tables and views).
"""
from __future__ import annotations

import uuid
from itertools import islice
from typing import Iterator

from .. import records as rec
from ..errors import FunctionAlreadyExists, InvalidArgument, NoSuchCatalog, NoSuchFunction, NoSuchNamespace
from ..governance.privileges import MANAGE
from ..keyspace.layout import (DROPPED_FUNCTION_OBJECT_NAME, FUNCTION, FUNCTION_COMMIT, FUNCTION_ID,
                               FUNCTION_OBJECT_NAME, FUNCTION_RECORD)
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..model.functions import RESOURCE_TYPES, FunctionDefinition, FunctionInfo
from ..model.names import DatabaseName, NameLike, TableName, new_table_name
from ..model.objects import HistoryItem, detail_from_json, micros_to_datetime
from ..records.store import RecordStore
from .base import MetastoreBase
from .commits import Mutation, record_commit
from .values import check_str, copy_record, now_micros


def _record(d: FunctionDefinition, owner: str) -> rec.FunctionRecord:
    if d.class_name is not None:
        if not isinstance(d.class_name, str) or not d.class_name.strip():
            raise InvalidArgument("a function needs its class name (AS 'class') or a SQL body")
        if d.body:
            raise InvalidArgument("a function has a class name or a SQL body, not both")
    elif not d.body.strip() or not d.return_type.strip():
        raise InvalidArgument("a SQL function needs its RETURNS type and its body")
    for kind, uri in d.resources:
        if kind.lower() not in RESOURCE_TYPES:
            raise InvalidArgument(f"resource type {kind!r}: expected one of {', '.join(RESOURCE_TYPES)}")
        if not uri:
            raise InvalidArgument(f"a {kind} resource needs its URI")
    r = rec.FunctionRecord(kind=rec.FunctionRecord.CLASS if d.class_name else rec.FunctionRecord.SQL,
                           class_name=d.class_name or "", parameters=d.parameters, return_type=d.return_type,
                           body=d.body, table_function=d.table_function, language=d.language if not d.class_name
                           else "", owner=owner,
                           resources=[rec.FunctionResource(type=k.lower(), uri=u) for k, u in d.resources])
    if d.deterministic is not None:
        r.deterministic = d.deterministic
    if d.comment is not None:
        r.comment = check_str(d.comment, "comment") or ""
    return r


def function_info(fn: TableName, fid: uuid.UUID, r: rec.FunctionRecord) -> FunctionInfo:
    return FunctionInfo(fn.catalog, fn.database, fn.name, str(fid), r.version,
                        rec.FunctionRecord.Kind.Name(r.kind), r.class_name or None,
                        [(x.type, x.uri) for x in r.resources], r.parameters, r.return_type, r.body, r.table_function,
                        r.deterministic if r.HasField("deterministic") else None,
                        r.comment if r.HasField("comment") else None, r.language, r.owner or None,
                        micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros),
                        dict(r.properties))


class FunctionOps(MetastoreBase):
    """Persistent functions (their own name space in each database)."""

    def _functions(self, tr: Transaction, fn: TableName) -> KeySpacePath:
        return self.resolver.database(tr, fn.database_name, load=False).path.add(FUNCTION)

    def _lookup(self, tr: Transaction, fn: TableName) -> tuple[uuid.UUID, KeySpacePath, rec.FunctionRecord]:
        base = self._functions(tr, fn)
        entry = RecordStore.of(base, FUNCTION_OBJECT_NAME).load(tr, (fn.name.lower(),))
        if entry is None:
            raise NoSuchFunction(f"function {fn} does not exist", function=str(fn))
        fid = uuid.UUID(bytes=entry.id)
        path = base.add(FUNCTION_ID, fid)
        record = RecordStore.at(path.add(FUNCTION_RECORD)).load(tr, ())
        assert record is not None, f"function {fn}: name without record"
        return fid, path, record

    def _commit_function(self, tr: Transaction, fn: TableName, path: KeySpacePath, operation: str,
                         new: rec.FunctionRecord, previous: rec.FunctionRecord | None, **detail: object) -> None:
        record_commit(tr, Mutation("function", str(fn), path, operation, (previous.version if previous else 0) + 1,
                                   new, previous_head=previous, detail=dict(detail)), self.user)

    def create_function(self, name: NameLike, definition: FunctionDefinition, *, replace: bool = False,
                        if_not_exists: bool = False, owner: str | None = None) -> FunctionInfo:
        """CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS]: a new function (version 1) or, with ``replace``,
        the next version of the existing one. The name is case-insensitive (stored lower case, as Spark's)."""
        tn = new_table_name(name, "function")
        fn = TableName(tn.catalog, tn.database, tn.name.lower())
        if replace and if_not_exists:
            raise InvalidArgument("CREATE FUNCTION: OR REPLACE and IF NOT EXISTS together")
        record = _record(definition, check_str(owner, "owner") or self.user)

        def run(tr: Transaction) -> FunctionInfo:
            base = self._functions(tr, fn)
            names = RecordStore.of(base, FUNCTION_OBJECT_NAME)
            entry = names.load(tr, (fn.name,))
            now = now_micros()
            new = copy_record(record)
            if entry is not None:
                fid, path, old = self._lookup(tr, fn)
                if if_not_exists:
                    return function_info(fn, fid, old)
                if not replace:
                    raise FunctionAlreadyExists(f"function {fn} already exists", function=str(fn))
                self.authorize(tr, MANAGE, "function", fn)  # type: ignore[attr-defined]  # replacing it alters it
                new.created_at_micros = old.created_at_micros
                self._commit_function(tr, fn, path, "REPLACE FUNCTION", new, old)
                return function_info(fn, fid, new)
            fid = uuid.uuid4()
            path = base.add(FUNCTION_ID, fid)
            names.save(tr, (fn.name,), rec.ObjectName(id=fid.bytes, kind=rec.ObjectKind.FUNCTION,
                                                      created_at_micros=now), new=True)
            new.created_at_micros = now
            self._commit_function(tr, fn, path, "CREATE FUNCTION", new, None, kind=definition.kind)
            return function_info(fn, fid, new)

        return self.run(run)

    def get_function(self, name: NameLike) -> FunctionInfo:
        fn = _name(name)
        return self.run(lambda tr: function_info(fn, *self._lookup(tr, fn)[::2]))

    def function_exists(self, name: NameLike) -> bool:
        fn = _name(name)

        def run(tr: Transaction) -> bool:
            try:
                self._lookup(tr, fn)
            except (NoSuchFunction, NoSuchNamespace, NoSuchCatalog):
                return False
            return True

        return self.run(run)

    def list_functions(self, database: NameLike, *, dropped: bool = False) -> list[FunctionInfo]:
        """The database's functions in name order (``dropped``: the dropped ones, until purge)."""
        dn = DatabaseName.parse(database)

        def run(tr: Transaction) -> list[FunctionInfo]:
            base = self.resolver.database(tr, dn, load=False).path.add(FUNCTION)
            out = []
            for name, fid in _entries(tr, base, dropped):
                record = RecordStore.at(base.add(FUNCTION_ID, fid).add(FUNCTION_RECORD)).load(tr, ())
                if record is not None:
                    out.append(function_info(TableName(dn.catalog, dn.database, name), fid, record))
            return out

        return self.run(run)

    def drop_function(self, name: NameLike) -> None:
        """DROP FUNCTION: the name goes to the dropped names, the records stay (``undrop_function``)."""
        fn = _name(name)

        def run(tr: Transaction) -> None:
            fid, path, old = self._lookup(tr, fn)
            base = self._functions(tr, fn)
            RecordStore.of(base, FUNCTION_OBJECT_NAME).delete(tr, (fn.name,))
            now = now_micros()
            RecordStore.of(base, DROPPED_FUNCTION_OBJECT_NAME).save(tr, (fn.name, fid), rec.DroppedObjectName(
                id=fid.bytes, kind=rec.ObjectKind.FUNCTION, dropped_at_micros=now, dropped_by=self.user,
                created_at_micros=old.created_at_micros))
            self._commit_function(tr, fn, path, "DROP FUNCTION", copy_record(old), old)

        self.run(run)

    def undrop_function(self, name: NameLike, function_id: str | None = None) -> FunctionInfo:
        """Bring a dropped function back under its name (the latest dropped one, or ``function_id``)."""
        fn = _name(name)

        def run(tr: Transaction) -> FunctionInfo:
            base = self._functions(tr, fn)
            names = RecordStore.of(base, FUNCTION_OBJECT_NAME)
            if names.load(tr, (fn.name,)) is not None:
                raise FunctionAlreadyExists(f"function {fn} exists: drop it before undropping another",
                                            function=str(fn))
            dropped = RecordStore.of(base, DROPPED_FUNCTION_OBJECT_NAME)
            found = [r for r in dropped.scan(tr, *dropped.prefix_range((fn.name,)))
                     if function_id is None or str(r.key[1]) == function_id]
            if not found:
                raise NoSuchFunction(f"no dropped function {fn}" + (f" with id {function_id}" if function_id else ""),
                                     function=str(fn))
            last = max(found, key=lambda r: r.record.dropped_at_micros)
            fid = last.key[1]
            dropped.delete(tr, (fn.name, fid))
            names.save(tr, (fn.name,), rec.ObjectName(id=fid.bytes, kind=rec.ObjectKind.FUNCTION,
                                                      created_at_micros=last.record.created_at_micros), new=True)
            path = base.add(FUNCTION_ID, fid)
            old = RecordStore.at(path.add(FUNCTION_RECORD)).load(tr, ())
            assert old is not None
            new = copy_record(old)
            self._commit_function(tr, fn, path, "UNDROP FUNCTION", new, old)
            return function_info(fn, fid, new)

        return self.run(run)

    def purge_functions(self, database: NameLike, older_than_micros: int | None = None) -> list[str]:
        """Remove the dropped functions of a database for good (dropped before ``older_than_micros``, or all):
        their names and every record. Answers the names purged."""
        dn = DatabaseName.parse(database)

        def run(tr: Transaction) -> list[str]:
            base = self.resolver.database(tr, dn, load=False).path.add(FUNCTION)
            dropped = RecordStore.of(base, DROPPED_FUNCTION_OBJECT_NAME)
            out = []
            for r in list(dropped.scan(tr)):
                if older_than_micros is not None and r.record.dropped_at_micros >= older_than_micros:
                    continue
                dropped.delete(tr, (r.key[0], r.key[1]))
                tr.clear_range(*base.add(FUNCTION_ID, r.key[1]).range())
                out.append(r.key[0])
            return out

        return self.run(run)

    def function_history(self, name: NameLike, limit: int | None = None) -> list[HistoryItem]:
        """The commits of a function, newest first."""
        fn = _name(name)

        def run(tr: Transaction) -> list[HistoryItem]:
            _, path, _ = self._lookup(tr, fn)
            return [HistoryItem(c.version, c.operation, c.user, micros_to_datetime(c.committed_at_micros),
                                detail_from_json(c.detail_json))
                    for c in (r.record for r in islice(RecordStore.of(path, FUNCTION_COMMIT).scan(tr, reverse=True),
                                                       limit))]

        return self.run(run)


def _name(name: NameLike) -> TableName:
    tn = TableName.parse(name)
    return TableName(tn.catalog, tn.database, tn.name.lower())


def _entries(tr: Transaction, base: KeySpacePath, dropped: bool) -> Iterator[tuple[str, uuid.UUID]]:
    if dropped:
        for r in RecordStore.of(base, DROPPED_FUNCTION_OBJECT_NAME).scan(tr):
            yield r.key[0], r.key[1]
    else:
        for r in RecordStore.of(base, FUNCTION_OBJECT_NAME).scan(tr):
            yield r.key[0], uuid.UUID(bytes=r.record.id)
