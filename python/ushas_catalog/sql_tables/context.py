"""What a row source reads with: the metastore joined to the page's one transaction, the table a
metadata table belongs to, and the lineage store and queries of the same project (the ones the
CLI's ``ushas lineage`` commands use)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ..model.names import TableName


@dataclass
class ReadContext:
    """One page's reading context (``ms`` runs every call in the page's transaction)."""

    ms: Any
    catalog: str
    #: the table of a metadata table (None for a system table)
    table: TableName | None = None
    #: the columns the read asked for (None: all): a source may skip work for the others
    columns: frozenset[str] | None = None
    _names: dict[Any, str] = field(default_factory=dict)
    _lineage: Any = None

    @property
    def lineage(self) -> Any:
        """The project's :class:`lineage.store.LineageStore` over the same (joined) database."""
        if self._lineage is None:
            from lineage.store import LineageStore
            from lineage.tables import MetastoreTableIds

            self._lineage = LineageStore(self.ms.db, self.ms.project, layout=self.ms.layout,
                                         tables=MetastoreTableIds(self.ms))
        return self._lineage

    @property
    def queries(self) -> Any:
        from lineage.query import LineageQueries

        return LineageQueries(self.lineage)

    def dataset_name(self, key: Any) -> str:
        """A dataset key's display name (a metastore table's current name), as the CLI shows it."""
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = self.lineage.describe(key)["name"]
        return name

    def dataset_key(self, name: str) -> Any:
        """The dataset key a name denotes (None: never captured), as ``ushas lineage`` resolves it."""
        return self.queries.resolve_dataset(name)


def table_id_text(key: Any) -> str | None:
    return str(key) if isinstance(key, uuid.UUID) else None
