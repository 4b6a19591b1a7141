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
from .store import Access, DatasetKey, LineageStore, StoredEdge
from .views import VIEW_DESCRIPTION


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
                out = found.table.key
            self._canonical[key] = out
        return self._canonical[key]

    def table_for_path(self, text: str) -> DatasetKey | None:
        """The table (or versioned object) whose location holds the path ``text`` (any spelling), or None."""
        locations = self.locations()
        found = locations.find(text) if locations is not None else None
        return found.table.key if found is not None else None


@dataclass
class ViewVersions:
    """The definition of each view in force for one walk: of the runs that defined a view (wrote
    it as a view) in ``[since, until]``, the latest. Edges into a view from an older definition
    are left out; edges of other runs are kept."""

    store: LineageStore
    since: int | None = None
    until: int | None = None
    _latest: dict[DatasetKey, Any] = field(default_factory=dict)
    _defines: dict[tuple[Any, DatasetKey], bool] = field(default_factory=dict)

    def defines(self, run_id: uuid.UUID, key: DatasetKey) -> bool:
        if (run_id, key) not in self._defines:
            self._defines[(run_id, key)] = any(
                acc is Access.WRITE and ref.key == key and ref.dataset.description == VIEW_DESCRIPTION
                for acc, ref in self.store.run_datasets(run_id))
        return self._defines[(run_id, key)]

    def latest(self, key: DatasetKey) -> uuid.UUID | None:
        """The run of the view's definition in force (None: not a view in this window)."""
        if key not in self._latest:
            rows = self.store.accesses(key, self.since, self.until, access=Access.WRITE, reverse=True, limit=1)
            self._latest[key] = rows[0].run_id if rows and self.defines(rows[0].run_id, key) else None
        return self._latest[key]

    def keep(self, edge: StoredEdge) -> bool:
        latest = self.latest(edge.target)
        return latest is None or edge.run_id == latest or not self.defines(edge.run_id, edge.target)


def _safe(fn: Any, *args: Any) -> Any:
    """A lookup that a store without a metastore (or a damaged location) must not fail."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - identity is a refinement: without it, paths stay paths
        return None
