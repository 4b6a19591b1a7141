"""The kinds of datasets and of column lineage edges (DIRECT / INDIRECT and their subtypes)."""
from __future__ import annotations

from enum import Enum


class DatasetKind(str, Enum):
    TABLE = "table"  # a catalog table (ushas, spark_catalog, Hive, any V2 catalog)
    PATH = "path"  # files read/written by path (file:/..., s3a://...)
    INLINE = "inline"  # an in-query source: VALUES, range(), a local relation, ...


class EdgeKind(str, Enum):
    DIRECT = "DIRECT"
    INDIRECT = "INDIRECT"


class EdgeSubtype(str, Enum):
    # DIRECT
    IDENTITY = "IDENTITY"
    TRANSFORMATION = "TRANSFORMATION"
    AGGREGATION = "AGGREGATION"
    # INDIRECT
    FILTER = "FILTER"
    JOIN = "JOIN"
    GROUP_BY = "GROUP_BY"
    SORT = "SORT"
    WINDOW = "WINDOW"
    CONDITIONAL = "CONDITIONAL"

    @property
    def kind(self) -> EdgeKind:
        # identity tests: hashing an Enum member runs Python code (Enum.__hash__), and this is
        # asked for every reference the resolver finds
        if self is EdgeSubtype.IDENTITY or self is EdgeSubtype.TRANSFORMATION or self is EdgeSubtype.AGGREGATION:
            return EdgeKind.DIRECT
        return EdgeKind.INDIRECT


_DIRECT_RANK = {EdgeSubtype.IDENTITY: 0, EdgeSubtype.TRANSFORMATION: 1, EdgeSubtype.AGGREGATION: 2}


def compose_subtypes(a: EdgeSubtype, b: EdgeSubtype) -> EdgeSubtype:
    """The subtype of a DIRECT path made of a step of subtype ``a`` then ``b`` (or of two parallel
    paths): AGGREGATION dominates TRANSFORMATION, which dominates IDENTITY."""
    return a if _DIRECT_RANK[a] >= _DIRECT_RANK[b] else b
