"""The caching catalog: settings, the bridge-side cache and the coherent lookups behind the shim.

The cache is a decorator: :class:`Answers` reads answers from the records, :class:`CachedAnswers`
wraps it with the bridge cache, and :func:`answers` picks one from the cache settings, so no lookup
branches on whether caching is on.

Coherence comes from versions, not from expiry. Every mutation of a table (partitions included,
and writes into unpartitioned tables through :meth:`Metastore.touch_table`) or of a view bumps the
version of its head record (``TableReference`` / ``ViewRecord``) in :meth:`Metastore._commit`, and
names map to ids that a re-created object never reuses. So a lookup of a cached object is ONE
transaction reading the name chain (catalog -> database -> relation entry) and the head record:

* same id and version as the caller holds -> ``{"unchanged": true}`` (the JVM keeps its ``Table``,
  its partition identifiers and Spark's cached relation with its file listing);
* otherwise the fresh answer, in the same transaction, built from the bridge cache when only
  partitions (or data) changed since the version it holds, else decoded from the records.

The cache's own expiry (``cache.ttl``, idle time) and size (``cache.size``) only bound memory.
SQLite has no watches, so the version read is the mechanism on both engines.
"""
from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Hashable, Mapping, TypeVar

from ..catalog.infos import policies_of, table_info, view_info
from ..catalog.resolver import ResolvedTable
from ..catalog.row_policies import main_policies
from ..errors import InvalidArgument, NoSuchTable
from ..governance.principals import principals
from ..model.row_policies import ColumnMask, RowFilter, for_reader, without_masked_statistics
from ..keyspace.layout import TABLE_HISTORY
from ..model.names import TableName
from .. import records as rec
from ..records.store import RecordStore
from .tables import SparkCtx, table_answer, view_answer

V = TypeVar("V")

#: subspaces whose change leaves a table's Spark answer (schema, storage, properties) as it was
_ANSWER_NEUTRAL: frozenset[str] = frozenset({"TablePartition"})
#: more commits than this since the cached answer: decode the records rather than read their history
MAX_HISTORY_GAP = 64

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """``"300"`` / ``"300s"`` / ``"5min"`` / ``"500ms"`` / ``"2h"`` -> seconds (a bare number is seconds)."""
    m = _DURATION.match(str(text))
    if not m:
        raise InvalidArgument(f"cache.ttl {text!r} is not a duration (e.g. 300s, 10min, 500ms; a bare number "
                              f"is seconds)")
    return float(m.group(1)) * _UNIT_SECONDS[(m.group(2) or "s").lower()]


def _parse_bool(key: str, text: str) -> bool:
    value = str(text).strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise InvalidArgument(f"{key} must be true or false, not {text!r}")


@dataclass(frozen=True)
class CacheSettings:
    """``spark.sql.catalog.<name>.cache.*``: ``enabled`` (default true), ``ttl`` (idle expiry,
    default 10min; 0 = no expiry), ``size`` (entries, default 1000), ``check`` (default true:
    every lookup of a cached entry checks its version; false = serve it until it expires, NOT
    coherent with other processes)."""

    enabled: bool = True
    ttl_seconds: float = 600.0
    size: int = 1000
    check: bool = True

    @classmethod
    def of(cls, options: Mapping[str, Any] | None) -> "CacheSettings":
        """From the catalog options (keys with or without the ``cache.`` prefix, any case)."""
        opts = {str(k).lower().removeprefix("cache."): v for k, v in (options or {}).items()}
        known = {"enabled", "ttl", "size", "check"}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise InvalidArgument(f"unknown cache option(s) {', '.join('cache.' + u for u in unknown)}: "
                                  f"use cache.enabled, cache.ttl, cache.size, cache.check")
        d = cls()
        enabled = _parse_bool("cache.enabled", opts["enabled"]) if "enabled" in opts else d.enabled
        ttl = parse_duration(opts["ttl"]) if "ttl" in opts else d.ttl_seconds
        try:
            size = int(str(opts["size"]).strip()) if "size" in opts else d.size
        except ValueError:
            raise InvalidArgument(f"cache.size must be a number of entries, not {opts['size']!r}") from None
        if size < 1:
            raise InvalidArgument(f"cache.size must be at least 1, not {size} (cache.enabled=false turns it off)")
        check = _parse_bool("cache.check", opts["check"]) if "check" in opts else d.check
        return cls(enabled, ttl, size, check)

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "ttl_ms": int(self.ttl_seconds * 1000), "size": self.size,
                "check": self.check}


@dataclass
class _Slot(Generic[V]):
    value: V
    used: float


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0


class LruTtlCache(Generic[V]):
    """A bounded map: least recently used entries go beyond ``size``; an entry unused for
    ``ttl_seconds`` (> 0) is gone. Thread-safe. ``clock`` is injectable for tests."""

    def __init__(self, size: int, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._slots: OrderedDict[Hashable, _Slot[V]] = OrderedDict()
        self.stats = CacheStats()

    def get(self, key: Hashable) -> V | None:
        now = self._clock()
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                self.stats.misses += 1
                return None
            if self.ttl_seconds > 0 and now - slot.used > self.ttl_seconds:
                del self._slots[key]
                self.stats.expirations += 1
                self.stats.misses += 1
                return None
            slot.used = now
            self._slots.move_to_end(key)
            self.stats.hits += 1
            return slot.value

    def put(self, key: Hashable, value: V) -> None:
        now = self._clock()
        with self._lock:
            self._slots[key] = _Slot(value, now)
            self._slots.move_to_end(key)
            while len(self._slots) > self.size:
                self._slots.popitem(last=False)
                self.stats.evictions += 1

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._slots.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._slots.clear()

    def resize(self, size: int, ttl_seconds: float) -> None:
        with self._lock:
            self.size, self.ttl_seconds = size, ttl_seconds
            while len(self._slots) > self.size:
                self._slots.popitem(last=False)
                self.stats.evictions += 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)


@dataclass(frozen=True)
class Known:
    """What the caller (the JVM) holds for a name: the object's id and version, and for a table read
    through a row filter or masks the policy its relation applies (``reader_table``'s ``policy``)."""

    id: str
    version: int
    #: the table has a policy: the JVM's ``policy`` (JSON; ``null`` for a reader exempt from all of it)
    has_policy: bool = False
    policy: Any = None

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> "Known | None":
        if not value:
            return None
        has_policy = value.get("policy") is not None
        return cls(str(value["id"]), int(value["version"]), has_policy,
                   json.loads(value["policy"]) if has_policy else None)


@dataclass(frozen=True)
class _Answer:
    """A cached Spark answer of one object at one version."""

    version: int
    body: dict[str, Any]


@dataclass
class BridgeCache:
    """The bridge (Python) side: Spark answers of tables and views by id (with the version they
    describe) and full partition listings by table id (with their version). One per opened
    store, in :data:`ushas_catalog.spark.registry.REGISTRY`."""

    settings: CacheSettings = field(default_factory=CacheSettings)
    entries: LruTtlCache[_Answer] = field(init=False)

    def __post_init__(self) -> None:
        self.entries = LruTtlCache(self.settings.size, self.settings.ttl_seconds)

    def configure(self, settings: CacheSettings) -> None:
        if settings == self.settings:
            return
        self.settings = settings
        self.entries.resize(settings.size, settings.ttl_seconds)
        if not settings.enabled:
            self.entries.clear()

    def get(self, key: Hashable, version: int) -> dict[str, Any] | None:
        if not self.settings.enabled:
            return None
        hit = self.entries.get(key)
        return hit.body if hit is not None and hit.version == version else None

    def latest(self, key: Hashable) -> _Answer | None:
        return self.entries.get(key) if self.settings.enabled else None

    def put(self, key: Hashable, version: int, body: dict[str, Any]) -> None:
        if self.settings.enabled:
            self.entries.put(key, _Answer(version, body))


# ---- coherent lookups ----------------------------------------------------------------------------------
def _answer_unchanged_since(tr: Any, table_path: Any, since: int, now: int) -> bool:
    """True when every commit in (since, now] of a table changed only partitions or data (its
    ``TableHistory`` entries say which records each version replaced)."""
    if now <= since:
        return now == since
    if now - since > MAX_HISTORY_GAP:
        return False
    history = RecordStore.of(table_path, TABLE_HISTORY)
    seen = 0
    for r in history.scan(tr, history.key((since + 1,)), history.key((now + 1,))):
        seen += 1
        if not set(r.record.changed) <= _ANSWER_NEUTRAL:
            return False
    return seen == now - since


class Answers:
    """Where a lookup's Spark answers come from, inside the lookup's transaction: decoded from the
    records (this class). :class:`CachedAnswers` decorates it with the bridge cache."""

    def view(self, tr: Any, ctx: SparkCtx, name: TableName, oid: uuid.UUID, record: Any) -> dict[str, Any]:
        return view_answer(view_info(name, oid, record))

    def table(self, tr: Any, ctx: SparkCtx, name: TableName, oid: uuid.UUID, path: Any, ref: Any) -> dict[str, Any]:
        schema, storage, props = (RecordStore.at(path.add(sub)).load(tr, ())
                                  for sub in ("TableSchema", "TableStorage", "TableProperties"))
        assert schema is not None and storage is not None and props is not None  # a table always has them
        return table_answer(ctx, table_info(name, oid, ref, schema, storage, props))

    def partition_values(self, ms: Any, name: TableName, prefix: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        return [p.to_json()["values"] for p in ms.list_partitions(name, prefix=prefix or None)]

    def partition_listing(self, ms: Any, name: TableName, prefix: Mapping[str, Any] | None) -> dict[str, Any]:
        """SHOW PARTITIONS' rows, read from the partition keys alone (no record read or decoded)."""
        scheme, keys = ms.list_partition_keys(name, prefix=prefix or None)
        return {"columns": list(scheme.names), "rows": partition_rows(scheme, keys)}


#: the uncached answers
DECODED = Answers()


class CachedAnswers(Answers):
    """The caching decorator around :class:`Answers` (like Paimon's ``CachingCatalog`` around a
    catalog): the same answers, reused from the bridge cache while the object's version says they
    still hold (a table's answer also while only partitions or data changed since)."""

    def __init__(self, inner: Answers, cache: BridgeCache) -> None:
        self.inner = inner
        self.cache = cache

    def view(self, tr: Any, ctx: SparkCtx, name: TableName, oid: uuid.UUID, record: Any) -> dict[str, Any]:
        key = (ctx, "view", oid)
        body = self.cache.get(key, record.version)
        if body is None:
            body = self.inner.view(tr, ctx, name, oid, record)
            self.cache.put(key, record.version, body)
        return body

    def table(self, tr: Any, ctx: SparkCtx, name: TableName, oid: uuid.UUID, path: Any, ref: Any) -> dict[str, Any]:
        key = (ctx, "table", oid)
        prior = self.cache.latest(key)
        body: dict[str, Any] | None = None
        if prior is not None and _answer_unchanged_since(tr, path, prior.version, ref.version):
            body = prior.body if prior.version == ref.version else {**prior.body, "version": ref.version}
        if body is None:
            body = self.inner.table(tr, ctx, name, oid, path, ref)
        if prior is None or prior.version != ref.version:
            self.cache.put(key, ref.version, body)
        return body

    def partition_values(self, ms: Any, name: TableName, prefix: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """The full listing is cached by (table id, version): one small transaction when nothing
        changed. A fresh listing is cached only when the version read after it equals the one read
        before (no commit in between). Partial specs are not cached."""
        if prefix:
            return self.inner.partition_values(ms, name, prefix)
        oid, version = _table_version(ms, name)
        key = ("partitions", oid)
        cached = self.cache.get(key, version)
        if cached is not None:
            return list(cached["values"])
        values = self.inner.partition_values(ms, name, None)
        if _table_version(ms, name) == (oid, version):
            self.cache.put(key, version, {"values": values})
        return values


    def partition_listing(self, ms: Any, name: TableName, prefix: Mapping[str, Any] | None) -> dict[str, Any]:
        """SHOW PARTITIONS' rows from the cached full listing (partial specs: uncached)."""
        if prefix:
            return self.inner.partition_listing(ms, name, prefix)
        values = self.partition_values(ms, name, None)
        columns = list(values[0]) if values else []
        return {"columns": columns, "rows": [[v[c] for c in columns] for v in values]}


def partition_rows(scheme: Any, keys: list[tuple[Any, ...]]) -> list[list[Any]]:
    """Stored partition keys as rows of JSON values (identity for most column types)."""
    row = scheme.json_row()
    return [row(k) for k in keys]


def answers(cache: BridgeCache) -> Answers:
    """The answers for ``cache``'s settings: decoded, decorated with the cache when it is on."""
    return CachedAnswers(DECODED, cache) if cache.settings.enabled else DECODED


def lookup(ms: Any, cache: BridgeCache, ctx: SparkCtx, name: TableName, known: Known | None,
           views: bool) -> dict[str, Any]:
    """``load_table`` (``views=False``) / ``load_relation`` (``views=True``) in ONE transaction.

    Answers ``{"unchanged": true}`` when ``known`` is still the object under ``name``; else
    ``{"kind": "table"|"view", "table"|"view": ..., "id": ..., "version": ...}``."""
    source = answers(cache)

    def fn(tr: Any) -> dict[str, Any]:
        db, entry = ms.resolver.relation(tr, name)  # the names the check just read, if it read them
        if entry is None:
            raise NoSuchTable(f"table or view {name} does not exist" if views else f"table {name} does not exist",
                              table=str(name))
        if entry.kind == rec.ObjectKind.VIEW and not views:
            raise NoSuchTable(f"{name} is a view, not a table", table=str(name))
        found = ms.resolver.head(tr, name, db, entry)
        if isinstance(found, ResolvedTable):
            ref = found.ref
            if known is not None and known.id == str(found.id) and known.version == ref.version and \
                    (known.policy == reader_policy(tr, ms, found.path) if known.has_policy
                     else main_policies(tr, found.path) is None):  # a branch: main's policy since set
                return {"unchanged": True}  # a policy is the same version's: unchanged unless the roles changed
            return {"kind": "table", "table": reader_table(tr, ms, source.table(tr, ctx, name, found.id, found.path, ref),
                                                           found.path),
                    "id": str(found.id), "version": ref.version}
        record = found.record
        if known is not None and known.id == str(found.id) and known.version == record.version:
            return {"unchanged": True}
        return {"kind": "view", "view": source.view(tr, ctx, name, found.id, record), "id": str(found.id),
                "version": record.version}

    return ms.run(fn)


def reader_table(tr: Any, ms: Any, body: dict[str, Any], path: Any = None) -> dict[str, Any]:
    """A table answer as the calling user reads it: its row filter and column masks (stored ones in
    ``body``) become ``policy``, what this user's Spark applies (None: nothing), read in ``tr`` with the
    user's principals (a reader of a mounted share holds no principal of the owner project but its
    ``user:``). The JVM never keeps a policy table's answer across loads: a role change applies at the
    next query."""
    out = {k: v for k, v in body.items() if k not in ("row_filter", "column_masks")}
    stored_filter, stored_masks = body.get("row_filter"), body.get("column_masks") or []
    main = main_policies(tr, path) if path is not None else None
    if main is not None:  # in a branch: main's current policy holds (docs/governance.md, "Branches")
        main_filter, main_masks = policies_of(main)
        stored_filter = main_filter.to_json() if main_filter is not None else None
        stored_masks = [m.to_json() for m in main_masks]
    out["policy"] = None
    if stored_filter is None and not stored_masks:
        return out
    out["has_policy"] = True  # the JVM asks again with what it applies (Known.policy), even when nothing
    user = ms.caller().user if hasattr(ms, "caller") else getattr(ms, "user", "")
    held: frozenset[str] = frozenset({f"user:{user}"})
    if hasattr(ms, "layout") and hasattr(ms, "caller") and not hasattr(ms.resolver, "recipient"):
        held = principals(tr, ms.layout, ms.project, user)
    out["policy"] = for_reader(RowFilter(**stored_filter) if stored_filter else None,
                               [ColumnMask(**m) for m in stored_masks], user, held)
    out["properties"] = without_masked_statistics(out.get("properties") or {}, out["policy"])
    return out


def reader_policy(tr: Any, ms: Any, path: Any) -> dict[str, Any] | None:
    """The policy the calling user reads the table at ``path`` through now (one record read, the
    user's principals: one point read of the access state)."""
    props = RecordStore.at(path.add("TableProperties")).load(tr, ())
    assert props is not None  # a table always has it
    row_filter, masks = policies_of(props)
    stored: dict[str, Any] = {"row_filter": row_filter.to_json() if row_filter is not None else None,
                              "column_masks": [m.to_json() for m in masks]}
    policy: dict[str, Any] | None = reader_table(tr, ms, stored, path)["policy"]
    return policy


def _table_version(ms: Any, name: TableName) -> tuple[uuid.UUID, int]:
    def fn(tr: Any) -> tuple[uuid.UUID, int]:
        t = ms.resolver.table(tr, name)
        return t.id, t.ref.version

    return ms.run(fn)


def list_partition_values(ms: Any, cache: BridgeCache, name: TableName,
                          prefix: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """SHOW PARTITIONS' listing (values of every partition, in order), through :func:`answers`."""
    return answers(cache).partition_values(ms, name, prefix)
