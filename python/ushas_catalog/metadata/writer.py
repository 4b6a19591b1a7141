"""The metadata writer: one transaction's metadata changes of objects, their index entries and
history (see :mod:`ushas_catalog.metadata.store`)."""
from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Iterable, Iterator

import fdb.tuple as fdbtuple

from ..kv.base import Transaction
from .values import (COMMENT, Entry, F_FIELD, MetadataChange, ObjectState, ObjectType, PENDING_VALUE_MAX, PROPERTY,
                     STATE_CHUNK_BYTES, Scope, TAG, micros_now)
from .keys import (EMPTY_ELEMENT, MetadataKeys, decode_pending, encode_pending, field_terms, index_value, merge_due,
                   pack_element, versionstamped_key, write_index)


# ---- the writer: one transaction's metadata changes ---------------------------------------------
class MetadataWriter:
    """Writes entries of one project in one transaction, keeping the index and the
    history in step. Made by the API and by the catalog / lineage hooks."""

    def __init__(self, tr: Transaction, keys: MetadataKeys, user: str, *, source: str = "api",
                 now_micros: int | None = None, index: bool = True) -> None:
        self.tr = tr
        #: False only for the write-cost baseline of ``bench/search.py``: every metadata write
        #: as usual, no index key written or cleared (the index is then wrong: never in a store
        #: that is searched)
        self.index = index
        self.keys = keys
        self.user = user
        self.source = source
        self.now_micros = now_micros if now_micros is not None else micros_now()
        self._history_seq = 0
        #: objects created in this transaction: their index entries (full key -> value), written
        #: by :meth:`finish` as one pending key each
        self._deferred: dict[uuid.UUID, dict[bytes, bytes]] = {}
        self._states: dict[uuid.UUID, ObjectState | None] = {}
        #: the state bytes as stored (b"": none), to skip rewriting an unchanged state
        self._saved: dict[uuid.UUID, bytes] = {}

    # -- state ------------------------------------------------------------------------------
    def state(self, oid: uuid.UUID, *, unindexing: bool = False) -> ObjectState | None:
        """The object's state record (split over several keys when longer than a value may be).
        The first time a stored object is read, its pending index entries (if any) move into
        the index: whatever changes next changes them there -- unless ``unindexing`` (the caller
        removes every index entry of the object next): then they are only cleared, not written
        into the index to be cleared again."""
        if oid not in self._states:
            key = self.keys.state(oid)
            raw = b"".join(kv.value for kv in self.tr.get_range(key, key + b"\xff"))
            self._saved[oid] = raw
            self._states[oid] = ObjectState.from_bytes(raw) if raw else None
            if raw and self.index:
                if unindexing:
                    self.tr.clear(self.keys.pending_key(oid))
                else:
                    self._merge_pending_of(oid)
        return self._states[oid]

    def _merge_pending_of(self, oid: uuid.UUID) -> None:
        pkey = self.keys.pending_key(oid)
        raw = self.tr.get(pkey)
        if raw is None:
            return
        write_index(self.tr, self.keys, decode_pending(raw))
        self.tr.clear(pkey)

    def finish(self, merge_at: int) -> bool:
        """End of the transaction's metadata writes: the index entries of the objects created
        in it go into ``MetadataPending`` (straight into the index when ``merge_at`` is 0 or they
        are too large for one value). Returns whether a merge is due (:func:`merge_due`: the
        caller then runs :func:`merge_pending`)."""
        due = False
        plen = len(self.keys.index_prefix)
        for oid, entries in self._deferred.items():
            if not entries:
                continue
            items = sorted(entries.items())
            value = encode_pending((k[plen:], v) for k, v in items) if merge_at > 0 else None
            if value is None or len(value) > PENDING_VALUE_MAX:
                self.tr.set_many(items)
                continue
            self.tr.set(self.keys.pending_key(oid), value)
            due = due or merge_due(oid, merge_at)
        self._deferred.clear()
        return due

    def save_state(self, oid: uuid.UUID, state: ObjectState) -> None:
        """Write the state record (nothing when it did not change)."""
        self._states[oid] = state
        data = state.to_bytes()
        if self._saved.get(oid) == data:
            return
        key = self.keys.state(oid)
        if self._saved.get(oid, b"x"):  # something (or, unknown, maybe something) is stored: replace it
            self.tr.clear_range(key, key + b"\xff")
        for i, start in enumerate(range(0, len(data), STATE_CHUNK_BYTES)):
            self.tr.set(key + fdbtuple.pack((i,)), data[start:start + STATE_CHUNK_BYTES])
        self._saved[oid] = data

    def known_new(self, oid: uuid.UUID, state: ObjectState) -> None:
        """A freshly created object: nothing stored yet (skips reads); its index entries wait
        for :meth:`finish`."""
        self._states[oid] = state
        self._saved[oid] = b""
        if self.index:
            self._deferred[oid] = {}

    # -- entries ----------------------------------------------------------------------------
    def _entry_key(self, oid: uuid.UUID, column: str | None, scope: Scope, kind: str, key: str) -> bytes:
        return b"".join((self.keys.entry_prefix(oid), pack_element(column), pack_element(scope.value),
                         pack_element(kind), pack_element(key)))

    def entries(self, oid: uuid.UUID, column: str | None | type = ..., ) -> Iterator[Entry]:
        """Every entry of the object (``column=...``), or of the object itself (None) / one column."""
        base = self.keys.entry_prefix(oid)
        if column is ...:
            begin, end = base + b"\x00", base + b"\xff"
        else:
            begin = base + pack_element(column)  # type: ignore[arg-type]
            end = begin + b"\xff"
        plen = len(base)
        for kv in self.tr.get_range(begin, end):
            col, scope, kind, key = fdbtuple.unpack(kv.key[plen:])
            yield Entry(col, Scope(scope), kind, key, kv.value.decode("utf-8"))

    def get(self, oid: uuid.UUID, column: str | None, scope: Scope, kind: str, key: str) -> str | None:
        raw = self.tr.get(self._entry_key(oid, column, scope, kind, key))
        return raw.decode("utf-8") if raw is not None else None

    def put(self, oid: uuid.UUID, entry: Entry, *, fresh: bool = False, history: bool = True,
            source: str | None = None) -> bool:
        """Write ``entry``; returns whether anything changed. ``fresh``: known absent."""
        state = self.state(oid)
        old = None if fresh else self.get(oid, entry.column, entry.scope, entry.kind, entry.key)
        if old is not None and old == entry.value:
            return False
        if old is not None and state is not None and state.indexed:
            self._unindex_entry(oid, state, Entry(entry.column, entry.scope, entry.kind, entry.key, old))
        self.tr.set(self._entry_key(oid, entry.column, entry.scope, entry.kind, entry.key), entry.value.encode("utf-8"))
        if state is not None and state.indexed:
            self._index_entry(oid, state, entry)
        if history:
            self._history(oid, "tag" if entry.kind == TAG else "set", entry, old,
                          None if entry.kind == TAG else entry.value, source=source)
        return True

    def delete(self, oid: uuid.UUID, column: str | None, scope: Scope, kind: str, key: str, *,
               history: bool = True, source: str | None = None) -> bool:
        old = self.get(oid, column, scope, kind, key)
        if old is None:
            return False
        entry = Entry(column, scope, kind, key, old)
        state = self.state(oid)
        if state is not None and state.indexed:
            self._unindex_entry(oid, state, entry)
        self.tr.clear(self._entry_key(oid, column, scope, kind, key))
        if history:
            self._history(oid, "untag" if kind == TAG else "unset", entry, None if kind == TAG else old, None,
                          source=source)
        return True

    # -- index ------------------------------------------------------------------------------
    @staticmethod
    def _entry_type(state: ObjectState, entry: Entry) -> ObjectType:
        return ObjectType.COLUMN if entry.column is not None else state.type

    def _index_keys(self, oid: uuid.UUID, state: ObjectState, entry: Entry) -> Iterator[tuple[str, bytes]]:
        """(field, index key) of each index entry of ``entry``; none when the index is off."""
        if not self.index:
            return
        keys = self.keys
        tail = keys.index_tail(self._entry_type(state, entry), entry.scope, oid) + pack_element(entry.column) + \
            pack_element(entry.key)
        for fld, term in entry.index_terms():
            yield fld, keys.index_head(fld, term) + tail

    def _set_index(self, oid: uuid.UUID, key: bytes, value: bytes) -> None:
        deferred = self._deferred.get(oid)
        if deferred is None:
            self.tr.set(key, value)
        else:
            deferred[key] = value

    def _clear_index(self, oid: uuid.UUID, key: bytes) -> None:
        deferred = self._deferred.get(oid)
        if deferred is None:
            self.tr.clear(key)
        else:
            deferred.pop(key, None)

    def _index_entry(self, oid: uuid.UUID, state: ObjectState, entry: Entry) -> None:
        for fld, key in self._index_keys(oid, state, entry):
            self._set_index(oid, key, index_value(fld, state.name, entry.value))

    def _unindex_entry(self, oid: uuid.UUID, state: ObjectState, entry: Entry) -> None:
        for _, key in self._index_keys(oid, state, entry):
            self._clear_index(oid, key)

    def set_comment(self, oid: uuid.UUID, state: ObjectState, column: str | None, old: str | None,
                    new: str | None, *, history: bool) -> None:
        """A comment in the metastore record changed (``state`` already updated by the caller
        or about to be): its index entries follow, and the history says so."""
        if old == new:
            return
        if state.indexed:
            if old is not None:
                self._unindex_entry(oid, state, Entry(column, Scope.USER, PROPERTY, COMMENT, old))
            if new is not None:
                self._index_entry(oid, state, Entry(column, Scope.USER, PROPERTY, COMMENT, new))
        if history:
            self._history(oid, "set" if new is not None else "unset",
                          Entry(column, Scope.USER, PROPERTY, COMMENT, new or ""), old, new)

    def index_field(self, oid: uuid.UUID, state: ObjectState, path: str) -> None:
        self.index_fields(oid, state, (path,))

    def index_fields(self, oid: uuid.UUID, state: ObjectState, paths: Iterable[str]) -> None:
        """The ``f`` entries of schema fields: ``(f, term, TYPE, SYSTEM, oid, path, "") ->
        (name,)`` per term of each path (:func:`field_terms`)."""
        if not self.index:
            return
        head = self.keys.index_head
        tail = self.keys.index_tail(state.type, Scope.SYSTEM, oid)
        value = index_value(F_FIELD, state.name, "")
        writes = []
        for path in paths:
            end = tail + pack_element(path) + EMPTY_ELEMENT
            writes.extend((head(F_FIELD, term) + end, value) for term in field_terms(path))
        deferred = self._deferred.get(oid)
        if deferred is not None:
            deferred.update(writes)
            return
        writes.sort()  # in key order: the engine inserts neighbouring keys cheaper
        self.tr.set_many(writes)

    def unindex_field(self, oid: uuid.UUID, state: ObjectState, path: str) -> None:
        if not self.index:
            return
        end = self.keys.index_tail(state.type, Scope.SYSTEM, oid) + pack_element(path) + EMPTY_ELEMENT
        for term in field_terms(path):
            self._clear_index(oid, self.keys.index_head(F_FIELD, term) + end)

    def set_indexed(self, oid: uuid.UUID, indexed: bool) -> None:
        """Remove (drop) or restore (undrop) every index entry of the object."""
        state = self.state(oid, unindexing=not indexed)
        if state is None or state.indexed == indexed:
            return
        state.indexed = True  # so _index_entry / _unindex_entry compute the same keys
        for entry in [*self.entries(oid), *state.comment_entries()]:
            (self._index_entry if indexed else self._unindex_entry)(oid, state, entry)
        if indexed:
            self.index_fields(oid, state, state.fields)
        else:
            for path in state.fields:
                self.unindex_field(oid, state, path)
        state.indexed = indexed
        self.save_state(oid, state)

    def rename(self, oid: uuid.UUID, name: str) -> None:
        """The object's name changed: index values carry it, rewrite them."""
        state = self.state(oid)
        if state is None or state.name == name:
            return
        state.name = name
        if state.indexed:
            for entry in [*self.entries(oid), *state.comment_entries()]:
                self._index_entry(oid, state, entry)
            self.index_fields(oid, state, state.fields)
        self.save_state(oid, state)

    def purge(self, oid: uuid.UUID) -> None:
        """Everything of the object: index entries, entries, state, history."""
        state = self.state(oid)
        if state is not None and state.indexed:
            self.set_indexed(oid, False)
        self.tr.clear_range(*self.keys.obj(oid).range())
        self._states[oid] = None
        self._saved[oid] = b""

    # -- history ----------------------------------------------------------------------------
    def _history(self, oid: uuid.UUID, action: str, entry: Entry, old: str | None, new: str | None, *,
                 source: str | None = None) -> None:
        change = MetadataChange(dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
                                + dt.timedelta(microseconds=self.now_micros), self.user, action, entry.scope,
                                entry.key, entry.column, old, new, source or self.source)
        key = versionstamped_key(self.keys.history_prefix(oid), self._history_seq)
        self._history_seq += 1
        self.tr.set_versionstamped_key(key, json.dumps(change.to_json(), separators=(",", ":"),
                                                       ensure_ascii=False).encode())
