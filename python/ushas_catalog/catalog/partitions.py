"""Partitions: add, drop, replace (an overwrite), get, and streamed listings / scans / keys.

Listing partitions streams: up to :data:`PARTITION_BATCH` partitions are read per
transaction, so a listing longer than that spans several (snapshot) transactions.

Size (over 600 lines): ``replace_partitions`` is every write's commit (overwrite, append, the chunked
path's entry) and the listings share its record decoding; appends and chunks live in their own modules."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import fdb.tuple as fdbtuple

from .. import records as rec
from ..errors import InvalidArgument, LimitExceeded, NoSuchPartition, PartitionAlreadyExists
from ..kv import Transaction
from ..data.garbage import Garbage, data_file_records, record_garbage
from ..model.data_files import from_records
from ..model.names import NameLike, TableName
from ..model.objects import MutationResult, micros_to_datetime
from ..model.partition_tags import check_tags
from ..model.partitions import KeyDecoder, Partition, PartitionScheme
from ..records.store import RecordStore, split_elements
from .base import MetastoreBase
from .locations import A_PARTITION
from .registered_files import check_before_chunks, check_partitions
from .row_policies import refuse_row_removal
from .commits import Mutation
from .partition_appends import append_files, current_fields
from .visibility import TooBig, as_of, bulk_pending, visible, visible_raw
from .values import check_count, check_expected, check_props, check_str, copy_record, expect_version, now_micros


#: partitions read per transaction by ``list_partitions``
PARTITION_BATCH = 20_000


@dataclass(frozen=True)
class PartitionRange:
    """The partitions of a table that a partial spec selects: ``[begin, end)`` in ``store``, then
    ``filters`` (key position -> value) for the named columns that do not lead."""

    scheme: PartitionScheme
    store: RecordStore[rec.Partition]
    begin: bytes
    end: bytes
    filters: dict[int, Any]
    version: int = 0  # the table version read: partitions a bulk operation staged later are not shown
    pending: bool = False  # a bulk operation was in progress on the table


class PartitionOps(MetastoreBase):
    """Partitions of a table: each mutation one transaction, listings streamed in batches."""

    def _partition_input(self, p: Partition | Mapping[str, Any]) -> Partition:
        if isinstance(p, Partition):
            return p
        if isinstance(p, Mapping):
            return Partition(values=dict(p))
        raise InvalidArgument(f"a partition must be a spec mapping or a Partition, not {type(p).__name__}")

    def partition_record(self, p: Partition, location: str, now: int) -> rec.Partition:
        if not p.properties and p.files is None and p.bytes is None and p.rows is None \
                and p.data_files is None and not p.tags:  # ADD PARTITION
            return rec.Partition(location=check_str(location, "partition location") or "", created_at_micros=now)
        r = rec.Partition(location=check_str(location, "partition location") or "", created_at_micros=now,
                          properties=check_props(p.properties, "partition properties"),
                          tags=check_tags(p.tags) if p.tags else None)
        if p.data_files is not None:
            r.files_recorded = True
            r.data_files.extend(data_file_records(p.data_files))
        for what in ("files", "bytes", "rows"):
            value = check_count(getattr(p, what), what)
            if value is not None:
                setattr(r, what, value)
        return r

    def add_partitions(self, name: NameLike, partitions: Iterable[Partition | Mapping[str, Any]],
                       if_not_exists: bool = False, *, expected_version: int | None = None) -> MutationResult:
        """Add partitions in one transaction. Values are checked against the partition
        column types; without a location a partition goes to ``<table location>/k=v/...``."""
        tn = TableName.parse(name)
        check_expected(expected_version)
        items = [self._partition_input(p) for p in partitions]
        placed = [p.location for p in items if p.location]
        if placed and self.caller().authorization:  # a partition outside its table's directory: governed
            own = self.get_table(tn).location  # type: ignore[attr-defined]
            for where in placed:
                self.check_placement(where, tn, own=own, what=A_PARTITION)  # type: ignore[attr-defined]
        if self.big is not None and len(items) > self.big.BULK_AT:  # staged in chunks, published in one transaction
            if any(p.tags for p in items):
                raise InvalidArgument(f"tags on more than {self.big.BULK_AT} partitions added at once: add them, "
                                      f"then tag them with set_partition_tags", table=str(tn))
            check_before_chunks(self, tn, items, placement_checked=True)
            return self.big.add_partitions(self, tn, items, if_not_exists, expected_version)

        def fn(tr: Transaction) -> MutationResult:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            scheme = self.resolver.scheme(tr, t)
            _require_partitioned(tn, scheme)
            storage = t.store("TableStorage").load(tr, ())
            store, history = t.partitions(scheme), t.partition_history(scheme)
            v = t.ref.version + 1
            now = now_micros()
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
                new.append((packed, self.partition_record(p, location, now)))
                keys.append(key)
            check_partitions(self, tr, tn, storage.location, [(r, None) for _, r in new], placement_checked=True)
            added_change = rec.PartitionChange(action=rec.PartitionChange.ADDED)
            version_prefix = fdbtuple.pack((v,))
            for packed, record in new:
                store.save_packed(tr, packed, record, new=True)
                history.save_packed(tr, version_prefix + packed, added_change, new=True)
            added = len(new)
            if not added:
                return MutationResult(None, skipped=skipped)
            self._commit(tr, Mutation("table", str(tn), t.path, "ADD PARTITIONS", v, copy_record(t.ref),
                                      time_micros=now,
                                      changed=("TablePartition",), detail={"added": added, "skipped": skipped},
                                      partition_scheme=scheme,
                                      added_partitions=[(k, r) for k, (_, r) in zip(keys, new)]))
            return MutationResult(v, added=added, skipped=skipped)

        return self.run(fn)

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
        check_expected(expected_version)
        spec_list = [dict(s.values) if isinstance(s, Partition) else s for s in specs]
        big = self.big
        at = big.BULK_AT if big is not None else None
        if at is not None and big is not None and len(spec_list) > at:  # marked in chunks, published in one transaction
            self.run(lambda tr: refuse_row_removal(tr, self, self.resolver.table(tr, tn), tn, "DROP PARTITION"))
            return big.drop_partitions(self, tn, spec_list, if_exists, expected_version, release_data)

        def fn(tr: Transaction) -> MutationResult:
            t = self.resolver.table(tr, tn)
            refuse_row_removal(tr, self, t, tn, "DROP PARTITION")
            expect_version("table", tn, t.ref.version, expected_version)
            scheme = self.resolver.scheme(tr, t)
            _require_partitioned(tn, scheme)
            store, history = t.partitions(scheme), t.partition_history(scheme)
            v = t.ref.version + 1
            dropped: dict[tuple[Any, ...], rec.Partition] = {}
            missing = 0
            for spec in spec_list:
                found = list(islice(self._matching(tr, store, scheme, spec), None if at is None else at + 1))
                if not found:
                    if not if_exists:
                        raise NoSuchPartition(f"no partition {_show_spec(spec)} in {tn}", table=str(tn))
                    missing += 1
                dropped.update(found)
                if at is not None and len(dropped) > at:
                    raise TooBig()
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
                record_garbage(tr, self.project_path, t.id, str(tn), "DROP PARTITIONS", garbage, now_micros())
            self._commit(tr, Mutation("table", str(tn), t.path, "DROP PARTITIONS", v, copy_record(t.ref),
                                      changed=("TablePartition",), detail={"dropped": len(dropped)},
                                      partition_scheme=scheme, dropped_partitions=list(dropped.items())))
            return MutationResult(v, dropped=len(dropped), skipped=missing)

        try:
            return self.run(fn)
        except TooBig:
            assert big is not None
            return big.drop_partitions(self, tn, spec_list, if_exists, expected_version, release_data)

    def replace_partitions(self, name: NameLike, drop_specs: Iterable[Mapping[str, Any]],
                           add: Iterable[Partition | Mapping[str, Any]], *,
                           expected_version: int | None = None, garbage: Garbage | None = None,
                           operation: str = "REPLACE PARTITIONS", unchanged_since: int | None = None,
                           detail: Mapping[str, Any] | None = None, write_id: str | None = None,
                           deadline_ms: int | None = None, append: bool = False) -> MutationResult:
        """An overwrite in one transaction: partitions matching ``drop_specs`` (partial
        specs allowed; matching nothing is fine) go, ``add`` are written. A partition in
        both is REPLACED (one key, never duplicated). ``garbage``: the files this lets go, kept
        until purge (recorded in the same transaction). ``unchanged_since``: a table version;
        if a partition this replaces, drops or adds changed after it, :class:`WriteConflict`
        naming the partition (an overwrite planned from that version). ``write_id`` /
        ``deadline_ms``: a fenced write (:mod:`ushas_catalog.data.write_fence`): applied at most once
        (a retry answers the first result), never after it was aborted or after the deadline.
        ``append``: ``add`` are the files a write added (``data_files`` and counts of those files only): a
        partition that exists with recorded files gets them appended without rewriting its file list
        (:mod:`ushas_catalog.catalog.partition_appends`), one that does not exists is added;
        ``drop_specs`` must be empty."""
        tn = TableName.parse(name)
        check_expected(expected_version)
        drop_list = [dict(s.values) if isinstance(s, Partition) else s for s in drop_specs]
        items = [self._partition_input(p) for p in add]
        if append and (drop_list or any(p.data_files is None for p in items)):
            raise InvalidArgument("an append names the files it adds to each partition and drops nothing")
        big = self.big

        def in_chunks() -> MutationResult:  # staged in chunks, published in one transaction
            from ..data.write_fence import WriteFence

            assert big is not None
            check_before_chunks(self, tn, items, garbage)
            if drop_list:
                self.run(lambda tr: refuse_row_removal(tr, self, self.resolver.table(tr, tn), tn, operation))
            return big.replace_partitions(self, tn, drop_list, items, expected_version=expected_version,
                                          garbage=garbage, operation=operation, unchanged_since=unchanged_since,
                                          detail=dict(detail or {}), fence=WriteFence.of(write_id, deadline_ms),
                                          append=append)

        # inside one transaction for a whole Spark call (spark/one_transaction.py) it is tried in that
        # transaction: if it does not fit, the call runs again call by call, and then goes in chunks
        if big is not None and len(items) + len(drop_list) > big.WRITE_BULK_AT \
                and not getattr(self.db, "nested", False):
            return in_chunks()

        def fn(tr: Transaction) -> MutationResult:
            t = self.resolver.table(tr, tn)
            if drop_list:  # an overwrite, TRUNCATE, a partition's new location: its rows go
                refuse_row_removal(tr, self, t, tn, operation)
            expect_version("table", tn, t.ref.version, expected_version)
            scheme = self.resolver.scheme(tr, t)
            _require_partitioned(tn, scheme)
            storage = t.store("TableStorage").load(tr, ())
            store, history = t.partitions(scheme), t.partition_history(scheme)
            v = t.ref.version + 1
            now = now_micros()
            to_drop: dict[tuple[Any, ...], rec.Partition] = {}
            for spec in drop_list:
                to_drop.update(self._matching(tr, store, scheme, spec))
            new: dict[tuple[Any, ...], rec.Partition] = {}
            for p in items:
                key = scheme.key(p.values)
                if key in new:
                    raise InvalidArgument(f"partition {_spec_text(scheme, key)} is given twice")
                location = p.location if p.location is not None else _default_location(storage, scheme, key)
                new[key] = self.partition_record(p, location, now)
            if append:  # the partitions' fields, not their file lists
                existing = {key: current_fields(tr, store, key) for key in new}
            else:
                existing = {key: to_drop.pop(key, None) or store.load(tr, key) for key in new}  # reads first
            check_partitions(self, tr, tn, storage.location, [(r, existing[key]) for key, r in new.items()], garbage,
                             to_drop.values())
            if unchanged_since is not None:
                _check_unchanged(tr, tn, scheme, history, unchanged_since, t.ref.version,
                                 set(new) | set(to_drop))
            added = replaced = 0
            gone: list[tuple[tuple[Any, ...], rec.Partition]] = []
            for key, r in new.items():
                old = existing[key]
                if append and old is not None and not visible(old, t.ref.version):
                    old = existing[key] = store.load(tr, key)  # replaced whole below: all of it
                if append and old is not None and visible(old, t.ref.version):
                    new[key] = append_files(tr, store, history, v, key, old, r) or old
                    gone.append((key, old))
                    replaced += 1
                    continue
                if old is None:
                    store.save(tr, key, r, new=True)
                    history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.ADDED), new=True)
                    added += 1
                else:
                    for tag, value in old.tags.items():  # an overwrite keeps the partition's tags
                        if tag not in r.tags:
                            r.tags[tag] = value
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
            self._commit(tr, Mutation("table", str(tn), t.path, operation, v, copy_record(t.ref),
                                      time_micros=now, changed=("TablePartition",),
                                      detail={"added": added, "replaced": replaced, "dropped": len(to_drop),
                                              **dict(detail or {})},
                                      partition_scheme=scheme, added_partitions=list(new.items()),
                                      dropped_partitions=gone + list(to_drop.items())))
            return MutationResult(v, added=added, dropped=len(to_drop), replaced=replaced)

        try:
            return self._fenced(write_id, deadline_ms, tn, fn, lambda r: (r.to_json(), r.version),
                                lambda a: MutationResult(a.get("version"), added=a.get("added", 0),
                                                         dropped=a.get("dropped", 0),
                                                         replaced=a.get("replaced", 0)))
        except LimitExceeded as e:  # did not fit one transaction (nothing of it applied): in chunks
            if big is None or getattr(self.db, "nested", False) or e.limit not in ("transaction_seconds",
                                                                                   "transaction_bytes"):
                raise
            return in_chunks()

    def get_partition(self, name: NameLike, spec: Mapping[str, Any]) -> Partition:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> Partition:
            t = self.resolver.table(tr, tn)
            scheme = self.resolver.scheme(tr, t)
            _require_partitioned(tn, scheme)
            key = scheme.key(spec)
            r = t.partitions(scheme).load(tr, key)
            r = None if r is None else as_of(r, t.ref.version)
            if r is None:
                raise NoSuchPartition(f"no partition {_spec_text(scheme, key)} in {tn}", table=str(tn))
            return _partition_out(scheme, key, r)

        return self.run(fn)

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

        def first(tr: Transaction) -> tuple[PartitionRange, list[Any]]:
            r = self._partition_range(tr, tn, prefix)
            return r, list(islice(r.store.scan_raw(tr, r.begin, r.end), PARTITION_BATCH))

        r, batch = self.run(first)
        return self._stream_partitions(r.scheme, r.store, r.end, r.filters, batch, limit, r.version)

    def _partition_range(self, tr: Transaction, tn: TableName, prefix: Mapping[str, Any] | None) -> PartitionRange:
        """Where the partitions of ``tn`` matching the partial spec ``prefix`` are: the key range its
        leading columns narrow to, and the filters its other columns leave."""
        t = self.resolver.table(tr, tn)
        scheme = self.resolver.scheme(tr, t)
        _require_partitioned(tn, scheme)
        lead, filters = scheme.selection(prefix)
        store = t.partitions(scheme)
        begin, end = store.prefix_range(lead)
        return PartitionRange(scheme, store, begin, end, filters, t.ref.version, bool(t.ref.pending_operations))

    def _stream_partitions(self, scheme: PartitionScheme, store: RecordStore[rec.Partition], end: bytes,
                           filters: dict[int, Any], batch: list[tuple[list[bytes], bytes]],
                           limit: int | None, version: int) -> Iterator[Partition]:
        decoder = KeyDecoder(scheme)
        times: dict[int, dt.datetime] = {}
        parse = rec.Partition.FromString
        remaining = limit
        while True:
            for elements, data in batch:
                key, values, spec = decoder.decode(elements)
                if filters and not all(key[i] == e for i, e in filters.items()):
                    continue
                shown = as_of(parse(data), version)  # a bulk operation's: staged, or its replaced record
                if shown is None:
                    continue
                r = shown
                if remaining is not None:
                    if remaining <= 0:
                        return
                    remaining -= 1
                created = times.get(r.created_at_micros)
                if created is None:
                    created = times[r.created_at_micros] = micros_to_datetime(r.created_at_micros)
                yield Partition(values, r.location or None, r.files if r.HasField("files") else None,
                                r.bytes if r.HasField("bytes") else None, r.rows if r.HasField("rows") else None,
                                dict(r.properties) if r.properties else {}, created, spec,
                                from_records(r.data_files) if r.files_recorded else None,
                                dict(r.tags) if r.tags else {})
            if len(batch) < PARTITION_BATCH:
                return
            begin = store.prefix + b"".join(batch[-1][0]) + b"\xff"
            batch = self.run(lambda tr: list(islice(store.scan_raw(tr, begin, end), PARTITION_BATCH)))

    def scan_partitions(self, name: NameLike,
                        ranges: Callable[[PartitionScheme], Sequence[tuple[bytes, bytes]]] | None = None
                        ) -> tuple[PartitionScheme, Iterator[tuple[tuple[Any, ...], rec.Partition]]]:
        """The stored key (tuple elements) and record of each partition whose key falls in the ranges
        ``ranges(scheme)`` gives (packed partition keys relative to the table's partition subspace,
        sorted and disjoint: see :class:`ushas_catalog.data.pruning.Pruning`; None: every partition), in
        partition order, without building :class:`Partition` values: the read path's hot loop. Only
        keys inside the ranges are read, so the cost follows the partitions selected, not the table's
        size. The table is resolved (and errors raised) when this is called; the ranges are read in
        batches of up to :data:`PARTITION_BATCH` records, one transaction each."""
        tn = TableName.parse(name)

        bounds: list[tuple[bytes, bytes]] = []
        store: RecordStore[rec.Partition] | None = None
        version = 0  # the table version read: what bulk operations staged later stays hidden

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
            nonlocal store, version
            t = self.resolver.table(tr, tn)
            version = t.ref.version
            scheme = self.resolver.scheme(tr, t)
            _require_partitioned(tn, scheme)
            store = t.partitions(scheme)
            bounds[:] = [(store.prefix + b, store.prefix + e)
                         for b, e in (ranges(scheme) if ranges else [(b"", b"\xff")])]
            return scheme, read(tr, 0, None)

        scheme, head = self.run(first)

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
                    r = as_of(parse(data), version)
                    if r is None:
                        continue
                    yield tuple(key), r
                if index >= len(bounds):
                    return
                i, b = index, begin
                batch, index, begin = self.run(lambda tr: read(tr, i, b))

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

        version, pending = 0, False  # pinned by the first batch (bulk operations: see visibility)

        def batch(tr: Transaction, store: RecordStore[rec.Partition], begin: bytes, end: bytes,
                  filters: dict[int, Any], last: tuple[Any, ...] | None
                  ) -> tuple[list[tuple[Any, ...]], bytes | None, tuple[Any, ...] | None]:
            """One batch: its keys, the key to continue from (None at the end), the last key seen."""
            plen, arity = len(store.prefix), store.arity
            check = pending or bulk_pending(tr, store)
            out: list[tuple[Any, ...]] = []
            count, last_raw = 0, b""
            for kv in tr.get_range(begin, end, limit=PARTITION_BATCH):
                count += 1
                last_raw = kv.key
                suffix = kv.key[plen:]
                if arity == 1 and suffix[0] == 0x02 and suffix.find(b"\x00") == len(suffix) - 1:
                    if check and not visible_raw(kv.value, version):
                        continue
                    out.append((suffix[1:-1].decode(),))  # the common case: one string without NUL
                    last = None
                    continue
                elements = split_elements(suffix)
                if len(elements) != arity:  # a record split over several keys: (pk..., chunk index)
                    elements = elements[:arity]
                elif check and not visible_raw(kv.value, version):
                    continue
                key = tuple(map(element, elements))
                if key == last:
                    continue
                last = key
                if filters and not all(key[i] == e for i, e in filters.items()):
                    continue
                out.append(key)
            return out, (last_raw + b"\x00" if count == PARTITION_BATCH else None), last

        def first(tr: Transaction) -> tuple[PartitionRange,
                                            tuple[list[tuple[Any, ...]], bytes | None, tuple[Any, ...] | None]]:
            nonlocal version, pending
            r = self._partition_range(tr, tn, prefix)
            version, pending = r.version, r.pending
            return r, batch(tr, r.store, r.begin, r.end, r.filters, None)

        r, (keys, more, last) = self.run(first)
        while more is not None:
            begin, seen = more, last
            found, more, last = self.run(lambda tr: batch(tr, r.store, begin, r.end, r.filters, seen))
            keys.extend(found)
        return r.scheme, keys


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


def partition_out(scheme: PartitionScheme, key: tuple[Any, ...], r: rec.Partition) -> Partition:
    """A stored partition as the :class:`Partition` the operations return."""
    return Partition(values=scheme.values(key), location=r.location or None,
                     files=r.files if r.HasField("files") else None,
                     bytes=r.bytes if r.HasField("bytes") else None,
                     rows=r.rows if r.HasField("rows") else None,
                     properties=dict(r.properties), created_at=micros_to_datetime(r.created_at_micros),
                     spec=scheme.spec(key), data_files=from_records(r.data_files) if r.files_recorded else None,
                     tags=dict(r.tags))


_partition_out = partition_out


def _check_unchanged(tr: Transaction, tn: TableName, scheme: PartitionScheme, history: RecordStore[Any],
                     since: int, current: int, keys: set[tuple[Any, ...]]) -> None:
    """:class:`WriteConflict` if a commit after version ``since`` changed a partition of ``keys``."""
    from ..errors import WriteConflict

    if not keys or current <= since:
        return
    for sr in history.scan(tr, *history.prefix_range((since + 1,))[:1], history.prefix_range((current,))[1]):
        key = tuple(sr.key[1:])
        if key in keys:
            raise WriteConflict(f"partition {_spec_text(scheme, key)} of {tn} was changed by another write "
                                f"(version {sr.key[0]}) after this overwrite started (version {since}): "
                                f"the overwrite was not committed", table=str(tn), partition=scheme.spec(key))
