"""The columns of a metadata or system table and its Spark schema (``StructType.json()``).

Row values cross the bridge as JSON in column order: strings, numbers, booleans; ``timestamp``
columns as epoch microseconds, ``date`` columns as epoch days; arrays as lists, maps as objects.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

#: a row source: (context, filters, continuation token) -> (token after the row, row) pairs, in order
Source = Callable[[Any, Any, Any], Iterator[tuple[Any, list[Any]]]]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Column:
    name: str
    #: a Spark type as ``DataType.json()`` gives it: ``"string"``, ``"long"``, ``{"type": "array", ...}``
    type: Any
    doc: str = ""

    def json_value(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "nullable": True, "metadata": {}}


def array_of(element: Any) -> dict[str, Any]:
    return {"type": "array", "elementType": element, "containsNull": True}


STRING_MAP = {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True}
STRINGS = array_of("string")


@dataclass(frozen=True)
class TableDef:
    """One metadata or system table: its name, columns, what it shows, and its row source."""

    name: str
    columns: tuple[Column, ...]
    doc: str
    source: Source
    #: the filters that read a key range instead of a scan (documented with the table)
    ranges: str = ""
    #: extra columns ahead of ``columns`` that depend on the table read (a table's partition columns)
    leading: Optional[Callable[[Any], tuple[Column, ...]]] = None

    def all_columns(self, ctx: Any = None) -> tuple[Column, ...]:
        return (self.leading(ctx) if self.leading is not None and ctx is not None else ()) + self.columns

    def schema_json(self, ctx: Any = None) -> str:
        return json.dumps({"type": "struct", "fields": [c.json_value() for c in self.all_columns(ctx)]})


def micros(t: dt.datetime | None) -> int | None:
    """A datetime as a ``timestamp`` column value (epoch microseconds)."""
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return (t - _EPOCH) // dt.timedelta(microseconds=1)


def day_number(text: str) -> int:
    """``YYYY-MM-DD`` as a ``date`` column value (epoch days)."""
    return (dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days
