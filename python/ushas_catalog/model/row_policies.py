"""Row filters and column masks of a table (docs/governance.md, "Row filters and column masks"): the
values the catalog stores (:class:`RowFilter`, :class:`ColumnMask`), their checks, and what one reader
gets (:func:`for_reader`: the policies that apply to a user holding some principals, with the user and
principals ``current_user()`` and ``is_member()`` resolve against)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..errors import InvalidPolicy

#: the longest expression kept (a policy is read with every load of its table)
MAX_EXPRESSION = 16_384
PRINCIPAL_KINDS = ("role", "group", "user")


@dataclass(frozen=True)
class RowFilter:
    """Only rows for which ``expression`` (Spark SQL, boolean) is true are read; ``exempt`` (a principal,
    '' none) reads every row."""

    expression: str
    exempt: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"expression": self.expression, "exempt": self.exempt}


@dataclass(frozen=True)
class ColumnMask:
    """``column`` is read as ``expression`` (Spark SQL, cast to the column's type); ``exempt`` reads it raw."""

    column: str
    expression: str
    exempt: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "expression": self.expression, "exempt": self.exempt}


def check_expression(text: Any, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidPolicy(f"{what} must be a non-empty SQL expression")
    if len(text) > MAX_EXPRESSION:
        raise InvalidPolicy(f"{what} is {len(text)} characters long; at most {MAX_EXPRESSION}")
    return text.strip()


def check_exempt(text: Any) -> str:
    """``''`` / None (nobody is exempt), ``role:NAME``, ``group:NAME`` or ``user:NAME``."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return ""
    if not isinstance(text, str):
        raise InvalidPolicy("the exempt principal must be a string like 'role:admins'")
    kind, sep, name = text.strip().partition(":")
    if not sep or kind not in PRINCIPAL_KINDS or not name.strip():
        raise InvalidPolicy(f"exempt principal {text!r} is not role:NAME, group:NAME or user:NAME")
    return f"{kind}:{name.strip()}"


def find_column(names: Sequence[str], column: Any) -> str:
    """The table column ``column`` names (case-insensitively, as Spark resolves it)."""
    if not isinstance(column, str) or not column.strip():
        raise InvalidPolicy("column must be a column name")
    for n in names:
        if n.lower() == column.strip().lower():
            return n
    raise InvalidPolicy(f"column {column!r} does not exist (columns: {', '.join(names)})")


def for_reader(row_filter: RowFilter | None, masks: Iterable[ColumnMask], user: str,
               principals: frozenset[str]) -> dict[str, Any] | None:
    """What a reader's Spark applies (None: nothing): the filter and the masks whose exempt principal
    ``principals`` does not hold, and the user and principals their ``current_user()`` / ``is_member()``
    resolve to."""
    applied_filter = None
    if row_filter is not None and not (row_filter.exempt and row_filter.exempt in principals):
        applied_filter = row_filter.expression
    applied = [{"column": m.column, "expression": m.expression} for m in masks
               if not (m.exempt and m.exempt in principals)]
    if applied_filter is None and not applied:
        return None
    return {"row_filter": applied_filter, "masks": applied, "user": user, "principals": sorted(principals)}


#: Spark's key prefix of a column's statistics in table properties (``analyze_table``)
COLUMN_STATISTICS = "spark.sql.statistics.colStats."


#: the row counts Spark and the catalog record of a whole table (``ANALYZE``, writes): counts of every row
ROW_COUNTS = ("spark.sql.statistics.numRows", "numRows")


def without_masked_statistics(properties: dict[str, str], policy: dict[str, Any] | None) -> dict[str, str]:
    """``properties`` without the statistics a reader under ``policy`` (a reader's, see :func:`for_reader`)
    must not see: those (min, max, ...) of the columns it masks, which would show the raw values, and, under
    a row filter, every column's statistics and the table's row counts, computed over rows it cannot see
    (docs/governance.md, "Metadata follows the data's policy")."""
    if not policy:
        return properties
    if policy.get("row_filter"):
        return {k: v for k, v in properties.items() if not k.startswith(COLUMN_STATISTICS) and k not in ROW_COUNTS}
    masked = {m["column"].lower() for m in policy.get("masks") or ()}
    if not masked:
        return properties
    return {k: v for k, v in properties.items()
            if not (k.startswith(COLUMN_STATISTICS)
                    and k[len(COLUMN_STATISTICS):].rsplit(".", 1)[0].lower() in masked)}
