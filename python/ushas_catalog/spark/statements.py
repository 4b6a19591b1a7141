"""Statements the shim sends as ONE bridge call that Spark would answer with several catalog calls.

Each bridge call is a Py4J round trip between the JVM and this process (thread hand-offs on both sides,
which a loaded machine makes cost milliseconds). For a statement whose catalog calls Spark makes one after
the other with nothing in between but its own branching, the shim sends one request and Python runs those
same calls here, in Spark's order (``call``: the op and its request, answered as if the shim had sent it
alone): the same privilege checks, share and remote handling as before, one round trip instead of two or
three. On a local store the calls share ONE transaction (:mod:`ushas_catalog.spark.statement_transaction`);
through the catalog service, or on a share's read-only view, each is the bridge's ordinary call.

- ``drop_table_statement`` (``DROP TABLE [IF EXISTS] t [PURGE]``, ``io.ushas.spark.DropTableExec``): Spark's
  ``DropTableExec`` asks ``tableExists`` (``relation_exists`` of kind ``table``), then ``dropTable`` /
  ``purgeTable`` (``drop_table``), or for a missing table ``viewExists`` (``relation_exists`` of kind
  ``view``) to name the wrong command. Answer: ``exists`` (the table existed and the drop ran: its answer,
  ``dropped`` and ``delete_paths``, or its ``error``), ``view`` (no table, a view of that name), or the
  error of an existence check (then nothing else ran).
"""
from __future__ import annotations

from typing import Any, Callable

#: (op, request) -> the answer the bridge gives the shim for that call (an ``error`` object when it failed)
Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def drop_table_statement(request: dict[str, Any], call: Call) -> dict[str, Any]:
    """``DROP TABLE`` as the calls of Spark's ``DropTableExec`` (see the module docstring)."""
    base = {k: v for k, v in request.items() if k not in ("purge", "kind")}  # ctx, name, deadline_ms: every call's
    table = call("relation_exists", {**base, "kind": "table"})
    if table.get("error") is not None:
        return table
    if table.get("exists"):
        dropped = call("drop_table", {**base, "purge": bool(request.get("purge"))})
        return {**dropped, "exists": True}
    view = call("relation_exists", {**base, "kind": "view"})
    if view.get("error") is not None:
        return view
    return {"exists": False, "view": bool(view.get("exists"))}


#: statement op -> its runner (request, call)
STATEMENTS: dict[str, Callable[[dict[str, Any], Call], dict[str, Any]]] = {
    "drop_table_statement": drop_table_statement,
}

__all__ = ["STATEMENTS", "Call", "drop_table_statement"]
