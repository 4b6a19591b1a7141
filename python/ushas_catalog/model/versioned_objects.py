"""Versioned objects (volumes, models, files: docs/objects.md) as the metastore returns them."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

#: the object kinds the product knows; others are accepted by name (lower-case identifiers)
KNOWN_KINDS = ("volume", "model", "file")


def _iso(t: dt.datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def version_dataset(qualified_name: str, version: int) -> str:
    """The lineage dataset name of one version of an object: ``<catalog>.<database>.<object>@v<version>``."""
    return f"{qualified_name}@v{version}"


@dataclass
class ObjectInfo:
    """An object (its head record): kind, location, properties and the data version readers get."""

    catalog: str
    database: str
    name: str
    id: str
    kind: str
    location: str
    properties: dict[str, str]
    comment: str | None
    owner: str | None
    current_version: int
    version: int                  # metadata version (commits)
    created_at: dt.datetime
    updated_at: dt.datetime
    types: list[str] = field(default_factory=list)  # user-defined subspaces

    @property
    def qualified_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "database": self.database, "name": self.name, "id": self.id,
                "kind": self.kind, "location": self.location, "properties": self.properties,
                "comment": self.comment, "owner": self.owner, "current_version": self.current_version,
                "version": self.version, "created_at": _iso(self.created_at), "updated_at": _iso(self.updated_at),
                "subspaces": self.types}


@dataclass
class ObjectVersionInfo:
    """One data version of an object (``add_version``, ``rollback``)."""

    object: str                   # the object's qualified name
    version: int
    location: str
    properties: dict[str, str]
    comment: str | None
    created_by: str
    created_at: dt.datetime
    rolled_back_from: int | None = None
    current: bool = False

    @property
    def dataset(self) -> str:
        """Its lineage dataset name (``lineage.record(output=...)``)."""
        return version_dataset(self.object, self.version)

    def to_json(self) -> dict[str, Any]:
        return {"object": self.object, "version": self.version, "location": self.location,
                "properties": self.properties, "comment": self.comment, "created_by": self.created_by,
                "created_at": _iso(self.created_at), "rolled_back_from": self.rolled_back_from,
                "current": self.current, "dataset": self.dataset}
