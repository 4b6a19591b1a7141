"""Purging data: what a purge deletes, and deleting it.

A change that makes files unreachable (overwrite, truncate, DROP PARTITION, DROP TABLE) keeps
them: a dropped table keeps its metadata (partitions with their file lists) until purged, and the
other changes record ``DataGarbage`` entries (:mod:`ushas_catalog.data.garbage`). A purge removes
the metadata and answers the paths to delete; the caller deletes them only after that commit:
the Spark shim (``delete_paths``) for ``DROP TABLE … PURGE``, :func:`delete_local` for ``ushas purge``.
External tables' files are never deleted.
"""
from __future__ import annotations

import datetime as dt
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import records as rec
from ..model.data_files import DataFile
from .garbage import bound_write, delete_garbage, scan_garbage
from .locations import outside
from .direct_writes import has_manifests, manifest_files, of_running_write, remove_created_dirs, running_writes
from .staged import leftovers, staged_write
from .write_fence import ABORTED, COMMITTED, get_outcome
from ..keyspace.tree import KeySpacePath, RecordSubspace, Subspace
from ..kv import Transaction
from ..keyspace.layout import (DATABASE, DATABASE_ID, DATABASE_OBJECT_NAME, DROPPED_DATABASE_OBJECT_NAME,
                               DROPPED_TABLE_OBJECT_NAME, TABLE, TABLE_DATA_FILES, TABLE_ID, TABLE_OBJECT_NAME,
                               TABLE_PARTITION, TABLE_SCHEMA, TABLE_STORAGE)
from ..records.store import RecordStore

#: staging directories of writes (``<table root>/_ushas_staging/<job id>``)
STAGING_DIR = "_ushas_staging"
#: a staging directory whose owner cannot be checked (another host) is removed after this long
STAGING_GRACE = dt.timedelta(hours=24)


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def bounded(paths: Iterable[str], roots: list[str], kept: list[str] | None) -> list[str]:
    """The ``paths`` under one of ``roots`` (a table's, its partitions' locations): a purge deletes only
    those; the others (registered before registrations were bounded, :mod:`ushas_catalog.catalog.registered_files`)
    go to ``kept``, never deleted."""
    path_list = list(paths)
    far = set(outside(path_list, roots))
    if not far:
        return path_list
    if kept is not None:
        kept.extend(p for p in path_list if p in far)
    return [p for p in path_list if p not in far]


def table_data_paths(tr: Transaction, project: KeySpacePath, table_path: KeySpacePath, table_id: uuid.UUID,
                     database_path: KeySpacePath, *, forget_garbage: bool = True,
                     kept: list[str] | None = None) -> list[str]:
    """The paths to delete when the table at ``table_path`` is purged (read in ``tr``, the purge's
    own transaction; its DataGarbage entries are removed there too): a managed table's location
    (recursively) when no live table of its database shares it, else exactly its recorded files;
    nothing of an external table. A recorded file outside the table's and its partition's locations is
    not deleted: it goes to ``kept``."""
    storage = RecordStore.of(table_path, TABLE_STORAGE).load(tr, ())
    entries = list(scan_garbage(tr, project, table_id))
    if forget_garbage:
        for e in entries:
            delete_garbage(tr, project, e.key)
    if storage is None or storage.external or not storage.location:
        return []
    location = storage.location.rstrip("/")
    schema = RecordStore.of(table_path, TABLE_SCHEMA).load(tr, ())
    files: list[str] = []
    unrecorded: list[str] = []
    roots = [location]  # what the garbage may name: the table's and its partitions' locations
    if schema is not None and schema.partition_columns:
        parts = RecordStore.of(table_path, TABLE_PARTITION, tuple(schema.partition_columns))
        for sr in parts.scan(tr):
            if sr.record.location:
                roots.append(sr.record.location)
            if sr.record.files_recorded:
                files.extend(bounded((f.path for f in sr.record.data_files), [location, sr.record.location], kept))
            elif sr.record.location:
                unrecorded.append(sr.record.location)
    else:
        listed = RecordStore.of(table_path, TABLE_DATA_FILES).load(tr, ())
        if listed is not None:
            files.extend(bounded((f.path for f in listed.files), [location], kept))
        else:
            unrecorded.append(location)
    released = bounded((d for e in entries for d in e.directories), roots, kept)
    unrecorded.extend(released)
    files.extend(bounded((f.path for e in entries for f in e.files), roots + released, kept))
    shared = False
    names = RecordStore.of(database_path.add(TABLE), TABLE_OBJECT_NAME)
    for sr in names.scan(tr):
        oid = uuid.UUID(bytes=sr.record.id)
        if oid == table_id or sr.record.kind != rec.ObjectKind.TABLE:
            continue
        other = RecordStore.of(database_path.add(TABLE).add(TABLE_ID, oid), TABLE_STORAGE).load(tr, ())
        if other is not None and other.location and (_under(other.location, location)
                                                     or _under(location, other.location)):
            shared = True
            break
    if not shared:
        return [location] + [p for p in files if not _under(p, location)]
    return files + [d for d in unrecorded if not _under(location, d)]


def tables_under(tr: Transaction, path: KeySpacePath, kind: str) -> list[tuple[KeySpacePath, uuid.UUID, KeySpacePath]]:
    """(table path, table id, database path) of every table, live or dropped, under a catalog
    (``kind="Catalog"``), a database (``"Database"``) or the table itself (``"Table"``)."""
    if kind == "Table":
        return [(path, path.value, path.parent.parent)]  # type: ignore[list-item, union-attr]
    dbs = [path] if kind == "Database" else _children(tr, path.add(DATABASE), DATABASE_OBJECT_NAME,
                                                         DROPPED_DATABASE_OBJECT_NAME, DATABASE_ID)
    out = []
    for db in dbs:
        for t in _children(tr, db.add(TABLE), TABLE_OBJECT_NAME, DROPPED_TABLE_OBJECT_NAME, TABLE_ID,
                           tables_only=True):
            out.append((t, t.value, db))
    return out


def _children(tr: Transaction, parent: KeySpacePath, names: RecordSubspace[rec.ObjectName],
              dropped: RecordSubspace[rec.DroppedObjectName], id_dir: Subspace, *,
              tables_only: bool = False) -> list[KeySpacePath]:
    ids: list[uuid.UUID] = []
    for sr in RecordStore.of(parent, names).scan(tr):
        if not tables_only or sr.record.kind == rec.ObjectKind.TABLE:
            ids.append(uuid.UUID(bytes=sr.record.id))
    for dr in RecordStore.of(parent, dropped).scan(tr):
        if not tables_only or dr.record.kind == rec.ObjectKind.TABLE:
            ids.append(uuid.UUID(bytes=dr.record.id))
    return [parent.add(id_dir, i) for i in ids]


def purge_dropped_now(ms: Any, name: Any) -> list[str]:
    """``DROP TABLE … PURGE``: drops the table and its metadata at once; answers the data paths to
    delete (after this commit)."""
    paths: list[str] = []
    ms.drop_table(name, purge=True, data_paths=paths)
    return paths


# ---- the CLI's deleting side ------------------------------------------------------------------------
def local_path(path: str) -> str | None:
    """The local file system path of ``file:/x`` or ``/x``; None for other file systems."""
    if path.startswith("file:"):
        p = path[len("file:"):]
        if p.startswith("//"):
            p = p[2:] if p.startswith("///") else "/" + p.split("/", 3)[-1]
        return "/" + p.lstrip("/")
    if path.startswith("/"):
        return path
    return None


@dataclass
class DeleteReport:
    deleted: int = 0
    missing: int = 0
    #: paths on a file system the CLI cannot reach (delete them with Spark: DROP … PURGE)
    unreachable: list[str] = field(default_factory=list)
    #: recorded files outside their table's and partitions' locations: kept, never deleted (:func:`bounded`)
    outside: list[str] = field(default_factory=list)


def delete_local(paths: Iterable[str], report: DeleteReport | None = None) -> DeleteReport:
    """Deletes files and directories (recursively) on the local file system."""
    import shutil

    report = report or DeleteReport()
    for path in paths:
        local = local_path(path)
        if local is None:
            report.unreachable.append(path)
            continue
        try:
            if os.path.isdir(local) and not os.path.islink(local):
                shutil.rmtree(local)
            else:
                os.remove(local)
            _remove_crc(local)
            report.deleted += 1
        except FileNotFoundError:
            report.missing += 1
    return report


def _remove_crc(local: str) -> None:
    crc = os.path.join(os.path.dirname(local), "." + os.path.basename(local) + ".crc")
    try:
        os.remove(crc)
    except FileNotFoundError:
        pass


def sweep_directory(directory: str, before_micros: int, keep: set[str], report: DeleteReport,
                    table_root: str | None = None) -> None:
    """A partition that recorded no file list, let go at ``before_micros``: its data files (directly
    in it) older than that and in no live file list (``keep``, local paths) are deleted, but not the
    files of a write into the table at ``table_root`` that has not committed yet (its staging directory
    is there; read after the listing: :func:`~ushas_catalog.data.direct_writes.running_writes`)."""
    local = local_path(directory)
    if local is None:
        report.unreachable.append(directory)
        return
    try:
        entries = list(os.scandir(local))
    except FileNotFoundError:
        report.missing += 1
        return
    running = running_writes(table_root) if table_root else frozenset()
    for e in entries:
        if not e.is_file() or e.name.startswith(("_", ".")) or e.path in keep or of_running_write(e.name, running):
            continue
        if e.stat().st_mtime * 1_000_000 < before_micros:
            os.remove(e.path)
            _remove_crc(e.path)
            report.deleted += 1


def live_files(files: Iterable[DataFile]) -> set[str]:
    return {p for p in (local_path(f.path) for f in files) if p is not None}


def stale_staging(location: str, grace: dt.timedelta = STAGING_GRACE, now: float | None = None) -> list[str]:
    """The staging directories under a local table location whose write is over: its owner (host,
    pid, start in ``_owner``) is a process of this host that is gone, or it is older than ``grace``."""
    local = local_path(location)
    if local is None:
        return []
    root = os.path.join(local, STAGING_DIR)
    now = time.time() if now is None else now
    out = []
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for e in entries:
        if not e.is_dir():
            continue
        if now - e.stat().st_mtime > grace.total_seconds() or not _owner_alive(os.path.join(e.path, "_owner")):
            out.append("file:" + e.path)
    return out


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def staging_owner_alive(staging: str) -> bool:
    """Whether the process owning a (local) staging directory may still run (its ``_owner``)."""
    local = local_path(staging)
    return True if local is None else _owner_alive(os.path.join(local, "_owner"))


def _owner_alive(owner_file: str) -> bool:
    try:
        with open(owner_file, encoding="utf-8") as f:
            fields = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
    except FileNotFoundError:
        return True  # being set up (or not ours): the grace period decides
    boot = _boot_id()
    if fields.get("boot") and boot:
        if fields["boot"] != boot:
            return True  # another machine (or before a reboot): the grace period decides
    elif fields.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(fields.get("pid", "0")), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return not _zombie(int(fields["pid"]))


def _zombie(pid: int) -> bool:
    """A killed process its parent has not reaped yet (state Z): gone, though ``kill(pid, 0)`` finds it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


# ---- ushas purge ------------------------------------------------------------------------------------
@dataclass
class PurgeSummary:
    objects: int = 0
    garbage: int = 0
    staging: int = 0
    report: DeleteReport = field(default_factory=DeleteReport)

    def to_json(self) -> dict[str, Any]:
        return {"purged_objects": self.objects, "garbage_entries": self.garbage, "staging_dirs": self.staging,
                "deleted": self.report.deleted, "missing": self.report.missing,
                "unreachable": list(self.report.unreachable), "kept_outside": list(self.report.outside)}


def parse_age(text: str) -> dt.timedelta:
    """``7d``, ``12h``, ``30m``, ``45s`` -> a timedelta."""
    from ..errors import InvalidArgument

    units = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
    t = text.strip().lower()
    if len(t) < 2 or t[-1] not in units or not t[:-1].isdigit():
        raise InvalidArgument(f"invalid age {text!r}: expected a number and a unit (7d, 12h, 30m, 45s)")
    return dt.timedelta(seconds=int(t[:-1]) * units[t[-1]])


def purge(ms: Any, name: Any = None, older_than: dt.timedelta | None = None) -> PurgeSummary:
    """``ushas purge [NAME] [--older-than AGE]``: removes dropped objects (of ``name``, or all of the
    project) with their data (dropped versioned objects: their metadata, never their files), deletes the files overwrites / truncates / dropped partitions let go
    (of the live table ``name``, or all) and the staging directories of writes that died. Only
    local files can be deleted here; others are reported as unreachable (their entries are kept)."""
    from ..errors import NotFound
    from ..model.names import CatalogName, DatabaseName, TableName

    out = PurgeSummary()
    live: list[Any] = []
    kept: list[str] | None = getattr(ms, "kept_paths", None)  # what the purges below find outside their table
    if kept is not None:
        del kept[:]
    if name is not None:
        paths: list[str] = []
        live_table = isinstance(name, TableName) and ms.table_exists(name)
        try:
            if isinstance(name, CatalogName):
                out.objects = ms.purge_catalog(name, data_paths=paths, older_than=older_than)
            elif isinstance(name, DatabaseName):
                out.objects = ms.purge_database(name, data_paths=paths, older_than=older_than)
            else:
                out.objects = ms.purge_table(name, data_paths=paths, older_than=older_than)
        except NotFound:
            if not live_table:
                raise
        delete_local(paths, out.report)
        if live_table:
            live = [ms.get_table(name)]
    else:
        for cat in ms.list_catalogs():
            for db in ms.list_databases(cat.name):
                for d in sorted({d.name for d in ms.list_dropped_tables((cat.name, db.name))}):
                    out.objects += _purge_one(ms.purge_table, d, older_than, out.report)
                for t in ms.list_tables((cat.name, db.name)):
                    if getattr(t, "kind", "TABLE") == "TABLE":
                        live.append(ms.get_table((cat.name, db.name, t.name)))
                # dropped versioned objects: their metadata only (their files are the user's, never deleted)
                out.objects += len(ms.objects.purge((cat.name, db.name), older_than_micros=None if older_than is None
                                                    else int((time.time() - older_than.total_seconds()) * 1e6)))
            for d in sorted({d.name for d in ms.list_dropped_databases(cat.name)}):
                out.objects += _purge_one(ms.purge_database, d, older_than, out.report)
        for d in sorted({d.name for d in ms.list_dropped_catalogs()}):
            out.objects += _purge_one(ms.purge_catalog, d, older_than, out.report)
    entries = ms.garbage(name, older_than) if name is not None and live else (
        [] if name is not None else ms.garbage(None, older_than))
    by_id = {t.id: t for t in live}
    done = []
    now_micros = int(time.time() * 1e6)
    tagged: dict[str, set[str]] = {}  # table id -> the files its tagged versions read (kept)
    through: dict[str, int] = {}  # table id -> the newest replaced files deleted (catalog.time_travel)
    for e in entries:
        before = len(out.report.unreachable)
        bound = bound_write(e)
        if bound is not None:  # recorded before its write's publish (ushas_catalog.data.garbage)
            state = get_outcome(ms, bound).state
            if state == ABORTED:  # the write let nothing go: the entry goes, the files stay
                done.append(e.key)
                continue
            if state != COMMITTED:  # it may still commit
                continue
        if staged_write(e) is not None:  # a staged CTAS / RTAS that did not commit (ushas_catalog.data.staged)
            gone = leftovers(ms, e, staging_owner_alive, int(STAGING_GRACE.total_seconds() * 1e6),
                             int(time.time() * 1e6))
            if gone is None:
                continue
            staging = e.files[0].path.rstrip("/") if e.files else ""  # <the new table's location>/_ushas_staging/<id>
            delete_local(bounded(gone, [staging.rsplit("/" + STAGING_DIR + "/", 1)[0]], out.report.outside),
                         out.report)
            if len(out.report.unreachable) == before:
                done.append(e.key)
            continue
        table = by_id.get(str(e.table_id))
        if table is not None and _retained(table, e.time_micros, now_micros):
            continue  # younger than the table's ushas.retention: its versions stay readable
        keep: set[str] = set()
        if table is not None:
            if table.id not in tagged:
                tagged[table.id] = ms.tagged_files((table.catalog, table.database, table.name))
            keep = tagged[table.id]
        if table is None:
            if e.files or e.directories:
                continue  # a dropped table's: purging the table deletes them (within its locations)
            directories = list(e.directories)
        else:  # within the table's location (or a partition directory in it): else kept, and the entry with them
            directories = bounded(e.directories, [table.location], out.report.outside)
            far = set(outside([f.path for f in e.files], [table.location, *directories]))
            if far:
                out.report.outside.extend(f.path for f in e.files if f.path in far)
                keep = keep | far
        delete_local([f.path for f in e.files if f.path not in keep], out.report)
        if table is not None and (e.files or e.directories):
            through[table.id] = max(through.get(table.id, 0), e.time_micros)
        if keep and any(f.path in keep for f in e.files):
            continue  # a tagged version still reads some: the entry stays until the tag is dropped
        if directories and table is not None:
            keep = live_files(_table_files(ms, table))
            for d in directories:
                sweep_directory(d, e.time_micros, keep, out.report, table.location)
        elif e.directories and table is None:
            continue  # a dropped table's partitions: purging the table deletes them
        if len(out.report.unreachable) == before and len(directories) == len(e.directories):
            done.append(e.key)
    ms.forget_garbage(done)
    if kept:
        out.report.outside.extend(dict.fromkeys(kept))  # the dropped tables' (a retried transaction: once each)
        del kept[:]
    out.garbage = len(done)
    for tid, micros in through.items():
        t = by_id[tid]
        ms.mark_purged((t.catalog, t.database, t.name), micros)
    for t in live:
        if t.location:
            stale = stale_staging(t.location)
            for s in stale:
                _end_direct_write(ms, s, ".".join((t.catalog, t.database, t.name)), out.report, t.location)
            delete_local(stale, out.report)
            out.staging += len(stale)
            if stale:
                _remove_if_empty(os.path.join(local_path(t.location) or "", STAGING_DIR))
    return out


def _remove_if_empty(directory: str) -> None:
    try:
        os.rmdir(directory)
    except OSError:
        pass  # not empty (a running write's), or gone


def _end_direct_write(ms: Any, staging: str, table: str, report: DeleteReport, location: str) -> None:
    """A dead direct write's staging directory (:mod:`ushas_catalog.data.direct_writes`): the write is
    recorded ABORTED unless it COMMITTED, and its files (its manifests list them) are deleted unless it
    COMMITTED (then they are the table's)."""
    from .write_fence import abort_write

    if not has_manifests(staging):
        return
    write_id = staging.rstrip("/").rsplit("/", 1)[-1]
    if abort_write(ms, write_id, "its driver is gone (found by ushas purge)", table).state != COMMITTED:
        # regular files only (never a directory: rmtree), and only the table's (bounded)
        delete_local(bounded(manifest_files(staging), [location], report.outside), report)
        remove_created_dirs(staging)


#: the table property that keeps a table's replaced files (and so its old versions) at least this long
RETENTION_PROPERTY = "ushas.retention"


def retention_of(properties: Any) -> dt.timedelta | None:
    """The table's ``ushas.retention`` (None: not set); a malformed value is an error naming it."""
    from ..errors import InvalidArgument

    text = properties.get(RETENTION_PROPERTY)
    if text is None:
        return None
    try:
        return parse_age(text)
    except InvalidArgument as e:
        raise InvalidArgument(f"table property {RETENTION_PROPERTY}={text!r}: {e}") from None


def _retained(table: Any, time_micros: int, now_micros: int) -> bool:
    """Whether replaced files let go at ``time_micros`` are within the table's ``ushas.retention``."""
    retention = retention_of(table.properties)
    return retention is not None and time_micros > now_micros - int(retention.total_seconds() * 1e6)


def _purge_one(fn: Any, name: str, older_than: dt.timedelta | None, report: DeleteReport) -> int:
    paths: list[str] = []
    n = fn(name, data_paths=paths, older_than=older_than)
    delete_local(paths, report)
    return n


def _table_files(ms: Any, info: Any) -> list[DataFile]:
    name = (info.catalog, info.database, info.name)
    if not info.partition_columns:
        return ms.table_data_files(name) or []
    return [f for p in ms.list_partitions(name) for f in (p.data_files or [])]
