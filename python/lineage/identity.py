"""One identity per dataset: a path that is (or lies under) the location of a catalog table is
that table; a path under the location of a versioned object (a volume, docs/objects.md) is that
object (keyed by its qualified name, ``catalog.database.object``).

Spark names a file read or write by path (``spark.read.parquet('<warehouse>/sales.db/orders')``,
``df.write.parquet('<location>/dt=2024-01-01')``) and the same data read through the catalog
(``ushas.sales.orders``) differently. Lineage keys both by the table: at capture time
(:meth:`TableLocations.find`, used by the lineage store's table ids), and at query time for paths
captured before the table existed (:func:`path_names_under` finds them under the table's
location). The path stays on the dataset as ``Dataset.uri`` of a TABLE dataset: the location it
was accessed by (an OpenLineage ``symlinks`` entry), see :func:`linked`.

Paths are compared in one spelling (:func:`canonical_uri`): ``/x``, ``file:/x``, ``file:///x``
and ``file:/x/`` are the same location.
"""
from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Iterable

from .model import Dataset, DatasetKind, normalize_uri

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def looks_like_path(text: str) -> bool:
    """A user-typed dataset name that is a location: ``/x``, ``file:/x``, ``s3a://b/x``..."""
    return text.startswith("/") or bool(_SCHEME.match(text) and ":/" in text)


def canonical_uri(text: str) -> str:
    """The one spelling of a location: local paths as ``file:/abs``, an empty authority
    collapsed (``file:///x`` -> ``file:/x``, ``file://localhost/x`` -> ``file:/x``), no
    trailing slash. Each part of a comma-joined list (a scan over several roots) alike."""
    parts = []
    for part in text.split(","):
        p = part.strip()
        if p.startswith("/"):
            p = "file:" + p
        if p.startswith("file://localhost/"):
            p = "file:/" + p[len("file://localhost/"):]
        parts.append(normalize_uri(p))
    return ",".join(parts)


def linked(path: Dataset, table: Dataset) -> Dataset:
    """The table a path denotes, keeping the path it was accessed by (``uri``: the symlink)."""
    return Dataset(DatasetKind.TABLE, catalog=table.catalog, identifier=table.identifier,
                   uri=path.uri, format=path.format)


@dataclass(frozen=True)
class TableLocation:
    table_id: uuid.UUID
    catalog: str  # the metastore catalog
    database: str
    table: str
    location: str  # canonical
    #: "table", or "object": a versioned object (a volume...) of that name, keyed by its qualified name
    kind: str = "table"

    @property
    def qualified_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.table}"

    @property
    def key(self) -> uuid.UUID | str:
        """Its lineage dataset key: a table's id, an object's qualified name."""
        return self.qualified_name if self.kind == "object" else self.table_id


@dataclass(frozen=True)
class Found:
    """The table a location lies in, and the partition its directory names (``k=v`` segments)."""

    table: TableLocation
    partition: tuple[tuple[str, str], ...] = ()


@dataclass
class TableLocations:
    """Every live table's location (canonical) -> the table. Built from one scan of the
    metastore; looked up by walking up a path's ancestors (one dict probe per level)."""

    by_location: dict[str, TableLocation] = field(default_factory=dict)
    by_id: dict[uuid.UUID, TableLocation] = field(default_factory=dict)
    built: float = 0.0

    @staticmethod
    def of(locations: Iterable[TableLocation]) -> TableLocations:
        out = TableLocations(built=time.monotonic())
        for loc in locations:
            out.by_location.setdefault(loc.location, loc)
            out.by_id[loc.table_id] = loc
        return out

    def find(self, uri: str) -> Found | None:
        """The table whose location is ``uri`` or one of its ancestors (the nearest), with the
        partition the rest of the path names; None when no table holds it. A comma-joined
        list resolves only when every part lies in the same table."""
        found = [self._find_one(u) for u in canonical_uri(uri).split(",")]
        if not found or any(f is None for f in found):
            return None
        if len({f.table.table_id for f in found if f is not None}) != 1:
            return None
        return found[0] if len(found) == 1 else Found(found[0].table)  # type: ignore[union-attr]

    def _find_one(self, uri: str) -> Found | None:
        current = uri
        rest: list[str] = []
        while True:
            loc = self.by_location.get(current)
            if loc is not None:
                spec = tuple(tuple(seg.split("=", 1)) for seg in reversed(rest) if "=" in seg)
                return Found(loc, spec)  # type: ignore[arg-type]
            head, sep, tail = current.rpartition("/")
            if not sep or not head or head.endswith(":") or head.endswith("/"):
                return None
            rest.append(tail)
            current = head


def path_names_prefix(location: str) -> str:
    """Names of path datasets under ``location`` start with this."""
    return canonical_uri(location).rstrip("/") + "/"


def partition_of(uri: str, location: str | None) -> dict[str, str]:
    """The partition a directory under a table's ``location`` names (its ``k=v`` segments)."""
    if not location:
        return {}
    path, loc = canonical_uri(uri), canonical_uri(location)
    if not path.startswith(loc.rstrip("/") + "/"):
        return {}
    rest = path[len(loc.rstrip("/")) + 1:].split("/")
    return dict(seg.split("=", 1) for seg in rest if "=" in seg)
