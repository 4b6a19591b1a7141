"""The catalog's and the lineage listener's side of :mod:`ushas_catalog.metadata`: SYSTEM
metadata, Spark-mirrored USER metadata and the search index, kept in step with the
metastore inside the metastore's own transaction.

Called from :mod:`ushas_catalog.metastore`:

- :func:`on_commit` from ``Metastore._commit`` (every mutation): created / updated by and
  at, format, partition count, schema field names (index ``f``), column comments, object
  comments and ``ushas.meta.*`` / ``ushas.tag.*`` properties mirrored into USER metadata,
  renames (index values carry the name), DROP (index entries of the object and of
  everything in it removed) and UNDROP (restored).
- :func:`on_purge` before an object's keys are cleared (drop with purge, purge of a dropped
  object, drop of a view): its metadata, history and index entries, and those of
  everything it held, go in the same transaction.

Called by the lineage capture (``lineage.store``), in the transaction that stores a run:
:func:`record_lineage_write` — SYSTEM ``last_writer_run``, ``last_write_at`` and, where the
plan knew them, ``row_count`` / ``file_count`` of a metastore table a run wrote.
"""
from __future__ import annotations

import uuid
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..keyspace.tree import KeySpacePath
from ..keyspace.layout import (DATABASE, DATABASE_ID, OBJECT, TABLE, TABLE_PARTITION, TABLE_PROPERTIES, TABLE_SCHEMA,
                               TABLE_STORAGE)
from ..kv.base import Transaction
from ..errors import InvalidArgument
from .store import (COMMENT, PROPERTY, SPARK_PROPERTY_PREFIX, SPARK_TAG_PREFIX, TAG, Entry, MetadataKeys,
                    MetadataWriter, ObjectState, ObjectType, Scope, micros_iso, schema_paths, validate_key,
                    validate_value)
from ..model.names import quote
from ..records.store import RecordStore

if TYPE_CHECKING:
    from ..catalog.commits import Mutation
    from ..catalog.core import CatalogCore as Metastore

#: the longest column (or nested field) path, quoted and dotted, in UTF-8 bytes: the search index
#: key of a field holds its path twice (term and column), within FoundationDB's 10 kB key limit
MAX_FIELD_PATH_BYTES = 3000


def check_field_paths(paths: Iterable[str], known: Mapping[str, Any]) -> None:
    """:class:`InvalidArgument` for a new field path (not in ``known``) too long to index."""
    for path in paths:
        size = len(path.encode("utf-8"))
        if size > MAX_FIELD_PATH_BYTES and path not in known:
            raise InvalidArgument(f"column name {path[:40]!r}... is {size:,} UTF-8 bytes (with its parent fields); "
                                  f"the maximum is {MAX_FIELD_PATH_BYTES:,}", column=path[:64])

#: operations that drop (the object stays until purge) / restore an object
_DROPS = frozenset({"DROP CATALOG", "DROP DATABASE", "DROP TABLE", "DROP OBJECT"})
_UNDROPS = frozenset({"UNDROP CATALOG", "UNDROP DATABASE", "UNDROP TABLE", "UNDROP OBJECT"})
_PARTITION_OPS = {"ADD PARTITIONS": ("added",), "DROP PARTITIONS": ("dropped",),
                  "REPLACE PARTITIONS": ("added", "dropped")}


def on_commit(ms: "Metastore", tr: Transaction, m: "Mutation", *, index: bool = True) -> bool:
    """Bring the metadata of the mutated object in step with the commit ``m``. ``index=False``
    only for the write-cost baseline of ``bench/search.py`` (no index key written). Returns
    whether enough index entries are pending for the metastore to merge them into the index
    (after this transaction: :meth:`Metastore.merge_index`)."""
    w = MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog", now_micros=m.time_micros,
                       index=index)
    _sync(ms, tr, m, w)
    return w.finish(ms.index_merge_at)


def _sync(ms: "Metastore", tr: Transaction, m: "Mutation", w: MetadataWriter) -> None:
    oid: uuid.UUID = m.path.value
    otype = ObjectType(m.kind.upper())
    op = m.operation
    if op in _DROPS:
        _each_object(ms, tr, m.path, purge=False, visit=lambda i: w.set_indexed(i, False))
        return
    if op in _UNDROPS:
        _each_object(ms, tr, m.path, purge=False, visit=lambda i: w.set_indexed(i, True))
    # version 1: the object was created in this transaction with a new id, so nothing of it
    # is stored yet (no state, entries or index entries to read and diff against)
    fresh = m.version == 1
    state = None if fresh else w.state(oid)
    # an object created in a branch has no metadata until its merge brings it to main
    arrived = state is None and op == "MERGE BRANCH"
    if state is None:
        state = ObjectState(otype, m.name)
        w.known_new(oid, state) if fresh else w.save_state(oid, state)
    elif state.name != m.name:
        w.rename(oid, m.name)
    when = micros_iso(m.time_micros)

    def system(key: str, value: str | None) -> None:
        if value is None:
            if not fresh:
                w.delete(oid, None, Scope.SYSTEM, PROPERTY, key, history=False)
        else:
            w.put(oid, Entry(None, Scope.SYSTEM, PROPERTY, key, value), fresh=fresh, history=False)

    if fresh or arrived or op.startswith("CREATE "):
        system("created_by", ms.user)
        system("created_at", when)
    system("updated_by", ms.user)
    system("updated_at", when)

    if otype is ObjectType.TABLE:
        _table(ms, tr, w, oid, state, m, fresh, system)
    elif otype is ObjectType.VIEW:
        if op != "RENAME VIEW":
            from ..model.schema import struct_from_proto

            _sync_fields(w, oid, state, schema_paths(struct_from_proto(m.head.schema)), m.detail, fresh)
            _mirror(w, oid, state, m.head.properties, m.head.comment if m.head.HasField("comment") else None, fresh)
    elif otype is ObjectType.OBJECT:  # a versioned object: its kind, location and data version, searchable
        system("object_kind", m.head.kind)
        system("location", m.head.location)
        system("current_version", str(m.head.current_version) if m.head.current_version else None)
        if fresh or op.startswith(("CREATE ", "ALTER ")):
            _mirror(w, oid, state, m.head.properties, m.head.comment if m.head.HasField("comment") else None, fresh)
    elif op.startswith(("CREATE ", "ALTER ")) or op == "MERGE BRANCH":
        _mirror(w, oid, state, m.head.properties, m.head.comment or None, fresh)
    w.save_state(oid, state)


def _table(ms: "Metastore", tr: Transaction, w: MetadataWriter, oid: uuid.UUID, state: ObjectState, m: "Mutation",
           fresh: bool, system: Callable[[str, str | None], None]) -> None:
    changed = set(m.changed)
    if "TableStorage" in changed:
        fmt = m.detail.get("format") if m.operation in ("CREATE TABLE", "REPLACE TABLE") else None
        if not isinstance(fmt, str):  # CREATE / REPLACE carry it in the commit detail; else read it
            fmt = RecordStore.of(m.path, TABLE_STORAGE).load(tr, ()).format
        system("format", fmt)
    if "TableSchema" in changed:
        from ..model.schema import struct_from_proto

        schema = RecordStore.of(m.path, TABLE_SCHEMA).load(tr, ())
        _sync_fields(w, oid, state, schema_paths(struct_from_proto(schema.schema)), m.detail, fresh)
        partitioned = bool(schema.partition_columns)
        if m.operation in ("CREATE TABLE", "REPLACE TABLE"):
            system("partition_count", "0" if partitioned else None)
        elif not partitioned:
            system("partition_count", None)
    counted = _PARTITION_OPS.get(m.operation) or (
        ("added", "dropped") if "TablePartition" in m.changed and "added" in m.detail and "dropped" in m.detail
        else None)  # a write (APPEND, OVERWRITE PARTITIONS, ...) through replace_partitions
    if counted:
        current = w.get(oid, None, Scope.SYSTEM, PROPERTY, "partition_count")
        if current is None:  # a table from before metadata: count once (this commit's writes included)
            count = _count_partitions(tr, m.path)
        else:
            count = int(current) + sum(int(m.detail.get(k, 0)) * (1 if k == "added" else -1)
                                       for k in counted)
        system("partition_count", str(count))
    if "TableProperties" in changed:
        props = RecordStore.of(m.path, TABLE_PROPERTIES).load(tr, ())
        _mirror(w, oid, state, props.properties, props.comment if props.HasField("comment") else None, fresh)


def _count_partitions(tr: Transaction, path: KeySpacePath) -> int:
    import fdb.tuple as fdbtuple

    arity = len(RecordStore.of(path, TABLE_SCHEMA).load(tr, ()).partition_columns)
    sub = path.add(TABLE_PARTITION)
    plen = len(sub.key())
    return len({fdbtuple.unpack(kv.key[plen:])[:arity] for kv in tr.get_range(*sub.range())})


def _sync_fields(w: MetadataWriter, oid: uuid.UUID, state: ObjectState, fields: dict[str, str | None],
                 detail: Mapping[str, Any], fresh: bool) -> None:
    """The schema's field paths into the index (``f``) and their comments (USER ``comment``
    of the column, index only: the schema holds them); entries of renamed columns move,
    those of removed columns go."""
    check_field_paths(fields, state.fields)
    old = dict(state.fields)
    for change in detail.get("changes", ()) if not fresh else ():
        if isinstance(change, Mapping) and change.get("type") == "RenameColumn":
            names = list(change.get("fieldNames") or ())
            src = ".".join(quote(p) for p in names)
            dst = ".".join(quote(p) for p in names[:-1] + [change.get("newName", "")])
            _move_column(w, oid, src, dst)
            for path in [p for p in old if p == src or p.startswith(src + ".")]:
                moved = dst + path[len(src):]
                old[moved] = old.pop(path)
                w.set_comment(oid, state, path, old[moved], None, history=False)
                w.set_comment(oid, state, moved, None, old[moved], history=False)
    for path in state.fields:
        if path not in fields and state.indexed:
            w.unindex_field(oid, state, path)
    for path, comment in old.items():
        if path not in fields:
            for e in list(w.entries(oid, path)):
                w.delete(oid, e.column, e.scope, e.kind, e.key, source="catalog")
            w.set_comment(oid, state, path, comment, None, history=True)
    if state.indexed:
        w.index_fields(oid, state, [path for path in fields if path not in state.fields])
    for path, comment in fields.items():
        if comment is not None:
            validate_value(comment, "comment")
        if comment != old.get(path):
            w.set_comment(oid, state, path, old.get(path), comment, history=not fresh)
    state.fields = dict(fields)


def _move_column(w: MetadataWriter, oid: uuid.UUID, src: str, dst: str) -> None:
    for e in [e for e in w.entries(oid) if e.column is not None and (e.column == src or e.column.startswith(src + "."))]:
        w.delete(oid, e.column, e.scope, e.kind, e.key, source="catalog")
        w.put(oid, Entry(dst + e.column[len(src):], e.scope, e.kind, e.key, e.value), source="catalog")


def _mirror(w: MetadataWriter, oid: uuid.UUID, state: ObjectState, properties: Mapping[str, str],
            comment: str | None, fresh: bool) -> None:
    """Spark-set values into USER metadata: ``ushas.meta.<key>`` properties and
    ``ushas.tag.<tag>`` tags (only what changed since the last sync); the object's comment
    (USER ``comment``, index only: the metastore record holds it)."""
    props: dict[str, str] = {}
    tags: list[str] = []
    for k, v in properties.items():
        low = k.lower()
        if low.startswith(SPARK_PROPERTY_PREFIX):
            key = validate_key(k[len(SPARK_PROPERTY_PREFIX):], f"key (from table property {k!r})")
            if key == COMMENT:
                raise InvalidArgument(f"property {k!r}: the comment is set with COMMENT, not as a property")
            props[key] = validate_value(v, key)
        elif low.startswith(SPARK_TAG_PREFIX):
            tags.append(validate_key(k[len(SPARK_TAG_PREFIX):], f"tag (from table property {k!r})"))
    if comment is not None:
        validate_value(comment, "comment")
    for key, value in props.items():
        if state.spark_properties.get(key) != value:
            w.put(oid, Entry(None, Scope.USER, PROPERTY, key, value), fresh=fresh, source="spark")
    for key in set(state.spark_properties) - set(props):
        w.delete(oid, None, Scope.USER, PROPERTY, key, source="spark")
    for tag in tags:
        if tag not in state.spark_tags:
            w.put(oid, Entry(None, Scope.USER, TAG, tag, ""), fresh=fresh, source="spark")
    for tag in set(state.spark_tags) - set(tags):
        w.delete(oid, None, Scope.USER, TAG, tag, source="spark")
    w.set_comment(oid, state, None, state.spark_comment, comment, history=not fresh)
    state.spark_properties, state.spark_tags, state.spark_comment = props, sorted(set(tags)), comment


# ---- drop / undrop / purge --------------------------------------------------------------------
#: per transaction: catalogs / databases whose objects are (un)indexed in chunks after it (a weak
#: map keyed by the transaction object, so nothing outlives it)
_DEFERRED: "weakref.WeakKeyDictionary[Any, set[bytes]]" = weakref.WeakKeyDictionary()


def defer_children(tr: Transaction, path: KeySpacePath) -> None:
    """In ``tr``: the objects inside the one at ``path`` are (un)indexed in chunks after the commit
    (:func:`ushas_catalog.bulk.defer_unindex`), so the sync of ``tr`` handles the object itself only."""
    _DEFERRED.setdefault(tr, set()).add(path.key())


def children_deferred(tr: Transaction, path: KeySpacePath) -> bool:
    """Whether the objects inside the one at ``path`` are (un)indexed in chunks after ``tr``."""
    found = _DEFERRED.get(tr)
    return found is not None and path.key() in found


def _each_object(ms: "Metastore", tr: Transaction, path: KeySpacePath, *, purge: bool,
                 visit: Callable[[uuid.UUID], None]) -> None:
    """``visit`` the object at ``path`` and every object in it: a catalog's databases, a
    database's tables and views (live ones; with ``purge`` dropped ones too)."""
    visit(path.value)
    if children_deferred(tr, path):  # a big catalog / database: its objects in chunks (ushas_catalog.bulk)
        return
    kind = path.directory.name
    if kind == "catalogId":
        dbs = path.add(DATABASE)
        for did in _ids(ms, tr, dbs, "Database", purge):
            _each_object(ms, tr, dbs.add(DATABASE_ID, did), purge=purge, visit=visit)
    elif kind == "databaseId":
        for rid in _ids(ms, tr, path.add(TABLE), "Table", purge):
            visit(rid)
        for oid in _ids(ms, tr, path.add(OBJECT), "Object", purge):  # versioned objects
            visit(oid)


def _ids(ms: "Metastore", tr: Transaction, parent: KeySpacePath, kind: str, dropped: bool) -> list[uuid.UUID]:
    out = [uuid.UUID(bytes=r.record.id) for r in ms.resolver.names(parent, kind).scan(tr)]
    if dropped:
        out.extend(r.key[1] for r in ms.resolver.dropped(parent, kind).scan(tr))
    return out


def on_purge(ms: "Metastore", tr: Transaction, path: KeySpacePath) -> None:
    """Before the keys of the object at ``path`` (a catalog, database, table or view id path)
    are cleared: remove its metadata and that of everything in it, index entries included."""
    w = MetadataWriter(tr, MetadataKeys(ms.project_path), ms.user, source="catalog")
    _each_object(ms, tr, path, purge=True, visit=w.purge)


# ---- the lineage listener ---------------------------------------------------------------------
def record_lineage_write(tr: Transaction, project_path: KeySpacePath, table_id: uuid.UUID, *, run_id: uuid.UUID | str,
                         at_ms: int, user: str, rows: int | None = None, files: int | None = None) -> None:
    """SYSTEM metadata of a metastore table written by a captured run, in the run's
    transaction: ``last_writer_run``, ``last_write_at``, and ``row_count`` / ``file_count``
    when known (``None`` leaves the stored value). Recorded in the metadata history
    (source ``lineage``)."""
    w = MetadataWriter(tr, MetadataKeys(project_path), user, source="lineage", now_micros=at_ms * 1000)
    values = {"last_writer_run": str(run_id), "last_write_at": micros_iso(at_ms * 1000)}
    for key, n in (("row_count", rows), ("file_count", files)):
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise InvalidArgument(f"{key} must be an integer >= 0, not {n!r}")
            values[key] = str(n)
    for key, value in values.items():
        w.put(table_id, Entry(None, Scope.SYSTEM, PROPERTY, key, value))


__all__ = ["on_commit", "on_purge", "record_lineage_write"]
