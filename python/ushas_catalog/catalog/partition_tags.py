"""Partition tags: user tags on partitions (a city partition tagged ``province=MH``), partitions
selected and summarised by tag.

Where they live: in the partition's own record (``Partition.tags``: listed with it, kept in its
history, restored with it) and in the table's index ``TablePartitionTag`` — one empty key per
(tag key, tag value, partition values...) — so that the partitions of one tag are one range read,
whatever the size of the table. The index changes in the transaction of every partition change:

- ``set_partition_tags`` / ``unset_partition_tags`` (this module): one commit of the table
  (``SET PARTITION TAGS`` / ``UNSET PARTITION TAGS``: a TableCommit / TableHistory entry and an
  ALTERED change-feed event whose detail names the tags and the partitions);
- an overwrite of a partition (``replace_partitions``: INSERT OVERWRITE, dynamic overwrite,
  TRUNCATE, ALTER PARTITION) keeps its tags (the new record takes the old record's tags);
- a partition dropped (``drop_partitions``, an overwrite that drops it, ``restore_table``) loses its
  entries through :func:`index_commit`, the commit hook (the commit's added / dropped partitions);
  ``REPLACE TABLE`` clears the index; purge clears the table's keys; a bulk drop (in chunks) removes
  the entries with the keys (:func:`unindex`) and readers skip partitions it has marked dropped.

Reads never trust the index alone: each partition found is loaded and kept only when it is visible
and still carries the tag (what a bulk operation left in flight never shows).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import fdb.tuple as fdbtuple

from .. import records as rec
from ..data.pruning import UNKNOWN, Pruning, element
from ..errors import InvalidArgument, NoSuchPartition
from ..keyspace.layout import TABLE_PARTITION_TAG
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..model.names import NameLike, TableName
from ..model.partition_tags import MAX_TAGS, TagChange, TagStat, check_tags, is_spec, where_filter
from ..model.partitions import Partition, PartitionScheme
from ..records.store import Joined, RecordStore
from .base import MetastoreBase
from .commits import Mutation
from .partitions import partition_out
from .resolver import ResolvedTable
from .visibility import as_of
from .values import check_expected, copy_record, expect_version

#: the most partitions one set / unset call changes (one transaction: 10 MB, 5 s)
MAX_PARTITIONS_PER_CALL = 10_000
#: the most bytes of partition records one set / unset call rewrites (FoundationDB: 10 MB per transaction)
MAX_REWRITE_BYTES = 6_000_000
#: index entries read per transaction by the listings and statistics
TAG_BATCH = 5_000
#: partition specs named in a tag commit's detail (the rest are counted)
DETAIL_SPECS = 100


def index_path(table: KeySpacePath) -> KeySpacePath:
    return table.add(TABLE_PARTITION_TAG)


def _entry(prefix: bytes, k: str, v: str, key: tuple[Any, ...]) -> bytes:
    return prefix + fdbtuple.pack((k, v, *key))


def index_commit(tr: Transaction, m: Mutation) -> None:
    """The commit hook: the index follows the partitions a commit added and dropped (an overwritten
    partition is in both: its entries stay); ``partitions_cleared`` clears it."""
    if m.kind != "table":
        return
    prefix = index_path(m.path).key()
    if m.partitions_cleared:
        tr.clear_range(prefix + b"\x00", prefix + b"\xff")
    if not m.added_partitions and not m.dropped_partitions:
        return
    new = {key: dict(r.tags) for key, r in m.added_partitions if r.tags}
    old = {key: dict(r.tags) for key, r in m.dropped_partitions if r.tags}
    for key, tags in old.items():
        now = new.get(key, {})
        for k, v in tags.items():
            if now.get(k) != v:
                tr.clear(_entry(prefix, k, v, key))
    for key, tags in new.items():
        before = old.get(key, {})
        for k, v in tags.items():
            if before.get(k) != v:
                tr.set(_entry(prefix, k, v, key), b"")


def entry_suffix(k: str, v: str, key: tuple[Any, ...]) -> bytes:
    """An index entry's key after the table's index prefix (what ``tag_entries(after=...)`` takes)."""
    return fdbtuple.pack((k, v, *key))


def unindex(tr: Transaction, table: KeySpacePath, key: tuple[Any, ...], tags: Mapping[str, str]) -> None:
    """Remove the index entries of a partition whose key is being removed (bulk drops)."""
    prefix = index_path(table).key()
    for k, v in tags.items():
        tr.clear(_entry(prefix, k, v, key))


def check_filter(scheme: PartitionScheme, f: Any) -> None:
    """Every column a filter names is a partition column and every value converts to it exactly, so
    the filter decides each partition (never "cannot tell")."""
    if f is None:
        return
    op = f.get("op")
    if op in ("and", "or"):
        for c in f.get("children") or ():
            check_filter(scheme, c)
        return
    if op == "not":
        check_filter(scheme, f.get("child"))
        return
    if op in ("true", "false"):
        return
    name = f.get("column")
    columns = {c.name.lower(): c for c in scheme.columns}
    column = columns.get(str(name).lower())
    if column is None:
        raise InvalidArgument(f"{name!r} is not a partition column (the partition columns are "
                              f"{', '.join(scheme.names)})")
    if op in ("is_null", "is_not_null"):
        return
    for v in (f.get("values") or ()) if op == "in" else (f.get("value"),):
        if element(column, v) is UNKNOWN:
            raise InvalidArgument(f"{v!r} is not a value of partition column {column.name} ({column.kind}) that "
                                  f"the catalog can compare exactly")


@dataclass(frozen=True)
class _Selected:
    key: tuple[Any, ...]
    record: rec.Partition
    size: int  # its serialized size (over the value limit: stored split over several keys)


class PartitionTagOps(MetastoreBase):
    """Tags on partitions: set, unset (each one transaction and one commit), partitions by tag, and
    per-tag statistics, read from the index."""

    def _select(self, tr: Transaction, t: ResolvedTable, scheme: PartitionScheme,
                where: str | Mapping[str, Any] | None) -> list[_Selected]:
        """The visible partitions ``where`` names (InvalidArgument when there are more than
        :data:`MAX_PARTITIONS_PER_CALL`): only the key ranges its leading columns allow are read."""
        f = where_filter(where)
        check_filter(scheme, f)
        pruning = Pruning(scheme, f)
        store = t.partitions(scheme)
        version = t.ref.version
        out: list[_Selected] = []
        parse = rec.Partition.FromString
        for b, e in pruning.key_ranges():
            for elements, data in store.scan_raw(tr, store.prefix + b, store.prefix + e):
                key = tuple(fdbtuple.unpack(b"".join(elements)))
                if not pruning.keep(key):
                    continue
                r = as_of(parse(data), version)
                if r is None:
                    continue
                out.append(_Selected(key, r, len(data) if not isinstance(data, Joined) else store.chunk_bytes + 1))
                if len(out) > MAX_PARTITIONS_PER_CALL:
                    raise InvalidArgument(f"{where!r} names more than {MAX_PARTITIONS_PER_CALL} partitions of "
                                          f"{t.name}: tag them in several calls with narrower specs or filters",
                                          table=str(t.name))
        return out

    def _retag(self, name: NameLike, where: str | Mapping[str, Any] | None, operation: str,
               change: Any, detail: dict[str, Any], expected_version: int | None) -> TagChange:
        tn = TableName.parse(name)
        check_expected(expected_version)

        def fn(tr: Transaction) -> TagChange:
            t = self.resolver.table(tr, tn)
            expect_version("table", tn, t.ref.version, expected_version)
            scheme = self.resolver.scheme(tr, t)
            if not scheme:
                raise InvalidArgument(f"table {tn} is not partitioned", table=str(tn))
            selected = self._select(tr, t, scheme, where)
            if not selected and is_spec(where):  # a spec names partitions that exist (a filter may match none)
                shown = where if isinstance(where, str) else "/".join(f"{k}={v}" for k, v in dict(where or {}).items())
                raise NoSuchPartition(f"no partition {shown} in {tn}", table=str(tn))
            store = t.partitions(scheme)
            prefix = index_path(t.path).key()
            changed: list[tuple[Any, ...]] = []
            written = 0
            for s in selected:
                old = dict(s.record.tags)
                new = change(old)
                if new == old:
                    continue
                if len(new) > MAX_TAGS:
                    raise InvalidArgument(f"partition {scheme.spec(s.key)} of {tn} would carry {len(new)} tags; "
                                          f"at most {MAX_TAGS}", table=str(tn))
                r = copy_record(s.record)
                r.tags.clear()
                r.tags.update(new)
                data = r.SerializeToString(deterministic=True)
                written += len(data)
                if written > MAX_REWRITE_BYTES:  # the transaction is not committed: nothing is written
                    raise InvalidArgument(f"the partitions {where!r} names hold more than {MAX_REWRITE_BYTES:,} bytes of "
                                          f"records (their file lists) to rewrite in one transaction: tag them in "
                                          f"several calls with narrower specs or filters", table=str(tn))
                if s.size <= store.chunk_bytes and len(data) <= store.chunk_bytes:
                    tr.set(store.key(s.key), data)  # one key before and after: no clear of split chunks
                else:
                    store.save(tr, s.key, r)
                for k, v in old.items():
                    if new.get(k) != v:
                        tr.clear(_entry(prefix, k, v, s.key))
                for k, v in new.items():
                    if old.get(k) != v:
                        tr.set(_entry(prefix, k, v, s.key), b"")
                changed.append(s.key)
            if not changed:
                return TagChange(None, len(selected), 0)
            v = t.ref.version + 1
            specs = [scheme.spec(k) for k in changed[:DETAIL_SPECS]]
            self._commit(tr, Mutation("table", str(tn), t.path, operation, v, copy_record(t.ref),
                                      changed=("TablePartition",),
                                      detail={**detail, "where": where if isinstance(where, str) else
                                              (dict(where) if where is not None else None),
                                              "partitions": len(changed), "specs": specs},
                                      partition_scheme=scheme))
            return TagChange(v, len(selected), len(changed))

        return self.run(fn)

    def set_partition_tags(self, name: NameLike, where: str | Mapping[str, Any] | None,
                           tags: Mapping[str, Any], *, expected_version: int | None = None) -> TagChange:
        """Add ``tags`` (key -> value; an existing key takes the new value) to the partitions ``where``
        names: a spec (``"dt=2024-01-01/city=Pune"`` or a mapping, leading columns or not), a filter
        (``"city IN ('Pune', 'Nagpur') AND dt >= '2024-01-01'"``) or ``None`` / ``''`` (every
        partition); see :mod:`ushas_catalog.model.partition_tags`. One transaction, one commit
        (none when nothing changed); at most :data:`MAX_PARTITIONS_PER_CALL` partitions."""
        wanted = check_tags(tags)
        return self._retag(name, where, "SET PARTITION TAGS", lambda old: {**old, **wanted},
                           {"tags": wanted}, expected_version)

    def unset_partition_tags(self, name: NameLike, where: str | Mapping[str, Any] | None,
                             keys: Any, *, expected_version: int | None = None) -> TagChange:
        """Remove the tags ``keys`` (an iterable of keys, or a mapping whose keys are taken) from the
        partitions ``where`` names (a key a partition does not carry is ignored)."""
        if isinstance(keys, str):
            keys = [keys]
        gone = set(check_tags({k: "" for k in keys}, values=False))
        return self._retag(name, where, "UNSET PARTITION TAGS",
                           lambda old: {k: v for k, v in old.items() if k not in gone},
                           {"keys": sorted(gone)}, expected_version)

    # ---- reads ---------------------------------------------------------------------------------------
    def tag_entries(self, name: NameLike, key: str | None = None, value: str | None = None, *,
                    after: bytes | None = None
                    ) -> tuple[PartitionScheme, Iterator[tuple[str, str, tuple[Any, ...], rec.Partition]]]:
        """(tag key, tag value, partition key, record) of the partitions carrying tag ``key``
        (``value``: that value only; no ``key``: every tag), in (key, value, partition) order, read
        from the index in batches of :data:`TAG_BATCH` entries (one transaction each); only the
        index keys of the tag and the records they name are read. The table is resolved (errors
        raised) when this is called. ``after``: resume after this index entry (:func:`entry_suffix`)."""
        tn = TableName.parse(name)
        if value is not None and key is None:
            raise InvalidArgument("a tag value needs its tag key")

        def first(tr: Transaction) -> tuple[ResolvedTable, PartitionScheme, bytes, bytes, bytes]:
            t = self.resolver.table(tr, tn)
            scheme = self.resolver.scheme(tr, t)
            if not scheme:
                raise InvalidArgument(f"table {tn} is not partitioned", table=str(tn))
            base = index_path(t.path).key()
            narrow = tuple(x for x in (key, value) if x is not None)
            begin = base + fdbtuple.pack(narrow) if narrow else base + b"\x00"
            end = begin + b"\xff" if narrow else base + b"\xff"
            if after is not None:
                begin = max(begin, base + after + b"\x00")
            return t, scheme, base, begin, end

        t, scheme, base, begin, end = self.run(first)
        version = t.ref.version
        store = t.partitions(scheme)
        plen = len(base)

        def batch(tr: Transaction, at: bytes) -> tuple[list[Any], bytes | None]:
            entries = [kv.key for kv in tr.get_range(at, end, limit=TAG_BATCH)]
            found: list[tuple[str, str, tuple[Any, ...], bytes]] = []
            for ikey in entries:
                k, v, *pk = fdbtuple.unpack(ikey[plen:])
                found.append((k, v, tuple(pk), fdbtuple.pack(tuple(pk))))
            records = _records(tr, store, sorted({packed for *_, packed in found}))
            parsed: dict[bytes, rec.Partition] = {}
            out: list[Any] = []
            for k, v, pk, packed in found:
                r = parsed.get(packed)
                if r is None:
                    data = records.get(packed)
                    if data is None:
                        continue
                    r = parsed[packed] = rec.Partition.FromString(data)
                shown = as_of(r, version)
                if shown is None or shown.tags.get(k) != v:
                    continue
                out.append((k, v, pk, shown))
            return out, (entries[-1] + b"\x00" if len(entries) == TAG_BATCH else None)

        def stream() -> Iterator[tuple[str, str, tuple[Any, ...], rec.Partition]]:
            at: bytes | None = begin
            while at is not None:
                start = at
                items, at = self.run(lambda tr: batch(tr, start))
                yield from items

        return scheme, stream()

    def partitions_by_tag(self, name: NameLike, key: str, value: str | None = None,
                          limit: int | None = None) -> list[Partition]:
        """The partitions carrying tag ``key`` (= ``value`` when given), in partition order for one
        value (by value, then partition, for any value): read from the tag index, not a scan."""
        if not isinstance(key, str) or not key:
            raise InvalidArgument("a tag key is needed")
        scheme, items = self.tag_entries(name, key, value)
        out: list[Partition] = []
        seen: set[tuple[Any, ...]] = set()
        for _, _, pk, r in items:
            if pk in seen:
                continue
            seen.add(pk)
            out.append(partition_out(scheme, pk, r))
            if limit is not None and len(out) >= limit:
                break
        return out

    def partition_tag_stats(self, name: NameLike, key: str | None = None) -> list[TagStat]:
        """Per tag (key, value) of the table (of tag ``key`` only when given): how many partitions
        carry it, their bytes and rows; read from the tag index and the tagged partitions' records."""
        _, items = self.tag_entries(name, key)
        return stats_of(items)


#: keys read at once while the partitions an index batch names lie close together
WINDOW = 64


def _records(tr: Transaction, store: RecordStore[rec.Partition], packed: list[bytes]) -> dict[bytes, bytes]:
    """The serialized records at these sorted packed partition keys (absent: not stored). While they lie
    close together (at least half of a window of :data:`WINDOW` keys wanted), windows of the partition
    range are read; once a window is sparse, one read per partition (a record split over several keys is
    joined by :meth:`RecordStore.load`)."""
    wanted = set(packed)
    out: dict[bytes, bytes] = {}
    plen, n, i = len(store.prefix), len(packed), 0
    end = store.prefix + packed[-1] + b"\xff" if packed else b""
    while i < n:
        rows = list(tr.get_range(store.prefix + packed[i], end, limit=WINDOW))
        hits = 0
        for kv in rows:
            k = kv.key[plen:]
            if k in wanted:
                out[k] = kv.value
                hits += 1
        last = rows[-1].key[plen:] if len(rows) == WINDOW else b"\xff"
        while i < n and packed[i] <= last:
            i += 1
        if 2 * hits < len(rows):
            break
    for p in packed:
        if p not in out:  # after a sparse window, or a record split over several keys
            r = store.load(tr, tuple(fdbtuple.unpack(p)))
            if r is not None:
                out[p] = r.SerializeToString()
    return out


def stats_of(items: Iterator[tuple[str, str, tuple[Any, ...], rec.Partition]]) -> list[TagStat]:
    """Per (tag key, value): partitions, bytes, rows, from (key, value, partition key, record) in order."""
    out: list[TagStat] = []
    current: tuple[str, str] | None = None
    n = size = rows = size_known = rows_known = 0
    for k, v, _, r in items:
        if (k, v) != current:
            if current is not None:
                out.append(TagStat(current[0], current[1], n, size, rows, size_known, rows_known))
            current, n, size, rows, size_known, rows_known = (k, v), 0, 0, 0, 0, 0
        n += 1
        if r.HasField("bytes"):
            size += r.bytes
            size_known += 1
        if r.HasField("rows"):
            rows += r.rows
            rows_known += 1
    if current is not None:
        out.append(TagStat(current[0], current[1], n, size, rows, size_known, rows_known))
    return out


__all__ = ["PartitionTagOps", "MAX_PARTITIONS_PER_CALL", "TAG_BATCH", "index_commit", "unindex", "entry_suffix", "index_path",
           "check_filter", "stats_of"]
