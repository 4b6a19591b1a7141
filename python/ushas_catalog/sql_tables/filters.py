"""Spark's pushed predicates, as the shim sends them (the filter JSON of
:mod:`ushas_catalog.data.pruning`, plus ``starts_with``), read by the row sources.

Sources ask two things: which key range to read (:meth:`Filters.equal` for a column's values,
:meth:`Filters.bounds` for its lower and upper bounds; only top-level conjuncts narrow a range), and
whether a row can be dropped before it crosses the bridge (:meth:`Filters.keep`). Both are
conservative: what cannot be evaluated keeps the row, and Spark evaluates every predicate again on
what comes back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

_UNKNOWN = object()


def value_of(v: Any) -> Any:
    """A filter literal as a row value: dates are epoch days, timestamps epoch microseconds."""
    if isinstance(v, Mapping):
        if "days" in v:
            return v["days"]
        if "micros" in v:
            return v["micros"]
        return _UNKNOWN
    return v


def _compare(op: str, a: Any, b: Any) -> Any:
    try:
        if op == "eq":
            return a == b
        if op == "lt":
            return a < b
        if op == "le":
            return a <= b
        if op == "gt":
            return a > b
        if op == "ge":
            return a >= b
    except TypeError:
        return _UNKNOWN
    return _UNKNOWN


@dataclass(frozen=True)
class Bounds:
    """A column's range from the conjuncts: ``lo`` / ``hi`` inclusive (None: unbounded)."""

    lo: Any = None
    hi: Any = None

    def contains(self, v: Any) -> bool:
        try:
            return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)
        except TypeError:
            return True


class Filters:
    """The predicates of one read (their conjunction)."""

    def __init__(self, items: Iterable[Mapping[str, Any]] | None) -> None:
        self.items: list[Mapping[str, Any]] = []
        for f in items or ():
            self._flatten(f)

    def _flatten(self, f: Mapping[str, Any]) -> None:
        if f.get("op") == "and":
            for c in f.get("children") or ():
                self._flatten(c)
        else:
            self.items.append(f)

    def __bool__(self) -> bool:
        return bool(self.items)

    def as_filter(self) -> Mapping[str, Any] | None:
        """One filter (the conjunction), for :class:`ushas_catalog.data.pruning.Pruning`."""
        if not self.items:
            return None
        return self.items[0] if len(self.items) == 1 else {"op": "and", "children": list(self.items)}

    def equal(self, column: str) -> list[Any] | None:
        """The values ``column`` must equal (``=`` / ``IN`` conjuncts), or None when unconstrained."""
        found: list[Any] | None = None
        for f in self.items:
            if f.get("column") != column:
                continue
            if f.get("op") == "eq":
                values = [value_of(f.get("value"))]
            elif f.get("op") == "in":
                values = [value_of(v) for v in f.get("values") or ()]
            else:
                continue
            if any(v is _UNKNOWN for v in values):
                continue
            found = values if found is None else [v for v in found if v in values]
        return found

    def bounds(self, column: str) -> Bounds:
        """Inclusive bounds on ``column`` from ``=``, ``<``, ``<=``, ``>``, ``>=`` conjuncts (integers:
        ``< n`` is ``<= n - 1``; other types keep the strict bound as inclusive, conservatively)."""
        lo: Any = None
        hi: Any = None
        for f in self.items:
            if f.get("column") != column or f.get("op") not in ("eq", "lt", "le", "gt", "ge"):
                continue
            v = value_of(f.get("value"))
            if v is _UNKNOWN or v is None:
                continue
            op = f["op"]
            if op in ("gt", "ge", "eq"):
                if op == "gt" and isinstance(v, int) and not isinstance(v, bool):
                    v = v + 1
                try:
                    lo = v if lo is None or v > lo else lo
                except TypeError:
                    pass
            if op in ("lt", "le", "eq"):
                w = value_of(f.get("value"))
                if op == "lt" and isinstance(w, int) and not isinstance(w, bool):
                    w = w - 1
                try:
                    hi = w if hi is None or w < hi else hi
                except TypeError:
                    pass
        return Bounds(lo, hi)

    def matcher(self, names: Sequence[str]) -> Callable[[Sequence[Any]], bool] | None:
        """A test of a row (values in the order of ``names``): False only when a predicate is
        certainly false for it; None when there is nothing to test."""
        index = {n: i for i, n in enumerate(names)}
        usable = [f for f in self.items if _columns(f) <= index.keys()]
        if not usable:
            return None

        def keep(row: Sequence[Any]) -> bool:
            return all(_eval(f, row, index) is not False for f in usable)

        return keep


def _columns(f: Mapping[str, Any]) -> set[str]:
    if "column" in f:
        return {f["column"]}
    out: set[str] = set()
    for c in f.get("children") or ():
        out |= _columns(c)
    if "child" in f:
        out |= _columns(f["child"])
    return out


def _eval(f: Mapping[str, Any], row: Sequence[Any], index: Mapping[str, int]) -> Any:
    """SQL's three-valued logic; ``_UNKNOWN`` / None for what cannot be decided (kept)."""
    op = f.get("op")
    if op == "true":
        return True
    if op == "false":
        return False
    if op == "and":
        results = [_eval(c, row, index) for c in f.get("children") or ()]
        return False if any(r is False for r in results) else (True if all(r is True for r in results) else None)
    if op == "or":
        results = [_eval(c, row, index) for c in f.get("children") or ()]
        return True if any(r is True for r in results) else (False if all(r is False for r in results) else None)
    if op == "not":
        r = _eval(f["child"], row, index)
        return (not r) if isinstance(r, bool) else None
    col = f.get("column")
    if not isinstance(col, str) or col not in index:
        return None
    v = row[index[col]]
    if isinstance(v, (list, dict)):
        return None
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if v is None:
        return None
    if op == "in":
        values = [value_of(x) for x in f.get("values") or ()]
        if any(x is _UNKNOWN for x in values):
            return None
        return v in values
    if op == "starts_with":
        p = f.get("value")
        return v.startswith(p) if isinstance(v, str) and isinstance(p, str) else None
    target = value_of(f.get("value"))
    if target is _UNKNOWN or target is None:
        return None
    r = _compare(op or "", v, target)
    return None if r is _UNKNOWN else r
