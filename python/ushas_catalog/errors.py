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

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator

#: the exception classes the JVM shim throws (``jvm-shim/.../Errors.java``): Spark's
#: ``AnalysisException`` of error class ``USHAS_<type>`` (SQLSTATE 42000) for bad input and missing or
#: existing objects, the shim's ``SparkThrowable`` of class ``USHAS_<type>`` (SQLSTATE 58000) for store,
#: bridge and internal failures, or Spark's own exception of an object kind (``NoSuchTableException``...)
ANALYSIS = "org.apache.spark.sql.AnalysisException"
SYSTEM = "io.ushas.spark.Errors$UshasBridgeException"
_SPARK = "org.apache.spark.sql.catalyst.analysis."


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
    #: the exception class the JVM shim throws for this error (:data:`SPARK_EXCEPTION`)
    spark_exception: ClassVar[str] = SYSTEM

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
        spark = self.spark_error()
        if spark is not None:
            out["spark"] = spark.to_json()
        return out

    def spark_error(self) -> SparkError | None:
        """The Spark error class and parameters the shim raises :attr:`spark_exception` with
        (``None``: the shim's own ``USHAS_<type>``, or Spark's exception built from the identifier)."""
        return self.spark


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool, list, dict))


# --- missing objects: exit code 1 -------------------------------------------------
class NotFound(UshasError):
    exit_code = 1
    spark_exception = ANALYSIS


class NoSuchProject(NotFound):
    pass


class NoSuchCatalog(NotFound):
    spark_exception = _SPARK + "NoSuchNamespaceException"


class NoSuchNamespace(NotFound):
    """A database (Spark namespace) does not exist."""

    spark_exception = _SPARK + "NoSuchNamespaceException"


class NoSuchTable(NotFound):
    spark_exception = _SPARK + "NoSuchTableException"


class NoSuchView(NotFound):
    spark_exception = _SPARK + "NoSuchViewException"


class NoSuchPartition(NotFound):
    """Spark's ``PARTITIONS_NOT_FOUND`` (details: ``table``, and ``partition`` as a spec dict)."""

    spark_exception = _SPARK + "NoSuchPartitionsException"

    def spark_error(self) -> SparkError | None:
        return self.spark or _partition_error("PARTITIONS_NOT_FOUND", self)


class NoSuchFunction(NotFound):
    """Spark's ``ROUTINE_NOT_FOUND`` (detail ``function``: the qualified name)."""

    spark_exception = _SPARK + "NoSuchFunctionException"

    def spark_error(self) -> SparkError | None:
        name = str(self.detail.get("function", ""))
        return self.spark or SparkError("ROUTINE_NOT_FOUND", {"routineName": spark_id(*name.split("."))})


class NoSuchObject(NotFound):
    """No versioned object (volume, model, file) of that name (detail ``object``: the qualified name)."""


class NoSuchVersion(NotFound):
    """``as_of`` names a version or time the object did not exist at."""


class NoSuchRun(NotFound):
    pass


class NoSuchColumn(NotFound):
    """A column a lineage call names that the dataset does not have (details: ``table``, ``column`` and
    ``columns``: the dataset's columns)."""


# --- already there -----------------------------------------------------------------
class NoSuchToken(NotFound):
    """No API token of that id (``ushas tokens``)."""


class AlreadyExists(UshasError):
    spark_exception = ANALYSIS


class CatalogAlreadyExists(AlreadyExists):
    pass


class NamespaceAlreadyExists(AlreadyExists):
    spark_exception = _SPARK + "NamespaceAlreadyExistsException"


class TableAlreadyExists(AlreadyExists):
    spark_exception = _SPARK + "TableAlreadyExistsException"


class ViewAlreadyExists(AlreadyExists):
    spark_exception = _SPARK + "ViewAlreadyExistsException"


class ObjectAlreadyExists(AlreadyExists):
    """A versioned object of that name exists (detail ``object``: the qualified name)."""


class FunctionAlreadyExists(AlreadyExists):
    """Spark's ``ROUTINE_ALREADY_EXISTS`` (detail ``function``: the qualified name)."""

    spark_exception = _SPARK + "FunctionAlreadyExistsException"

    def spark_error(self) -> SparkError | None:
        name = str(self.detail.get("function", ""))
        return self.spark or SparkError("ROUTINE_ALREADY_EXISTS", {
            "routineName": spark_id(*name.split(".")), "newRoutineType": "routine", "existingRoutineType": "routine"})


class PartitionAlreadyExists(AlreadyExists):
    """Spark's ``PARTITIONS_ALREADY_EXIST`` (details: ``table``, and ``partition`` as a spec dict)."""

    spark_exception = _SPARK + "PartitionsAlreadyExistException"

    def spark_error(self) -> SparkError | None:
        return self.spark or _partition_error("PARTITIONS_ALREADY_EXIST", self)


def _partition_error(error_class: str, error: UshasError) -> SparkError:
    """Spark's message parameters of a partition error, as Spark's own check words them:
    ``PARTITION (`dt` = a, `h` = 1)`` of table `` `c`.`d`.`t` ``."""
    spec = error.detail.get("partition")
    if isinstance(spec, dict):
        shown = ", ".join(f"{spark_id(str(k))} = {v}" for k, v in spec.items())
    else:  # the spec as the message words it: "(dt=a, h=1)"
        found = re.search(r"\(([^()]*)\)", error.message)
        shown = ", ".join(f"{spark_id(k.strip())} = {v}" for k, _, v in
                          (p.partition("=") for p in found.group(1).split(", "))) if found else error.message
    table = error.detail.get("table_parts")
    if isinstance(table, (tuple, list)):
        table_name = spark_id(*map(str, table))
    else:
        table_name = spark_id(*str(error.detail.get("table", "")).split("."))
    return SparkError(error_class, {"partitionList": f"PARTITION ({shown})", "tableName": table_name})


# --- bad input -------------------------------------------------------------------------
class NamespaceNotEmpty(UshasError):
    spark_exception = _SPARK + "NonEmptyNamespaceException"


class InvalidArgument(UshasError):
    spark_exception = ANALYSIS


class InvalidName(InvalidArgument):
    """A name that is not valid: empty, too long, control characters; for a new object also
    one that cannot be a path segment (``/``, ``\\``, ``.``, ``..``)."""


class InvalidColumnName(InvalidName):
    """A column name that cannot be a path segment (partition directories are ``col=value``)."""


class InvalidSchemaChange(InvalidArgument):
    pass


class InvalidPolicy(InvalidArgument):
    """A row filter or column mask that cannot be set: an unknown column, an empty or unparsable
    expression, a filter that is not boolean, a mask whose type is not the column's, a bad exempt principal."""


class PartitionColumnChange(InvalidSchemaChange):
    """Renaming, dropping or changing the type of a partition column: partition columns are
    fixed (their names and value encodings are in every partition's key and directory)."""


class LocationInUse(InvalidArgument):
    """A managed table's default location exists and is not empty, or holds, or is held by,
    another table's location."""


class RowPolicyRefused(InvalidArgument):
    """An operation that would remove rows (overwrite, TRUNCATE, DROP PARTITION, restore, repair's drop) by a
    user whose reads go through the table's row filter (docs/governance.md, "Writes"): nothing was written.
    Spark shows it as ``[USHAS_RowPolicy]``, like the shim's own refusal of the same rule."""

    #: the error class and SQLSTATE the shim raises it with (the same as ``RowPolicies.java``'s refusal)
    error_class: ClassVar[str] = "USHAS_RowPolicy"
    sql_state: ClassVar[str] = "42000"

    def spark_error(self) -> SparkError | None:
        return None

    def answer(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, "errorClass": self.error_class,
                "sqlState": self.sql_state}


class ReadOnlyMetadata(InvalidArgument):
    """An attempt to write SYSTEM-scope metadata, or another read-only field."""


# --- engine ----------------------------------------------------------------------------
class LimitExceeded(UshasError):
    """A FoundationDB limit (key, value, transaction size, transaction time) was exceeded."""

    spark_exception = ANALYSIS

    def __init__(self, message: str, *, limit: str, actual: int | float | None = None,
                 maximum: int | float | None = None) -> None:
        super().__init__(message, limit=limit, actual=actual, maximum=maximum)
        self.limit = limit


class Unauthorized(UshasError):
    """``ushas serve``: no valid token (or session) for a request that needs one: HTTP 401."""


class Forbidden(UshasError):
    """``ushas serve``: the token (or session) does not allow this request (a read token writing, no CSRF
    token): HTTP 403."""


class PermissionDenied(UshasError):
    """Authorization is on and the caller lacks a privilege (docs/governance.md): Spark shows
    ``[INSUFFICIENT_PERMISSIONS] User bob does not have SELECT on table …`` (SQLSTATE 42501, as
    Databricks names it; Spark 4.3 has no permission error class), the REST API answers 403."""

    spark_exception = ANALYSIS
    #: the error class and SQLSTATE the shim raises it with (``Errors.java``)
    error_class: ClassVar[str] = "INSUFFICIENT_PERMISSIONS"
    sql_state: ClassVar[str] = "42501"

    def answer(self) -> dict[str, Any]:
        return {**super().answer(), "errorClass": self.error_class, "sqlState": self.sql_state}


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


class WriteIdTaken(InvalidArgument):
    """A fenced write's id is already another write's: one into another table, or (governed) another user's
    committed write. Refused before anything is recorded or applied; the other write is left as it is."""

    def __init__(self, message: str, *, write_id: str, **detail: Any) -> None:
        super().__init__(message, write_id=write_id, **detail)
        self.write_id = write_id


class FilesNotRecorded(InvalidArgument):
    """An append without a listing (``replace_partitions(append=True)``) into a partition whose files the
    catalog does not record: nothing was written; the write lists the directory and commits again."""


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


class ServiceUnreachable(StoreUnavailable):
    """Remote mode: the catalog service (``ushas serve``) at the catalog's ``http(s)://`` URI could not be
    reached or did not answer in time (docs/service.md, "Remote mode")."""


class OutcomeUnknown(ServiceUnreachable):
    """Remote mode: the request was sent (or may have been) and the service gave no answer: whether it
    applied it is unknown. For a fenced write's commit the shim then asks what became of the write
    (``abort_write``) and, when it cannot, names the write id."""


class NotServed(InvalidArgument, AttributeError):
    """Remote mode: something only the store itself has (raw transactions, the lineage store, the metadata
    sub-API), asked of a metastore served by the catalog service: use the embedded store's URI for it."""


class StoreReadOnly(StoreUnavailable):
    """A write to a store that is open read-only (its file or directory is not writable)."""


class NotAStore(StoreUnavailable):
    """The file exists but is not an ushas store (left untouched)."""


class StoreDamaged(StoreUnavailable):
    """The store's own bookkeeping (its commit version counter) is missing or damaged;
    ``ushas repair --counter`` rebuilds it from the commit log."""


class BridgeError(UshasError):
    """The Python side of the bridge failed in a way that is not one of the above."""


class InternalError(UshasError):
    """The code broke one of its own rules (a bug, not bad input): the shim reports it as a system error."""


class KeySpaceError(InternalError, ValueError):
    """The key space tree is malformed, or a path / key does not fit it."""


class RecordTypeError(InternalError, TypeError):
    """A message of the wrong type was given to a record store."""


class PlanFormatError(UshasError, ValueError):
    """A plan document the lineage resolver cannot read (not ``ushas-plan``, an unknown version: a shim
    jar older or newer than this package)."""


class ShimUnavailable(UshasError, RuntimeError):
    """The shim jar (``io.ushas.spark.PlanWriter``) is not on the driver's classpath, or is older
    than this package (an entry point is missing): rebuild it and restart Spark."""


class LineageUnavailable(UshasError, RuntimeError):
    """``df.lineage()`` cannot work in this session (the shim is not loaded)."""


class JarBuildError(UshasError):
    """The shim jar cannot be built (no JDK, javac failed)."""


class NoSuchHook(NotFound):
    """No change hook of that name (``ushas hooks``)."""


class HookAlreadyExists(AlreadyExists):
    """A change hook of that name exists already (``ushas hooks add``)."""


class HookCursorExpired(CursorExpired):
    """A change hook's cursor is older than the change feed's retention: events it never delivered
    were trimmed. The hook is stopped until ``ushas hooks reset`` acknowledges the loss."""

# --- shares between projects (governance.shares) ----------------------------------------
class NoSuchShare(NotFound):
    """A share that does not exist, or (seen from another project) is not shared with it: the two
    read the same, so a project cannot learn which shares another one has."""


class ShareReadOnly(InvalidArgument):
    """A write, DDL or modifying procedure through a share: shares are read-only (SELECT only)."""


class ShareCatalog(InvalidArgument):
    """A catalog name that mounts a share, used where only the project's own catalogs work (the
    Python API reads a share through ``Metastore.shares.open(name)``)."""


# --- branches of a catalog (catalog.branches) ---------------------------------------------
class NoSuchBranch(NotFound):
    """A branch that does not exist in that catalog (or was dropped)."""


class BranchAlreadyExists(AlreadyExists):
    """A branch of that name exists already in that catalog."""


class BranchConflict(Conflict):
    """A merge whose branch changed objects that also changed in the target since the branch point:
    nothing was merged; ``detail["objects"]`` names every conflicting object."""


class BranchUnsupported(InvalidArgument):
    """An operation a branch does not run (docs/branches.md, "What a branch refuses"): nothing was
    written."""


def hierarchy() -> Iterator[type[UshasError]]:
    """Every error type of the hierarchy, :class:`UshasError` first."""
    todo: list[type[UshasError]] = [UshasError]
    while todo:
        cls = todo.pop(0)
        yield cls
        todo.extend(cls.__subclasses__())


def spark_exceptions() -> dict[str, str]:
    """Error type -> the exception class the JVM shim throws for it (derived from the hierarchy)."""
    return {cls.__name__: cls.spark_exception for cls in hierarchy()}


def contract_json() -> str:
    """The error table the shim jar carries (``io/ushas/spark/errors.json``, written by ``jar.py`` at build
    time): the ONE copy of the mapping, read by ``Errors.java``. A type the table does not name (an error
    class defined after the jar was built) reaches Spark as the shim's system error ``USHAS_<type>``."""
    return json.dumps({"errors": spark_exceptions(), "analysis": ANALYSIS, "system": SYSTEM},
                      sort_keys=True, indent=1)


#: error type -> the Spark exception class the JVM shim throws for it. The types that do not name one of
#: Spark's object exceptions reach Spark as ``[USHAS_<type>] message``: bad input (InvalidArgument,
#: InvalidName, NotFound, ...) as an AnalysisException of error class ``USHAS_<type>`` (SQLSTATE 42000),
#: store, bridge and internal failures as a SparkThrowable of that class (SQLSTATE 58000), so spark-sql
#: prints them once, like Spark's own errors (jvm-shim Errors.java reads this table from the jar).
SPARK_EXCEPTION: dict[str, str] = spark_exceptions()
