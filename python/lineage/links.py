"""Query-time identity of datasets (lineage.identity): the walks of ``lineage.query`` see a path
captured before a table existed at its location as that table.

- :meth:`Links.aliases` of a metastore table: the path datasets captured at or under its
  location (keyed by their path because no table was there then);
- :meth:`Links.canonical` of a path key: the table now at (or above) that location.

Each answer is cached for one walk (one :class:`Links` per question).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from .identity import looks_like_path
from .store import DatasetKey, LineageStore


@dataclass
class Links:
    store: LineageStore
    _aliases: dict[DatasetKey, list[DatasetKey]] = field(default_factory=dict)
    _canonical: dict[DatasetKey, DatasetKey] = field(default_factory=dict)
    _locations: Any = None
    _read: bool = False

    def locations(self) -> Any:
        """The tables' locations, read once per walk (None without a metastore)."""
        if not self._read:
            self._read = True
            self._locations = _safe(self.store.table_locations)
        return self._locations

    def aliases(self, key: DatasetKey) -> list[DatasetKey]:
        """Path keys that denote the table ``key`` (none for anything but a metastore table)."""
        if key not in self._aliases:
            found: list[DatasetKey] = []
            location = _safe(self.store.location_of, key) if isinstance(key, uuid.UUID) else None
            if location:
                found = [k for k in _safe(self.store.path_keys_under, location) or [] if k != key]
            self._aliases[key] = found
        return self._aliases[key]

    def canonical(self, key: DatasetKey) -> DatasetKey:
        """The table a path key lies in now, else the key itself."""
        if key not in self._canonical:
            out = key
            locations = self.locations() if isinstance(key, str) and looks_like_path(key) else None
            found = locations.find(key) if locations is not None else None
            if found is not None:
                out = found.table.table_id
            self._canonical[key] = out
        return self._canonical[key]

    def table_for_path(self, text: str) -> uuid.UUID | None:
        """The table whose location holds the path ``text`` (any spelling), or None."""
        locations = self.locations()
        found = locations.find(text) if locations is not None else None
        return found.table.table_id if found is not None else None


def _safe(fn: Any, *args: Any) -> Any:
    """A lookup that a store without a metastore (or a damaged location) must not fail."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - identity is a refinement: without it, paths stay paths
        return None
