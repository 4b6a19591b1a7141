"""A statement's calls in ONE transaction of the store (``drop_table_statement``: DROP TABLE).

:mod:`ushas_catalog.spark.statements` answers a statement the shim sends as one request with the calls Spark
would have made one by one (``relation_exists``, then ``drop_table``). Made through the bridge's ordinary
entry, each of them looks its store up, takes its lock and runs its own transaction: two transactions for
one DROP TABLE. On a local store (not the catalog service's, not a share's read-only view) :func:`run`
makes them in ONE transaction instead: one lock, one snapshot, one commit. Each call is still that op,
answered by its own handler (:data:`ushas_catalog.spark.ops.OPS`) as the request's caller under its op's
privilege rule (:func:`ushas_catalog.spark.authorization.run_op`): the same checks in the same order on the
same objects; a refusal is audited in a transaction of its own (as every refusal inside a Spark call's
transaction), so the audit stays when the statement's transaction is rolled back.

A call that fails rolls the whole transaction back: nothing the statement's calls wrote stays (for DROP
TABLE the calls before the drop only read). The statement is then answered as call by call would answer
it: run again with the answers the calls before the failure gave, the failing call answering its error (a
failed commit is the last call's), and any call after it made through the ordinary entry. A call that only
the ordinary entry answers (an extension's op, an op of no handler, a catalog that became a share's mount
meanwhile) makes the whole statement run call by call, as the shim's own calls would.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ShareCatalog
from ..extensions import extensions
from .authorization import run_op
from .one_transaction import run_in_one_transaction
from .registry import Opened
from .statements import Call

#: a statement's runner (``statements.STATEMENTS``): (request, call) -> its answer
Statement = Callable[[dict[str, Any], Call], dict[str, Any]]
#: (op, the exception a call of it raised) -> the error object the shim gets for that call
ErrorOf = Callable[[str, Exception], dict[str, Any]]


class _Elsewhere(Exception):
    """A call the store's own handlers do not answer here: the statement runs call by call."""


@dataclass
class _Attempt:
    """One attempt of the statement's transaction: its calls' answers so far, in order, and whether the
    statement returned (a failure after that is its commit's)."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    returned: bool = False


def run(op: str, statement: Statement, request: dict[str, Any], opened: Opened, ordinary: Call,
        error_of: ErrorOf) -> dict[str, Any]:
    """``statement`` (the shim's ``op``, its ``request``) with its calls in one transaction of ``opened`` (see
    the module docstring); ``ordinary``: the bridge's entry for one call (its own lock and transaction), which also
    answers the statement call by call when this cannot; ``error_of``: a failed call's error object."""
    from . import ops as spark_ops
    from . import shares

    attempt = _Attempt()

    def in_transaction(ms: Any) -> dict[str, Any]:
        attempt.answers.clear()  # a retried transaction (a conflict) runs the statement again from the start
        attempt.returned = False

        def call(name: str, r: dict[str, Any]) -> dict[str, Any]:
            handler = spark_ops.OPS.get(name)
            if handler is None or extensions().bridge_ops.get(name) is not None:
                raise _Elsewhere(name)
            answer: dict[str, Any] = run_op(handler, name, ms, r)
            attempt.answers.append(answer)
            return answer

        answer = statement(request, call)
        attempt.returned = True
        return answer

    failure: Exception | None = None
    with opened.held(op, request.get("deadline_ms")):
        try:
            if shares.plain(opened, request):  # else a share's read-only view answers, call by call
                return run_in_one_transaction(opened.metastore, in_transaction)
        except (_Elsewhere, ShareCatalog):
            pass
        except Exception as exc:  # noqa: BLE001 - a call (or the commit) failed: answered below, as call by call
            failure = exc
    if failure is None:  # not this store's own calls: the statement call by call, through the ordinary entry
        return statement(request, ordinary)
    return _answered_with(statement, request, attempt, failure, ordinary, error_of)


def _answered_with(statement: Statement, request: dict[str, Any], attempt: _Attempt, failure: Exception,
                   ordinary: Call, error_of: ErrorOf) -> dict[str, Any]:
    """The statement's answer after its transaction failed (rolled back): the calls before the failing one
    answer as they did, the failing one (the last call, when the commit failed) answers ``failure``'s error,
    any later call is made through ``ordinary``."""
    before = attempt.answers[:-1] if attempt.returned else list(attempt.answers)
    replayed = iter(before)
    failed: list[bool] = []

    def call(op: str, r: dict[str, Any]) -> dict[str, Any]:
        answer = next(replayed, None)
        if answer is not None:
            return answer
        if not failed:
            failed.append(True)
            return {"error": error_of(op, failure)}
        return ordinary(op, r)

    answer = statement(request, call)
    if not failed:  # the failure was no call's (the statement made none): it is the statement's
        raise failure
    return answer


__all__ = ["ErrorOf", "Statement", "run"]
