"""A table's bucketing: ``CLUSTERED BY (cols) [SORTED BY (cols)] INTO n BUCKETS`` (Spark's ``bucket`` /
``sorted_bucket`` partition transforms, Hive's bucket spec)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import InvalidArgument

#: Spark's limit (spark.sql.sources.bucketing.maxBuckets default)
MAX_BUCKETS = 100_000


@dataclass(frozen=True)
class Bucketing:
    """``num_buckets`` buckets by the hash of ``columns``, each bucket's files sorted by ``sort_columns``."""

    num_buckets: int
    columns: list[str]
    sort_columns: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"num_buckets": self.num_buckets, "columns": list(self.columns),
                "sort_columns": list(self.sort_columns)}

    @staticmethod
    def from_json(d: dict[str, Any] | None) -> "Bucketing | None":
        if not d:
            return None
        return Bucketing(int(d["num_buckets"]), [str(c) for c in d["columns"]],
                         [str(c) for c in d.get("sort_columns") or []])

    def check(self, columns: Sequence[str], partition_by: Sequence[str]) -> "Bucketing":
        """Refuses a spec Spark refuses: no columns, a bucket count out of range, a column that is not a
        top-level column of the table, or a partition column."""
        if not 0 < self.num_buckets <= MAX_BUCKETS:
            raise InvalidArgument(f"number of buckets must be greater than 0 and at most {MAX_BUCKETS}, "
                                  f"got {self.num_buckets}")
        if not self.columns:
            raise InvalidArgument("bucketing needs at least one bucket column (CLUSTERED BY (col, ...))")
        known = {c.lower(): c for c in columns}
        parts = {p.lower() for p in partition_by}
        for c in [*self.columns, *self.sort_columns]:
            if c.lower() not in known:
                raise InvalidArgument(f"bucket column {c!r} is not a column of the table "
                                      f"({', '.join(columns)})")
            if c.lower() in parts:
                raise InvalidArgument(f"bucket column {c!r} is a partition column: bucket by data columns")
        return Bucketing(self.num_buckets, [known[c.lower()] for c in self.columns],
                         [known[c.lower()] for c in self.sort_columns])


def _split_args(text: str) -> list[str]:
    """``a, 4, `b, c``` -> ['a', '4', 'b, c'] (Spark's describe() quotes names with backticks)."""
    out: list[str] = []
    cur: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and i + 1 < len(text) and text[i + 1] == "`":
                cur.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "," and not quoted:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur).strip())
    return [a for a in out if a]


def from_transform(name: str, text: str) -> Bucketing:
    """Spark's transform (its name and ``describe()`` text) -> the bucketing:
    ``bucket(4, a, b)``; ``sorted_bucket(a, b, 4, s)`` (bucket columns, the count, sort columns)."""
    inner = text[text.index("(") + 1:text.rindex(")")] if "(" in text else ""
    args = _split_args(inner)
    counts = [i for i, a in enumerate(args) if a.isdigit()]
    if not counts:
        raise InvalidArgument(f"bucket transform {text!r} has no bucket count")
    if name == "bucket":
        return Bucketing(int(args[0]), args[1:], [])
    k = counts[0]
    return Bucketing(int(args[k]), args[:k], args[k + 1:])


__all__ = ["Bucketing", "MAX_BUCKETS", "from_transform"]
