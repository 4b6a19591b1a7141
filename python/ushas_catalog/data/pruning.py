"""Partition pruning evaluated by the catalog: a query's partition filters -> key ranges.

The shim sends the partition filters Spark planned (catalyst expressions over partition columns,
turned into JSON by ``io.ushas.spark.PartitionFilters``):

=========================================== ==============================================
``{"op": "and" | "or", "children": [...]}`` conjunction, disjunction
``{"op": "not", "child": f}``               negation
``{"op": "eq" | "lt" | "le" | "gt" | "ge",  ``column <op> value``
"column": c, "value": v}``
``{"op": "in", "column": c, "values": []}`` ``column IN (...)``
``{"op": "is_null" | "is_not_null", ...}``  null tests
``{"op": "true" | "false"}``                constants
``{"op": "unknown"}``                       anything else: no pruning from it
=========================================== ==============================================

Values are a partition value's text form (``"2024-01-01"``), a number, or ``{"days": n}`` /
``{"micros": n}`` for dates and timestamps as Spark holds them. Partition keys are stored ordered
by value (:mod:`ushas_catalog.model.partitions`), so the conjuncts on the leading columns become a few
contiguous key ranges — only the keys inside them are read — and the rest of the filter is
evaluated on each key read (SQL's three-valued logic; what cannot be evaluated keeps the
partition). The shim then applies Spark's own predicate to what comes back, so pruning here only
ever has to be conservative, never exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import fdb.tuple as fdbtuple

from ..errors import InvalidArgument
from ..model.partitions import PartitionColumn, PartitionScheme

#: more leading-column points than this and the next columns are not expanded into point ranges
MAX_POINTS = 10_000

Filter = Mapping[str, Any]


class _Unknown:
    """A filter value the catalog cannot evaluate (a cast, a function, a float column)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: a == b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
#: column kinds whose stored order is Spark's order and whose equality is Spark's equality
#: (floats are not: -0.0 and 0.0 are two keys but one value)
_ORDERED_KINDS = frozenset({"string", "byte", "short", "integer", "long", "boolean", "date", "timestamp",
                            "timestamp_ntz", "decimal"})


def element(column: PartitionColumn, value: Any) -> Any:
    """The stored key element of a filter value for ``column``, or UNKNOWN when the value
    does not convert exactly (the filter then prunes nothing on it)."""
    if column.kind not in _ORDERED_KINDS:
        return UNKNOWN
    if isinstance(value, Mapping):
        if column.kind == "date" and isinstance(value.get("days"), int):
            return value["days"]
        if column.kind in ("timestamp", "timestamp_ntz") and isinstance(value.get("micros"), int):
            return value["micros"]
        return UNKNOWN
    if value is None:
        return UNKNOWN
    try:
        return column.encode(value)
    except InvalidArgument:
        return UNKNOWN


# ---- allowed values of one column: null or not, and sorted disjoint intervals -----------------------
@dataclass(frozen=True)
class Interval:
    lo: Any = None          # None: unbounded
    lo_incl: bool = False
    hi: Any = None
    hi_incl: bool = False

    def is_point(self) -> bool:
        return self.lo is not None and self.lo == self.hi and self.lo_incl and self.hi_incl

    def empty(self) -> bool:
        if self.lo is None or self.hi is None:
            return False
        return self.lo > self.hi or (self.lo == self.hi and not (self.lo_incl and self.hi_incl))


_ALL = (Interval(),)


@dataclass(frozen=True)
class Allowed:
    """The values one column may take: ``null`` and the (non-null) ``intervals``."""

    null: bool = True
    intervals: tuple[Interval, ...] = _ALL

    @property
    def unconstrained(self) -> bool:
        return self.null and self.intervals == _ALL

    def intersect(self, other: "Allowed") -> "Allowed":
        out: list[Interval] = []
        for a in self.intervals:
            for b in other.intervals:
                lo, lo_incl = _max_lo(a, b)
                hi, hi_incl = _min_hi(a, b)
                i = Interval(lo, lo_incl, hi, hi_incl)
                if not i.empty():
                    out.append(i)
        return Allowed(self.null and other.null, _normalize(out))

    def union(self, other: "Allowed") -> "Allowed":
        if self.intervals == _ALL or other.intervals == _ALL:
            return Allowed(self.null or other.null, _ALL)
        return Allowed(self.null or other.null, _normalize(self.intervals + other.intervals))

    def points(self) -> list[Any] | None:
        """The allowed values when they are finitely many (None counts as the null value)."""
        if not all(i.is_point() for i in self.intervals):
            return None
        pts = sorted({i.lo for i in self.intervals})
        return ([None] if self.null else []) + pts


def _normalize(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    """Sorted, disjoint intervals covering the same values."""
    ordered = sorted(intervals, key=lambda i: (i.lo is not None, i.lo, not i.lo_incl))
    out: list[Interval] = []
    for i in ordered:
        if out:
            last = out[-1]
            touches = last.hi is None or i.lo is None or i.lo < last.hi or (
                i.lo == last.hi and (i.lo_incl or last.hi_incl))
            if touches:
                hi, hi_incl = (None, False) if last.hi is None or i.hi is None else max(
                    (last.hi, last.hi_incl), (i.hi, i.hi_incl))
                out[-1] = Interval(last.lo, last.lo_incl, hi, hi_incl)
                continue
        out.append(i)
    return tuple(out)


def _max_lo(a: Interval, b: Interval) -> tuple[Any, bool]:
    if a.lo is None:
        return b.lo, b.lo_incl
    if b.lo is None or a.lo > b.lo:
        return a.lo, a.lo_incl
    if b.lo > a.lo:
        return b.lo, b.lo_incl
    return a.lo, a.lo_incl and b.lo_incl


def _min_hi(a: Interval, b: Interval) -> tuple[Any, bool]:
    if a.hi is None:
        return b.hi, b.hi_incl
    if b.hi is None or a.hi < b.hi:
        return a.hi, a.hi_incl
    if b.hi < a.hi:
        return b.hi, b.hi_incl
    return a.hi, a.hi_incl and b.hi_incl


_NOTHING = Allowed(False, ())


@dataclass
class Pruning:
    """A filter compiled against a table's partition columns."""

    scheme: PartitionScheme
    filter: Filter | None

    def __post_init__(self) -> None:
        self._index = {c.name: i for i, c in enumerate(self.scheme.columns)}
        self._index.update({c.name.lower(): i for i, c in enumerate(self.scheme.columns)
                            if c.name.lower() not in self._index})

    def _column(self, f: Filter) -> int | None:
        name = f.get("column")
        if not isinstance(name, str):
            return None
        return self._index.get(name, self._index.get(name.lower()))

    # --- key ranges ---------------------------------------------------------------------------
    def allowed(self) -> list[Allowed]:
        """Per partition column, the values the filter's conjuncts allow."""
        out = [Allowed() for _ in self.scheme.columns]
        for conjunct in _conjuncts(self.filter):
            for i, a in self._allowed_by(conjunct).items():
                out[i] = out[i].intersect(a)
        return out

    def _allowed_by(self, f: Filter) -> dict[int, Allowed]:
        """What one conjunct says about single columns (nothing for what it cannot express)."""
        op = f.get("op")
        if op == "false":
            return {0: _NOTHING} if self.scheme.columns else {}
        if op == "or":
            parts = [self._allowed_by(c) for c in f.get("children") or []]
            if not parts or any(len(p) != 1 for p in parts) or len({next(iter(p)) for p in parts}) != 1:
                return {}
            i = next(iter(parts[0]))
            union = parts[0][i]
            for p in parts[1:]:
                union = union.union(p[i])
            return {i: union}
        if op == "and":
            acc: dict[int, Allowed] = {}
            for c in f.get("children") or []:
                for i, a in self._allowed_by(c).items():
                    acc[i] = acc[i].intersect(a) if i in acc else a
            return acc
        found = self._column(f)
        if found is None:
            return {}
        i = found
        column = self.scheme.columns[i]
        if op == "is_null":
            return {i: Allowed(True, ())}
        if op == "is_not_null":
            return {i: Allowed(False, _ALL)}
        if op == "in":
            elements = [element(column, v) for v in f.get("values") or []]
            if any(e is UNKNOWN for e in elements):
                return {}
            return {i: Allowed(False, tuple(Interval(e, True, e, True) for e in sorted(set(elements))))}
        if op in _COMPARISONS:
            e = element(column, f.get("value"))
            if e is UNKNOWN:
                return {}
            interval = {"eq": Interval(e, True, e, True), "lt": Interval(None, False, e, False),
                        "le": Interval(None, False, e, True), "gt": Interval(e, False, None, False),
                        "ge": Interval(e, True, None, False)}[op]
            return {i: Allowed(False, (interval,))}
        return {}

    def key_ranges(self) -> list[tuple[bytes, bytes]]:
        """``[begin, end)`` ranges of packed partition keys (relative to the table's partition
        subspace), in key order, that hold every partition the filter can select."""
        allowed = self.allowed()
        prefixes: list[tuple[Any, ...]] = [()]
        for a in allowed:
            if not a.null and not a.intervals:
                return []
            if a.unconstrained:
                break
            pts = a.points()
            if pts is not None and len(prefixes) * len(pts) <= MAX_POINTS:
                prefixes = [p + (v,) for p in prefixes for v in pts]
                continue
            return [r for p in prefixes for r in _column_ranges(p, a)]
        return [_prefix_range(p) for p in prefixes]

    # --- residual ----------------------------------------------------------------------------
    def keep(self, key: Sequence[Any]) -> bool:
        """Whether a partition (its stored key elements) may satisfy the filter."""
        if self.filter is None:
            return True
        result = self._eval(self.filter, key)
        return result is True or result is UNKNOWN

    def _eval(self, f: Filter, key: Sequence[Any]) -> Any:
        """True / False / None (SQL NULL) / UNKNOWN."""
        op = f.get("op")
        if op == "true":
            return True
        if op == "false":
            return False
        if op in ("and", "or"):
            results = [self._eval(c, key) for c in f.get("children") or []]
            decisive, other = (False, True) if op == "and" else (True, False)
            if decisive in results:
                return decisive
            if UNKNOWN in results:
                return UNKNOWN
            return None if None in results else other
        if op == "not":
            r = self._eval(f.get("child") or {}, key)
            return r if r is None or r is UNKNOWN else not r
        i = self._column(f)
        if i is None:
            return UNKNOWN
        value = key[i]
        if op == "is_null":
            return value is None
        if op == "is_not_null":
            return value is not None
        column = self.scheme.columns[i]
        if column.kind not in _ORDERED_KINDS:
            return UNKNOWN
        if op == "in":
            elements = [element(column, v) for v in f.get("values") or []]
            if value is None:
                return None
            if value in [e for e in elements if e is not UNKNOWN]:
                return True
            return UNKNOWN if any(e is UNKNOWN for e in elements) else False
        compare = _COMPARISONS.get(op or "")
        if compare is None:
            return UNKNOWN
        e = element(column, f.get("value"))
        if e is UNKNOWN:
            return UNKNOWN
        return None if value is None else compare(value, e)


def _conjuncts(f: Filter | None) -> Iterable[Filter]:
    if f is None:
        return
    if f.get("op") == "and":
        for c in f.get("children") or []:
            yield from _conjuncts(c)
    else:
        yield f


def _pack(elements: tuple[Any, ...]) -> bytes:
    return fdbtuple.pack(elements) if elements else b""


def _prefix_range(prefix: tuple[Any, ...]) -> tuple[bytes, bytes]:
    k = _pack(prefix)
    return k, k + b"\xff"


def _column_ranges(prefix: tuple[Any, ...], a: Allowed) -> list[tuple[bytes, bytes]]:
    """The ranges of the next column's allowed values after ``prefix``."""
    p = _pack(prefix)
    out: list[tuple[bytes, bytes]] = []
    if a.null:
        out.append(_prefix_range(prefix + (None,)))
    for i in a.intervals:
        if i.lo is None:
            begin = p + b"\x01"  # after the null element (b"\x00"), which sorts first
        else:
            k = p + fdbtuple.pack((i.lo,))
            begin = k if i.lo_incl else k + b"\xff"
        if i.hi is None:
            end = p + b"\xff"
        else:
            k = p + fdbtuple.pack((i.hi,))
            end = k + b"\xff" if i.hi_incl else k
        if begin < end:
            out.append((begin, end))
    return out


def parse_filter(value: Any) -> Filter | None:
    """The request's ``filter`` (None: no partition filter), checked for shape."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("op"), str):
        raise InvalidArgument(f"a partition filter must be an object with an 'op', not {value!r:.200}")
    return value


__all__ = ["Pruning", "Allowed", "Interval", "UNKNOWN", "element", "parse_filter", "MAX_POINTS"]
