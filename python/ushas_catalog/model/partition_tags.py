"""Partition tags as values: checked tags, which partitions a call names (a spec or a filter), and
the per-tag statistics (:mod:`ushas_catalog.catalog.partition_tags` stores and reads them).

Which partitions: a **spec** ``dt=2024-01-01/city=Pune`` (any subset of the partition columns:
``city=Pune`` names every partition of Pune) or a **filter** over the partition columns in SQL's
spelling, e.g. ``dt >= '2024-01-01' AND city IN ('Pune', 'Mumbai')``: comparisons (``=``, ``==``,
``!=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``), ``IN`` / ``NOT IN``, ``BETWEEN``, ``IS [NOT] NULL``,
``AND``, ``OR``, ``NOT`` and parentheses; strings quoted (``'Pune'``), numbers and ``true`` /
``false`` bare, ``DATE '…'`` / ``TIMESTAMP '…'`` allowed. A text is a filter when it has a quote, an
operator other than ``=`` or a keyword; otherwise it is a spec. ``''`` or ``*``: every partition.
The filter becomes the filter JSON of :mod:`ushas_catalog.data.pruning`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import InvalidArgument

#: the longest tag key and tag value (UTF-8 bytes): both are part of the index key (FoundationDB: 10 kB)
MAX_KEY_BYTES = 128
MAX_VALUE_BYTES = 1_024
#: the most tags one partition may carry
MAX_TAGS = 64

Filter = dict[str, Any]


def check_tags(tags: Mapping[str, Any] | None, *, values: bool = True) -> dict[str, str]:
    """Tags as ``{key: value}`` strings, checked: a key is non-empty, without ``=`` and control
    characters, at most :data:`MAX_KEY_BYTES`; a value is a string of at most :data:`MAX_VALUE_BYTES`."""
    if tags is None or not isinstance(tags, Mapping):
        raise InvalidArgument(f"tags must be a map of key -> value, not {type(tags).__name__}")
    if not tags:
        raise InvalidArgument("no tags given")
    out: dict[str, str] = {}
    for k, v in tags.items():
        if not isinstance(k, str) or not k.strip():
            raise InvalidArgument(f"a tag key must be a non-empty string, not {k!r}")
        if "=" in k or any(ord(ch) < 32 for ch in k):
            raise InvalidArgument(f"tag key {k!r} must not contain '=' or control characters")
        if len(k.encode()) > MAX_KEY_BYTES:
            raise InvalidArgument(f"tag key {k[:40]!r}... is longer than {MAX_KEY_BYTES} bytes")
        if values:
            if v is None or not isinstance(v, (str, int, float, bool)):
                raise InvalidArgument(f"the value of tag {k!r} must be a string, not {v!r}")
            text = str(v).lower() if isinstance(v, bool) else str(v)
            if len(text.encode()) > MAX_VALUE_BYTES:
                raise InvalidArgument(f"the value of tag {k!r} is longer than {MAX_VALUE_BYTES} bytes")
            out[k] = text
        else:
            out[k] = ""
    return out


def parse_assignments(items: list[str] | tuple[str, ...], *, values: bool = True) -> dict[str, str]:
    """``KEY=VALUE`` words (the CLI's spelling) as tags; with ``values=False`` plain ``KEY`` words
    (a ``=VALUE`` part is ignored)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if values and not sep:
            raise InvalidArgument(f"tag {item!r} must be KEY=VALUE")
        out[key] = value
    return check_tags(out, values=values)


@dataclass(frozen=True)
class TagStat:
    """The partitions carrying one tag (key = value) in one table: how many, their bytes and rows (sums
    of what the partitions recorded; ``*_known``: how many partitions recorded it)."""

    key: str
    value: str
    partitions: int
    bytes: int
    rows: int
    bytes_known: int
    rows_known: int

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "partitions": self.partitions, "bytes": self.bytes,
                "rows": self.rows, "bytes_known": self.bytes_known, "rows_known": self.rows_known}


@dataclass(frozen=True)
class TagChange:
    """What a tag call did: the version it made (None: nothing changed), the partitions it matched and
    the partitions whose tags changed."""

    version: int | None
    matched: int
    changed: int

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "matched": self.matched, "changed": self.changed}


# ---- which partitions ---------------------------------------------------------------------------------
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE", "DATE", "TIMESTAMP"}
_FILTER_HINT = re.compile(r"['\"<>!()]|\s(?:and|or|in|is|not|between)\s", re.IGNORECASE)
_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*'|"(?:[^"]|"")*")
  | (?P<num>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])
  | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,)
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<word>[A-Za-z_][\w$]*)
)""", re.VERBOSE)


def is_filter(text: str) -> bool:
    """Whether ``text`` is a filter (else a spec ``col=value[/col=value]``): see the module docstring."""
    if _FILTER_HINT.search(" " + text + " "):
        return True
    return any("=" not in seg or "=" in seg.partition("=")[2] or not seg.partition("=")[0].strip()
               for seg in text.split("/"))


def parse_spec(text: str) -> dict[str, str]:
    """``dt=2024-01-01/city=Pune`` as ``{"dt": "2024-01-01", "city": "Pune"}`` (names and values trimmed: a
    value with surrounding spaces is named by a filter, ``city = ' x '``)."""
    out: dict[str, str] = {}
    for seg in text.split("/"):
        name, sep, value = seg.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidArgument(f"partition spec {text!r}: expected col=value[/col=value]")
        if name in out:
            raise InvalidArgument(f"partition spec {text!r} names {name} twice")
        out[name] = value.strip()
    return out


def spec_filter(spec: Mapping[str, Any]) -> Filter | None:
    """A (partial) spec as the conjunction of its equalities (the NULL partition value: ``is_null``)."""
    from .partitions import NULL_PARTITION

    items: list[Filter] = [{"op": "is_null", "column": k} if v is None or v == NULL_PARTITION
                           else {"op": "eq", "column": k, "value": v} for k, v in spec.items()]
    if not items:
        return None
    return items[0] if len(items) == 1 else {"op": "and", "children": items}


def parse_filter_text(text: str) -> Filter:
    """A filter in SQL's spelling as filter JSON; InvalidArgument names what is wrong."""
    tokens: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if not text[pos:].strip():
                break
            raise InvalidArgument(f"partition filter {text!r}: cannot read {text[pos:pos + 20].strip()!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        raw = m.group(kind)
        if kind == "str":
            tokens.append(("lit", raw[1:-1].replace(raw[0] * 2, raw[0])))
        elif kind == "num":
            tokens.append(("lit", float(raw) if any(c in raw for c in ".eE") else int(raw)))
        elif kind == "op":
            tokens.append(("op", "=" if raw == "==" else "!=" if raw == "<>" else raw))
        elif kind == "quoted":
            tokens.append(("col", raw[1:-1].replace("``", "`")))
        elif raw.upper() in _KEYWORDS:
            tokens.append(("kw", raw.upper()))
        else:
            tokens.append(("col", raw))
    parser = _Parser(text, tokens)
    out = parser.expr()
    if parser.i != len(tokens):
        raise InvalidArgument(f"partition filter {text!r}: unexpected {tokens[parser.i][1]!r}")
    return out


class _Parser:
    def __init__(self, text: str, tokens: list[tuple[str, Any]]) -> None:
        self.text, self.tokens, self.i = text, tokens, 0

    def _fail(self, what: str) -> InvalidArgument:
        at = self.tokens[self.i][1] if self.i < len(self.tokens) else "the end"
        return InvalidArgument(f"partition filter {self.text!r}: expected {what} at {at!r}")

    def _peek(self, kind: str, value: Any = None) -> bool:
        if self.i >= len(self.tokens):
            return False
        k, v = self.tokens[self.i]
        return k == kind and (value is None or v == value)

    def _take(self, kind: str, value: Any = None) -> bool:
        if self._peek(kind, value):
            self.i += 1
            return True
        return False

    def expr(self) -> Filter:
        items = [self.term()]
        while self._take("kw", "OR"):
            items.append(self.term())
        return items[0] if len(items) == 1 else {"op": "or", "children": items}

    def term(self) -> Filter:
        items = [self.factor()]
        while self._take("kw", "AND"):
            items.append(self.factor())
        return items[0] if len(items) == 1 else {"op": "and", "children": items}

    def literal(self) -> Any:
        if self._take("kw", "DATE") or self._take("kw", "TIMESTAMP"):
            if not self._peek("lit") or not isinstance(self.tokens[self.i][1], str):
                raise self._fail("a quoted date or timestamp")
        if self._take("kw", "TRUE"):
            return True
        if self._take("kw", "FALSE"):
            return False
        if self._peek("lit"):
            self.i += 1
            return self.tokens[self.i - 1][1]
        if self._peek("col"):
            word = self.tokens[self.i][1]
            raise InvalidArgument(f"partition filter {self.text!r}: {word!r} is not a value; quote strings "
                                  f"('{word}')")
        raise self._fail("a value")

    def factor(self) -> Filter:
        if self._take("kw", "NOT"):
            return {"op": "not", "child": self.factor()}
        if self._take("op", "("):
            inner = self.expr()
            if not self._take("op", ")"):
                raise self._fail("')'")
            return inner
        if not self._peek("col"):
            raise self._fail("a partition column")
        column = self.tokens[self.i][1]
        self.i += 1
        if self._take("kw", "IS"):
            negate = self._take("kw", "NOT")
            if not self._take("kw", "NULL"):
                raise self._fail("NULL")
            return {"op": "is_not_null" if negate else "is_null", "column": column}
        negate = self._take("kw", "NOT")
        if self._take("kw", "IN"):
            if not self._take("op", "("):
                raise self._fail("'('")
            values = [self.literal()]
            while self._take("op", ","):
                values.append(self.literal())
            if not self._take("op", ")"):
                raise self._fail("')'")
            f: Filter = {"op": "in", "column": column, "values": values}
            return {"op": "not", "child": f} if negate else f
        if self._take("kw", "BETWEEN"):
            lo = self.literal()
            if not self._take("kw", "AND"):
                raise self._fail("AND")
            hi = self.literal()
            f = {"op": "and", "children": [{"op": "ge", "column": column, "value": lo},
                                           {"op": "le", "column": column, "value": hi}]}
            return {"op": "not", "child": f} if negate else f
        if negate:
            raise self._fail("IN or BETWEEN")
        ops = {"=": "eq", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
        if self._peek("op") and self.tokens[self.i][1] in (*ops, "!="):
            op = self.tokens[self.i][1]
            self.i += 1
            value = self.literal()
            if op == "!=":
                return {"op": "not", "child": {"op": "eq", "column": column, "value": value}}
            return {"op": ops[op], "column": column, "value": value}
        raise self._fail("a comparison, IN, BETWEEN or IS [NOT] NULL")


def is_spec(where: str | Mapping[str, Any] | None) -> bool:
    """Whether ``where`` names partitions by a spec (a mapping or a spec text), not a filter or everything."""
    if isinstance(where, Mapping):
        return bool(where)
    return isinstance(where, str) and where.strip() not in ("", "*") and not is_filter(where.strip())


def where_filter(where: str | Mapping[str, Any] | None) -> Filter | None:
    """The filter JSON of what a call names: a spec mapping, a spec or filter text, or None / ``''`` /
    ``'*'`` (every partition: None)."""
    if where is None:
        return None
    if isinstance(where, Mapping):
        return spec_filter(where)
    if not isinstance(where, str):
        raise InvalidArgument(f"partitions must be named by a spec or a filter, not {type(where).__name__}")
    text = where.strip()
    if text in ("", "*"):
        return None
    return parse_filter_text(text) if is_filter(text) else spec_filter(parse_spec(text))


__all__ = ["MAX_KEY_BYTES", "MAX_VALUE_BYTES", "MAX_TAGS", "TagStat", "TagChange", "check_tags",
           "parse_assignments", "is_filter", "is_spec", "parse_spec", "spec_filter", "parse_filter_text", "where_filter"]
