"""Who calls through the Spark bridge, and what the shim's reads outside the metastore's methods need.

Every shim request carries its catalog instance's identity (``ctx.user``: the catalog's ``user``
option, the Connect or Thrift session's user, else Spark's user; ``ctx.authorization``: the
``authorization`` option), set by ``io.ushas.spark.Identity``. :func:`scope` makes the request's calls
run as that caller. Most ops only call the metastore's methods, whose privileges are declared in
:data:`ushas_catalog.catalog.authorization.RULES`; the ops in :data:`OP_RULES` read records directly
(the bridge cache's lookups, the data files a scan reads, metadata and system tables, DESCRIBE): they
run in one transaction that first checks the privilege their rule names.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from ..catalog.authorization import ANYONE, CATALOG, PROJECT, RELATION, Requirement, requiring
from ..governance.identity import Caller, calling
from ..governance.privileges import CREATE, MANAGE, MODIFY, SELECT, USE
from ..model.names import SYSTEM_DATABASE
from .one_transaction import run_in_one_transaction
from .remote import CHOSEN_WAREHOUSE, READ_TOKEN

Request = dict[str, Any]


def caller_of(request: Request) -> Caller | None:
    """The caller a request names (None: the request carries no identity: the metastore's own)."""
    ctx = request.get("ctx") or {}
    user = ctx.get("user")
    if not user:
        return None
    return Caller(str(user), bool(ctx.get("authorization")))


def _relation(r: Request) -> Requirement:
    return Requirement(USE, RELATION, (r["ctx"]["catalog"], *(r.get("namespace") or ()), r["name"]))


def _read(r: Request) -> Requirement:
    return Requirement(SELECT, RELATION, (r["ctx"]["catalog"], *(r.get("namespace") or ()), r["name"]))


def _exists(r: Request) -> Requirement:
    """Whether a partition exists: a reader's question, and a writer's (Spark asks it before ADD / DROP
    PARTITION): SELECT or MODIFY."""
    return Requirement(SELECT, RELATION, (r["ctx"]["catalog"], *(r.get("namespace") or ()), r["name"]),
                       alternative=MODIFY, covers=True)


def _modify(r: Request) -> Requirement:
    return Requirement(MODIFY, RELATION, (r["ctx"]["catalog"], *(r.get("namespace") or ()), r["name"]), covers=True)


def _procedure(r: Request) -> Requirement | None:
    """The procedures that work outside the metastore's checked calls: what they need, covering them."""
    name = str(r.get("procedure") or "").lower()
    if name in ("expire_changes", "purge"):
        return Requirement(MANAGE, PROJECT, covers=True)
    if name in ("repair_table", "analyze_table", "compact"):
        from ..model.names import split_name

        table = split_name(str((r.get("args") or {}).get("table") or ""))
        if len(table) == 2:
            return Requirement(MODIFY, RELATION, (r["ctx"]["catalog"], *table), covers=True)
    return None


#: the system tables only administrators read: the policy and the audit log
ADMIN_TABLES = frozenset({"grants", "audit"})
#: the system tables of the whole project's change feed, lineage, runs and usage (not one catalog's):
#: SELECT on the project, as ``ushas changes`` / ``ushas lineage`` and the REST API
PROJECT_TABLES = frozenset({"changes", "runs", "dataset_access", "column_lineage", "table_lineage", "usage"})


def _rows(r: Request) -> Requirement:
    namespace = list(r.get("namespace") or ())
    catalog = r["ctx"]["catalog"]
    if namespace == [SYSTEM_DATABASE]:
        if r["name"] == "audit":  # the project's governance events: its administrators
            return Requirement(MANAGE, PROJECT, covers=True)
        if r["name"] in PROJECT_TABLES:
            return Requirement(SELECT, PROJECT)
        return Requirement(MANAGE if r["name"] in ADMIN_TABLES else SELECT, CATALOG, catalog)
    if len(namespace) == 2:  # a metadata table of namespace[0].namespace[1]
        return Requirement(SELECT, RELATION, (catalog, namespace[0], namespace[1]))
    return Requirement(USE, CATALOG, catalog)


#: op -> the privilege it needs, for the ops that read records outside the metastore's methods
OP_RULES: dict[str, Callable[[Request], Requirement | None]] = {
    "call_procedure": _procedure,
    "load_relation": _relation, "load_table": _relation, "relation_exists": _relation,
    "list_files": _read, "table_size": _read,
    "stream_latest": _read, "stream_batch": _read,  # a streaming read (spark.stream_source)
    # a read as of a version (spark.time_travel): SELECT, checked by each of its transactions
    "load_table_as_of": lambda r: Requirement(SELECT, RELATION, _read(r).name, covers=True),
    "list_partitions": _read, "partition_exists": _exists, "load_partition": _read,
    # initialize: anyone may open an existing catalog (what it shows is checked call by call); a missing
    # one is created by a caller with CREATE on the project
    "open": lambda r: Requirement(ANYONE, CATALOG, r["ctx"]["catalog"], on_missing=CREATE, covers=True),
    # writes: MODIFY covers what they read and write (a writer need not hold SELECT); ending one too (a write
    # id is bound to its table and writer: data.write_fence.check_owner); asking what became of one is
    # anyone's (another user's answer is refused)
    **{op: _modify for op in ("check_write", "commit_write", "commit_files", "truncate", "add_partitions",
                              "drop_partitions", "replace_partition_metadata", "repair", "delete_where")},
    # ending a write that has no outcome yet: MODIFY on its table (ending another's write makes its commit fail)
    "abort_write": lambda r: _modify(r) if r.get("name") is not None else Requirement(ANYONE, CATALOG, covers=True),
    "write_outcome": lambda r: Requirement(ANYONE, CATALOG, covers=True),
    "rows_table": _rows, "rows_page": _rows,
    "list_procedures": lambda r: Requirement(ANYONE, CATALOG), "load_procedure": lambda r: Requirement(ANYONE, CATALOG),
}


#: the ops whose handler runs exactly one transaction of its own (a relation's lookup; ``relation_exists``: one
#: ``Metastore.get_table`` / ``get_view``, whose own rule is the op's): that transaction checks the op's
#: requirement, no transaction is opened around it
SELF_CHECKED = frozenset({"load_relation", "load_table", "relation_exists"})


@contextlib.contextmanager
def scope(request: Request) -> Iterator[None]:
    """The request's calls run as its caller."""
    with calling(caller_of(request)):
        yield


def run_op(handler: Callable[[Any, Request], Any], op: str, ms: Any, request: Request) -> Any:
    """``handler(ms, request)`` as the request's caller; an op of :data:`OP_RULES` under authorization
    runs in one transaction that checks its privilege first."""
    caller = caller_of(request)
    with calling(caller):
        ctx = request.get("ctx") or {}
        if ctx.get(CHOSEN_WAREHOUSE) is True and caller is not None and caller.authorization:
            ms.check_warehouse(str(ctx.get("warehouse")), str(ctx.get("spark_catalog") or ctx.get("catalog")))
        rule = OP_RULES.get(op)
        if caller is None or not caller.authorization or rule is None:
            return handler(ms, request)
        req = rule(request)
        if req is None:
            return handler(ms, request)
        with requiring(req):
            if req.covers:  # every transaction of the op checks it, the op's own calls are not checked again
                if req.privilege != ANYONE:
                    ms.run(lambda tr: None)  # refused before anything runs
                return handler(ms, request)
            if req.privilege == ANYONE or op in SELF_CHECKED:
                return handler(ms, request)
            return run_in_one_transaction(ms, lambda m: _checked(m, handler, request))


def may_create_in(ms: Any, catalog: str) -> bool:
    """Whether the caller may create databases in ``catalog`` (always, when its calls are not checked),
    refusing (and recording) nothing: what opening a catalog asks before it makes the catalog's
    ``default`` namespace, so that opening a catalog writes nothing for a caller without CREATE on it."""
    return bool(ms.may(CREATE, CATALOG, catalog))


def check_write(ms: Any, r: Request) -> dict[str, Any]:
    """``loadTable(ident, writePrivileges)`` under authorization: MODIFY on the table, before Spark plans
    the write (its :data:`OP_RULES` entry checks it)."""
    return {}


def check_paths(ms: Any, r: Request) -> dict[str, Any]:
    """A plan reads and writes files by path (``reads``: ``parquet.`…```, ``spark.read.load``; ``writes``:
    ``df.write.parquet(path)``, ``INSERT OVERWRITE DIRECTORY``; the shim's ``PathReads``, one call per governed
    catalog and analyzed plan): the paths must be readable / writable by this catalog's caller
    (``Metastore.check_paths``, in one transaction: one policy snapshot, the caller's principals once; the tables of
    its project and its declared locations; the managed warehouse is not passed as a root, since projects may share
    one: files there that no live table owns are storage permissions' to protect). Under a remote catalog's read
    token (``ctx.read_token``, set by the service) every governed path write is refused: the token may only read."""
    read_only = (r.get("ctx") or {}).get(READ_TOKEN) is True  # set by the service for a read token only
    ms.require_branch(r["ctx"]["catalog"])  # a catalog on a dropped branch governs nothing: PathReads skips it
    ms.check_paths(reads=[str(p) for p in r.get("reads") or []], writes=[str(p) for p in r.get("writes") or []],
                   read_only=read_only)
    return {}


#: the ops of this module (``spark.ops.OPS`` includes them)
OPS = {"check_write": check_write, "check_paths": check_paths}


def _checked(ms: Any, handler: Callable[[Any, Request], Any], request: Request) -> Any:
    ms.run(lambda tr: None)  # the check, in the op's transaction
    return handler(ms, request)
