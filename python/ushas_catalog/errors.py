"""Typed errors shared by the metastore, the bridge, the CLI and the lineage store.

Every error has a stable ``type`` name. The bridge answers errors as
``{"error": {"type": <type>, "message": <message>}}`` and the JVM shim throws the
matching Spark exception (see ``SPARK_EXCEPTION``), so a Spark user sees Spark's own
error class and the CLI maps ``exit_code`` to its process exit status. An error that
Spark itself reports with an error class of its own (``INVALID_SCHEMA_OR_RELATION_NAME``,
``LOCATION_ALREADY_EXISTS``, ...) carries it as :class:`SparkError`; the answer then has
``"spark": {"errorClass", "parameters", "runtime"}`` and the shim throws Spark's exception
of that class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SparkError:
    """The Spark error class (``error/error-conditions.json`` of Spark 4.3) and its message
    parameters a Spark user sees for an error; ``runtime``: Spark raises it as a
    ``SparkRuntimeException`` (else an ``AnalysisException``)."""

    error_class: str
    parameters: dict[str, str] = field(default_factory=dict)
    runtime: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"errorClass": self.error_class, "parameters": dict(self.parameters), "runtime": self.runtime}


def spark_id(*parts: str) -> str:
    """A (multi-part) name as Spark's error messages show it (``toSQLId``): `a`.`b`."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


class UshasError(Exception):
    """Base of every error this project raises on purpose."""

    #: process exit code used by the CLI
    exit_code: int = 2

    def __init__(self, message: str, *, spark: SparkError | None = None, **detail: Any) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.spark = spark

    @property
    def type(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.detail:
            out["detail"] = {k: v for k, v in self.detail.items() if _jsonable(v)}
        return out

    def answer(self) -> dict[str, Any]:
        """The bridge's error answer: type, message and the Spark error class if there is one."""
        out: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.spark is not None:
            out["spark"] = self.spark.to_json()
        return out


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool, list, dict))


# --- missing objects: exit code 1 -------------------------------------------------
class NotFound(UshasError):
    exit_code = 1


class NoSuchProject(NotFound):
    pass


class NoSuchCatalog(NotFound):
    pass


class NoSuchNamespace(NotFound):
    """A database (Spark namespace) does not exist."""


class NoSuchTable(NotFound):
    pass


class NoSuchView(NotFound):
    pass


class NoSuchPartition(NotFound):
    pass


class NoSuchVersion(NotFound):
    """``as_of`` names a version or time the object did not exist at."""


class NoSuchRun(NotFound):
    pass


# --- already there -----------------------------------------------------------------
class AlreadyExists(UshasError):
    pass


class CatalogAlreadyExists(AlreadyExists):
    pass


class NamespaceAlreadyExists(AlreadyExists):
    pass


class TableAlreadyExists(AlreadyExists):
    pass


class ViewAlreadyExists(AlreadyExists):
    pass


class PartitionAlreadyExists(AlreadyExists):
    pass


# --- bad input -------------------------------------------------------------------------
class NamespaceNotEmpty(UshasError):
    pass


class InvalidArgument(UshasError):
    pass


class InvalidName(InvalidArgument):
    """A name that is not valid: empty, too long, control characters; for a new object also
    one that cannot be a path segment (``/``, ``\\``, ``.``, ``..``)."""


class InvalidColumnName(InvalidName):
    """A column name that cannot be a path segment (partition directories are ``col=value``)."""


class InvalidSchemaChange(InvalidArgument):
    pass


class PartitionColumnChange(InvalidSchemaChange):
    """Renaming, dropping or changing the type of a partition column: partition columns are
    fixed (their names and value encodings are in every partition's key and directory)."""


class LocationInUse(InvalidArgument):
    """A managed table's default location exists and is not empty, or holds, or is held by,
    another table's location."""


class ReadOnlyMetadata(InvalidArgument):
    """An attempt to write SYSTEM-scope metadata, or another read-only field."""


# --- engine ----------------------------------------------------------------------------
class LimitExceeded(UshasError):
    """A FoundationDB limit (key, value, transaction size, transaction time) was exceeded."""

    def __init__(self, message: str, *, limit: str, actual: int | float | None = None,
                 maximum: int | float | None = None) -> None:
        super().__init__(message, limit=limit, actual=actual, maximum=maximum)
        self.limit = limit


class Conflict(UshasError):
    """A transaction conflict that survived the retry loop, or a stale expected version."""


class WriteConflict(Conflict):
    """An overwrite whose target partitions (or unpartitioned table) changed since the write
    started: not retried; the write fails and none of its files is registered."""


class WriteEnded(UshasError):
    """A fenced write (``write_id``) whose commit was refused because the write is over: it was
    aborted, or its caller's deadline passed. Nothing of it was committed; it never will be."""

    def __init__(self, message: str, *, write_id: str, **detail: Any) -> None:
        super().__init__(message, write_id=write_id, **detail)
        self.write_id = write_id


class WriteAborted(WriteEnded):
    """The write was recorded ABORTED (Spark's abort, a bridge timeout) before its commit arrived."""


class WriteExpired(WriteEnded):
    """The write's commit would have started after its caller's deadline (the moment the caller
    stopped waiting for it): refused, and the write recorded ABORTED."""


class CursorExpired(InvalidArgument):
    """A change feed cursor older than the feed's retention: events after it were trimmed."""


class StoreUnavailable(UshasError):
    """The key-value store cannot be reached."""


class StoreBusy(UshasError):
    """The store stayed locked by another process's write through the engine's bounded retries.
    Retryable: try again later. Not a :class:`Conflict` (nothing that was read has changed)."""

    retryable = True


class CallAbandoned(StoreBusy):
    """The call's caller (a Spark statement whose bridge timeout ran out) stopped waiting before the
    store could be had: the call ended without touching the store, releasing it."""


class OperationInProgress(StoreBusy):
    """The object has an operation bigger than one transaction in progress (a bulk add or drop of
    partitions, :mod:`ushas_catalog.bulk`): retry when it is finished; one whose process died is
    finished by ``ushas repair --pending`` or by the next write that meets it."""


class StoreNotFound(StoreUnavailable):
    """A command that only reads named a store that does not exist (nothing was created)."""


class StoreReadOnly(StoreUnavailable):
    """A write to a store that is open read-only (its file or directory is not writable)."""


class NotAStore(StoreUnavailable):
    """The file exists but is not an ushas store (left untouched)."""


class StoreDamaged(StoreUnavailable):
    """The store's own bookkeeping (its commit version counter) is missing or damaged;
    ``ushas repair --counter`` rebuilds it from the commit log."""


class BridgeError(UshasError):
    """The Python side of the bridge failed in a way that is not one of the above."""


#: error type -> the Spark exception class the JVM shim throws for it. Every other type reaches Spark as
#: ``[USHAS_<type>] message``: bad input (InvalidArgument, InvalidName, ...) as an AnalysisException of
#: error class ``USHAS_<type>`` (SQLSTATE 42000), store and bridge failures as a SparkThrowable of that
#: class (SQLSTATE 58000), so spark-sql prints them once, like Spark's own errors (jvm-shim Errors.java).
SPARK_EXCEPTION: dict[str, str] = {
    "NoSuchCatalog": "org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException",
    "NoSuchNamespace": "org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException",
    "NoSuchTable": "org.apache.spark.sql.catalyst.analysis.NoSuchTableException",
    "NoSuchView": "org.apache.spark.sql.catalyst.analysis.NoSuchViewException",
    "NoSuchPartition": "org.apache.spark.sql.catalyst.analysis.NoSuchPartitionException",
    "NamespaceAlreadyExists": "org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException",
    "TableAlreadyExists": "org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException",
    "ViewAlreadyExists": "org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException",
    "PartitionAlreadyExists": "org.apache.spark.sql.catalyst.analysis.PartitionsAlreadyExistException",
    "NamespaceNotEmpty": "org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException",
}
