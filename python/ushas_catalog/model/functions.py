"""Persistent functions as the metastore returns them (:class:`FunctionInfo`), and what a
``CREATE FUNCTION`` gives (:class:`FunctionDefinition`)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

#: the resource kinds of ``USING JAR | FILE | ARCHIVE``
RESOURCE_TYPES = ("jar", "file", "archive")


@dataclass(frozen=True)
class FunctionDefinition:
    """A function as written: ``class_name`` (with ``resources``) or a SQL function
    (``parameters``, ``return_type``, ``body``; ``table_function`` for ``RETURNS TABLE``)."""

    class_name: str | None = None
    resources: tuple[tuple[str, str], ...] = ()  # (type, uri)
    parameters: str = ""
    return_type: str = ""
    body: str = ""
    table_function: bool = False
    deterministic: bool | None = None
    comment: str | None = None
    language: str = "SQL"

    @property
    def kind(self) -> str:
        return "CLASS" if self.class_name else "SQL"


@dataclass
class FunctionInfo:
    catalog: str
    database: str
    name: str
    id: str
    version: int
    kind: str                      # CLASS | SQL
    class_name: str | None
    resources: list[tuple[str, str]]
    parameters: str
    return_type: str
    body: str
    table_function: bool
    deterministic: bool | None
    comment: str | None
    language: str
    owner: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def qualified_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "database": self.database, "name": self.name, "id": self.id,
                "kind": self.kind, "version": self.version, "class_name": self.class_name,
                "resources": [{"type": t, "uri": u} for t, u in self.resources], "parameters": self.parameters,
                "return_type": self.return_type, "body": self.body, "table_function": self.table_function,
                "deterministic": self.deterministic, "comment": self.comment, "language": self.language,
                "owner": self.owner, "created_at": self.created_at.isoformat(),
                "updated_at": self.updated_at.isoformat(), "properties": self.properties}
