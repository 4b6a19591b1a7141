"""Rebuild tables (versions, partitions, dropped or not) from the change feed alone, and
read the same from the store, so tests can compare them."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Iterable

from ushas_catalog.changes.feed import Change
from ushas_catalog.keyspace.tree import KeySpacePath
from ushas_catalog.kv import Transaction
from ushas_catalog.keyspace.layout import Layout
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import DatabaseName
from ushas_catalog.model.partitions import PartitionScheme
from ushas_catalog.records.store import RecordStore
from ushas_catalog.model.schema import struct_from_proto

Spec = tuple[tuple[str, str], ...]


@dataclass
class TableState:
    name: str
    version: int
    dropped: bool = False
    partitions: dict[Spec, str | None] = field(default_factory=dict)


def _spec(spec: dict[str, str]) -> Spec:
    return tuple(sorted(spec.items()))


def replay(events: Iterable[Change]) -> dict[str, TableState]:
    """Tables by id, as the feed says they are. Asserts every committed change makes the
    next version of its table (nothing lost, nothing repeated)."""
    tables: dict[str, TableState] = {}
    for e in events:
        if e.kind != "table":
            continue
        t = tables.get(e.object_id)
        if e.change == "CREATED":
            assert t is None and e.version == 1, e
            tables[e.object_id] = TableState(e.name, 1)
            continue
        assert t is not None, f"event for an unknown table: {e}"
        if e.change == "PURGED" or (e.change == "DROPPED" and e.purged):
            assert e.version == t.version, (e, t)
            del tables[e.object_id]
            continue
        assert e.version == t.version + 1, f"version gap or repeat: {t.version} then {e}"
        t.version = e.version
        t.name = e.name
        if e.partitions_cleared:
            t.partitions.clear()
        for p in e.dropped:
            del t.partitions[_spec(p.spec)]
        for p in e.added:
            assert _spec(p.spec) not in t.partitions, (e, p)
            t.partitions[_spec(p.spec)] = p.location
        if e.change == "DROPPED":
            t.dropped = True
        elif e.change == "UNDROPPED":
            t.dropped = False
    return tables


def store_state(ms: Metastore, database: str) -> dict[str, TableState]:
    """Tables (live and dropped) of ``database`` as the store has them."""
    out: dict[str, TableState] = {}
    for r in ms.list_tables(database):
        name = f"{database}.{r.name}"
        info = ms.get_table(name)
        parts = {_spec(p.spec): p.location for p in ms.list_partitions(name)} if info.partition_columns else {}
        out[info.id] = TableState(name, info.version, False, parts)
    dropped = ms.list_dropped_tables(database)
    if dropped:
        db_path = ms.run(lambda tr: ms.resolver.database(tr, DatabaseName.parse(database), load=False).path)
        for d in dropped:
            path = Layout.table(db_path, uuid.UUID(d.id))
            version, parts = ms.run(lambda tr: _raw_table(tr, path))
            out[d.id] = TableState(d.name, version, True, parts)
    return out


def _raw_table(tr: Transaction, path: KeySpacePath) -> tuple[int, dict[Spec, str | None]]:
    """Version and partitions of a table by its id path (a dropped table has no name)."""
    ref = RecordStore.at(path.add("TableReference")).load(tr, ())
    schema = RecordStore.at(path.add("TableSchema")).load(tr, ())
    scheme = PartitionScheme.of(struct_from_proto(schema.schema), schema.partition_columns)
    parts: dict[Spec, str | None] = {}
    if scheme:
        for r in RecordStore.at(path.add("TablePartition"), scheme.names).scan(tr):
            parts[_spec(scheme.spec(r.key))] = r.record.location or None
    return ref.version, parts


def assert_feed_matches_store(ms: Metastore, database: str) -> dict[str, TableState]:
    rebuilt = {i: t for i, t in replay(ms.changes()).items()}
    stored = store_state(ms, database)
    assert set(rebuilt) == set(stored), (set(rebuilt) ^ set(stored))
    for i, s in stored.items():
        r = rebuilt[i]
        assert (r.name, r.version, r.dropped) == (s.name, s.version, s.dropped), (i, r, s)
        assert r.partitions == s.partitions, (i, r.name)
    return stored
