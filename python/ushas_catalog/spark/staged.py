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

Operations bigger than one transaction (FoundationDB's 10 MB: a CTAS of hundreds of thousands of
partitions) fall back to a transaction per step (:mod:`ushas_catalog.spark.one_transaction`).
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
        run_in_one_transaction(ms, plan)
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


def _register(ms: Any, name: tuple[str, str, str], info: Any, w: Request, fence: Any) -> int:
    """The write's files become the new table's data (fenced: records the write COMMITTED)."""
    partition_by = list(info.partition_columns)
    written = list(w.get("written") or [])
    rows = w.get("rows")
    # the new table's data is exactly what this write produced (what else is in its directories
    # belongs to a replaced or dropped table: kept by that table until purge)
    for d in written:
        d["existing"] = []
    plan = plan_write(info.location, partition_by, [], None, {}, "truncate", [], written, rows,
                      managed=False)
    fenced = {"write_id": fence.write_id, "deadline_ms": fence.deadline_ms}
    detail = {"job_id": fence.write_id, "mode": "create"}
    if partition_by:
        return int(ms.replace_partitions(name, [], plan.put, expected_version=info.version, operation="APPEND",
                                         detail=detail, **fenced).version)
    props = {prop: str(plan.stats[key]) for key, prop in STATS_PROPERTIES.items() if plan.stats.get(key) is not None}
    return int(ms.write_table_files(name, plan.table_files or [], "APPEND", set_properties=props,
                                    expected_version=info.version, detail=detail, **fenced))


def commit_staged(ms: Any, r: Request) -> Answer:
    """``commitStagedChanges``: drop the replaced table, create the new one, register the write's
    files and forget the staged entry, in ONE transaction (see the module docstring)."""
    from ..data.staged import forget_staged
    from ..data.write_fence import WriteFence, check_fence

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
        if args["location"].rstrip("/") != qualify(str(r["location"])).rstrip("/"):
            raise InvalidArgument(f"{shown} would now be at {args['location']}, not at {r['location']} where the "
                                  f"write put its files: nothing was committed")
        if old is not None:
            m.drop_table(name)  # kept (with its data) until purge: UNDROP restores it
        info = m.create_table(name, **args)
        version = info.version
        if r.get("write") is not None:
            version = _register(m, name, info, dict(r["write"]), fence)
        forget_staged(m, fence.write_id)
        return {"version": version, "write_id": fence.write_id, "replaced": old is not None,
                "table": table_answer(ctx, m.get_table(name))}

    return run_in_one_transaction(ms, fn)


def abort_staged(ms: Any, r: Request) -> Answer:
    """``abortStagedChanges`` (or a commit that failed): the write is recorded ABORTED unless it
    committed; with ``files_removed`` (the shim deleted what it wrote) its staged entry goes too,
    else ``ushas purge`` removes what the entry names. Answers the write's state."""
    from ..data.staged import forget_staged
    from ..data.write_fence import ABORTED, abort_write

    ctx = SparkCtx.of(r)
    name = ".".join(table_name(ctx, r))
    outcome = abort_write(ms, str(r["write_id"]), str(r.get("reason") or "the staged table was aborted"), name)
    if outcome.state == ABORTED and r.get("files_removed"):
        forget_staged(ms, outcome.write_id)
    return outcome.to_json()


OPS = {
    "stage_table": stage_table,
    "stage_files": stage_files,
    "commit_staged": commit_staged,
    "abort_staged": abort_staged,
}

__all__ = ["OPS", "STAGED", "abort_staged", "commit_staged", "stage_files", "stage_table", "staging_dir"]
