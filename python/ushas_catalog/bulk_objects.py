"""Catalog and database drops and purges too big for one transaction (see :mod:`ushas_catalog.bulk`): the
drop itself is one transaction; taking the objects in it out of the search index is chunked work
(``UNINDEX``); purging removes the dropped name in one transaction and deletes the tables in chunks
(``PURGE``). Both kinds resume through :mod:`ushas_catalog.bulk_work`."""
from __future__ import annotations

import json
import time
import uuid
from typing import Any, Iterable

import fdb.tuple as fdbtuple

from . import records as rec
from .bulk_work import (BULK_AT, BULK_OBJECTS_AT, CHUNK_ITEMS, CHUNK_SECONDS, CHUNKERS, PURGE_TABLES_PER_CHUNK,
                        UNINDEX_PER_CHUNK, Work, after_ops, after_paths, new_work, published, table_path,
                        work_store)
from .keyspace.tree import KeySpacePath
from .kv import Transaction
from .metadata.sync import defer_children
from .records.store import RecordStore

#: the facade (:class:`ushas_catalog.metastore.Metastore`), which wires this module in as ``Metastore.big``:
#: not imported here, so the two do not import each other
Metastore = Any


def many_objects(ms: "Metastore", tr: Transaction, path: KeySpacePath) -> bool:
    """Whether the catalog / database at ``path`` holds more than :data:`BULK_OBJECTS_AT` objects
    (counting stops there)."""
    seen = 0
    for _ in _object_keys(ms, tr, path, limit=BULK_OBJECTS_AT + 1):
        seen += 1
        if seen > BULK_OBJECTS_AT:
            return True
    return False


def _object_keys(ms: "Metastore", tr: Transaction, path: KeySpacePath, *, dropped: bool = False,
                 limit: int = 0) -> Iterable[uuid.UUID]:
    """Ids of the databases of a catalog and tables / views of its databases (of a database: its
    tables and views), live ones (and dropped ones with ``dropped``)."""
    kind = path.directory.name
    count = 0
    if kind == "catalogId":
        dbs = path.add("Database")
        ids = [uuid.UUID(bytes=r.record.id) for r in ms.resolver.names(dbs, "Database").scan(tr)]
        if dropped:
            ids.extend(r.key[1] for r in ms.resolver.dropped(dbs, "Database").scan(tr))
        for did in ids:
            yield did
            count += 1
            for oid in _object_keys(ms, tr, dbs.add("databaseId", did), dropped=dropped):
                yield oid
                count += 1
                if limit and count >= limit:
                    return
    elif kind == "databaseId":
        tables = path.add("Table")
        for r in ms.resolver.names(tables, "Table").scan(tr, limit=limit):
            yield uuid.UUID(bytes=r.record.id)
        if dropped:
            for r in ms.resolver.dropped(tables, "Table").scan(tr):
                yield r.key[1]


def defer_unindex(ms: "Metastore", tr: Transaction, name: str, path: KeySpacePath, indexed: bool) -> None:
    """In a drop's (``indexed=False``) or undrop's transaction: the objects in the catalog /
    database at ``path`` leave (or re-enter) the search index in chunks, after the commit (the
    metadata sync of ``tr`` then handles the object itself only)."""
    defer_children(tr, path)
    store = work_store(ms.project_path)
    for r in list(store.scan(tr)):  # an unfinished (un)indexing of the same object is superseded
        if r.record.kind == "UNINDEX" and r.record.object_key == path.key():
            store.delete(tr, r.key)
    op = uuid.uuid4()
    work_store(ms.project_path).save(tr, (op,), published(new_work("UNINDEX", name, path.key(),
                                                                     detail={"indexed": indexed})), new=True)
    after_ops(ms).append(op)



def _chunk_ids(ms: "Metastore", tr: Transaction, path: KeySpacePath, after: bytes, limit: int,
               dropped: bool) -> list[tuple[bytes, uuid.UUID, KeySpacePath]]:
    """The next ``limit`` objects in the catalog / database at ``path`` after position ``after``,
    each with its position and id path. Positions are packed ``(database id, section, name[, id])``:
    section 0 is a catalog's database itself, 1 its live tables and views by name, 2 its dropped
    tables; so each chunk reads only the names after the cursor."""
    from .keyspace.layout import Layout

    out: list[tuple[bytes, uuid.UUID, KeySpacePath]] = []
    zero = uuid.UUID(int=0)
    dbs: list[tuple[uuid.UUID, KeySpacePath]]
    if path.directory.name == "catalogId":
        base = path.add("Database")
        dids = [uuid.UUID(bytes=r.record.id) for r in ms.resolver.names(base, "Database").scan(tr)]
        if dropped:
            dids.extend(r.key[1] for r in ms.resolver.dropped(base, "Database").scan(tr))
        dbs = [(d, base.add("databaseId", d)) for d in sorted(dids)]
    else:
        dbs = [(zero, path)]
    cursor = fdbtuple.unpack(after) if after else ()
    for did, dpath in dbs:
        if cursor and did < cursor[0]:
            continue
        mine = bool(cursor) and cursor[0] == did
        if path.directory.name == "catalogId" and not mine:
            out.append((fdbtuple.pack((did, 0)), did, dpath))
            if len(out) >= limit:
                return out
        tables = dpath.add("Table")
        for section, store in ((1, ms.resolver.names(tables, "Table")), (2, ms.resolver.dropped(tables, "Table"))):
            if section == 2 and not dropped:
                continue
            if mine and cursor[1] > section:
                continue
            begin, end = store.range()
            if mine and cursor[1] == section:
                begin = store.key(tuple(cursor[2:])) + b"\xff"
            for r in store.scan(tr, begin, end, limit=limit - len(out)):
                if section == 1:
                    oid, kind = uuid.UUID(bytes=r.record.id), r.record.kind
                else:
                    oid, kind = r.key[1], rec.ObjectKind.TABLE
                p = (Layout.view if kind == rec.ObjectKind.VIEW else Layout.table)(dpath, oid)
                out.append((fdbtuple.pack((did, section) + tuple(r.key)), oid, p))
            if len(out) >= limit:
                return out
    return out


def _unindex_chunks(ms: "Metastore", work: Work, r: rec.PendingWork) -> None:
    from .metadata.store import MetadataKeys, MetadataWriter

    path = table_path(ms, r.object_key)
    indexed = bool(json.loads(r.detail_json or "{}").get("indexed"))
    while path is not None:
        def chunk(tr: Transaction) -> bool:
            started = time.monotonic()
            w = work.load(tr)
            items = _chunk_ids(ms, tr, path, w.cursor, UNINDEX_PER_CHUNK, dropped=False)
            writer = MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog")
            n = 0
            for pos, oid, _ in items:
                writer.set_indexed(oid, indexed)
                w.cursor = pos
                n += 1
                if time.monotonic() - started > CHUNK_SECONDS:
                    break
            writer.finish(0)
            w.done += n
            work.save(tr, w)
            return n > 0 and (n < len(items) or len(items) == UNINDEX_PER_CHUNK)

        if not ms.db.run(chunk):
            break
    ms.db.run(lambda tr: (work.load(tr), work.store.delete(tr, (work.op,))))


def big_object(ms: "Metastore", tr: Transaction, path: KeySpacePath) -> bool:
    """Whether purging (or un-indexing) the object at ``path`` needs chunks: a catalog or database
    with more than :data:`BULK_OBJECTS_AT` objects, a table with more than :data:`BULK_AT`
    partitions (counting stops there)."""
    if path.directory.name == "tableId":
        prefix = path.add("TablePartition").key()
        return sum(1 for _ in tr.get_range(prefix, prefix + b"\xff", limit=BULK_AT + 1)) > BULK_AT
    if path.directory.name in ("catalogId", "databaseId"):
        return many_objects(ms, tr, path)
    return False


def defer_purge(ms: "Metastore", tr: Transaction, name: str, kind: str, path: KeySpacePath, version: int,
                operation: str) -> None:
    """In the transaction that makes a dropped catalog, database or table unreachable (its name
    entry removed): its keys, metadata and data are deleted in chunks after the commit (the data
    paths then go to the caller: :func:`run_after`)."""
    detail: dict[str, Any] = {"kind": kind, "operation": operation}
    if path.directory.name == "tableId":  # whether another table shares its location: decided now
        detail["shared"] = _shares_location(tr, path)
    store = work_store(ms.project_path)
    for r in list(store.scan(tr)):  # (un)indexing what is purged now is moot: superseded
        if r.record.kind == "UNINDEX" and r.record.object_key.startswith(path.key()):
            store.delete(tr, r.key)
    op = uuid.uuid4()
    work_store(ms.project_path).save(tr, (op,), published(new_work(
        "PURGE", name, path.key(), version=version, detail=detail)), new=True)
    after_ops(ms).append(op)


def _shares_location(tr: Transaction, table: KeySpacePath) -> bool:
    """Whether a live table of the same database has its data at, in or around this table's location
    (then only this table's recorded files are deleted, as :func:`~ushas_catalog.data_purge.table_data_paths`
    decides)."""
    from .keyspace.layout import Layout

    storage = RecordStore.at(table.add("TableStorage")).load(tr, ())
    if storage is None or storage.external or not storage.location:
        return False
    location = storage.location.rstrip("/")
    db = table.parent.parent
    for sr in RecordStore.at(db.add("Table").add("TableObjectName")).scan(tr):
        oid = uuid.UUID(bytes=sr.record.id)
        if oid == table.value or sr.record.kind != rec.ObjectKind.TABLE:
            continue
        other = RecordStore.at(Layout.table(db, oid).add("TableStorage")).load(tr, ())
        if other is not None and other.location and (_under(other.location, location)
                                                     or _under(location, other.location)):
            return True
    return False


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def _purge_table_step(ms: "Metastore", tr: Transaction, tpath: KeySpacePath, after: bytes, budget: int,
                      shared: bool) -> tuple[list[str], bytes | None, int]:
    """Purge up to ``budget`` partitions of the table at ``tpath`` (from key ``after``); when none
    are left, the table itself (garbage entries, metadata, keys). Returns the data paths to
    delete, where to continue (None: the table is gone) and the items used."""
    from .metadata import sync as metadata_sync
    from .data.garbage import delete_garbage, scan_garbage
    from .data.purge import bounded

    storage = RecordStore.at(tpath.add("TableStorage")).load(tr, ())
    schema = RecordStore.at(tpath.add("TableSchema")).load(tr, ())
    managed = storage is not None and not storage.external and bool(storage.location)
    location = storage.location.rstrip("/") if managed else ""
    paths: list[str] = []
    kept = getattr(ms, "kept_paths", None)  # recorded files outside the table: never deleted (data.purge)
    used = 0
    if schema is not None and schema.partition_columns:
        prefix = tpath.add("TablePartition").key()
        begin = after or prefix
        rows = list(tr.get_range(begin, prefix + b"\xff", limit=budget + 1))
        more = len(rows) > budget
        rows = rows[:budget]
        for kv in rows if managed else ():
            try:
                r = rec.Partition.FromString(kv.value)
            except Exception:  # noqa: BLE001 - one piece of a split record
                continue
            if r.files_recorded:
                paths.extend(f for f in bounded((f.path for f in r.data_files), [location, r.location], kept)
                             if shared or not _under(f, location))
            elif shared and r.location and not _under(location, r.location):
                paths.append(r.location)
        used = len(rows)
        if more:
            tr.clear_range(begin, rows[-1].key + b"\x00")
            return paths, rows[-1].key + b"\x00", used
    elif managed:
        listed = RecordStore.at(tpath.add("TableDataFiles")).load(tr, ())
        if listed is not None:
            paths.extend(f for f in bounded((f.path for f in listed.files), [location], kept)
                         if shared or not _under(f, location))
    for e in list(scan_garbage(tr, ms.project_path, tpath.value)):
        delete_garbage(tr, ms.project_path, e.key)
        if managed:
            released = bounded(e.directories, [location], kept)
            paths.extend(f for f in bounded((f.path for f in e.files), [location] + released, kept)
                         if shared or not _under(f, location))
            paths.extend(d for d in released if shared and not _under(location, d))
    if managed and not shared:
        paths.insert(0, location)
    metadata_sync.on_purge(ms, tr, tpath)
    tr.clear_range(*tpath.range())
    return paths, None, used + 1


def _purge_chunks(ms: "Metastore", work: Work, r: rec.PendingWork) -> None:
    path = table_path(ms, r.object_key)
    detail = json.loads(r.detail_json or "{}")
    found: list[str] = []
    while path is not None:
        def chunk(tr: Transaction) -> bool:
            from .metadata.store import MetadataKeys, MetadataWriter

            started = time.monotonic()
            w = work.load(tr)
            cursor = fdbtuple.unpack(w.cursor) if w.cursor else (b"", b"")
            position, inner = cursor[0], cursor[1]
            budget = CHUNK_ITEMS
            objects = PURGE_TABLES_PER_CHUNK
            paths: list[str] = []
            done = False
            if path.directory.name == "tableId":
                got, nxt, used = _purge_table_step(ms, tr, path, inner, budget, bool(detail.get("shared")))
                paths.extend(got)
                position, inner, done = b"", nxt or b"", nxt is None
                w.done += used
            else:
                while budget > 0 and objects > 0 and time.monotonic() - started < CHUNK_SECONDS:
                    objects -= 1
                    items = _chunk_ids(ms, tr, path, position, 1, dropped=True)
                    if not items:
                        done = True
                        break
                    pos, oid, obj = items[0]
                    if obj.directory.name == "tableId":
                        got, nxt, used = _purge_table_step(ms, tr, obj, inner, budget, False)
                        paths.extend(got)
                        budget -= used
                        if nxt is not None:
                            inner = nxt
                            break
                    elif obj.directory.name == "viewId":
                        from .metadata import sync as metadata_sync

                        metadata_sync.on_purge(ms, tr, obj)
                        tr.clear_range(*obj.range())
                        budget -= 1
                    else:  # a database: its own keys go with the catalog's range at the end
                        MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog").purge(oid)
                        budget -= 1
                    position, inner = pos, b""
                    w.done += 1
            w.cursor = fdbtuple.pack((position, inner))
            work.save(tr, w)
            return not done, paths

        more, paths = ms.db.run(chunk)
        found.extend(paths)
        if not more:
            break

    def finish(tr: Transaction) -> None:
        from .metadata.store import MetadataKeys, MetadataWriter

        work.load(tr)
        if path is not None:
            if path.directory.name != "tableId":
                MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog").purge(path.value)
                tr.clear_range(*path.range())
            ms.change_feed.record_removal(tr, kind=detail.get("kind", "catalog"), name=r.object,
                                          object_id=path.value, version=r.version,
                                          operation=detail.get("operation", "PURGE"), change=rec.ChangeEvent.PURGED)
        work.store.delete(tr, (work.op,))

    ms.db.run(finish)
    after_paths(ms).extend(found)


CHUNKERS["UNINDEX"] = _unindex_chunks
CHUNKERS["PURGE"] = _purge_chunks
