"""Atomic CTAS / RTAS: Spark's ``StagingTableCatalog`` (``CREATE [OR REPLACE] TABLE … AS SELECT``,
``REPLACE TABLE … AS SELECT``, ``writeTo(…).create() / createOrReplace() / replace()``, ``saveAsTable``
in overwrite mode).

Spark stages the table (``stageCreate`` / ``stageReplace`` / ``stageCreateOrReplace``), writes the
query into it, then commits (``commitStagedChanges``) or aborts. Here:

- :func:`stage_table` checks what Spark must refuse up front (the table exists for a create, is
  missing for a replace; the namespace; the name; a managed location that is not free) and plans the
  table (location, format, partitioning) without creating it. It records, in one transaction, a
  ``DataGarbage`` entry for the staged write (its staging directory, later its placed files) under an
  id of its own, so that whatever a failed or killed writer leaves is known and ``ushas purge`` removes
  it (:func:`ushas_catalog.data.staged.leftovers`).
- :func:`stage_files` adds the files the write is about to place to that entry, before they are placed.
- :func:`commit_staged`: ONE transaction, fenced by the write id (applied at most once, never after the
  write was aborted or after its deadline): the replaced table is dropped (kept, undroppable, until
  purge, as ``DROP TABLE`` keeps it), the new table is created, the files the write produced are
  registered, and the staged entry is removed. Before it, the table (or its replacement) does not
  exist for any reader; after it, it exists whole.
- :func:`abort_staged`: records the write ABORTED (unless it committed) and, when the shim removed the
  files, forgets the staged entry.

A partitioned write that does not fit one transaction (FoundationDB's 5 s / 10 MB; tried first at any
size, as before) stages its partitions in a hidden table first (:mod:`ushas_catalog.bulk_ctas`); its
commit is still one transaction, with the same before and after.
An unpartitioned write too big for one transaction falls back to a transaction per step
(:mod:`ushas_catalog.spark.one_transaction`).
"""
from __future__ import annotations

import uuid
from typing import Any

from ..data.staged import STAGED, staged_id, staged_operation
from ..errors import InvalidArgument, NoSuchTable, TableAlreadyExists
from ..model.data_files import DataFile
from ..model.names import new_table_name
from .one_transaction import run_in_one_transaction
from .tables import SparkCtx, create_arguments, location_of, qualify, table_answer, table_name
from .writes import STATS_PROPERTIES, plan_write

Request = dict[str, Any]
Answer = dict[str, Any]

#: the staged statement kinds Spark asks for
KINDS = ("create", "replace", "create_or_replace")


def _kind(r: Request) -> str:
    kind = r.get("kind")
    if kind not in KINDS:
        raise InvalidArgument(f"unknown staged table kind {kind!r}: expected one of {', '.join(KINDS)}")
    return str(kind)


def _exists_error(name: tuple[str, str, str], what: str) -> TableAlreadyExists:
    return TableAlreadyExists(f"{what} {'.'.join(name)} already exists", table=".".join(name))


def _arguments(ms: Any, ctx: SparkCtx, name: tuple[str, str, str], r: Request, old: Any,
               check_location: bool = True) -> dict[str, Any]:
    """The new table's ``create_table`` arguments. Its default location may hold the data of a table
    this replaces (kept until purge), or of a dropped table of the same name (checked when staging;
    at the commit it holds the write's own files)."""
    catalog, db, table = name
    database = ms.get_database((catalog, db))
    dropped = {d.name for d in ms.list_dropped_tables((catalog, db), table)}  # that name's only
    args = create_arguments(ctx, db, table, r, database.location, kept_data=True)
    kept = str(new_table_name(name)) in dropped or (
        old is not None and qualify(location_of(ctx, old)).rstrip("/") == args["location"].rstrip("/"))
    if check_location and not args["external"] and not kept:
        from ..data.locations import check_free

        check_free((ctx.spark_catalog, db, table), args["location"])
    if args["external"]:  # CTAS / RTAS … LOCATION: not in governed storage (docs/governance.md, "Locations")
        from ..model.names import TableName
        from .governed_locations import check_location as governed

        governed(ms, ctx, TableName.parse(name), str(args["location"]))
    return args


def _current(ms: Any, name: tuple[str, str, str], kind: str) -> Any:
    """The table a staged statement replaces (None: none); Spark's errors when it must not run."""
    if ms.view_exists(name):
        raise _exists_error(name, "view")
    exists = ms.table_exists(name)
    if kind == "create" and exists:
        raise _exists_error(name, "table")
    if kind == "replace" and not exists:
        raise NoSuchTable(f"table {'.'.join(name)} not found", table=".".join(name))
    return ms.get_table(name) if exists else None


def _planned(ctx: SparkCtx, args: dict[str, Any]) -> Answer:
    """The shim's ``table`` answer for a table not created yet (no version: nothing to conflict with)."""
    props = dict(args["properties"])
    props["provider"] = args["format"]
    props["location"] = args["location"]
    if args.get("comment") is not None:
        props["comment"] = args["comment"]
    if args.get("owner"):
        props["owner"] = args["owner"]
    if args["external"]:
        props["external"] = "true"
    from ..model.schema import parse_schema

    return {"schema": parse_schema(args["schema"]).json(), "partition_by": list(args["partition_by"]),
            "properties": props, "format": args["format"], "location": args["location"],
            "external": args["external"],
            "bucketing": args["bucketing"].to_json() if args.get("bucketing") is not None else None}


def staging_dir(location: str, write_id: str) -> str:
    """The staging directory of write ``write_id`` (as the shim's ``Staging`` makes it)."""
    return f"{location.rstrip('/')}/_ushas_staging/{write_id}"


def stage_table(ms: Any, r: Request) -> Answer:
    """``stageCreate`` / ``stageReplace`` / ``stageCreateOrReplace``: nothing is created; the answer
    is the planned table and the write id the shim's write and commit use."""
    from ..data.garbage import Garbage, record_garbage
    from ..data.write_fence import check_write_id

    ctx = SparkCtx.of(r)
    kind = _kind(r)
    name = table_name(ctx, r)
    new_table_name(name)
    write_id = check_write_id(r.get("write_id") or str(uuid.uuid4()))

    def plan(m: Any) -> Answer:
        old = _current(m, name, kind)
        args = _arguments(m, ctx, name, r, old)
        # everything the commit will check (names, columns, bucketing, locations), checked now by doing
        # it in a transaction that is then rolled back: a refused table is refused before any data is written
        if old is not None:
            m.drop_table(name)
        m.create_table(name, **args)
        raise _Planned({"table": _planned(ctx, args), "write_id": write_id, "replaces": old is not None})

    try:
        run_in_one_transaction(ms, plan, per_call=False)  # never for real, step by step
    except _Planned as planned:
        answer = planned.answer
    else:  # pragma: no cover - plan always raises
        raise AssertionError("unreachable")
    location = answer["table"]["location"]
    garbage = Garbage(files=[DataFile(staging_dir(location, write_id), 0, 0)])
    statement = {"create": "CREATE TABLE AS SELECT", "replace": "REPLACE TABLE AS SELECT",
                 "create_or_replace": "CREATE OR REPLACE TABLE AS SELECT"}[kind]
    from ..catalog.values import now_micros

    ms.db.run(lambda tr: record_garbage(tr, ms.project_path, staged_id(write_id), ".".join(name),
                                        staged_operation(statement, write_id), garbage, now_micros()))
    return answer


class _Planned(Exception):
    """Ends the planning transaction of :func:`stage_table` (rolled back) with its answer."""

    def __init__(self, answer: Answer) -> None:
        super().__init__("planned")
        self.answer = answer


def stage_files(ms: Any, r: Request) -> Answer:
    """The files a staged write is about to place into the table's directories, added to its
    staged entry first (one transaction): a writer killed after placing them leaves nothing unknown."""
    from ..data.staged import add_staged_files

    files = [DataFile.from_json(f) for f in r.get("files") or []]
    add_staged_files(ms, str(r["write_id"]), files)
    return {"staged": len(files)}


def _plan(location: str, partition_by: list[str], w: Request) -> Any:
    """The write's files as the new table's data: its partitions (``put``), or its files and stats."""
    written = list(w.get("written") or [])
    # the new table's data is exactly what this write produced (what else is in its directories
    # belongs to a replaced or dropped table: kept by that table until purge)
    for d in written:
        d["existing"] = []
    return plan_write(location, partition_by, [], None, {}, "truncate", [], written, w.get("rows"), managed=False)


def _register(ms: Any, name: tuple[str, str, str], info: Any, w: Request, fence: Any) -> int:
    """The write's files become the new table's data (fenced: records the write COMMITTED)."""
    partition_by = list(info.partition_columns)
    plan = _plan(info.location, partition_by, w)
    fenced = {"write_id": fence.write_id, "deadline_ms": fence.deadline_ms}
    detail = {"job_id": fence.write_id, "mode": "create"}
    if partition_by:
        return int(ms.replace_partitions(name, [], plan.put, expected_version=info.version, operation="APPEND",
                                         detail=detail, **fenced).version)
    props = {prop: str(plan.stats[key]) for key, prop in STATS_PROPERTIES.items() if plan.stats.get(key) is not None}
    return int(ms.write_table_files(name, plan.table_files or [], "APPEND", set_properties=props,
                                    expected_version=info.version, detail=detail, **fenced))


def _check_location(args: dict[str, Any], r: Request, shown: str) -> None:
    if args["location"].rstrip("/") != qualify(str(r["location"])).rstrip("/"):
        raise InvalidArgument(f"{shown} would now be at {args['location']}, not at {r['location']} where the "
                              f"write put its files: nothing was committed")


def _partitioned(r: Request) -> bool:
    return any(t.get("transform") == "identity" for t in r.get("partitioning") or [])


def commit_staged(ms: Any, r: Request) -> Answer:
    """``commitStagedChanges``: drop the replaced table, create the new one, register the write's
    files and forget the staged entry, in ONE transaction (see the module docstring). A partitioned write
    that does not fit (FoundationDB's 5 s / 10 MB: a CTAS of tens of thousands of partitions) stages its
    partitions hidden first (:func:`_commit_in_chunks`)."""
    from ..data.staged import forget_staged
    from ..data.write_fence import WriteFence, check_fence
    from ..errors import LimitExceeded
    from .one_transaction import TOO_BIG

    ctx = SparkCtx.of(r)
    kind = _kind(r)
    name = table_name(ctx, r)
    fence = WriteFence.of(r["write_id"], r.get("deadline_ms"))
    assert fence is not None
    shown = ".".join(name)

    def fn(m: Any) -> Answer:
        done = check_fence(m, fence, shown)
        if done is not None:  # a retry of a commit that went through
            return {"version": done.version, "write_id": fence.write_id, "already_committed": True}
        old = _current(m, name, kind)
        args = _arguments(m, ctx, name, r, old, check_location=False)
        _check_location(args, r, shown)
        if old is not None:
            m.drop_table(name)  # kept (with its data) until purge: UNDROP restores it
        info = m.create_table(name, **args)
        version = info.version
        if r.get("write") is not None:
            version = _register(m, name, info, dict(r["write"]), fence)
        forget_staged(m, fence.write_id)
        return {"version": version, "write_id": fence.write_id, "replaced": old is not None,
                "table": table_answer(ctx, m.get_table(name))}

    # tried in one transaction first, at any size (as fast as it gets when it fits); a partitioned write that
    # does not fit then stages hidden, never step by step
    chunked = r.get("write") is not None and _partitioned(r) and getattr(ms, "big", None) is not None
    try:
        return run_in_one_transaction(ms, fn, per_call=not chunked)
    except LimitExceeded as e:
        if not chunked or e.limit not in TOO_BIG:
            raise
        return _commit_in_chunks(ms, r, ctx, kind, name, fence)


def _commit_in_chunks(ms: Any, r: Request, ctx: SparkCtx, kind: str, name: tuple[str, str, str],
                      fence: Any) -> Answer:
    """``commitStagedChanges`` of a partitioned write too big for one transaction, as atomic for readers:
    its partitions are staged in a hidden table (:mod:`ushas_catalog.bulk_ctas`), then ONE transaction drops
    the replaced table, creates the new one where they are, commits them (fenced) and forgets the staged
    entry. Before it nothing of the new table is visible and the replaced one is whole; an error on the way
    rolls the hidden table back (the caller aborts the write, removing its files)."""
    from ..bulk_ctas import publish, roll_back, stage
    from ..catalog.registered_files import check_planned
    from ..catalog.tables import creating_at
    from ..data.staged import forget_staged
    from ..data.write_fence import Writer, check_fence, run_fenced
    from ..errors import Conflict
    from ..model.objects import MutationResult

    shown = ".".join(name)
    tn = new_table_name(name)
    done = check_fence(ms, fence, shown)
    if done is not None:  # a retry of a commit that went through
        return {"version": done.version, "write_id": fence.write_id, "already_committed": True}
    old = _current(ms, name, kind)
    args = _arguments(ms, ctx, name, r, old, check_location=False)
    _check_location(args, r, shown)

    def check(m: Any) -> Answer:  # what the publish will check (privileges too), before the staging
        if old is not None:
            m.drop_table(name)
        m.create_table(name, **args)
        raise _Planned({})

    try:
        run_in_one_transaction(ms, check, per_call=False)  # never for real, step by step
    except _Planned:
        pass
    plan = _plan(args["location"], list(args["partition_by"]), dict(r["write"]))
    check_planned(ms, tn, args["location"], plan.put)  # the files lie in the new table (catalog.registered_files)
    staged = stage(ms, tn, args["schema"], args["partition_by"], args["location"], plan.put, fence.write_id)
    detail = {"job_id": fence.write_id, "mode": "create"}

    def fn(m: Any) -> Answer:
        done = check_fence(m, fence, shown)  # a write that ended: WriteAborted / WriteExpired (recorded)
        if done is not None:  # pragma: no cover - only this publish commits it
            raise Conflict(f"write {fence.write_id} of {shown} was committed by another call")
        if not getattr(m.db, "nested", False):  # never step by step: the one transaction or nothing
            raise Conflict(f"the publish of {shown} did not run in one transaction: nothing was committed")
        now = _current(m, name, kind)
        args = _arguments(m, ctx, name, r, now, check_location=False)
        _check_location(args, r, shown)
        if now is not None:
            m.drop_table(name)  # kept (with its data) until purge: UNDROP restores it
        with creating_at(tn, staged.table_id):
            m.create_table(name, **args)
        result = run_fenced(m.db.run, m.project_path, fence, shown, lambda tr: publish(m, staged, detail),
                            lambda res: (res.to_json(), res.version),
                            lambda a: MutationResult(a.get("version"), added=a.get("added", 0)), Writer.of(m))
        forget_staged(m, fence.write_id)
        return {"version": result.version, "write_id": fence.write_id, "replaced": now is not None,
                "table": table_answer(ctx, m.get_table(name))}

    try:
        return run_in_one_transaction(ms, fn, per_call=False)
    except BaseException:
        roll_back(ms, staged)  # nothing if it committed (its work record went with the publish)
        raise


def abort_staged(ms: Any, r: Request) -> Answer:
    """``abortStagedChanges`` (or a commit that failed): the write is recorded ABORTED unless it
    committed; with ``files_removed`` (the shim deleted what it wrote) its staged entry goes too,
    else ``ushas purge`` removes what the entry names. Answers the write's state."""
    from ..data.staged import forget_staged
    from ..data.write_fence import ABORTED, Writer, abort_write

    ctx = SparkCtx.of(r)
    name = ".".join(table_name(ctx, r))
    outcome = abort_write(ms, str(r["write_id"]), str(r.get("reason") or "the staged table was aborted"), name,
                          checked=True)
    writer = Writer.of(ms)
    mine = not writer.governed or outcome.user in ("", writer.user)  # another's staged entry stays for purge
    if outcome.state == ABORTED and r.get("files_removed") and mine:
        forget_staged(ms, outcome.write_id)
    return outcome.to_json()


OPS = {
    "stage_table": stage_table,
    "stage_files": stage_files,
    "commit_staged": commit_staged,
    "abort_staged": abort_staged,
}

__all__ = ["OPS", "STAGED", "abort_staged", "commit_staged", "stage_files", "stage_table", "staging_dir"]
