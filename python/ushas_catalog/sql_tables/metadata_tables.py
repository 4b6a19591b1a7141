"""The metadata tables of a table: ``<catalog>.<db>.<table>.<name>`` (Iceberg's spelling).

============ ======================================================= ====================================
table        one row per                                              a range read (not a scan) for
============ ======================================================= ====================================
history      commit: version, time, user, operation, detail           ``version`` and ``time`` bounds
schemas      schema id: the columns it had, the first version with it
partitions   partition: its values as typed columns, location, files, the partition columns (= < <= > >=
             bytes, rows, added at                                    IN on the leading ones)
files        data file a write recorded, with its partition values    the partition columns
changes      change-feed event of the table
lineage      column edge into (``upstream``) or out of the table      ``time`` bounds
============ ======================================================= ====================================
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import fdb.tuple as fdbtuple

from .. import records as rec
from ..catalog.visibility import as_of, bulk_pending
from ..data.pruning import Pruning
from ..model.objects import micros_to_datetime
from ..model.partitions import PartitionColumn, PartitionScheme
from ..keyspace.layout import TABLE_PURGE_MARK, TABLE_TAG
from ..records.store import RecordStore, split_elements
from .columns import STRING_MAP, STRINGS, Column, TableDef, array_of, micros
from .context import ReadContext, table_id_text
from .filters import Filters
from . import partition_tags as partition_tag_tables

#: (token after the row, row); a row of None is skipped (the token still advances)
Rows = Iterator[tuple[Any, Any]]


# ---- partitions and files: the ordered partition keys, pruned by the filters -------------------------
def _column_type(c: PartitionColumn) -> Any:
    return "string" if c.kind == "binary" else c.data_type.json_value()


def _value(c: PartitionColumn, element: Any) -> Any:
    """A partition key element as the row value of its column (dates: days, timestamps: micros)."""
    if element is None:
        return None
    if c.kind in ("decimal", "binary"):
        return c.text(element)
    return element


def _scheme(ctx: ReadContext) -> tuple[int, PartitionScheme, Any, Any]:
    ms, tn = ctx.ms, ctx.table

    def fn(tr: Any) -> tuple[int, PartitionScheme, Any, Any]:
        t = ms.resolver.table(tr, tn)
        scheme = ms.resolver.scheme(tr, t)
        return t.ref.version, scheme, (t.partitions(scheme) if scheme else None), t

    return ms.run(fn)


def partition_columns(ctx: ReadContext) -> tuple[Column, ...]:
    _, scheme, _, _ = _scheme(ctx)
    return tuple(Column(c.name, _column_type(c), "partition value") for c in scheme.columns)


def partition_records(ctx: ReadContext, filters: Filters, token: Any, *, records: bool = True
                      ) -> Iterator[tuple[str, tuple[Any, ...], Any]]:
    """(token, key, record) of the table's partitions the filters can select, in key order, from after
    ``token`` (the hex of the last packed key): only the key ranges of the pruned partition columns are
    read (:class:`~ushas_catalog.data.pruning.Pruning`). ``records=False``: the keys only (record None),
    without parsing a record unless a bulk operation is pending (what SHOW PARTITIONS does too)."""
    version, scheme, store, _ = _scheme(ctx)
    if store is None:
        return
    pruning = Pruning(scheme, filters.as_filter())
    after = bytes.fromhex(token) + b"\xff" if token else b""
    memo: dict[bytes, Any] = {}
    parse = rec.Partition.FromString
    plen, arity = len(store.prefix), store.arity

    def keys_only(tr: Any, begin: bytes, end: bytes) -> Iterator[tuple[list[bytes], None]]:
        last: list[bytes] | None = None
        for kv in tr.get_range(begin, end):
            elements = split_elements(kv.key[plen:])
            if len(elements) != arity:  # a record split over several keys: (pk..., chunk index)
                elements = elements[:arity]
                if elements == last:
                    continue
            last = elements
            yield elements, None

    def scan(tr: Any) -> Iterator[tuple[str, tuple[Any, ...], Any]]:
        parse_all = records or bulk_pending(tr, store)
        for b, e in pruning.key_ranges():
            if after and e <= after:
                continue
            begin = max(b, after) if after else b
            items = (store.scan_raw(tr, store.prefix + begin, store.prefix + e) if parse_all
                     else keys_only(tr, store.prefix + begin, store.prefix + e))
            for elements, data in items:
                key = []
                for element in elements:
                    if element[0] == 0x02 and element.find(b"\x00") == len(element) - 1:
                        key.append(element[1:-1].decode())  # the common case: a string without NUL
                        continue
                    v = memo.get(element, memo)
                    if v is memo:
                        v = memo[element] = fdbtuple.unpack(element)[0]
                    key.append(v)
                k = tuple(key)
                if filters and not pruning.keep(k):
                    continue
                if data is None:
                    yield b"".join(elements).hex(), k, None
                    continue
                r = as_of(parse(data), version)
                if r is None:
                    continue
                yield b"".join(elements).hex(), k, (r if records else None)

    yield from ctx.ms.run(lambda tr: scan(tr))


def _refuse_filtered(ctx: ReadContext, what: str) -> None:
    """A reader under the table's row filter sees no partitions, counts nor files (they describe hidden rows)."""
    from ..catalog.row_policies import refuse_partition_metadata

    refuse_partition_metadata(ctx.ms, ctx.ms.get_table(ctx.table), what)


def _partitions(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    _, scheme, store, _ = _scheme(ctx)
    if store is None:  # unpartitioned: one row, the table itself
        if token is None:
            files = ctx.ms.table_data_files(ctx.table)  # checks SELECT
            _refuse_filtered(ctx, "the partitions metadata table")
            info = ctx.ms.get_table(ctx.table)
            props = info.properties
            size = props.get("totalSize")
            yield "end", [info.location, len(files) if files is not None else None,
                          int(size) if size and size.isdigit() else None, None, micros(info.created_at), {}, {}]
        return
    plain = all(c.kind not in ("decimal", "binary") for c in scheme.columns)
    cols = scheme.columns
    wanted = ctx.columns
    records = wanted is None or bool(wanted & {f.name for f in PARTITION_FIELDS})
    blank = [None] * len(PARTITION_FIELDS)
    first = True
    for tok, key, r in partition_records(ctx, filters, token, records=records):
        if first:  # after the read's own privilege check
            _refuse_filtered(ctx, "the partitions metadata table")
            first = False
        if r is None:
            yield tok, [*(key if plain else (_value(c, e) for c, e in zip(cols, key))), *blank]
            continue
        has = r.HasField
        yield tok, [*(key if plain else (_value(c, e) for c, e in zip(cols, key))), r.location or None,
                    r.files if has("files") else None, r.bytes if has("bytes") else None,
                    r.rows if has("rows") else None, r.created_at_micros,
                    dict(r.properties) if r.properties else {}, dict(r.tags) if r.tags else {}]


def _files(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    _, scheme, store, _ = _scheme(ctx)
    if store is None:
        if token is None:
            files = ctx.ms.table_data_files(ctx.table) or ()  # checks SELECT
            _refuse_filtered(ctx, "the files metadata table")
            for f in files:
                yield "end", [f.path, f.size, f.mtime * 1000, None]
        return
    first = True
    for tok, key, r in partition_records(ctx, filters, token):
        if first:  # after the read's own privilege check
            _refuse_filtered(ctx, "the files metadata table")
            first = False
        if not r.files_recorded:
            continue
        values = [_value(c, e) for c, e in zip(scheme.columns, key)]
        for f in r.data_files:
            yield tok, [*values, f.path, f.size, f.mtime * 1000, r.location or None]


# ---- history and schemas -------------------------------------------------------------------------
def _version_range(ctx: ReadContext, filters: Filters, t: Any, tr: Any) -> tuple[int, int]:
    """The versions the ``version`` and ``time`` filters allow: ``time`` bounds become versions by a
    binary search over the commits (commit times only go forward with versions)."""
    current = t.ref.version
    vb = filters.bounds("version")
    lo = max(1, vb.lo if isinstance(vb.lo, int) else 1)
    hi = min(current, vb.hi if isinstance(vb.hi, int) else current)
    tb = filters.bounds("time")
    if tb.lo is None and tb.hi is None:
        return lo, hi
    commits = t.store("TableCommit")

    def time_of(v: int) -> int:
        c = commits.load(tr, (v,))
        return c.committed_at_micros if c is not None else 0

    def first_at_or_after(m: int) -> int:  # the smallest version committed at or after m
        a, b = 1, current + 1
        while a < b:
            mid = (a + b) // 2
            if time_of(mid) >= m:
                b = mid
            else:
                a = mid + 1
        return a

    if isinstance(tb.lo, int):
        lo = max(lo, first_at_or_after(tb.lo))
    if isinstance(tb.hi, int):
        hi = min(hi, first_at_or_after(tb.hi + 1) - 1)
    return lo, hi


def _history(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    ms, tn = ctx.ms, ctx.table

    def read(tr: Any) -> list[tuple[Any, list[Any]]]:
        t = ms.resolver.table(tr, tn)
        lo, hi = _version_range(ctx, filters, t, tr)
        if isinstance(token, int):
            lo = max(lo, token + 1)
        if lo > hi:
            return []
        commits, entries = t.store("TableCommit"), t.store("TableHistory")
        # which versions a read AS OF still reads (catalog.time_travel): all but those a purge took files of
        mark = RecordStore.of(t.path, TABLE_PURGE_MARK).load(tr, ())
        tags: dict[int, list[str]] = {}
        for sr in RecordStore.of(t.path, TABLE_TAG).scan(tr):
            tags.setdefault(sr.record.version, []).append(sr.key[0])
        out = []
        for r in commits.scan(tr, commits.key((lo,)), commits.key((hi + 1,))):
            c = r.record
            h = entries.load(tr, (c.version,))
            readable = mark is None or c.version == t.ref.version or c.version in tags or \
                mark.through_micros <= c.committed_at_micros
            out.append((c.version, [c.version, c.committed_at_micros, c.user, c.operation,
                                    c.detail_json or "{}", h.schema_id if h is not None else None,
                                    list(h.changed) if h is not None else [], readable,
                                    sorted(tags.get(c.version, []))]))
        return out

    yield from ms.run(read)


_SCHEMA_COLUMN = {"type": "struct", "fields": [
    {"name": n, "type": ty, "nullable": True, "metadata": {}}
    for n, ty in (("name", "string"), ("type", "string"), ("nullable", "boolean"), ("comment", "string"))]}


def _schemas(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """One row per schema id, from the table's history (``ushas history`` reads the same)."""
    items = sorted(ctx.ms.history(ctx.table), key=lambda h: h.version)
    current = ctx.ms.get_table(ctx.table)
    seen: dict[int, int] = {}
    for h in items:
        if h.schema_id is not None and h.schema_id not in seen:
            seen[h.schema_id] = h.version
    if current.schema_id not in seen:
        seen[current.schema_id] = current.version
    for schema_id, version in sorted(seen.items()):
        if isinstance(token, int) and schema_id <= token:
            continue
        schema = current.schema if schema_id == current.schema_id else ctx.ms.get_table(ctx.table, as_of=version).schema
        cols = [[f.name, f.data_type.ddl(), f.nullable, f.comment] for f in schema.fields]
        yield schema_id, [schema_id, version, micros(_commit_time(items, version)), cols, schema.ddl(),
                          schema_id == current.schema_id]


def _commit_time(items: list[Any], version: int) -> Any:
    for h in items:
        if h.version == version:
            return h.committed_at
    return None


# ---- changes and lineage -------------------------------------------------------------------------------
def change_row(c: Any) -> list[Any]:
    return [c.cursor, c.change, c.kind, c.name, c.object_id, c.operation, c.version, c.user,
            micros(c.committed_at), [json.dumps(p.spec, sort_keys=True) for p in c.added],
            [json.dumps(p.spec, sort_keys=True) for p in c.dropped], json.dumps(c.detail, default=str)]


CHANGE_COLUMNS = (
    Column("cursor", "string", "resumes the change feed after this event (``ushas changes --since``)"),
    Column("change", "string", "CREATED, ALTERED, RENAMED, DROPPED, PARTITIONS_ADDED, ..."),
    Column("kind", "string", "catalog, database, table, view"),
    Column("name", "string"), Column("object_id", "string"),
    Column("operation", "string"), Column("version", "long"), Column("user", "string"),
    Column("time", "timestamp"),
    Column("added_partitions", STRINGS, "the specs (JSON) of the partitions added"),
    Column("dropped_partitions", STRINGS, "the specs (JSON) of the partitions dropped"),
    Column("detail", "string", "JSON"),
)


def change_rows(ctx: ReadContext, filters: Filters, token: Any, object_id: str | None = None) -> Rows:
    """Change-feed events after cursor ``token`` (``ushas changes``), of one object when given."""
    tb = filters.bounds("time")
    for c in ctx.ms.changes(since=token if isinstance(token, str) else None):
        if object_id is not None and c.object_id != object_id:
            yield c.cursor, None  # another object's event: skipped
            continue
        if isinstance(tb.hi, int) and micros(c.committed_at) > tb.hi:  # type: ignore[operator]
            return  # the feed is in commit order
        yield c.cursor, change_row(c)


def _changes(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    _, _, _, t = _scheme(ctx)
    yield from change_rows(ctx, filters, token, str(t.id))


def _lineage(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """Column edges into and out of the table (``ushas lineage upstream / downstream`` read them)."""
    key = ctx.dataset_key(str(ctx.table))
    if key is None:
        return
    tb = filters.bounds("time")
    since = tb.lo // 1000 if isinstance(tb.lo, int) else None
    until = tb.hi // 1000 if isinstance(tb.hi, int) else None
    store = ctx.lineage
    directions = filters.equal("direction")
    n = 0
    for direction in ("upstream", "downstream"):
        if directions is not None and direction not in directions:
            continue
        edges = (store.upstream_edges(key, None, since, until, all_columns=True) if direction == "upstream"
                 else store.downstream_edges(key, None, since, until, all_columns=True))
        for e in edges:
            n += 1
            if isinstance(token, int) and n <= token:
                continue
            mine, other, other_col = ((e.target_column, e.source, e.source_column) if direction == "upstream"
                                      else (e.source_column, e.target, e.target_column))
            yield n, [direction, mine, ctx.dataset_name(other), other_col, table_id_text(other), e.kind.value,
                      e.subtype.value, store.expression(e), str(e.run_id), e.time_ms * 1000]


PARTITION_FIELDS = (
    Column("location", "string"), Column("files", "long"), Column("bytes", "long"), Column("rows", "long"),
    Column("added_at", "timestamp", "when the partition was added"),
    Column("properties", STRING_MAP),
    Column("tags", STRING_MAP, "user tags (``set_partition_tags``)"),
)

TABLES: dict[str, TableDef] = {t.name: t for t in (
    TableDef("history", (
        Column("version", "long"), Column("time", "timestamp"), Column("user", "string"),
        Column("operation", "string"), Column("detail", "string", "JSON"),
        Column("schema_id", "long"), Column("changed", STRINGS, "what the commit changed"),
        Column("readable", "boolean", "whether VERSION AS OF it reads (false: a purge deleted its files)"),
        Column("tags", STRINGS, "the version's names (create_tag)")),
        "one row per commit of the table, oldest first (``ushas history``)", _history,
        "version, time (bounds)"),
    TableDef("schemas", (
        Column("schema_id", "long"), Column("first_version", "long"), Column("time", "timestamp"),
        Column("columns", array_of(_SCHEMA_COLUMN), "name, type, nullable, comment"),
        Column("ddl", "string"), Column("is_current", "boolean")),
        "one row per schema the table had", _schemas),
    TableDef("partitions", PARTITION_FIELDS,
             "one row per partition, in partition order; the partition columns come first with their types "
             "(``ushas partitions``)", _partitions, "the partition columns (=, <, <=, >, >=, IN)",
             leading=partition_columns),
    TableDef("files", (
        Column("path", "string"), Column("size", "long"), Column("modified", "timestamp"),
        Column("partition_location", "string")),
        "one row per data file the table's writes recorded (partitions added with a LOCATION, imported "
        "or repaired have no recorded files and no rows here)", _files, "the partition columns",
        leading=partition_columns),
    TableDef("changes", CHANGE_COLUMNS, "the table's change-feed events (``ushas changes``)", _changes),
    TableDef("lineage", (
        Column("direction", "string", "upstream (an edge into this table) or downstream (out of it)"),
        Column("column", "string", "this table's column (null: the whole table)"),
        Column("other_table", "string"), Column("other_column", "string"), Column("other_table_id", "string"),
        Column("type", "string", "DIRECT or INDIRECT"), Column("subtype", "string"),
        Column("expression", "string"), Column("run_id", "string"), Column("time", "timestamp")),
        "the column edges into and out of the table (``ushas lineage upstream / downstream``)", _lineage,
        "time (bounds), direction"),
)}

TABLES.update(partition_tag_tables.METADATA)  # partition_tags

__all__ = ["TABLES", "CHANGE_COLUMNS", "change_rows", "partition_records", "micros_to_datetime"]
