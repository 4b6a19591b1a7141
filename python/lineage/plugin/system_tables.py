"""The lineage extension's system tables: ``<catalog>.system.runs``, ``dataset_access``, ``column_lineage``,
``table_lineage`` and ``usage`` (registered through :mod:`ushas_catalog.extensions`; the catalog's own system
tables are :mod:`ushas_catalog.sql_tables.system_tables`). They read the lineage store's indexes directly, in
key order, resuming after the last key: a dataset filter reads that dataset's key range, a time filter a time
range where the index is ordered by time. Who may read them: SELECT on the project
(``ushas_catalog.spark.authorization.PROJECT_TABLES``)."""
from __future__ import annotations

import uuid
from typing import Any, Iterator

import fdb.tuple as fdbtuple

from ushas_catalog.errors import NotFound
from ushas_catalog.keyspace.layout import (DATA_LINEAGE, DATASET_NAME, DATASET_USAGE, LINEAGE_DATASET_ACCESS,
                                           LINEAGE_DOWNSTREAM, LINEAGE_RUN_BY_TIME, LINEAGE_RUN_EDGE,
                                           LINEAGE_UPSTREAM, RUN_ID, TABLE_ID, TIME, USAGE_PROFILE)
from ushas_catalog.records.store import split_elements
from ushas_catalog.sql_tables.columns import STRINGS, Column, TableDef
from ushas_catalog.sql_tables.context import ReadContext, table_id_text
from ushas_catalog.sql_tables.filters import Filters

from ..model import EdgeSubtype
from ..readable import readable

Rows = Iterator[tuple[Any, Any]]


# ---- lineage: the store's indexes, read in key order ----------------------------------------------------
def _index(ctx: ReadContext, directory: Any, parent: Any = DATA_LINEAGE) -> Any:
    return ctx.ms.layout.project(ctx.ms.project).add(parent).add(directory)


def _ds_base(base: Any, key: Any) -> Any:
    return base.add(TABLE_ID, key) if isinstance(key, uuid.UUID) else base.add(DATASET_NAME, key)


def _keys(ctx: ReadContext, ranges: list[tuple[bytes, bytes]], token: Any) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) in the ranges, from after the key ``token`` (hex)."""
    after = bytes.fromhex(token) + b"\x00" if isinstance(token, str) else b""

    def scan(tr: Any) -> Iterator[tuple[bytes, bytes]]:
        for b, e in ranges:
            if after and e <= after:
                continue
            for kv in tr.get_range(max(b, after), e, snapshot=True):
                yield kv.key, kv.value

    return ctx.ms.run(scan)


def _dataset_ranges(ctx: ReadContext, base: Any, names: list[Any] | None) -> list[tuple[bytes, bytes]] | None:
    """The key ranges of the named datasets under ``base`` (None: the whole index)."""
    if names is None:
        return None
    out = []
    for name in names:
        key = ctx.dataset_key(str(name))
        if key is not None:
            out.append(_ds_base(base, key).range())
    return sorted(out)


def _suffix(base_key: bytes, key: bytes) -> tuple[Any, ...]:
    """A key of a per-dataset index under its index prefix: (dataset key, rest...)."""
    return fdbtuple.unpack(key[len(base_key):])


def _run_cache(ctx: ReadContext) -> Any:
    runs: dict[Any, Any] = {}

    def run(rid: Any) -> Any:
        if rid not in runs:
            try:
                runs[rid] = ctx.lineage.get_run(rid)
            except NotFound:
                runs[rid] = None
        return runs[rid]

    return run


def _edges(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """Column edges: by target (``LineageUpstream``), or by source (``LineageDownstream``) when only
    the source is filtered."""
    up, down = _index(ctx, LINEAGE_UPSTREAM), _index(ctx, LINEAGE_DOWNSTREAM)
    targets, sources = filters.equal("target_table"), filters.equal("source_table")
    by_source = targets is None and sources is not None
    base = down if by_source else up
    ranges = _dataset_ranges(ctx, base, sources if by_source else targets) or []
    if (sources if by_source else targets) is None:
        ranges = [base.range()]
    tb = filters.bounds("time")
    prefix = base.key()
    plen = len(prefix)
    memo: dict[bytes, Any] = {}  # raw element -> value: datasets, columns, runs repeat

    def element(raw: bytes) -> Any:
        v = memo.get(raw, memo)
        if v is memo:
            v = memo[raw] = fdbtuple.unpack(raw)[0]
        return v

    for k, _ in _keys(ctx, ranges, token):
        raw = split_elements(k[plen:])[-7:]
        ds, col, t, rid, other, ocol, sub = map(element, raw)
        if not tb.contains(t * 1000):
            yield k.hex(), None
            continue
        tgt, tcol, src, scol = (other, ocol, ds, col) if by_source else (ds, col, other, ocol)
        # the packed (target, column, source, column, subtype): the edge's key in its run
        packed = (raw[4] + raw[5] + raw[0] + raw[1] if by_source else raw[0] + raw[1] + raw[4] + raw[5]) + raw[6]
        yield k.hex(), (tgt, tcol, src, scol, sub, rid, t, packed)


def _column_lineage(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    run_edges = _index(ctx, LINEAGE_RUN_EDGE)
    want_expression = ctx.columns is None or "expression" in ctx.columns
    expressions: dict[Any, dict[bytes, str]] = {}  # run id -> its edges' expressions

    def expression(rid: Any, packed: bytes) -> str | None:
        if rid not in expressions:  # a run's edges in one range read: one per run, not one per edge
            base = run_edges.add(RUN_ID, rid)
            plen = len(base.key())

            def read(tr: Any) -> dict[bytes, str]:  # by the packed key suffix: nothing decoded
                return {kv.key[plen:]: readable(kv.value.decode())
                        for kv in tr.get_range(*base.range(), snapshot=True)}

            expressions[rid] = ctx.ms.run(read)
        return expressions[rid].get(packed)

    kinds = {s.value: s.kind.value for s in EdgeSubtype}
    for tok, e in _edges(ctx, filters, token):
        if e is None:
            yield tok, None
            continue
        tgt, tcol, src, scol, sub, rid, t, packed = e
        yield tok, [ctx.dataset_name(tgt), tcol, ctx.dataset_name(src), scol, table_id_text(tgt),
                    table_id_text(src), kinds.get(sub), sub,
                    expression(rid, packed) if want_expression else None, str(rid), t * 1000]


def _table_lineage(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """Table edges: the column edges of each run grouped by (target, source, subtype), runs in time
    order (``LineageRunByTime``: a ``time`` filter is a range)."""
    by_time = _index(ctx, LINEAGE_RUN_BY_TIME)
    run_edges = _index(ctx, LINEAGE_RUN_EDGE)
    tb = filters.bounds("time")
    lo = tb.lo // 1000 if isinstance(tb.lo, int) else 0
    hi = tb.hi // 1000 + 1 if isinstance(tb.hi, int) else 2 ** 62
    ranges = [(by_time.add(TIME, lo).key(), by_time.add(TIME, hi).key())]
    for k, _ in _keys(ctx, ranges, token):
        t, rid = fdbtuple.unpack(k[len(by_time.key()):])[-2:]
        base = run_edges.add(RUN_ID, rid)
        groups: dict[tuple[Any, Any, str], list[str]] = {}

        def read(tr: Any, base: Any = base) -> list[bytes]:
            return [kv.key for kv in tr.get_range(*base.range(), snapshot=True)]

        for ek in ctx.ms.run(read):
            tgt, tcol, src, scol, sub = fdbtuple.unpack(ek[len(base.key()):])
            groups.setdefault((tgt, src, sub), []).append(f"{tcol} <- {scol}" if tcol else f"* <- {scol}")
        rows = [[ctx.dataset_name(tgt), ctx.dataset_name(src), table_id_text(tgt), table_id_text(src),
                 EdgeSubtype(sub).kind.value, sub, cols, str(rid), t * 1000]
                for (tgt, src, sub), cols in groups.items()]
        if not rows:
            yield k.hex(), None
        for row in rows[:-1]:
            yield None, row  # a run's edges end a page together: only the last carries the token
        if rows:
            yield k.hex(), rows[-1]


def _runs(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    by_time = _index(ctx, LINEAGE_RUN_BY_TIME)
    tb = filters.bounds("end_time")
    lo = tb.lo // 1000 if isinstance(tb.lo, int) else 0
    hi = tb.hi // 1000 + 1 if isinstance(tb.hi, int) else 2 ** 62
    ids = filters.equal("run_id")
    run = _run_cache(ctx)
    for k, _ in _keys(ctx, [(by_time.add(TIME, lo).key(), by_time.add(TIME, hi).key())], token):
        t, rid = fdbtuple.unpack(k[len(by_time.key()):])[-2:]
        if ids is not None and str(rid) not in ids:
            yield k.hex(), None
            continue
        r = run(rid)
        if r is None:
            yield k.hex(), None
            continue
        yield k.hex(), [str(r.run_id), r.application_id, r.application_name, r.execution_id, r.job, r.kind,
                        r.status.value, r.user, r.start_ms * 1000, r.end_ms * 1000, r.sql, r.error, r.table_level,
                        r.session_id, r.client_kind, r.client_type, r.stream_query_id, r.batch_id]


def _dataset_access(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    base = _index(ctx, LINEAGE_DATASET_ACCESS)
    names = filters.equal("dataset")
    ranges = _dataset_ranges(ctx, base, names) if names is not None else [base.range()]
    tb = filters.bounds("time")
    run = _run_cache(ctx)
    prefix = base.key()
    for k, _ in _keys(ctx, ranges or [], token):
        ds, t, rid, access = _suffix(prefix, k)[-4:]
        r = run(rid)
        if not tb.contains(t * 1000) or r is None:
            yield k.hex(), None
            continue
        yield k.hex(), [ctx.dataset_name(ds), table_id_text(ds), access, t * 1000, str(rid), r.user, r.job, r.kind,
                        r.status.value, r.start_ms * 1000, r.end_ms * 1000]


def _usage(ctx: ReadContext, filters: Filters, token: Any) -> Rows:
    """Reads and writes per dataset and day (``DatasetUsage`` counters: one key per day and counter)."""
    base = _index(ctx, DATASET_USAGE, USAGE_PROFILE)
    names = filters.equal("dataset")
    ranges = _dataset_ranges(ctx, base, names) if names is not None else [base.range()]
    prefix = base.key()
    db = filters.bounds("day")
    current: tuple[Any, Any] | None = None
    counts: dict[str, int] = {}
    last = b""

    def row() -> list[Any]:
        assert current is not None
        ds, day = current
        return [ctx.dataset_name(ds), table_id_text(ds), day, counts.get("reads", 0), counts.get("writes", 0)]

    for k, v in _keys(ctx, ranges or [], token):
        ds, day, counter = _suffix(prefix, k)[-3:]
        if current is not None and (ds, day) != current:
            yield last.hex(), (row() if db.contains(current[1]) else None)
            counts = {}
        current = (ds, day)
        counts[counter] = int.from_bytes(v, "little", signed=True)
        last = k
    if current is not None:
        yield last.hex(), (row() if db.contains(current[1]) else None)


def _day_column(doc: str) -> Column:
    return Column("day", "date", doc)


TABLES: dict[str, TableDef] = {t.name: t for t in (
    TableDef("runs", (Column("run_id", "string"), Column("application_id", "string"),
                      Column("application_name", "string"), Column("execution_id", "long"), Column("job", "string"),
                      Column("kind", "string"), Column("status", "string"), Column("user", "string"),
                      Column("start_time", "timestamp"), Column("end_time", "timestamp"), Column("sql", "string"),
                      Column("error", "string"), Column("table_level", "string"),
                      Column("session_id", "string", "the Spark Connect / JDBC session that ran it"),
                      Column("client_kind", "string", "connect, jdbc, or null for a classic session"),
                      Column("client_type", "string", "the client's type as it reported it"),
                      Column("stream_query_id", "string", "a streaming micro-batch's query id"),
                      Column("batch_id", "long", "a streaming micro-batch's batch id")),
             "one row per captured run, by end time (``ushas lineage run``)", _runs, "end_time (bounds)"),
    TableDef("dataset_access", (Column("dataset", "string"), Column("table_id", "string"),
                                Column("access", "string", "read or write"), Column("time", "timestamp"),
                                Column("run_id", "string"), Column("user", "string"), Column("job", "string"),
                                Column("kind", "string"), Column("status", "string"),
                                Column("run_start", "timestamp"), Column("run_end", "timestamp")),
             "who read or wrote what, when, with the run (``ushas lineage runs``)", _dataset_access,
             "dataset (=, IN)"),
    TableDef("column_lineage", (Column("target_table", "string"), Column("target_column", "string"),
                                Column("source_table", "string"), Column("source_column", "string"),
                                Column("target_table_id", "string"), Column("source_table_id", "string"),
                                Column("type", "string", "DIRECT or INDIRECT"), Column("subtype", "string"),
                                Column("expression", "string"), Column("run_id", "string"),
                                Column("time", "timestamp")),
             "one row per captured column edge (``ushas lineage upstream / downstream / impact``)",
             _column_lineage, "target_table, or source_table (=, IN)"),
    TableDef("table_lineage", (Column("target_table", "string"), Column("source_table", "string"),
                               Column("target_table_id", "string"), Column("source_table_id", "string"),
                               Column("type", "string"), Column("subtype", "string"),
                               Column("columns", STRINGS, "the column edges: target <- source"),
                               Column("run_id", "string"), Column("time", "timestamp")),
             "one row per (run, target table, source table, subtype)", _table_lineage, "time (bounds)"),
    TableDef("usage", (Column("dataset", "string"), Column("table_id", "string"),
                       _day_column("UTC day"), Column("reads", "long"), Column("writes", "long")),
             "reads and writes of each dataset per day, counted when runs are stored", _usage, "dataset (=, IN)"),
)}

__all__ = ["TABLES"]
