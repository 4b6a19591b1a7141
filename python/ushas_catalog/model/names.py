"""Object names: parsing ``catalog.database.table`` (backticks quote parts containing dots),
validation and normalization.

Catalog, database, table and view names are case-insensitive and stored lower case, like
Hive and Spark's session catalog; column names keep their case. A name part must be a
non-empty string of at most :data:`MAX_NAME_BYTES` UTF-8 bytes without control
characters (C0, DEL and C1; NUL included). Every accepted name becomes one ``fdb.tuple``
string element, so no name can produce a key outside its parent's range (tenant isolation).

Names also become paths: a managed table lives at ``<warehouse>/<database>.db/<table>`` and a
partition at ``.../<column>=<value>``. So a *new* catalog, database, table or view name, and a
column name, must be one path segment (:func:`path_problem`): no ``/`` or ``\\``, and not
``.`` or ``..``. Such names are refused where they enter (create, rename, add / rename column)
with Spark's ``INVALID_SCHEMA_OR_RELATION_NAME`` (columns: ``INVALID_COLUMN_NAME_AS_PATH``);
looking such a name up is not an error (the object does not exist), so objects made before
this rule can still be read, renamed and dropped.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Sequence, Union

from ..errors import InvalidColumnName, InvalidName, SparkError, spark_id

MAX_NAME_BYTES = 255

NameLike = Union[str, Sequence[str]]

#: characters a path reads as a separator
PATH_SEPARATORS = ("/", "\\")


def _invalid(message: str, part: str) -> InvalidName:
    """A name Spark's own catalog refuses too: its ``INVALID_SCHEMA_OR_RELATION_NAME``."""
    return InvalidName(message, spark=SparkError("INVALID_SCHEMA_OR_RELATION_NAME", {"name": spark_id(part)}),
                       name=part[:64])


def validate_part(part: object, what: str) -> str:
    """``part`` if it is a valid name part, else :class:`InvalidName` saying why."""
    if not isinstance(part, str):
        raise InvalidName(f"{what} name must be a string, not {type(part).__name__}", name=repr(part))
    if not part:
        raise InvalidName(f"{what} name must not be empty")
    try:
        size = len(part.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidName(f"{what} name {_show(part)} is not valid Unicode (lone surrogate)") from None
    if size > MAX_NAME_BYTES:
        raise InvalidName(f"{what} name {_show(part)} is {size} UTF-8 bytes; the maximum is {MAX_NAME_BYTES}",
                          name=part[:64])
    for ch in part:
        if unicodedata.category(ch) == "Cc":
            raise _invalid(f"{what} name {_show(part)} contains the control character {ch!r}", part)
    return part


def path_problem(part: str) -> str | None:
    """Why ``part`` cannot be one path segment (a directory name), or ``None``: a path
    separator, a control character, or ``.`` / ``..`` as the whole name."""
    if part in (".", ".."):
        return f"is {part!r}, which a path reads as the current or parent directory"
    for ch in part:
        if ch in PATH_SEPARATORS:
            return f"contains {ch!r}, a path separator"
        if unicodedata.category(ch) == "Cc":
            return f"contains the control character {ch!r}"
    return None


def check_new_part(part: str, what: str) -> str:
    """``part`` if it can name a new ``what`` (a catalog, database, table or view), else
    :class:`InvalidName` with Spark's ``INVALID_SCHEMA_OR_RELATION_NAME``."""
    why = path_problem(part)
    if why is not None:
        raise _invalid(f"{what} name {_show(part)} {why}; it would be a directory name", part)
    return part


def check_column_name(name: str, datasource: str = "parquet") -> str:
    """``name`` if it can name a (top-level) column, else :class:`InvalidColumnName` with
    Spark's ``INVALID_COLUMN_NAME_AS_PATH`` (a partition column is a directory ``name=value``)."""
    why = path_problem(name)
    if why is not None:
        raise InvalidColumnName(f"column name {_show(name)} {why}; it would be part of a directory name",
                                spark=SparkError("INVALID_COLUMN_NAME_AS_PATH",
                                                 {"datasource": datasource, "columnName": spark_id(name)}),
                                column=name[:64])
    return name


def normalize(part: object, what: str) -> str:
    """A validated, lower-cased object name part."""
    return validate_part(validate_part(part, what).lower(), what)


def validate_project(project: object) -> str:
    """Project (tenant) names are validated like other names but keep their case."""
    return validate_part(project, "project")


def _show(part: str) -> str:
    return repr(part if len(part) <= 40 else part[:40] + "...")


def split_name(text: str) -> list[str]:
    """Split a dotted name; backticks quote a part (```` `` ```` is a literal backtick)."""
    if not isinstance(text, str):
        raise InvalidName(f"name must be a string, not {type(text).__name__}")
    parts: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    quoted_part = False
    while i < n:
        ch = text[i]
        if ch == "`" and not buf and not quoted_part:
            j = i + 1
            out: list[str] = []
            while True:
                if j >= n:
                    raise InvalidName(f"unterminated backtick in name {_show(text)}")
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        out.append("`")
                        j += 2
                        continue
                    break
                out.append(text[j])
                j += 1
            buf = out
            quoted_part = True
            i = j + 1
            if i < n and text[i] != ".":
                raise InvalidName(f"unexpected {text[i]!r} after a quoted part in name {_show(text)}")
            continue
        if ch == ".":
            parts.append("".join(buf))
            buf, quoted_part = [], False
        elif ch == "`":
            raise InvalidName(f"a backtick may only open a name part, in {_show(text)}")
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return parts


def quote(part: str) -> str:
    """``part`` as it must be written in a dotted name."""
    if part and all(c.isalnum() or c == "_" for c in part):
        return part
    return "`" + part.replace("`", "``") + "`"


def _parts(name: NameLike, count: int, what: str, example: str) -> list[str]:
    if isinstance(name, str):
        parts = split_name(name)
    elif isinstance(name, (tuple, list)):
        parts = list(name)
    else:
        raise InvalidName(f"{what} name must be a string or a tuple of strings, not {type(name).__name__}")
    if len(parts) != count:
        shown = name if isinstance(name, str) else ".".join(map(str, parts))
        raise InvalidName(f"{what} name {_show(str(shown))} must have {count} part{'s' if count > 1 else ''}: "
                          f"{example}", name=str(shown)[:200])
    return parts


@dataclass(frozen=True, slots=True)
class CatalogName:
    catalog: str

    @classmethod
    def parse(cls, name: NameLike) -> "CatalogName":
        if isinstance(name, CatalogName):
            return name
        (c,) = _parts(name, 1, "catalog", "catalog")
        return cls(normalize(c, "catalog"))

    def __str__(self) -> str:
        return quote(self.catalog)


@dataclass(frozen=True, slots=True)
class DatabaseName:
    catalog: str
    database: str

    @classmethod
    def parse(cls, name: NameLike) -> "DatabaseName":
        if isinstance(name, DatabaseName):
            return name
        c, d = _parts(name, 2, "database", "catalog.database")
        return cls(normalize(c, "catalog"), normalize(d, "database"))

    @property
    def catalog_name(self) -> CatalogName:
        return CatalogName(self.catalog)

    def __str__(self) -> str:
        return f"{quote(self.catalog)}.{quote(self.database)}"


@dataclass(frozen=True, slots=True)
class TableName:
    """The name of a table or a view."""

    catalog: str
    database: str
    name: str

    @classmethod
    def parse(cls, name: NameLike) -> "TableName":
        if isinstance(name, TableName):
            return name
        c, d, t = _parts(name, 3, "table", "catalog.database.table")
        return cls(normalize(c, "catalog"), normalize(d, "database"), normalize(t, "table"))

    @property
    def database_name(self) -> DatabaseName:
        return DatabaseName(self.catalog, self.database)

    def __str__(self) -> str:
        return f"{quote(self.catalog)}.{quote(self.database)}.{quote(self.name)}"


def new_catalog_name(name: NameLike) -> CatalogName:
    """The name of a catalog about to be created: parsed and :func:`check_new_part`."""
    cn = CatalogName.parse(name)
    check_new_part(cn.catalog, "catalog")
    return cn


def new_database_name(name: NameLike) -> DatabaseName:
    """The name of a database about to be created (its catalog exists or is checked itself)."""
    dn = DatabaseName.parse(name)
    check_new_part(dn.database, "database")
    check_not_reserved(dn.database)
    return dn


def new_table_name(name: NameLike, what: str = "table") -> TableName:
    """The name of a table or view about to be created or renamed to."""
    tn = TableName.parse(name)
    check_new_part(tn.name, what)
    check_not_reserved(tn.database)
    return tn


#: the database name that holds the system tables and procedures (``ushas.system.tables``)
SYSTEM_DATABASE = "system"


def check_not_reserved(database: str) -> str:
    """``database`` unless it is the reserved :data:`SYSTEM_DATABASE` (any case): no database or table
    can be created there, so ``<catalog>.system.<name>`` always means a system table or procedure."""
    if database.lower() == SYSTEM_DATABASE:
        raise InvalidName(f"database name {database!r} is reserved: <catalog>.{SYSTEM_DATABASE} holds the system "
                          f"tables (SHOW TABLES IN <catalog>.{SYSTEM_DATABASE}) and procedures; "
                          f"choose another name", name=database)
    return database


def parse_any(name: NameLike) -> CatalogName | DatabaseName | TableName:
    """A catalog, database or table name by its number of parts (for the CLI); a name object is
    returned as it is."""
    if isinstance(name, (CatalogName, DatabaseName, TableName)):
        return name
    parts = split_name(name) if isinstance(name, str) else list(name)
    if len(parts) == 1:
        return CatalogName.parse(parts)
    if len(parts) == 2:
        return DatabaseName.parse(parts)
    if len(parts) == 3:
        return TableName.parse(parts)
    raise InvalidName(f"name {_show(str(name))} must have 1 to 3 parts: catalog[.database[.table]]")
