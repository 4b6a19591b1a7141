"""Search over metadata, tags and schema field names: ``Metastore.search(QUERY, ...)`` and
``ushas search QUERY [--type T] [--scope S] [--limit N] [--cursor C]``.

Queries (case-insensitive; a trailing ``*`` makes any of them a prefix match):

=====================  ===========================================================
``pii``                a tag, a property key, a property value or a schema field
                       name equal to ``pii``
``customer_*``         ... starting with ``customer_`` (``customer_*`` finds every
                       table with a column whose name starts with customer_)
``tag:pii``            tags only (``key:``, ``value:``, ``field:`` likewise)
``owner=alice``        property ``owner`` with value ``alice``; ``owner=al*``: value
                       starting with ``al``; ``owner=*``: any value
=====================  ===========================================================

Filters: ``types`` (catalog, database, table, view, column, object: a versioned object) and ``scope`` (USER, SYSTEM).
A schema field match yields its table or view, or the column itself when searching for
columns only (``types=["column"]``); metadata set on a column yields the column.

Ranking: exact matches before prefix matches, then by recent use — reads and writes of
the table (a column: of its table) in the lineage usage counters (``UsageProfile``),
each day weighted by ``0.5 ** (age in days / HALF_LIFE_DAYS)`` over the last
``HORIZON_DAYS`` days — then by name. Paging: each page carries an opaque cursor
(``next_cursor``) that continues after the last hit of the page; a cursor belongs to its
query and filters. Between two pages the ranking may move (new metadata, new usage): a hit
that moved is then seen twice or skipped, never an error.

The index is read with range scans of the ``MetadataIndex`` subspace only (one per field
searched). The SYSTEM ``created_by``, ``updated_by`` and ``format`` have no ``kv`` entries
(:data:`~ushas_catalog.metadata.values.VALUE_ONLY_SYSTEM_KEYS`): ``created_by=alice*`` adds a scan of
the values ``alice*`` kept for that key, and a key search that can match one of them
(``key:created_by``, ``c*``) adds a scan of every value (such a key is on every object, so
that search matches every object anyway). The usage of the candidates is read per candidate, or with one scan of the
usage counters when there are many. :func:`scan_search` answers the same query by reading
every object of the project (no index): the reference the index is tested and benchmarked
against.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple, Sequence

import fdb.tuple as fdbtuple

from ..errors import InvalidArgument
from ..keyspace.tree import KeySpacePath
from ..keyspace.layout import (CATALOG_ID, CATALOG_RECORD, DATABASE, DATABASE_ID, DATABASE_RECORD, DATASET_USAGE,
                               OBJECT, OBJECT_RECORD,
                               TABLE, TABLE_ID, TABLE_PROPERTIES, TABLE_SCHEMA, USAGE_PROFILE, VIEW_RECORD)
from ..kv.base import Transaction
from .store import (F_FIELD, F_KEY_VALUE, F_TAG, F_VALUE, INDEX_SCOPES, INDEX_TYPES, VALUE_ONLY_SYSTEM_KEYS,
                    MetadataKeys, ObjectType, Scope, decode_pending, field_terms, fold, index_value, pack_element,
                    pending_rows, pending_values, shown, unpack_index_value)
from .search_visibility import visible_hits, without_row_data
from .values import counts_rows

if TYPE_CHECKING:
    from ..catalog.core import CatalogCore as Metastore

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
HALF_LIFE_DAYS = 7.0
HORIZON_DAYS = 90
DAY_MS = 86_400_000
#: above this many candidates, usage is read with one scan of the counters (which holds every table's
#: days: with 10,000 tables and 100,000 runs one scan took 2.3 s where 515 per-candidate reads took 30 ms,
#: bench/serve.py); below it, one short read per candidate (its last HORIZON_DAYS days)
USAGE_SCAN_THRESHOLD = 20_000

EXACT, PREFIX = 0, 1
_CLASS_NAMES = {EXACT: "exact", PREFIX: "prefix"}
_QUALIFIERS = {"tag": F_TAG, "key": "key", "value": F_VALUE, "field": F_FIELD}
_FIELD_NAMES = {F_TAG: "tag", F_VALUE: "value", F_FIELD: "field", F_KEY_VALUE: "property"}


# ---- queries -----------------------------------------------------------------------------------
class Scan(NamedTuple):
    """One range scan of the index: the entries of ``field`` whose term is ``term`` (or
    starts with it: ``prefix``). ``as_key_value``: ``v`` entries of
    :data:`VALUE_ONLY_SYSTEM_KEYS` properties read as the ``kv`` entries they have none of."""

    field: str
    term: str
    prefix: bool
    as_key_value: bool = False


@dataclass(frozen=True)
class Query:
    """A parsed query: what to match (``targets``: index fields, plus the pseudo field
    ``key``: keys through the ``kv`` index), the folded term and whether it is a prefix."""

    text: str
    targets: tuple[str, ...]
    term: str
    prefix: bool
    #: ``key=value`` form: term is "key=value" (folded)
    key_value: bool = False

    @staticmethod
    def parse(text: object) -> "Query":
        if not isinstance(text, str):
            raise InvalidArgument(f"search query must be a string, not {type(text).__name__}")
        raw = text.strip()
        if not raw:
            raise InvalidArgument("search query must not be empty")
        targets: tuple[str, ...] = (F_TAG, "key", F_VALUE, F_FIELD)
        body = raw
        qualifier, sep, rest = raw.partition(":")
        if sep and qualifier.lower() in _QUALIFIERS:
            targets = (_QUALIFIERS[qualifier.lower()],)
            body = rest.strip()
        prefix = body.endswith("*")
        if prefix:
            body = body[:-1]
        if "*" in body:
            raise InvalidArgument(f"search query {raw!r}: '*' may only end the query (a prefix match)")
        key_value = False
        if "=" in body and targets != (F_VALUE,) and targets != (F_FIELD,) and targets != (F_TAG,):
            if targets == ("key",):
                raise InvalidArgument(f"search query {raw!r}: a key cannot contain '='; use key=value")
            key, _, value = body.partition("=")
            if not key.strip():
                raise InvalidArgument(f"search query {raw!r}: key=value needs a key")
            targets, key_value, body = (F_KEY_VALUE,), True, f"{key.strip()}={value}"
        if not body and not prefix:
            raise InvalidArgument(f"search query {raw!r} has nothing to match")
        if not body:
            raise InvalidArgument(f"search query {raw!r}: a prefix match needs at least one character")
        if "\x00" in body:
            raise InvalidArgument("search query contains a NUL character")
        return Query(raw, targets, fold(body), prefix, key_value)

    def fields(self) -> set[str]:
        """The fields searched (``key`` is searched in ``kv``)."""
        return {F_KEY_VALUE if t == "key" else t for t in self.targets}

    def scans(self) -> list[Scan]:
        """The index scans that answer the query."""
        out = []
        for target in self.targets:
            if target == "key":
                # keys through "key=value": exact key = prefix "key="; key prefix = prefix "key"
                out.append(Scan(F_KEY_VALUE, self.term if self.prefix else self.term + "=", True))
                if any(self.classify(F_KEY_VALUE, "", k) is not None for k in VALUE_ONLY_SYSTEM_KEYS):
                    out.append(Scan(F_VALUE, "", True, True))  # their keys: on every object, so read all values
            elif target == F_KEY_VALUE:
                out.append(Scan(F_KEY_VALUE, self.term, self.prefix))
                key, _, value = self.term.partition("=")
                if key in VALUE_ONLY_SYSTEM_KEYS:
                    out.append(Scan(F_VALUE, value, self.prefix, True))
            else:
                out.append(Scan(target, self.term, self.prefix))
        return out

    def classify(self, fld: str, term: str, key: str) -> int | None:
        """EXACT / PREFIX / None (no match) of one index entry (field, folded term, key)."""
        if fld == F_KEY_VALUE and not self.key_value:
            k = fold(key)
            if k == self.term:
                return EXACT
            return PREFIX if self.prefix and k.startswith(self.term) else None
        if term == self.term:
            return EXACT
        return PREFIX if self.prefix and term.startswith(self.term) else None


# ---- results -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Match:
    """Why a hit matched: the field (tag, property, value, field), the scope, the column the
    entry is on (if any) and what matched as stored."""

    field: str
    scope: Scope
    column: str | None
    shown: str
    #: the metadata key of the entry that matched (the tag, for a tag); not part of the match's identity: equal
    #: matches of several keys are one (:func:`_add` keeps one not of a row count, where there is one)
    key: str = field(default="", compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "scope": self.scope.value, "column": self.column, "matched": self.shown}


@dataclass
class SearchHit:
    type: ObjectType
    id: uuid.UUID
    relation: str          # the object's qualified name (a column's table or view)
    column: str | None
    match: int             # EXACT or PREFIX (the best of its matches)
    score: float = 0.0
    matches: list[Match] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.relation if self.column is None else f"{self.relation}.{self.column}"

    def sort_key(self) -> tuple[Any, ...]:
        return (self.match, -self.score, self.name.lower(), self.name, self.type.value, str(self.id))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type.value, "name": self.name, "id": str(self.id),
                               "match": _CLASS_NAMES[self.match], "score": round(self.score, 6),
                               "matches": [m.to_json() for m in sorted(self.matches, key=_match_order)]}
        if self.column is not None:
            out["relation"], out["column"] = self.relation, self.column
        return out


def _match_order(m: Match) -> tuple[str, str, str, str]:
    return (m.field, m.scope.value, m.column or "", m.shown)


@dataclass
class SearchPage:
    hits: list[SearchHit]
    total: int
    next_cursor: str | None

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "hits": [h.to_json() for h in self.hits], "next_cursor": self.next_cursor}


# ---- options -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Filters:
    types: frozenset[ObjectType] | None
    scope: Scope | None

    @staticmethod
    def of(types: Iterable[ObjectType | str] | ObjectType | str | None, scope: Scope | str | None) -> "Filters":
        if isinstance(types, (str, ObjectType)):
            types = [types]
        parsed = frozenset(ObjectType.parse(t) for t in types) if types else None
        return Filters(parsed, Scope.parse(scope) if scope is not None else None)

    def result_type(self, fld: str, otype: ObjectType) -> ObjectType:
        """The type of the hit an entry yields: a schema field is its table / view, or the
        column when only columns are searched."""
        if fld == F_FIELD and self.types is not None and ObjectType.COLUMN in self.types \
                and otype not in self.types:
            return ObjectType.COLUMN
        return otype

    def accepts(self, rtype: ObjectType, scope: Scope) -> bool:
        return (self.types is None or rtype in self.types) and (self.scope is None or scope is self.scope)

    def fingerprint(self, query: Query) -> str:
        data = json.dumps([query.text, sorted(t.value for t in self.types) if self.types else None,
                           self.scope.value if self.scope else None])
        return hashlib.sha256(data.encode()).hexdigest()[:16]


def _limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_LIMIT}, not {limit!r}")
    return limit


def encode_cursor(fingerprint: str, key: tuple[Any, ...]) -> str:
    data = json.dumps({"f": fingerprint, "k": list(key)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_cursor(cursor: str, fingerprint: str) -> tuple[Any, ...]:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        key, fp = data["k"], data["f"]
        if not isinstance(key, list) or len(key) != 6:
            raise ValueError("bad key")
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgument(f"invalid search cursor {cursor[:40]!r}") from None
    if fp != fingerprint:
        raise InvalidArgument("this cursor belongs to another search (query, type or scope differ)")
    return tuple(key)


# ---- the search ----------------------------------------------------------------------------------
def _prepare(ms: "Metastore", query: str, types: Any, scope: Any,
             now_ms: int | None) -> tuple[Query, Filters, MetadataKeys, "UsageReader"]:
    return Query.parse(query), Filters.of(types, scope), MetadataKeys(ms.project_path), UsageReader(ms, now_ms)


def search(ms: "Metastore", query: str, *, types: Iterable[ObjectType | str] | ObjectType | str | None = None,
           scope: Scope | str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None,
           now_ms: int | None = None) -> SearchPage:
    """One page of hits of ``query`` in the metastore's project, through the index.
    ``now_ms``: the time recent use is measured from (default: now)."""
    q, filters, keys, usage = _prepare(ms, query, types, scope, now_ms)
    limit, fp = _limit(limit), filters.fingerprint(q)
    after = decode_cursor(cursor, fp) if cursor is not None else None

    caller = ms.caller()

    def fn(tr: Transaction) -> list[SearchHit]:
        hits = visible_hits(tr, ms, caller, _index_hits(tr, keys, q, filters))
        usage.score(tr, hits)
        return hits

    return _page(without_row_data(ms, ms.run(fn)), limit, after, fp)


def _index_hits(tr: Transaction, keys: MetadataKeys, q: Query, filters: Filters) -> list[SearchHit]:
    found: dict[tuple[ObjectType, uuid.UUID, str | None], SearchHit] = {}
    plen = len(keys.index_prefix)
    pending = pending_values(tr, keys)
    for scan in q.scans():
        start = keys.index_prefix + pack_element(scan.field) + pack_element(scan.term)
        begin = start[:-1] if scan.prefix else start
        end = begin + b"\xff"
        rows = ((kv.key[plen:], kv.value) for kv in tr.get_range(begin, end, snapshot=True))
        for rel, value in chain(rows, pending_rows(pending, begin[plen:], end[plen:])):
            f, t, type_code, scope_code, oid, column, key = fdbtuple.unpack(rel)
            sc = INDEX_SCOPES[scope_code]
            if scan.as_key_value:
                if sc is not Scope.SYSTEM or key not in VALUE_ONLY_SYSTEM_KEYS:
                    continue
                f, t = F_KEY_VALUE, fold(shown(F_KEY_VALUE, column, key, unpack_index_value(value)[1]))
            cls = q.classify(f, t, key)
            if cls is None:
                continue
            rtype = filters.result_type(f, INDEX_TYPES[type_code])
            if not filters.accepts(rtype, sc):
                continue
            name, shown_value = unpack_index_value(value)
            _add(found, rtype, oid, name, column if rtype is ObjectType.COLUMN else None, cls,
                 Match(_FIELD_NAMES[f], sc, column, shown(f, column, key, shown_value), str(key)))
    return list(found.values())


def _add(found: dict[tuple[ObjectType, uuid.UUID, str | None], SearchHit], rtype: ObjectType, oid: uuid.UUID,
         relation: str, column: str | None, cls: int, match: Match) -> None:
    hit = found.get((rtype, oid, column))
    if hit is None:
        hit = found[(rtype, oid, column)] = SearchHit(rtype, oid, relation, column, cls)
    hit.match = min(hit.match, cls)
    if match not in hit.matches:
        hit.matches.append(match)
        return
    at = hit.matches.index(match)  # the same match through another key: shown for one that is not a count
    if counts_rows(hit.matches[at].scope, hit.matches[at].key) and not counts_rows(match.scope, match.key):
        hit.matches[at] = match


def _page(hits: list[SearchHit], limit: int, after: tuple[Any, ...] | None, fp: str) -> SearchPage:
    hits.sort(key=SearchHit.sort_key)
    rest = [h for h in hits if after is None or h.sort_key() > after]
    page = rest[:limit]
    next_cursor = encode_cursor(fp, page[-1].sort_key()) if len(rest) > limit else None
    return SearchPage(page, len(hits), next_cursor)


# ---- usage ---------------------------------------------------------------------------------------
class UsageReader:
    """Recent use of tables from the lineage usage counters
    (``UsageProfile / DatasetUsage / tableId / <id> / (day, "reads" | "writes") -> count``)."""

    def __init__(self, ms: "Metastore", now_ms: int | None = None) -> None:
        self.usage = ms.project_path.add(USAGE_PROFILE).add(DATASET_USAGE)
        self.today = (now_ms if now_ms is not None else time.time_ns() // 1_000_000) // DAY_MS

    def weight(self, day: int) -> float:
        age = self.today - day
        if age < 0:
            age = 0
        if age >= HORIZON_DAYS:
            return 0.0
        return 0.5 ** (age / HALF_LIFE_DAYS)

    def score(self, tr: Transaction, hits: Sequence[SearchHit]) -> None:
        ids = {h.id for h in hits if h.type in (ObjectType.TABLE, ObjectType.VIEW, ObjectType.COLUMN)}
        if not ids:
            return
        scores = self._scan(tr, ids) if len(ids) > USAGE_SCAN_THRESHOLD else \
            {i: self._one(tr, i) for i in ids}
        for h in hits:
            h.score = scores.get(h.id, 0.0)

    def _one(self, tr: Transaction, oid: uuid.UUID) -> float:
        base = self.usage.add(TABLE_ID, oid)
        begin = base.pack((self.today - HORIZON_DAYS + 1,))
        plen = len(base.key())
        return float(sum(self.weight(fdbtuple.unpack(kv.key[plen:])[0]) * _count(kv.value)
                         for kv in tr.get_range(begin, base.range()[1], snapshot=True)))

    def _scan(self, tr: Transaction, ids: set[uuid.UUID]) -> dict[uuid.UUID, float]:
        sub = self.usage.key()
        scores: dict[uuid.UUID, float] = {}
        for kv in tr.get_range(*self.usage.range(), snapshot=True):
            elements = fdbtuple.unpack(kv.key[len(sub):])
            if len(elements) != 3 or not isinstance(elements[0], uuid.UUID) or elements[0] not in ids:
                continue
            w = self.weight(elements[1])
            if w:
                scores[elements[0]] = scores.get(elements[0], 0.0) + w * _count(kv.value)
        return scores


def _count(value: bytes) -> int:
    return int.from_bytes(value[:8], "little", signed=True) if value else 0


# ---- the reference: a full scan -------------------------------------------------------------------
#: objects read per transaction by :func:`scan_search` (a transaction lives at most 5 s)
SCAN_BATCH = 200


def scan_search(ms: "Metastore", query: str, *, types: Iterable[ObjectType | str] | ObjectType | str | None = None,
                scope: Scope | str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None,
                now_ms: int | None = None) -> SearchPage:
    """:func:`search` without the index: reads every live object of the project — its
    metadata entries, and its schema and comments from the metastore records — and matches
    each. O(size of the project), :data:`SCAN_BATCH` objects per transaction (so not one
    snapshot); the reference for tests and the benchmark."""
    q, filters, keys, usage = _prepare(ms, query, types, scope, now_ms)
    limit, fp = _limit(limit), filters.fingerprint(q)
    after = decode_cursor(cursor, fp) if cursor is not None else None
    searched = q.fields()
    found: dict[tuple[ObjectType, uuid.UUID, str | None], SearchHit] = {}

    def match(tr: Transaction, batch: list[_ObjectRef]) -> None:
        for otype, oid, name, fields, comment in _load(tr, batch):
            for fld, term, sc, column, key, value in _terms(tr, keys, oid, fields, comment, stored=False):
                if fld not in searched:
                    continue
                cls = q.classify(fld, term, key)
                if cls is None:
                    continue
                etype = ObjectType.COLUMN if column is not None and fld != F_FIELD else otype
                rtype = filters.result_type(fld, etype)
                if not filters.accepts(rtype, sc):
                    continue
                _add(found, rtype, oid, name, column if rtype is ObjectType.COLUMN else None, cls,
                     Match(_FIELD_NAMES[fld], sc, column, shown(fld, column, key, value)))

    refs = ms.run(lambda tr: list(_refs(ms, tr)))
    for i in range(0, len(refs), SCAN_BATCH):
        ms.run(lambda tr: match(tr, refs[i:i + SCAN_BATCH]))
    hits = list(found.values())
    for i in range(0, len(hits), SCAN_BATCH):
        ms.run(lambda tr: [setattr(h, "score", usage._one(tr, h.id)) for h in hits[i:i + SCAN_BATCH]
                            if h.type in (ObjectType.TABLE, ObjectType.VIEW, ObjectType.COLUMN)])
    return _page(hits, limit, after, fp)


#: (type, id, qualified name, the id path of its records)
_ObjectRef = tuple[ObjectType, uuid.UUID, str, KeySpacePath]


def _refs(ms: "Metastore", tr: Transaction) -> Iterator[_ObjectRef]:
    """Every live object of the project, by name."""
    from ..keyspace.layout import Layout
    from ..model.names import CatalogName, DatabaseName, TableName
    from ..records import ObjectKind

    cats = ms.resolver.catalogs
    for c in ms.resolver.names(cats, "Catalog").scan(tr):
        cid = uuid.UUID(bytes=c.record.id)
        cpath = cats.add(CATALOG_ID, cid)
        cn = CatalogName(c.key[0])
        yield ObjectType.CATALOG, cid, str(cn), cpath
        dbs = cpath.add(DATABASE)
        for d in ms.resolver.names(dbs, "Database").scan(tr):
            did = uuid.UUID(bytes=d.record.id)
            dpath = dbs.add(DATABASE_ID, did)
            dn = DatabaseName(cn.catalog, d.key[0])
            yield ObjectType.DATABASE, did, str(dn), dpath
            for r in ms.resolver.names(dpath.add(TABLE), "Table").scan(tr):
                rid = uuid.UUID(bytes=r.record.id)
                tn = str(TableName(cn.catalog, dn.database, r.key[0]))
                if r.record.kind == ObjectKind.TABLE:
                    yield ObjectType.TABLE, rid, tn, Layout.table(dpath, rid)
                else:
                    yield ObjectType.VIEW, rid, tn, Layout.view(dpath, rid)
            for r in ms.resolver.names(dpath.add(OBJECT), "Object").scan(tr):  # versioned objects
                oid = uuid.UUID(bytes=r.record.id)
                yield ObjectType.OBJECT, oid, str(TableName(cn.catalog, dn.database, r.key[0])), Layout.object(dpath, oid)


def _load(tr: Transaction, refs: Iterable[_ObjectRef]) -> Iterator[tuple[ObjectType, uuid.UUID, str,
                                                                          dict[str, str | None], str | None]]:
    """(type, id, name, schema field paths -> comment, comment) from the metastore records."""
    from .store import schema_paths
    from ..records.store import RecordStore
    from ..model.schema import struct_from_proto

    for otype, oid, name, path in refs:
        if otype is ObjectType.CATALOG:
            yield otype, oid, name, {}, RecordStore.of(path, CATALOG_RECORD).load(tr, ()).comment or None
        elif otype is ObjectType.DATABASE:
            yield otype, oid, name, {}, RecordStore.of(path, DATABASE_RECORD).load(tr, ()).comment or None
        elif otype is ObjectType.TABLE:
            schema = RecordStore.of(path, TABLE_SCHEMA).load(tr, ())
            props = RecordStore.of(path, TABLE_PROPERTIES).load(tr, ())
            yield (otype, oid, name, schema_paths(struct_from_proto(schema.schema)),
                   props.comment if props.HasField("comment") else None)
        elif otype is ObjectType.OBJECT:
            o = RecordStore.of(path, OBJECT_RECORD).load(tr, ())
            yield otype, oid, name, {}, o.comment if o.HasField("comment") else None
        else:
            v = RecordStore.of(path, VIEW_RECORD).load(tr, ())
            yield otype, oid, name, schema_paths(struct_from_proto(v.schema)), v.comment if v.HasField("comment") else None


def _objects(ms: "Metastore", tr: Transaction) -> Iterator[tuple[ObjectType, uuid.UUID, str,
                                                                  dict[str, str | None], str | None]]:
    """Every live object with its schema fields and comment, in one transaction."""
    return _load(tr, list(_refs(ms, tr)))


def _terms(tr: Transaction, keys: MetadataKeys, oid: uuid.UUID, fields: dict[str, str | None],
           comment: str | None, *, stored: bool) -> Iterator[tuple[str, str, Scope, str | None, str, str]]:
    """(field, folded term, scope, column, key, value: "" for tags and fields) of everything
    searchable of an object: what it is found by, or (``stored``) its index entries."""
    from .store import COMMENT, Entry, PROPERTY

    entries = list(_entries(tr, keys, oid))
    entries += [Entry(p, Scope.USER, PROPERTY, COMMENT, c) for p, c in fields.items() if c is not None]
    if comment is not None:
        entries.append(Entry(None, Scope.USER, PROPERTY, COMMENT, comment))
    for e in entries:
        for fld, term in e.index_terms() if stored else e.search_terms():
            yield fld, term, e.scope, e.column, e.key, e.value
    for path in fields:
        for term in field_terms(path):
            yield F_FIELD, term, Scope.SYSTEM, path, "", ""


@dataclass
class IndexCheck:
    """The index compared with what the records say it should hold."""

    expected: int
    missing: list[bytes]
    stale: list[bytes]
    wrong_value: list[bytes]
    #: objects with pending entries
    pending: int = 0
    #: keys both in the index and pending (an object's entries are in one place)
    twice: list[bytes] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.wrong_value or self.twice)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "expected": self.expected, "missing": len(self.missing), "stale": len(self.stale),
                "wrong_value": len(self.wrong_value), "twice": len(self.twice), "pending": self.pending}


def check_index(ms: "Metastore") -> IndexCheck:
    """Recompute the index of the project from the records (live objects' metadata entries,
    schemas and comments) and compare it with the stored one (the index and the pending
    entries), in one snapshot."""
    keys = MetadataKeys(ms.project_path)

    def fn(tr: Transaction) -> IndexCheck:
        expected: dict[bytes, bytes] = {}
        for otype, oid, name, fields, comment in _objects(ms, tr):
            for fld, term, sc, column, key, value in _terms(tr, keys, oid, fields, comment, stored=True):
                etype = ObjectType.COLUMN if column is not None and fld != F_FIELD else otype
                expected[keys.index_key(fld, term, etype, sc, oid, column, key)] = index_value(fld, name, value)
        actual = {kv.key: kv.value for kv in tr.get_range(*keys.index.range(), snapshot=True)}
        pending = pending_values(tr, keys)
        twice = []
        for data in pending:
            for rel, value in decode_pending(data):
                key = keys.index_prefix + rel
                if key in actual:
                    twice.append(key)
                actual[key] = value
        return IndexCheck(len(expected), sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected)),
                          sorted(k for k in set(actual) & set(expected) if actual[k] != expected[k]),
                          len(pending), sorted(twice))

    return ms.run(fn)


def _entries(tr: Transaction, keys: MetadataKeys, oid: uuid.UUID) -> Iterator[Any]:
    from .store import Entry

    base = keys.entries(oid)
    plen = len(base.key())
    for kv in tr.get_range(*base.range(), snapshot=True):
        column, sc, kind, key = fdbtuple.unpack(kv.key[plen:])
        yield Entry(column, Scope(sc), kind, key, kv.value.decode("utf-8"))


__all__ = ["search", "scan_search", "check_index", "IndexCheck", "Query", "Scan", "SearchHit", "SearchPage", "Match", "Filters", "UsageReader",
           "encode_cursor", "decode_cursor", "DEFAULT_LIMIT", "MAX_LIMIT", "HALF_LIFE_DAYS", "HORIZON_DAYS"]
