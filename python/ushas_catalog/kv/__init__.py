"""Key-value engines: ``sqlite://`` (embedded, the default), ``fdb://`` (FoundationDB) and
``postgresql://`` (PostgreSQL)."""
from .base import FDB_LIMITS, BusyError, Database, KeyValue, Limits, RetryableError, Transaction, strinc, transactional
from .tuple_compat import ensure_tuple_versionstamps

ensure_tuple_versionstamps()

__all__ = ["BusyError", "Database", "Transaction", "KeyValue", "Limits", "FDB_LIMITS", "RetryableError",
           "strinc", "transactional", "open_database"]


def open_database(uri: str, *, create: bool = True) -> Database:
    """Open an engine from its URI: ``sqlite:///path/ushas.db``, ``fdb:///path/fdb.cluster``, ``fdb://`` or
    ``postgresql://user@host:port/dbname``.

    ``create=False`` (every command that only reads) never creates a store: a missing one is
    :class:`~ushas_catalog.errors.StoreNotFound` (``store not found: PATH``). Opening never
    waits for another process's write (see each engine's docstring)."""
    from ..errors import InvalidArgument

    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise InvalidArgument(f"invalid store URI {uri!r}: expected sqlite:///path, fdb:///path/fdb.cluster "
                              f"or postgresql://user@host:port/dbname")
    if scheme == "sqlite":
        from .sqlite import SqliteDatabase

        return SqliteDatabase.open(uri, create=create)
    if scheme == "fdb":
        from .fdb import FdbDatabase

        return FdbDatabase.open(uri, create=create)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresDatabase

        return PostgresDatabase.open(uri, create=create)
    raise InvalidArgument(f"unknown store URI scheme {scheme!r} in {uri!r}: expected sqlite, fdb or postgresql")
