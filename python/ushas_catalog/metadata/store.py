"""Business (USER) and system (SYSTEM) metadata: properties and tags on catalogs, databases,
tables, views and columns, their history, and the search index kept with them.

Python API: ``Metastore.metadata`` (a :class:`MetadataStore`) and ``Metastore.search(...)``
(:mod:`ushas_catalog.metadata.search`)::

    ms.metadata.set("main.sales.orders", {"owner_team": "growth"})
    ms.metadata.tag("main.sales.orders.customer_id", ["pii"])
    ms.metadata.get("main.sales.orders").to_json()
    ms.metadata.history("main.sales.orders")

Objects are named like everywhere else: ``catalog``, ``catalog.database``,
``catalog.database.table`` (a table or a view) and ``catalog.database.table.column`` (more
parts name a nested field: ``c.d.t.address.city``; backticks quote a part holding a dot).

Scopes
    USER metadata is written by people: this API, the CLI (``ushas meta set / unset / tag /
    untag``) and Spark SQL — table (and catalog / database / view) properties under the
    reserved prefixes :data:`SPARK_PROPERTY_PREFIX` (``'ushas.meta.<key>'='<value>'``) and
    :data:`SPARK_TAG_PREFIX` (``'ushas.tag.<tag>'='<anything>'``), object comments (key
    ``comment``) and column comments (key ``comment`` on the column). Spark-fed values are
    mirrored when the object's properties or schema change: a value changed in Spark
    overwrites the USER value, one removed in Spark removes it; a value changed here stays
    until Spark changes it again.

    SYSTEM metadata is written only by the catalog (:func:`on_commit`, called from
    ``Metastore._commit``) and by the lineage listener (:func:`record_lineage_write`):
    ``created_by``, ``created_at``, ``updated_by``, ``updated_at`` on every object (the
    times are shown, not indexed: :data:`UNINDEXED_SYSTEM_KEYS`);
    ``format``, ``partition_count`` (partitioned tables) and the schema field names on
    tables; the schema field names on views; ``last_writer_run``, ``last_write_at``,
    ``row_count`` and ``file_count`` (where known) on tables written by a captured run.
    Writing SYSTEM metadata through this API raises :class:`ReadOnlyMetadata`.

Storage (``Metadata`` subspace of the project, see :mod:`ushas_catalog.keyspace.layout`): per object
id a JSON state record, its entries ``(column | None, scope, 'p' | 't', key) -> value`` and
its history (versionstamped keys: commit order). The search index ``MetadataIndex`` holds
``(field, term, TYPE, scope, objectId, column | None, key) -> (name[, value])`` with terms
lower-cased, TYPE and scope as small integers (:data:`INDEX_TYPES`, :data:`INDEX_SCOPES`) and
the entry's value only where the key does not hold it (:func:`index_value`): field ``kv``
(``key=value``: serves exact and prefix matches on the key too, keys cannot contain ``=``;
not written for :data:`VALUE_ONLY_SYSTEM_KEYS`), ``v`` (value), ``t`` (tag) and ``f`` (schema
field: its dotted path and, for a nested field, its own name). Index entries are written in
the same transaction as the metadata they index, removed when the object is dropped (restored by
undrop) and everything goes at purge.

Pending index entries (``MetadataPending``): the index entries of an object created in a
transaction (a table's: one per column, its tags, properties, format...) are written as ONE
key, ``objectId -> its entries`` (:func:`encode_pending`), not as scattered index keys; a
search reads the pending entries with the index (:func:`pending_rows`), so they are found as
soon as they commit. About every :data:`INDEX_MERGE_AT` created objects (those whose random
id is a multiple of it: :func:`merge_due`; no counter, so nothing that concurrent creates
contend on, nothing more to read or write per create), the metastore moves every pending
entry into ``MetadataIndex`` in one transaction after the create (:func:`merge_pending`),
where sorted, batched inserts touch each index page once. A transaction that changes a pending
object (alter, tag, rename, drop...) first moves its entries into the index
(:meth:`MetadataWriter.state`), so an object's entries are in one place. Why: a create writes ~30 index keys at unrelated places of the index; on a B-tree
engine (the embedded one, and FoundationDB's storage servers) each dirties its own page, which
made creating a table 1.6x slower with the index than without. Like PostgreSQL GIN's pending
list.

History (:meth:`MetadataStore.history`) records every USER change (API, CLI, Spark-mirrored)
and every change by the lineage listener; the catalog's own SYSTEM bookkeeping (created /
updated / format / partition count / schema) is the object's commit history (``ushas history``).

Limits (bad input is refused with :class:`InvalidArgument`, nothing is written): keys and
tags are 1 to :data:`MAX_KEY_BYTES` UTF-8 bytes without control characters, ``=`` or ``*``;
keys do not start with a reserved prefix (:data:`RESERVED_KEY_PREFIXES`); values are strings
of at most :data:`MAX_VALUE_BYTES` UTF-8 bytes without NUL.
"""
from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence


from ..catalog.authorization import METADATA_RULES, guard_methods
from ..catalog.row_policies import filters_rows_of
from ..errors import InvalidArgument, InvalidName, NoSuchTable
from ..kv.base import Transaction
from ..model.names import CatalogName, DatabaseName, TableName, quote, split_name
from .values import (COMMENT, Entry, F_FIELD, F_KEY_VALUE, F_TAG, F_VALUE, INDEX_MERGE_AT, INDEX_SCOPES, INDEX_TYPES,
                     MAX_KEY_BYTES, MAX_VALUE_BYTES, MERGE_BATCH_BYTES, MetadataChange, ObjectMetadata, ObjectRef,
                     ObjectState, ObjectType, PENDING_VALUE_MAX, PROPERTY, RESERVED_KEY_PREFIXES, ROW_DATA_SYSTEM_KEYS,
                     SPARK_PROPERTY_PREFIX, SPARK_TAG_PREFIX, STATE_CHUNK_BYTES, SYSTEM_KEYS, Scope, ScopedMetadata,
                     TAG, UNINDEXED_SYSTEM_KEYS, VALUE_ONLY_SYSTEM_KEYS, check_user_scope, counts_rows, fold, micros_iso,
                     micros_now, validate_key, validate_value)
from .keys import (EMPTY_ELEMENT, MetadataKeys, decode_pending, encode_pending, field_terms, index_value, merge_due,
                   merge_pending, pack_element, pending_rows, pending_values, schema_paths, shown, unpack_index_value,
                   versionstamped_key, write_index)
from .writer import (MetadataWriter)

if TYPE_CHECKING:
    from ..catalog.core import CatalogCore as Metastore



# ---- the API -----------------------------------------------------------------------------------
class MetadataStore:
    """USER metadata of one metastore's project: ``Metastore.metadata``. Every call is one
    transaction; every write validates all its input before writing anything."""

    def __init__(self, metastore: "Metastore") -> None:
        self.ms = metastore
        self.keys = MetadataKeys(metastore.project_path)

    # -- resolution -------------------------------------------------------------------------
    def resolve(self, tr: Transaction, target: "str | Sequence[str] | ObjectRef") -> ObjectRef:
        """An object by name (1 part: catalog, 2: database, 3: table or view, more: column)."""
        if isinstance(target, ObjectRef):
            return target
        parts = split_name(target) if isinstance(target, str) else list(target)
        if not parts or len(parts) > 3 + 32:
            raise InvalidName(f"object name {target!r} must be catalog[.database[.table[.column...]]]")
        ms = self.ms
        if len(parts) == 1:
            cn = CatalogName.parse(parts)
            cat = ms.resolver.catalog(tr, cn, load=False)
            return ObjectRef(ObjectType.CATALOG, cat.id, str(cn))
        if len(parts) == 2:
            dn = DatabaseName.parse(parts)
            db = ms.resolver.database(tr, dn, load=False)
            return ObjectRef(ObjectType.DATABASE, db.id, str(dn))
        tn = TableName.parse(parts[:3])
        db, entry = ms.resolver.relation(tr, tn)
        if entry is None:
            obj = ms.resolver.object_entry(tr, db.path, tn.name)
            if obj is None:
                raise NoSuchTable(f"table, view or object {tn} does not exist", table=str(tn))
            if len(parts) > 3:
                raise InvalidName(f"{tn} is a versioned object: it has no columns")
            return ObjectRef(ObjectType.OBJECT, uuid.UUID(bytes=obj.id), str(tn))
        from ..records import ObjectKind

        rtype = ObjectType.TABLE if entry.kind == ObjectKind.TABLE else ObjectType.VIEW
        rid = uuid.UUID(bytes=entry.id)
        if len(parts) == 3:
            return ObjectRef(rtype, rid, str(tn))
        for p in parts[3:]:
            if not p:
                raise InvalidName(f"column name in {target!r} must not be empty")
        wanted = ".".join(quote(p) for p in parts[3:])
        fields = self._schema_fields(tr, tn, rtype)
        if wanted not in fields:
            by_fold = {fold(f): f for f in fields}
            if fold(wanted) not in by_fold:
                raise NoSuchTable(f"{tn} has no column {wanted}", table=str(tn), column=wanted)
            wanted = by_fold[fold(wanted)]
        return ObjectRef(ObjectType.COLUMN, rid, str(tn), wanted, rtype)

    def _schema_fields(self, tr: Transaction, tn: TableName, rtype: ObjectType) -> dict[str, str | None]:
        from ..model.schema import struct_from_proto

        if rtype is ObjectType.TABLE:
            t = self.ms.resolver.table(tr, tn)
            return schema_paths(struct_from_proto(t.store("TableSchema").load(tr, ()).schema))
        v = self.ms.resolver.view(tr, tn)
        return schema_paths(struct_from_proto(v.record.schema))

    def _writer(self, tr: Transaction) -> MetadataWriter:
        return MetadataWriter(tr, self.keys, self.ms.user)

    # -- writes -----------------------------------------------------------------------------
    def set(self, target: "str | Sequence[str] | ObjectRef", properties: Mapping[str, str],
            scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Set USER properties (one transaction); returns the object's metadata after."""
        s = check_user_scope(scope)
        if not isinstance(properties, Mapping) or not properties:
            raise InvalidArgument("metadata set needs at least one key=value property")
        props = {validate_key(k): validate_value(v, k) for k, v in properties.items()}
        if COMMENT in props:
            return self._comment(target, props, props[COMMENT])
        return self._write(target, lambda w, ref: [
            w.put(ref.id, Entry(ref.column, s, PROPERTY, k, v)) for k, v in props.items()])

    def unset(self, target: "str | Sequence[str] | ObjectRef", keys: Iterable[str],
              scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Remove USER properties (keys not set are ignored)."""
        s = check_user_scope(scope)
        names = _names_arg(keys, "key")
        if COMMENT in names:
            return self._comment(target, names, None)
        return self._write(target, lambda w, ref: [w.delete(ref.id, ref.column, s, PROPERTY, k) for k in names])

    def _comment(self, target: Any, given: Any, comment: str | None) -> ObjectMetadata:
        """``comment`` is the object's (or column's) own comment in the metastore: it is
        changed there (one metastore operation, whose commit re-indexes it)."""
        if len(given) != 1:
            raise InvalidArgument("'comment' is the object's own comment in the metastore: set or unset it on its "
                                  "own, not together with other keys")
        from ..model.table_changes import SetComment, UpdateColumnComment

        ref = self.ms.run(lambda tr: self.resolve(tr, target))
        ms = self.ms
        if ref.type is ObjectType.CATALOG:
            ms.alter_catalog(ref.name, comment=comment)
        elif ref.type is ObjectType.DATABASE:
            ms.alter_database(ref.name, comment=comment)
        elif ref.type is ObjectType.TABLE:
            ms.alter_table(ref.name, [SetComment(comment)])
        elif ref.type is ObjectType.VIEW:
            ms.alter_view(ref.name, comment=comment)
        elif ref.type is ObjectType.OBJECT:
            ms.objects.alter(ref.name, comment=comment or "")
        elif ref.parent_type is ObjectType.TABLE:
            assert ref.column is not None
            ms.alter_table(ref.name, [UpdateColumnComment(tuple(split_name(ref.column)), comment)])
        else:
            raise InvalidArgument(f"the comments of view columns come from the view's definition "
                                  f"(CREATE OR REPLACE VIEW); {ref.full_name} cannot be commented on its own")
        return self.get(ref)

    def tag(self, target: "str | Sequence[str] | ObjectRef", tags: Iterable[str],
            scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Add USER tags."""
        s = check_user_scope(scope)
        names = _names_arg(tags, "tag")
        return self._write(target, lambda w, ref: [w.put(ref.id, Entry(ref.column, s, TAG, t, "")) for t in names])

    def untag(self, target: "str | Sequence[str] | ObjectRef", tags: Iterable[str],
              scope: Scope | str = Scope.USER) -> ObjectMetadata:
        """Remove USER tags (tags not there are ignored)."""
        s = check_user_scope(scope)
        names = _names_arg(tags, "tag")
        return self._write(target, lambda w, ref: [w.delete(ref.id, ref.column, s, TAG, t) for t in names])

    def _write(self, target: Any, apply: Any) -> ObjectMetadata:
        def fn(tr: Transaction) -> ObjectMetadata:
            ref = self.resolve(tr, target)
            w = self._writer(tr)
            if w.state(ref.id) is None:  # an object from before metadata existed: start its state
                w.save_state(ref.id, ObjectState(ref.parent_type or ref.type, ref.name))
            apply(w, ref)
            return self._read(tr, ref)

        return self._as_reader_sees(self.ms.run(fn))

    # -- reads ------------------------------------------------------------------------------
    def get(self, target: "str | Sequence[str] | ObjectRef") -> ObjectMetadata:
        """USER and SYSTEM metadata of an object (a table's or view's includes its columns'); a table's row and
        partition counts (:data:`ROW_DATA_SYSTEM_KEYS`) not for a reader under its row filter."""
        return self._as_reader_sees(self.ms.run(lambda tr: self._read(tr, self.resolve(tr, target))))

    def _as_reader_sees(self, md: ObjectMetadata) -> ObjectMetadata:
        """``md`` without a table's row and partition counts when the caller reads it through its row filter."""
        counts = ROW_DATA_SYSTEM_KEYS & md.system.properties.keys()
        if counts and md.object.type is ObjectType.TABLE and filters_rows_of(self.ms, md.object.name):
            for key in counts:
                del md.system.properties[key]
        return md

    def read(self, tr: Transaction, ref: ObjectRef) -> ObjectMetadata:
        """:meth:`get` inside the caller's transaction, of a resolved object."""
        return self._read(tr, ref)

    def _read(self, tr: Transaction, ref: ObjectRef) -> ObjectMetadata:
        w = self._writer(tr)
        out = ObjectMetadata(ref, ScopedMetadata(), ScopedMetadata())
        state = w.state(ref.id)
        if state is not None and ref.column is None:
            out.schema_fields = list(state.fields)
        for e in [*w.entries(ref.id), *(state.comment_entries() if state is not None else ())]:
            if e.column == ref.column:
                target = out
            elif ref.column is None:
                if e.column not in out.columns:
                    out.columns[e.column] = ObjectMetadata(
                        ObjectRef(ObjectType.COLUMN, ref.id, ref.name, e.column, ref.type),
                        ScopedMetadata(), ScopedMetadata())
                target = out.columns[e.column]
            else:
                continue
            sm = target.scope(e.scope)
            if e.kind == TAG:
                sm.tags.append(e.key)
            else:
                sm.properties[e.key] = e.value
        return out

    def history(self, target: "str | Sequence[str] | ObjectRef", limit: int | None = None) -> list[MetadataChange]:
        """Metadata changes of the object (and, for a table / view, of its columns), oldest first;
        ``limit``: the most recent ``limit`` of them (fewer for a reader under a table's row filter: the changes
        of its row and partition counts are left out after the limit)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidArgument(f"limit must be a positive integer, not {limit!r}")

        def fn(tr: Transaction) -> tuple[ObjectRef, list[MetadataChange]]:
            ref = self.resolve(tr, target)
            out = []
            rows = tr.get_range(*self.keys.history(ref.id).range(), reverse=True)
            for kv in rows:
                change = MetadataChange.from_json(json.loads(kv.value))
                if ref.column is not None and change.column != ref.column:
                    continue
                out.append(change)
                if limit is not None and len(out) >= limit:
                    break
            out.reverse()
            return ref, out

        ref, changes = self.ms.run(fn)
        if ref.type is ObjectType.TABLE and any(counts_rows(c.scope, c.key) for c in changes) \
                and filters_rows_of(self.ms, ref.name):
            changes = [c for c in changes if not counts_rows(c.scope, c.key)]
        return changes


def _names_arg(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, str):
        values = [values]
    out = [validate_key(v, what) for v in values]
    if not out:
        raise InvalidArgument(f"at least one {what} is needed")
    return list(dict.fromkeys(out))


__all__ = ["COMMENT", "EMPTY_ELEMENT", "Entry", "F_FIELD", "F_KEY_VALUE", "F_TAG", "F_VALUE", "INDEX_MERGE_AT",
           "INDEX_SCOPES", "INDEX_TYPES", "MAX_KEY_BYTES", "MAX_VALUE_BYTES", "MERGE_BATCH_BYTES", "MetadataChange",
           "MetadataKeys", "MetadataStore", "MetadataWriter", "ObjectMetadata", "ObjectRef", "ObjectState",
           "ObjectType", "PENDING_VALUE_MAX", "PROPERTY", "RESERVED_KEY_PREFIXES", "SPARK_PROPERTY_PREFIX",
           "SPARK_TAG_PREFIX", "STATE_CHUNK_BYTES", "SYSTEM_KEYS", "Scope", "ScopedMetadata", "TAG",
           "UNINDEXED_SYSTEM_KEYS", "VALUE_ONLY_SYSTEM_KEYS", "check_user_scope", "decode_pending", "encode_pending",
           "field_terms", "fold", "index_value", "merge_due", "merge_pending", "micros_iso", "micros_now",
           "pack_element", "pending_rows", "pending_values", "schema_paths", "shown", "unpack_index_value",
           "validate_key", "validate_value", "versionstamped_key", "write_index"]


guard_methods(MetadataStore, METADATA_RULES)  # checked when authorization is on (docs/governance.md)
