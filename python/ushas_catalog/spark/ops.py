"""The operations behind the Spark shim: one function per shim request, each one
``Metastore`` call (one KV transaction) plus translation between Spark's shapes and the
metastore's. ``OPS`` maps the op names ``io.ushas.spark.*`` sends to these functions.

Size (about 750 lines): one function per shim request, each a few lines of translation;
the OPS table at the end names them all in one place.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable

from ..changes.streams import StreamBatch, committed_before
from ..model.data_files import DataFile
from ..errors import InvalidArgument, NoSuchNamespace, NoSuchTable, NoSuchView, StoreReadOnly
from ..data.locations import check_free
from ..model.names import TableName, new_table_name
from .one_transaction import in_one_transaction, run_in_one_transaction
from .repair import spark_op as repair
from .reads import OPS as READ_OPS
from .stream_source import OPS as STREAM_SOURCE_OPS
from .procedures import OPS as PROCEDURE_OPS
from .staged import OPS as STAGED_OPS
from .like import like_request
from .view_sync import OPS as VIEW_SYNC_OPS
from .functions import OPS as FUNCTION_OPS
from .authorization import OPS as AUTHORIZATION_OPS, may_create_in
from ..sql_tables.ops import OPS as ROWS_OPS, is_system, list_system_tables
from .lookups import absent_as_no_such_table
from .describe import describe
from .cache import partition_rows  # noqa: F401 - the bridge's partition rows (tests import it here)
from .tables import (SparkCtx, create_arguments, database_of, location_of, partition_columns_last, qualify,
                     rename_move, table_answer, table_name, view_answer)
from .stream_schema import check_batch_schema
from .writes import (STATS_PROPERTIES, append_table, appended_partitions, check_nothing_added, committed, plan_file_replacement,
                     plan_write, row_level_isolation)
from .row_level import OPS as ROW_LEVEL_OPS, row_level_operation
from ..model.table_changes import changes_from_json

Request = dict[str, Any]
Answer = dict[str, Any]

#: Spark's namespace metadata keys that are database fields
_NS_FIELDS = ("comment", "location", "owner")


# ---- catalog & namespaces -----------------------------------------------------------------------
def _cache(ctx: SparkCtx) -> Any:
    """The bridge-side cache of the store ``ctx`` names (:class:`ushas_catalog.spark.cache.BridgeCache`)."""
    from .registry import REGISTRY

    return REGISTRY.get(ctx.uri, ctx.project).cache(ctx.spark_catalog)


def _catalog_and_default(ms: Any, catalog: str) -> None:
    ms.ensure_catalog(catalog)
    # Spark's default namespace exists in every catalog, as in the session catalog (USE default); under
    # authorization it is made by a caller who may create databases in the catalog (its creator): opening
    # a catalog writes nothing for the others
    default = (catalog, "default")
    if not ms.database_exists(default) and may_create_in(ms, catalog):
        ms.create_database(default, comment="Default Database", if_not_exists=True)


def open_catalog(ms: Any, r: Request) -> Answer:
    """``initialize``: the catalog and its ``default`` namespace exist (one transaction); the
    ``cache.*`` options are checked and answered parsed, for the JVM's cache, and configure the
    bridge-side cache of this store. A read-only store is read as it is (its catalog must exist)."""
    from .cache import CacheSettings

    ctx = SparkCtx.of(r)
    settings = CacheSettings.of(r.get("cache_options"))
    try:
        run_in_one_transaction(ms, lambda m: _catalog_and_default(m, ctx.catalog))
    except StoreReadOnly:
        ms.ensure_catalog(ctx.catalog)
    _cache(ctx).configure(settings)
    return {"catalog": ctx.catalog, "cache": settings.to_json()}


def list_namespaces(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    namespace = r.get("namespace") or []
    if not namespace:
        return {"namespaces": [[d.name] for d in ms.list_databases(ctx.catalog)]}
    db = database_of(namespace)
    if not ms.database_exists((ctx.catalog, db)):
        raise NoSuchNamespace(f"database {ctx.catalog}.{db} does not exist")
    return {"namespaces": []}


def namespace_exists(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    namespace = r.get("namespace") or []
    if is_system(namespace):
        return {"exists": True}  # reserved: the system tables (ushas_catalog.sql_tables)
    if len(namespace) != 1:
        return {"exists": False}
    return {"exists": bool(ms.database_exists((ctx.catalog, namespace[0])))}


def load_namespace(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    db = ms.get_database((ctx.catalog, database_of(r["namespace"])))
    meta = dict(db.properties)
    for key in _NS_FIELDS:
        if getattr(db, key, None) is not None:
            meta[key] = getattr(db, key)
    return {"metadata": meta}


def create_namespace(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    meta = dict(r.get("metadata") or {})
    location = meta.pop("location", None)
    ms.create_database((ctx.catalog, database_of(r["namespace"])), comment=meta.pop("comment", None),
                       location=qualify(location) if location else None, owner=meta.pop("owner", None),
                       properties=meta)
    return {}


def alter_namespace(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    set_props: dict[str, str] = {}
    remove: list[str] = []
    fields: dict[str, Any] = {}
    for c in r["changes"]:
        key = c["property"]
        if key in ("comment", "location"):
            value = c.get("value") if c["kind"] == "SetProperty" else None
            fields[key] = qualify(value) if key == "location" and value else value
        elif key == "owner":
            continue  # Spark sets the owner on ALTER; ownership changes are not a Spark statement here
        elif c["kind"] == "SetProperty":
            set_props[key] = c["value"]
        else:
            remove.append(key)
    ms.alter_database((ctx.catalog, database_of(r["namespace"])), set_properties=set_props,
                      remove_properties=remove, **fields)
    return {}


def drop_namespace(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    name = (ctx.catalog, database_of(r["namespace"]))
    ms.drop_database(name, cascade=bool(r.get("cascade")))
    # the tables' data stays until the database is purged (undrop restores it with its data)
    return {"dropped": True, "delete_paths": []}


# ---- relations --------------------------------------------------------------------------------------
def load_relation(ms: Any, r: Request) -> Answer:
    """A table or view, in one transaction; with ``known`` (the id and version the JVM holds)
    ``{"unchanged": true}`` when that is still the relation under the name (see cache.lookup)."""
    from .cache import Known, lookup
    from ..model.names import TableName

    ctx = SparkCtx.of(r)
    with absent_as_no_such_table(r):
        return lookup(ms, _cache(ctx), ctx, TableName.parse(table_name(ctx, r)), Known.of(r.get("known")), views=True)


def load_table(ms: Any, r: Request) -> Answer:
    from .cache import Known, lookup
    from ..model.names import TableName

    ctx = SparkCtx.of(r)
    with absent_as_no_such_table(r):
        return lookup(ms, _cache(ctx), ctx, TableName.parse(table_name(ctx, r)), Known.of(r.get("known")), views=False)


def relation_exists(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    if len(r["namespace"]) != 1:
        return {"exists": False}
    name = table_name(ctx, r)
    getter = ms.get_table if r.get("kind") == "table" else ms.get_view
    try:
        getter(name)
        return {"exists": True}
    except (NoSuchTable, NoSuchView, NoSuchNamespace):
        return {"exists": False}


def list_relations(ms: Any, r: Request) -> Answer:
    if is_system(r["namespace"]):
        return list_system_tables(r)
    ctx = SparkCtx.of(r)
    db = (ctx.catalog, database_of(r["namespace"]))
    kind = r.get("kind")
    out: list[dict[str, str]] = []
    if kind in (None, "table"):
        for t in ms.list_tables(db):
            if getattr(t, "kind", "TABLE") != "TABLE":
                continue
            external = getattr(t, "external", None)
            out.append({"name": t.name, "type": "EXTERNAL" if external else "MANAGED"})
    if kind in (None, "view"):
        for v in ms.list_views(db):
            out.append({"name": v.name, "type": "VIEW"})
    return {"relations": out}


def create_table(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    catalog, db, table = table_name(ctx, r)
    new_table_name((catalog, db, table))  # a bad or reserved name, before its database is looked up
    database = ms.get_database((catalog, db))
    # a dropped table of this name keeps its data (until purge) where the new one goes: not foreign files
    dropped = {d.name for d in ms.list_dropped_tables((catalog, db), table)}  # that name's only
    args = create_arguments(ctx, db, table, r, database.location,
                            kept_data=str(new_table_name((catalog, db, table))) in dropped)
    if not args.get("default_location"):  # an explicit LOCATION: not in governed storage
        from .governed_locations import check_location

        check_location(ms, ctx, TableName.parse((catalog, db, table)), str(args.get("location") or ""),
                       database=database, placement=False)  # Metastore.create_table checks the placement
    # CREATE TABLE (no query: a CTAS is staged) puts the partition columns last, as the session catalog
    args["schema"] = partition_columns_last(args["schema"], args["partition_by"])
    return {"table": table_answer(ctx, ms.create_table((catalog, db, table), **args))}


#: column changes Spark's session catalog refuses for its file-source tables, and ushas with it: the data
#: files keep a column's old name (a renamed column would read NULL for every existing row) and CSV files
#: are read by position (a moved column would read another column's values)
REFUSED_COLUMN_CHANGES = {"RenameColumn": "RENAME COLUMN", "UpdateColumnPosition": "ALTER COLUMN ... FIRST | AFTER"}


def refuse_column_changes(ctx: SparkCtx, name: tuple[str, str, str], changes: list[dict[str, Any]]) -> None:
    """Spark's ``UNSUPPORTED_FEATURE.TABLE_OPERATION`` for ALTER TABLE … RENAME COLUMN and CHANGE COLUMN …
    FIRST / AFTER, as the session catalog answers them."""
    from ..errors import InvalidSchemaChange, SparkError, spark_id

    for change in changes:
        operation = REFUSED_COLUMN_CHANGES.get(str(change.get("type")))
        if operation is not None:
            raise InvalidSchemaChange(
                f"{'.'.join(name[1:])}: {operation} is not supported: the table's data files keep each column's "
                f"name and place (use ADD COLUMNS, or CREATE TABLE … AS SELECT with the new names)",
                spark=SparkError("UNSUPPORTED_FEATURE.TABLE_OPERATION",
                                 {"tableName": spark_id(ctx.spark_catalog, name[1], name[2]), "operation": operation}),
                table=".".join(name[1:]))


def alter_table(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    refuse_column_changes(ctx, name, list(r["changes"] or []))
    if not r["changes"]:  # e.g. CHANGE COLUMN c TYPE <its type>: nothing to do, as for the session catalog
        return {"table": table_answer(ctx, ms.get_table(name))}
    for change in r["changes"]:  # ALTER TABLE … SET LOCATION (Spark: the reserved property): not governed storage
        moved = change.get("location") if change.get("type") == "SetLocation" else \
            change.get("value") if change.get("type") == "SetProperty" and change.get("property") == "location" else None
        if moved:
            from .governed_locations import check_location

            check_location(ms, ctx, TableName.parse(name), qualify(str(moved)))
    return {"table": table_answer(ctx, ms.alter_table(name, changes_from_json(r["changes"])))}


def drop_table(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    from ..data.purge import purge_dropped_now

    try:
        if not r.get("purge"):
            ms.drop_table(name)  # one transaction, which also decides managed or external
            # the data stays until purge: undrop restores a table that reads every row it had
            return {"dropped": True, "delete_paths": []}
        # DROP TABLE ... PURGE: managed data goes after the metadata commit; external data stays
        return {"dropped": True, "delete_paths": purge_dropped_now(ms, name)}
    except NoSuchTable:
        return {"dropped": False}


def rename_table(ms: Any, r: Request) -> Answer:
    """ALTER TABLE ... RENAME TO. A managed table at its default location moves with its name (Hive
    semantics; external tables keep their location): the first request only answers the ``move``
    (nothing committed), the shim moves the directory, and the second request (with ``location``
    and the version the move was planned from) commits the new name and location in one
    transaction; the shim moves the directory back if that fails (a concurrent change included)."""
    from ..errors import TableAlreadyExists

    ctx = SparkCtx.of(r)
    target = list(r["to"])
    if len(target) == 1:
        target = [database_of(r["namespace"]), target[0]]
    if len(target) != 2:
        raise InvalidArgument(f"rename target {'.'.join(target)!r}: expected database.table")
    src, dst = table_name(ctx, r), (ctx.catalog, target[0], target[1])
    new_table_name(dst)  # before any path is made of it
    info = ms.get_table(src)
    move = rename_move(ctx, info, ms.get_database(src[:2]).location, ms.get_database(dst[:2]).location, dst)
    if move is None:
        ms.rename_table(src, dst)
        return {}
    if r.get("location") is None:
        if ms.table_exists(dst) or ms.view_exists(dst):
            raise TableAlreadyExists(f"table or view {'.'.join(dst)} already exists", table=".".join(dst))
        check_free((ctx.spark_catalog, dst[1], dst[2]), move["to"])  # the shim would move the data into it
        return {"move": move, "version": info.version}
    if qualify(r["location"]) != move["to"]:
        raise InvalidArgument(f"rename of {'.'.join(src)}: the data was moved to {r['location']}, "
                              f"not to {move['to']}")
    ms.rename_table(src, dst, location=move["to"], expected_version=r.get("version"))
    return {}


# ---- views --------------------------------------------------------------------------------------------
def create_view(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    props = dict(r.get("properties") or {})
    comment = props.pop("comment", None)
    props.pop("owner", None)
    for key, value in (r.get("sql_configs") or {}).items():
        props[f"view.sqlConfig.{key}"] = value
    if r.get("schema_mode"):
        props["view.schemaMode"] = r["schema_mode"]
    view = ms.create_view(table_name(ctx, r), sql=r["sql"], schema=r["schema"], comment=comment,
                          properties=props, current_catalog=r.get("current_catalog"),
                          current_namespace=r.get("current_namespace") or [],
                          query_column_names=r.get("query_column_names") or [], replace=bool(r.get("replace")))
    return {"view": view_answer(view)}


def drop_view(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    try:
        ms.drop_view(table_name(ctx, r))
    except NoSuchView:
        return {"dropped": False}
    return {"dropped": True}


def rename_view(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    target = list(r["to"])
    if len(target) == 1:  # RENAME passes the target as typed
        target = [database_of(r["namespace"]), target[0]]
    if len(target) != 2:
        raise InvalidArgument(f"rename target {'.'.join(target)!r}: expected database.view")
    ms.rename_view(table_name(ctx, r), (ctx.catalog, target[0], target[1]))
    return {}


# ---- partitions ---------------------------------------------------------------------------------------
def add_partitions(ms: Any, r: Request) -> Answer:
    from ..catalog.locations import A_PARTITION
    from ..model.partitions import Partition

    from .governed_locations import check_location

    ctx = SparkCtx.of(r)
    parts = []
    own: str | None = None
    for p in r["partitions"]:
        props = dict(p.get("properties") or {})
        location = props.pop("location", None)
        if location and ms.caller().authorization:  # ADD PARTITION … LOCATION: its table's, or ungoverned
            own = own or location_of(ctx, ms.get_table(table_name(ctx, r)))
            check_location(ms, ctx, TableName.parse(table_name(ctx, r)), qualify(location), own=own,
                           what=A_PARTITION)
        parts.append(Partition(values=p["values"], location=qualify(location) if location else None,
                               properties=props))
    result = ms.add_partitions(table_name(ctx, r), parts, if_not_exists=False)
    return {"added": getattr(result, "added", len(parts))}


def drop_partitions(ms: Any, r: Request) -> Answer:
    from ..data.purge import bounded

    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = ms.get_table(name)
    paths: list[str] = []
    purge = bool(r.get("purge")) and not info.external
    if purge:  # ALTER TABLE ... DROP PARTITION ... PURGE: the files go now, those the purge rules allow (no file
        for spec in r["partitions"]:  # registered from outside the table's and the partition's locations)
            p = ms.get_partition(name, spec)
            if p.data_files is not None:
                paths.extend(bounded([f.path for f in p.data_files], [x for x in (info.location, p.location) if x], None))
            elif p.location:
                paths.append(p.location)
    # a managed table's dropped partitions keep their files until purge; an external table's always
    result = ms.drop_partitions(name, r["partitions"], if_exists=False, release_data=not info.external and not purge)
    return {"dropped": getattr(result, "dropped", 1) > 0, "delete_paths": paths}


def list_partitions(ms: Any, r: Request) -> Answer:
    """``listPartitionIdentifiers`` (SHOW PARTITIONS, existence sets): the values of the matching
    partitions, compact (``{"columns": [...], "rows": [[v, ...], ...]}``, ``Rows.fromAnswer``), from
    :func:`ushas_catalog.spark.cache.answers`: read from the keys alone when uncached, else the cached
    full listing."""
    from .cache import answers
    from ..model.names import TableName

    from ..catalog.row_policies import refuse_partition_metadata

    ctx = SparkCtx.of(r)
    prefix = {k: v for k, v in (r.get("values") or {}).items()}
    name = TableName.parse(table_name(ctx, r))
    listing = answers(_cache(ctx)).partition_listing(ms, name, prefix)  # checks SELECT
    refuse_partition_metadata(ms, ms.get_table(name), "SHOW PARTITIONS")
    return listing


def partition_exists(ms: Any, r: Request) -> Answer:
    from ..errors import NoSuchPartition

    ctx = SparkCtx.of(r)
    try:
        ms.get_partition(table_name(ctx, r), r["values"])
    except NoSuchPartition:
        return {"exists": False}
    return {"exists": True}


def load_partition(ms: Any, r: Request) -> Answer:
    from ..catalog.row_policies import refuse_partition_metadata

    ctx = SparkCtx.of(r)
    p = ms.get_partition(table_name(ctx, r), r["values"])  # checks SELECT
    refuse_partition_metadata(ms, ms.get_table(table_name(ctx, r)), "a partition's metadata")
    meta = dict(p.properties)
    if p.location:
        meta["location"] = p.location
    for key in ("files", "bytes", "rows"):
        if getattr(p, key) is not None:
            meta[f"num{key.capitalize()}" if key != "bytes" else "totalSize"] = str(getattr(p, key))
    return {"metadata": meta}


def replace_partition_metadata(ms: Any, r: Request) -> Answer:
    from ..model.partitions import Partition

    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    old = ms.get_partition(name, r["values"])
    props = dict(r.get("properties") or {})
    location = props.pop("location", None) or old.location
    new = Partition(values=r["values"], location=location, files=old.files, bytes=old.bytes, rows=old.rows,
                    properties=props, data_files=old.data_files if location == old.location else None)
    ms.replace_partitions(name, [r["values"]], [new])
    return {}


def truncate(ms: Any, r: Request) -> Answer:
    """TRUNCATE TABLE [PARTITION]: the partitions stay, emptied (files 0, bytes 0)."""
    from ..model.partitions import Partition

    from ..data.garbage import Garbage

    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    info = ms.get_table(name)
    garbage = Garbage()
    if not info.partition_columns:
        if not info.external:
            old = ms.table_data_files(name)
            if old is not None:
                garbage.files.extend(old)
            else:
                garbage.directories.append(qualify(location_of(ctx, info)))
        ms.write_table_files(name, [], "TRUNCATE", garbage=garbage, expected_version=info.version,
                             set_properties={"numFiles": "0", "totalSize": "0", "numRows": "0"})
        return {"truncated": True, "clear_paths": []}
    specs = r.get("partitions")
    targets = [ms.get_partition(name, s) for s in specs] if specs is not None else list(ms.list_partitions(name))
    emptied = [Partition(values=p.values, location=p.location, files=0, bytes=0, rows=0, properties=p.properties,
                         data_files=[]) for p in targets]
    if not info.external:
        for p in targets:
            garbage.add_partition(p)
    if emptied:
        ms.replace_partitions(name, [p.values for p in targets], emptied, expected_version=info.version,
                              garbage=garbage, operation="TRUNCATE")
    # the files are kept until purge (ushas purge), unreachable: no file list names them
    return {"truncated": True, "clear_paths": []}


# ---- writes ---------------------------------------------------------------------------------------------
def commit_write(ms: Any, r: Request) -> Answer:
    """A V2 batch write whose files the shim placed in the partition directories: register the
    written partitions with their file lists and replace / drop the overwritten ones (or set an
    unpartitioned table's files and stats) in ONE transaction, before the write is acknowledged;
    the files let go are kept until purge (DataGarbage, same transaction). The mutation expects the
    table version the plan was made from: a concurrent change makes an append plan again; an
    overwrite whose targets changed after ``base_version`` (the version the job started from)
    fails with :class:`WriteConflict` naming the partition. On any error the shim removes the
    job's files: none of them was registered."""
    from ..errors import CallAbandoned, UshasError, WriteEnded
    from ..data.write_fence import end_abandoned, release_files

    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    big = getattr(ms, "big", None)
    try:
        if big is not None and len(r.get("written") or []) > big.WRITE_BULK_AT:  # commits in chunks
            return _fenced_commit_write(ms, ctx, name, r)
        return run_in_one_transaction(ms, lambda m: _fenced_commit_write(m, ctx, name, r))
    except CallAbandoned as abandoned:
        fence = _fence(r)
        if fence is None:
            raise
        # nothing applied; its end is recorded once the store can be had
        end_abandoned(ms, fence.write_id, name, [DataFile.from_json(f) for w in r.get("written") or []
                                                  for f in w.get("files") or []])
        raise CallAbandoned(f"write {fence.write_id} into {'.'.join(name)} was not committed: "
                            f"{abandoned.message}; `ushas write {fence.write_id}` tells what became of it",
                            write_id=fence.write_id, table=".".join(name)) from None
    except WriteEnded as ended:
        # the write will never be registered: the files the shim placed go at purge (if it cannot
        # remove them itself: it gave up waiting for this answer)
        try:
            release_files(ms, name, ended.write_id, [DataFile.from_json(f) for w in r.get("written") or []
                                                     for f in w.get("files") or []])
        except UshasError:
            pass  # left unregistered: no file list names them, reads ignore them
        raise


def _fenced_commit_write(ms: Any, ctx: SparkCtx, name: tuple[str, str, str], r: Request) -> Answer:
    from ..errors import Conflict, WriteConflict, WriteEnded
    from ..data.write_fence import check_fence

    fence = _fence(r)
    done = check_fence(ms, fence, ".".join(name))
    if done is not None:  # a retry of a commit that went through: its answer, nothing applied again
        return _committed_answer(done)
    batch = StreamBatch.of(r)
    for attempt in range(_WRITE_ATTEMPTS):
        info = ms.get_table(name)
        if batch is not None:  # a micro-batch run again after a restart: committed once, by its first run
            before = ms.run(lambda tr: committed_before(tr, ms.project_path, uuid.UUID(info.id), batch))
            if before is not None:
                return {"registered": 0, "version": before.version, "batch_committed_before": True,
                        "last_batch": before.last_batch}
            if r.get("data_schema") is not None:  # an ALTER TABLE since the query started
                check_batch_schema(ms, name, info, batch, r["data_schema"])
        location = qualify(location_of(ctx, info))
        if location.rstrip("/") != qualify(r["location"]).rstrip("/"):
            raise InvalidArgument(f"{'.'.join(name)} is now at {info.location}, not {r['location']}: "
                                  f"the write was not registered")
        try:
            return _commit_write(ms, name, info, r, fence)
        except (WriteConflict, WriteEnded):
            raise
        except Conflict:
            if attempt == _WRITE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


_WRITE_ATTEMPTS = 5


def write_operation(mode: str, partitioned: bool) -> str:
    """The history name of a write: ``APPEND``; ``OVERWRITE`` (the whole table: Spark's truncate mode, or an
    unpartitioned table); ``OVERWRITE PARTITIONS`` (a partitioned table's overwrite by a partition filter or
    a dynamic partition overwrite: only the partitions it names or writes)."""
    if mode == "append":
        return "APPEND"
    if mode in ("overwrite", "dynamic") and partitioned:
        return "OVERWRITE PARTITIONS"
    return "OVERWRITE"


def _fence(r: Request) -> Any:
    """The write's identity and its caller's deadline (:class:`ushas_catalog.data.write_fence.WriteFence`),
    None for an unfenced request (an older shim)."""
    from ..data.write_fence import WriteFence

    return WriteFence.of(r.get("write_id"), r.get("deadline_ms"))


def _fence_args(fence: Any) -> dict[str, Any]:
    return {} if fence is None else {"write_id": fence.write_id, "deadline_ms": fence.deadline_ms}


def _committed_answer(done: Any) -> Answer:
    answer = done.answer or {}
    return {"registered": int(answer.get("added", 0)) + int(answer.get("replaced", 0)), "version": done.version,
            "write_id": done.write_id, "already_committed": True}


def _commit_write(ms: Any, name: tuple[str, str, str], info: Any, r: Request, fence: Any = None) -> Answer:
    partition_by = list(info.partition_columns)
    mode = r["mode"]
    base = r.get("base_version")
    check = int(base) if base is not None and mode != "append" else None
    detail = {"job_id": r.get("job_id"), "mode": mode}
    batch = StreamBatch.of(r)
    if batch is not None:
        detail.update(batch.detail())  # history shows it; the commit hook records the query's progress
    if mode == "append" and partition_by and r.get("operation") is None:
        done = _append(ms, name, info, r, detail, fence)
        if done is not None:
            return done
        if r.get("existing_deferred"):  # the shim did not list the written directories: nothing committed,
            return {"list_existing": True}  # it asks again with their listing
    old_stats: dict[str, int | None] = {}
    old_files = None
    if not partition_by:
        for key, prop in STATS_PROPERTIES.items():
            text = info.properties.get(prop)
            old_stats[key] = int(text) if text is not None and text.isdigit() else None
        if mode == "append" and r.get("operation") is None:
            done = append_table(ms, name, info.version, r, old_stats, detail, _fence_args(fence))
            if done is not None:
                return done
        old_files = ms.table_data_files(name)
    existing = list(ms.list_partitions(name)) if partition_by else []
    if r.get("existing_deferred") and any(p.data_files is None for p in existing):
        return {"list_existing": True}  # an overwrite may replace a partition whose files are not recorded
    if mode == "replace_files":  # a row-level rewrite: its own check (the files it read are still there)
        check = None
        groups = list(r.get("replaced") or [])  # by partition read; "scanned_only": none of its files replaced
        if base is not None and row_level_isolation(info.properties) == "serializable":
            check_nothing_added(ms.files_as_of(name, int(base)), r["location"], partition_by, existing, old_files,
                                groups, list(r.get("written") or []))
        plan = plan_file_replacement(r["location"], partition_by, existing, old_files,
                                     [g for g in groups if not g.get("scanned_only")],
                                     list(r.get("written") or []), r.get("rows"), managed=not info.external)
    else:
        plan = plan_write(r["location"], partition_by, existing, old_files, old_stats, mode,
                          list(r.get("filters") or []), list(r.get("written") or []), r.get("rows"),
                          managed=not info.external, record_listed=bool(r.get("direct")))
    operation = row_level_operation(r.get("operation")) or write_operation(mode, bool(partition_by))
    big = getattr(ms, "big", None)
    if partition_by and big is not None and getattr(ms.db, "nested", False) \
            and len(plan.put) + len(plan.drop) > big.WRITE_BULK_AT:  # run call by call: it commits in chunks
        from ..errors import LimitExceeded

        raise LimitExceeded(f"a write of {len(plan.put)} partitions commits in chunks, not in one transaction",
                            limit="transaction_items", actual=len(plan.put), maximum=big.WRITE_BULK_AT)
    if partition_by:
        result = ms.replace_partitions(name, plan.drop, plan.put, expected_version=info.version,
                                       garbage=plan.garbage, operation=operation, unchanged_since=check,
                                       detail=detail, **_fence_args(fence))
        version = result.version
    else:
        props = {prop: str(plan.stats[key]) for key, prop in STATS_PROPERTIES.items() if plan.stats.get(key) is not None}
        remove = [STATS_PROPERTIES["rows"]] if plan.stats.get("rows") is None and old_stats.get("rows") is not None else []
        version = ms.write_table_files(name, plan.table_files, operation, set_properties=props,
                                       remove_properties=remove, garbage=plan.garbage, unchanged_since=check,
                                       expected_version=info.version, detail=detail, **_fence_args(fence))
    return {"registered": len(plan.put), "version": version}


def _append(ms: Any, name: tuple[str, str, str], info: Any, r: Request, detail: dict[str, Any],
            fence: Any) -> Answer | None:
    """An append into a partitioned table whose written partitions are new or have their files recorded:
    each gets this job's files appended, at a cost independent of the files already there (no partition
    listed, no file list read or rewritten). None: a written partition's files are not recorded (nothing
    was written: the caller plans the write from the listing of the written directories)."""
    from ..errors import FilesNotRecorded

    puts = appended_partitions(r["location"], list(info.partition_columns), list(r.get("written") or []),
                               r.get("rows"))
    if not puts:
        return None
    try:
        result = ms.replace_partitions(name, [], puts, expected_version=info.version, operation="APPEND",
                                       detail=detail, append=True, **_fence_args(fence))
    except FilesNotRecorded:
        return None
    return {"registered": len(puts), "version": result.version}


def commit_files(ms: Any, r: Request) -> Answer:
    """Spark's file commit into a table location (a path write): register the written partitions
    (replacing the cleared ones) in one transaction, before the write is acknowledged. The files
    this job wrote (``job_files``) are recorded: a cleared or new partition has exactly them, a
    recorded one gets them added; a partition whose files were never recorded stays listed."""
    from ..model.data_files import DataFile, merge

    from ..data.write_fence import check_fence

    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    fence = _fence(r)
    done = check_fence(ms, fence, ".".join(name))
    if done is not None:  # a retry of a commit that went through: its answer, nothing applied again
        return _committed_answer(done)
    fenced = _fence_args(fence)
    info = ms.get_table(name)
    if qualify(location_of(ctx, info)) != qualify(r["location"]):
        raise InvalidArgument(f"{'.'.join(name)} is now at {info.location}, not {r['location']}: "
                              f"the write was not registered")
    deleted = [d.strip("/") for d in r.get("deleted") or []]
    if not info.partition_columns:
        mine = [DataFile.from_json(d) for d in r.get("root_files") or []]
        old = ms.table_data_files(name)
        if "" in deleted or old is not None:
            files = mine if "" in deleted else merge(old or [], mine)
            version = ms.write_table_files(name, files, "OVERWRITE" if "" in deleted else "APPEND",
                                           detail={"deleted": len(deleted)}, **fenced)
        else:
            # NEEDED-BY-SPARK: table-level stats for unpartitioned tables; the new version lets other
            # sessions' caches see the write (they keep Spark's file listing while the version holds)
            version = ms.touch_table(name, "WRITE", {"deleted": len(deleted)}, **fenced)
        return {"registered": 0, "version": version}
    written = list(r.get("partitions") or [])
    drop, put = committed(location_of(ctx, info), list(info.partition_columns), list(r.get("deleted") or []), written)
    existing = {tuple(sorted(p.spec.items())): p for p in ms.list_partitions(name)}
    for p, w in zip(put, written):
        mine = [DataFile.from_json(d) for d in w.get("job_files") or []]
        path = w["path"].strip("/")
        cleared = bool(r.get("dynamic")) or any(d == "" or path == d or path.startswith(d + "/") for d in deleted)
        old = existing.get(tuple(sorted((k, v) for k, v in _spec_of(path).items())))
        if cleared or old is None:
            p.data_files = mine
        elif old.data_files is not None:
            p.data_files = merge(old.data_files, mine)
    mode = "truncate" if "" in deleted else "dynamic" if r.get("dynamic") or deleted else "append"
    result = ms.replace_partitions(name, drop, put, operation=write_operation(mode, True), **fenced)
    return {"registered": len(put), "version": getattr(result, "version", None)}


def abort_write(ms: Any, r: Request) -> Answer:
    """Ends a write that will not commit (Spark's ``abort``, or a ``commit_write`` whose outcome the
    JVM does not know: bridge timeout, bridge died): records it ABORTED in one transaction unless it
    COMMITTED; answers what it is now (``state``: COMMITTED means keep its files, it went through)."""
    from ..data.write_fence import abort_write as abort

    ctx = SparkCtx.of(r)
    table = ".".join(table_name(ctx, r)) if r.get("name") is not None else ""
    return abort(ms, r["write_id"], str(r.get("reason") or "aborted"), table, checked=True).to_json()


def write_outcome(ms: Any, r: Request) -> Answer:
    """What became of a write (COMMITTED / ABORTED / UNKNOWN)."""
    from ..data.write_fence import get_outcome

    return get_outcome(ms, r["write_id"], checked=True).to_json()


def _spec_of(path: str) -> dict[str, str]:
    from .writes import parse_partition_path

    return parse_partition_path(path)


OPS: dict[str, Callable[[Any, Request], Answer]] = {
    "open": open_catalog,  # one transaction (or, on a read-only store, a read)
    "list_namespaces": list_namespaces,
    "namespace_exists": namespace_exists,
    "load_namespace": load_namespace,
    "create_namespace": create_namespace,
    "alter_namespace": alter_namespace,
    "drop_namespace": in_one_transaction(drop_namespace),
    "load_relation": load_relation,
    "load_table": load_table,
    "relation_exists": relation_exists,
    "list_relations": list_relations,
    "create_table": create_table,
    "create_table_like": lambda ms, r: create_table(ms, like_request(r)),  # CREATE TABLE ... LIKE (spark.like)
    "alter_table": alter_table,
    "drop_table": in_one_transaction(drop_table),
    "rename_table": in_one_transaction(rename_table),
    "create_view": create_view,
    "drop_view": drop_view,
    "rename_view": rename_view,
    "add_partitions": add_partitions,
    "drop_partitions": in_one_transaction(drop_partitions),
    "list_partitions": list_partitions,
    "partition_exists": partition_exists,
    "load_partition": load_partition,
    "replace_partition_metadata": in_one_transaction(replace_partition_metadata),
    "truncate": in_one_transaction(truncate),
    "commit_write": commit_write,
    "commit_files": in_one_transaction(commit_files),
    "abort_write": abort_write,
    "write_outcome": write_outcome,
    "repair": repair,  # MSCK REPAIR TABLE / RECOVER PARTITIONS (ushas_catalog.data.repair)
    "describe": in_one_transaction(describe),  # DESC EXTENDED / FORMATTED rows (spark.describe)
    **READ_OPS,
    **STREAM_SOURCE_OPS,  # readStream.table(...): the files of new commits (spark.stream_source)
    **PROCEDURE_OPS,  # CALL <catalog>.system.<name>(...) (ushas_catalog.procedures)
    **STAGED_OPS,  # atomic CTAS / RTAS (StagingTableCatalog)
    **VIEW_SYNC_OPS,  # WITH SCHEMA [TYPE] EVOLUTION views: Spark's new schema (spark.view_sync)
    **FUNCTION_OPS,  # FunctionCatalog and CREATE / DROP / DESCRIBE / SHOW FUNCTION(S) (spark.functions)
    **ROWS_OPS,  # metadata and system tables (ushas_catalog.sql_tables)
    **AUTHORIZATION_OPS,  # check_write: MODIFY before a write is planned (docs/governance.md)
    **ROW_LEVEL_OPS,  # DELETE of whole partitions, metadata-only (spark.row_level)
}
