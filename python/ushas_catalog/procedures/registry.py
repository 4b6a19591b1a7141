"""The procedure table: ``CALL <catalog>.system.<name>(...)`` (Spark's ``ProcedureCatalog``).

Every procedure is declared once, here, by the module of its group (:mod:`.drops`, :mod:`.tables`, ...),
with :func:`procedure`: its name, its parameters (name, Spark type, default as SQL text, or required),
its result columns and the function that runs it. The Java side (``io.ushas.spark.UshasProcedures``) is
generic: it builds Spark's ``ProcedureParameter``s from :meth:`Procedure.to_json`, Spark checks the
arguments (arity, names, types: its own error classes) and fills the defaults, and the JVM sends the
values in the declared order. A later procedure is one more entry; nothing in Java changes.

A procedure's function gets a :class:`Call` (the metastore, the catalog instance's context, the
arguments) and returns an :class:`Outcome`: its rows, the tables whose cached relations the session
drops (``refresh``), the data paths to delete after the commit, or a request for the JVM
(:meth:`Outcome.ask_jvm`: run queries, list partition directories) after which it is called again with
the JVM's answer (``Call.jvm_result``, ``Call.state``).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import InvalidArgument, InvalidName
from ..model.names import split_name

#: the Spark types a parameter or result column may have (what the JVM converts: UshasProcedures.toJson)
TYPES = ("STRING", "INT", "BIGINT", "BOOLEAN", "DOUBLE", "TIMESTAMP", "ARRAY<STRING>", "MAP<STRING, STRING>")


@dataclass(frozen=True)
class Param:
    """A parameter: ``default`` is the SQL text of its default (``NULL`` for an optional one without a
    value), None for a required parameter (Spark requires the required ones first)."""

    name: str
    type: str
    doc: str
    default: str | None = None

    @property
    def required(self) -> bool:
        return self.default is None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "default": self.default, "doc": self.doc}


@dataclass(frozen=True)
class Column:
    """A result column."""

    name: str
    type: str
    doc: str = ""


@dataclass
class Call:
    """One call of a procedure: the metastore (every call one transaction, see :attr:`Procedure.one_transaction`),
    the catalog instance's context (``ctx``: a :class:`ushas_catalog.spark.tables.SparkCtx`), the arguments
    (declared names -> Python values; timestamps as UTC datetimes) and, on a later step, the JVM's answer."""

    ms: Any
    ctx: Any
    args: dict[str, Any]
    state: Any = None
    jvm_result: Any = None

    def table(self, arg: str = "table") -> tuple[str, str, str]:
        """The table an argument names: ``db.t`` or ``<catalog>.db.t`` (backticks quote a part)."""
        text = self.required(arg)
        parts = split_name(text)
        if len(parts) == 3:
            if parts[0] not in (self.ctx.spark_catalog, self.ctx.catalog):
                raise InvalidArgument(f"{arg} {text!r} names catalog {parts[0]!r}; this is catalog "
                                      f"{self.ctx.spark_catalog!r} (name the table as database.table)")
            parts = parts[1:]
        if len(parts) != 2 or not all(parts):
            raise InvalidName(f"{arg} {text!r}: expected database.table")
        return self.ctx.catalog, parts[0], parts[1]

    def database(self, arg: str = "database") -> tuple[str, str]:
        text = self.required(arg)
        parts = split_name(text)
        if len(parts) == 2 and parts[0] in (self.ctx.spark_catalog, self.ctx.catalog):
            parts = parts[1:]
        if len(parts) != 1 or not parts[0]:
            raise InvalidName(f"{arg} {text!r}: expected a database name")
        return self.ctx.catalog, parts[0]

    def required(self, arg: str) -> Any:
        value = self.args.get(arg)
        if value is None:
            raise InvalidArgument(f"{arg} must not be NULL")
        return value


@dataclass
class Outcome:
    """What a procedure answers: rows (one list per row, in the result columns' order), the tables
    (``[database, table]``) whose cached relations this session drops, data paths the JVM deletes after
    the commit; or, with ``jvm`` set, a request for the JVM and the ``state`` to be called again with."""

    rows: list[list[Any]] = field(default_factory=list)
    refresh: list[list[str]] = field(default_factory=list)
    delete_paths: list[str] = field(default_factory=list)
    jvm: dict[str, Any] | None = None
    state: Any = None

    @classmethod
    def ask_jvm(cls, action: str, state: Any, **request: Any) -> "Outcome":
        """``sql`` (``queries``: their rows, as JSON objects, come back as ``jvm_result``, one list per
        query) or ``repair`` (``namespace``, ``name``, ``add``, ``drop``: the listing and registration of
        ``io.ushas.spark.PartitionRepair``; its counts come back)."""
        return cls(jvm={"action": action, **request}, state=state)


@dataclass(frozen=True)
class Procedure:
    name: str
    description: str
    params: tuple[Param, ...]
    result: tuple[Column, ...]
    run: Callable[[Call], Outcome]
    #: False: the procedure makes its own transactions (batched registration, purge's deletes after
    #: each commit); True: the whole call is one metastore transaction
    one_transaction: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "parameters": [p.to_json() for p in self.params],
                "result": [{"name": c.name, "type": c.type, "doc": c.doc} for c in self.result]}

    def schema_ddl(self) -> str:
        return ", ".join(f"`{c.name}` {c.type}" for c in self.result)


#: every procedure, by name (filled by the group modules when :mod:`ushas_catalog.procedures` is imported)
PROCEDURES: dict[str, Procedure] = {}


def procedure(name: str, description: str, params: list[Param], result: list[Column], *,
              one_transaction: bool = True) -> Callable[[Callable[[Call], Outcome]], Callable[[Call], Outcome]]:
    """Declares a procedure (a decorator of its function)."""
    seen_optional = False
    for p in params:
        if p.type not in TYPES:
            raise TypeError(f"procedure {name}: parameter {p.name} has unsupported type {p.type}")
        if p.required and seen_optional:
            raise TypeError(f"procedure {name}: required parameter {p.name} after an optional one")
        seen_optional = seen_optional or not p.required
    for c in result:
        if c.type not in TYPES:
            raise TypeError(f"procedure {name}: result column {c.name} has unsupported type {c.type}")

    def register(fn: Callable[[Call], Outcome]) -> Callable[[Call], Outcome]:
        if name in PROCEDURES:
            raise TypeError(f"procedure {name} is declared twice")
        PROCEDURES[name] = Procedure(name, description, tuple(params), tuple(result), fn, one_transaction)
        return fn

    return register


# ---- values between JSON and Python ---------------------------------------------------------------
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def from_micros(micros: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=micros)


def to_micros(when: dt.datetime) -> int:
    when = when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
    return (when - _EPOCH) // dt.timedelta(microseconds=1)


def decode_args(proc: Procedure, args: dict[str, Any]) -> dict[str, Any]:
    """The JVM's argument values -> Python values (timestamps: microseconds -> UTC datetimes)."""
    out: dict[str, Any] = {}
    for p in proc.params:
        value = args.get(p.name)
        if value is not None and p.type == "TIMESTAMP":
            value = from_micros(int(value))
        out[p.name] = value
    return out


def encode_rows(proc: Procedure, rows: list[list[Any]]) -> list[list[Any]]:
    """Result rows -> JSON values for the declared columns (datetimes as microseconds)."""
    out = []
    for row in rows:
        if len(row) != len(proc.result):
            raise TypeError(f"procedure {proc.name} answered {len(row)} values for {len(proc.result)} columns")
        out.append([to_micros(v) if isinstance(v, dt.datetime) else v for v in row])
    return out


# ---- shared parameters and results ------------------------------------------------------------------
TABLE = Param("table", "STRING", "the table: database.table (or <catalog>.database.table)")
ACTION = Column("action", "STRING", "what was done")
OBJECT = Column("object", "STRING", "the object it was done to")
DETAIL = Column("detail", "STRING", "what happened, in words")
VERSION = Column("version", "BIGINT", "the table version it made (NULL: none)")


__all__ = ["TYPES", "Param", "Column", "Call", "Outcome", "Procedure", "PROCEDURES", "procedure", "from_micros",
           "to_micros", "decode_args", "encode_rows", "TABLE", "ACTION", "OBJECT", "DETAIL", "VERSION"]
