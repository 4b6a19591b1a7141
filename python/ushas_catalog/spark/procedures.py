"""The bridge ops of ``CALL <catalog>.system.<name>(...)`` (``io.ushas.spark.UshasProcedures``):
``list_procedures``, ``load_procedure`` (the declaration Spark binds the arguments against) and
``call_procedure`` (one call, in one metastore transaction unless the procedure says otherwise; a
procedure that asks the JVM for something is called again with the JVM's answer). The procedures
themselves are :mod:`ushas_catalog.procedures`."""
from __future__ import annotations

from typing import Any

from ..errors import NoSuchNamespace, NoSuchTable, NotFound, SparkError, UshasError, spark_id
from ..procedures import PROCEDURES
from ..procedures.registry import Call, Outcome, decode_args, encode_rows
from .one_transaction import run_in_one_transaction
from .tables import SparkCtx

Request = dict[str, Any]
Answer = dict[str, Any]


def list_procedures(ms: Any, r: Request) -> Answer:
    return {"procedures": sorted(PROCEDURES)}


def load_procedure(ms: Any, r: Request) -> Answer:
    """The procedure's declaration, or ``null`` (the JVM reports Spark's FAILED_TO_LOAD_ROUTINE)."""
    proc = PROCEDURES.get(str(r.get("procedure") or "").lower())
    return {"procedure": proc.to_json() if proc is not None else None}


def call_procedure(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    proc = PROCEDURES.get(str(r["procedure"]).lower())
    if proc is None:
        from ..errors import InvalidArgument

        raise InvalidArgument(f"no procedure {r['procedure']!r}")
    args = decode_args(proc, dict(r.get("args") or {}))

    def run(m: Any) -> Outcome:
        return proc.run(Call(m, ctx, args, r.get("state"), r.get("jvm_result")))

    try:
        out = run_in_one_transaction(ms, run) if proc.one_transaction else run(ms)
    except (NoSuchTable, NoSuchNamespace) as e:
        raise _spark_not_found(e, ctx) from None
    answer: Answer = {"refresh": out.refresh, "delete_paths": out.delete_paths}
    if out.jvm is not None:
        answer.update({"jvm": out.jvm, "state": out.state})
        return answer
    answer.update({"schema": proc.schema_ddl(), "rows": encode_rows(proc, out.rows)})
    return answer


def _spark_not_found(e: UshasError, ctx: SparkCtx) -> UshasError:
    """A missing table or database named by an argument: Spark's own error class, with the name
    as Spark users write it (the identifier is an argument, not the procedure's)."""
    if e.spark is not None:
        return e
    if isinstance(e, NoSuchTable) and (not isinstance(e.detail.get("table"), str) or e.detail.get("column")):
        return NotFound(e.message)  # not the argument's table (a column, no dropped table of that name)
    if isinstance(e, NoSuchTable):
        parts = e.detail["table"].split(".")
        e.spark = SparkError("TABLE_OR_VIEW_NOT_FOUND", {"relationName": spark_id(ctx.spark_catalog, *parts[1:]),
                                                         "searchPath": f"[{spark_id(ctx.spark_catalog, *parts[1:2])}]"})
    elif isinstance(e, NoSuchNamespace):
        e.spark = SparkError("SCHEMA_NOT_FOUND", {"schemaName": spark_id(ctx.spark_catalog, *_db_of(e))})
    return e


def _db_of(e: UshasError) -> list[str]:
    db = e.detail.get("database")
    if isinstance(db, str):
        return db.split(".")[-1:]
    words = e.message.split()
    return [words[1].split(".")[-1]] if len(words) > 1 else []


OPS = {"list_procedures": list_procedures, "load_procedure": load_procedure, "call_procedure": call_procedure}
