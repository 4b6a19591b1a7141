"""How a name that cannot name a relation of the catalog answers a lookup: as Spark's session
catalog does, "no such table" (``TABLE_OR_VIEW_NOT_FOUND``), whether its database is missing or the
name is not one a table could have. Spark relies on it: a ``loadTable`` / ``loadRelation`` that
answers "no such table" lets the analyzer try what else the name may be, e.g. SQL on files
(``SELECT * FROM parquet.`/path```, Spark's ``ResolveSQLOnFile``), and ``DESC db.t`` of a missing
database reports the table, not the database."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import InvalidName, NoSuchNamespace, NoSuchTable


@contextmanager
def absent_as_no_such_table(request: dict[str, Any]) -> Iterator[None]:
    """Inside: a missing database or an impossible name becomes :class:`NoSuchTable`."""
    try:
        yield
    except (NoSuchNamespace, InvalidName) as e:
        shown = ".".join([*(request.get("namespace") or []), str(request.get("name"))])
        raise NoSuchTable(f"table or view {shown} does not exist ({e.message})") from e
