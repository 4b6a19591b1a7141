"""Writes through Spark: which partitions an overwrite replaces, and registering what Spark's
file writer committed (values, location, files, bytes) in one metadata transaction."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from ..model.data_files import DataFile, merge, total_size
from ..data.direct_writes import running_writes
from ..data.garbage import Garbage
from ..errors import InvalidArgument
from ..model.partitions import NULL_PARTITION, Partition


def parse_partition_path(path: str) -> dict[str, str]:
    """``dt=2024-01-01/h=3`` (Spark-escaped) -> {"dt": "2024-01-01", "h": "3"} (text form)."""
    spec: dict[str, str] = {}
    for part in path.strip("/").split("/"):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise InvalidArgument(f"not a partition directory: {part!r} in {path!r}")
        spec[unquote(name)] = unquote(value)
    return spec


def _plain(value: Any) -> Any:
    """A partition value as JSON compares it: dates as ISO text, decimals as text."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _same(a: Any, b: Any) -> bool:
    a, b = _plain(a), _plain(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, str):
        try:
            return a == type(a)(b)
        except ValueError:
            return False
    if isinstance(b, (int, float)) and isinstance(a, str):
        return _same(b, a)
    if isinstance(a, str) and isinstance(b, str):
        try:
            return Decimal(a) == Decimal(b)
        except ArithmeticError:
            return a == b
    return a == b


def matches(filter_: dict[str, Any], values: dict[str, Any]) -> bool | None:
    """Evaluates a data source filter (as the shim sends it) on partition values, with SQL's
    three-valued logic (``None`` = unknown). Filters on data columns are refused."""
    op = filter_["op"]
    if op == "true":
        return True
    if op == "false":
        return False
    if op in ("and", "or", "not"):
        args = [matches(a, values) for a in filter_["args"]]
        if op == "not":
            return None if args[0] is None else not args[0]
        if op == "and":
            return False if False in args else (None if None in args else True)
        return True if True in args else (None if None in args else False)
    if op == "unsupported":
        raise InvalidArgument(f"cannot overwrite by the filter {filter_['text']}: overwrite by partition values")
    column = filter_["column"]
    if column not in values:
        raise InvalidArgument(f"cannot overwrite by a filter on {column!r}, which is not a partition column "
                              f"(partition columns: {', '.join(values) or 'none'})")
    value = values[column]
    if op == "is_null":
        return value is None
    if op == "is_not_null":
        return value is not None
    if op == "eq_null_safe":
        return (value is None and filter_["value"] is None) or (
            value is not None and filter_["value"] is not None and _same(value, filter_["value"]))
    if value is None:
        return None
    if op == "eq":
        return None if filter_["value"] is None else _same(value, filter_["value"])
    if op == "in":
        return any(v is not None and _same(value, v) for v in filter_["values"])
    raise InvalidArgument(f"unknown filter operation {op!r}")


def overwritten(partitions: list[Any], filters: list[dict[str, Any]]) -> list[Any]:
    """The partitions an ``overwrite(filters)`` replaces: those every filter holds for."""
    return [p for p in partitions if all(matches(f, p.values) is True for f in filters)]


def committed(table_location: str, partition_by: list[str], deleted: list[str],
              written: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[Partition]]:
    """What Spark's commit did -> (partition specs to drop, partitions to put).

    ``deleted`` are the paths the write cleared first (relative to the table location; ``""`` is
    the whole table, ``dt=x`` a partition prefix); ``written`` the partition directories it
    committed, with their files and bytes listed after the commit."""
    drop: list[dict[str, str]] = []
    for path in deleted:
        if path == "":
            drop.append({})
        elif "://" in path or path.startswith("/"):
            continue  # a custom partition location: its partition is re-put below when written
        else:
            drop.append(parse_partition_path(path))
    put: list[Partition] = []
    for w in written:
        values = written_values(w["path"], partition_by)
        put.append(Partition(values=values, location=f"{table_location.rstrip('/')}/{w['path'].strip('/')}",
                             files=int(w["files"]), bytes=int(w["bytes"])))
    return drop, put


#: table properties that carry an unpartitioned table's stats (Hive's names, as DESCRIBE PARTITION shows them)
STATS_PROPERTIES = {"files": "numFiles", "bytes": "totalSize", "rows": "numRows"}


@dataclass
class WritePlan:
    """What one V2 batch write does to the metadata, decided from what Spark committed.

    ``drop``: values of replaced partitions the write did not fill again; ``put``: the written
    partitions (replacing same-valued ones) with their file lists; ``garbage``: the files the write
    makes unreachable (kept until purge; nothing for an external table); ``table_files``: an
    unpartitioned table's new file list (None: not recorded); ``stats``: its files / bytes / rows."""

    drop: list[dict[str, Any]] = field(default_factory=list)
    put: list[Any] = field(default_factory=list)
    garbage: Garbage = field(default_factory=Garbage)
    table_files: list[DataFile] | None = None
    stats: dict[str, int | None] = field(default_factory=dict)


def _join(location: str, path: str) -> str:
    return location.rstrip("/") + ("/" + path.strip("/") if path.strip("/") else "")


def _spec_matches(spec: dict[str, str], p: Any) -> bool:
    """A written directory's text spec names partition ``p``."""
    for column, text in spec.items():
        value = p.values.get(column)
        if text == NULL_PARTITION:
            if value is not None:
                return False
        elif value is None or not (p.spec.get(column) == text or _same(value, text)):
            return False
    return True


def _canonical(value: Any) -> tuple[Any, ...]:
    """A partition value (typed, or a directory's text) in the form :func:`_same` compares: numbers
    (and numeric text) by their decimal value, dates as ISO text, NULL as itself."""
    if value is None or value == NULL_PARTITION:
        return ("null",)
    value = _plain(value)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float, str)):
        try:
            number = Decimal(str(value))
        except ArithmeticError:
            return ("text", value)
        if number.is_finite():
            return ("number", number.normalize())
        return ("text", str(value))
    return ("other", repr(value))


class _ExistingIndex:
    """The table's partitions by partition values, so that finding the one a written directory names
    is a lookup, not a scan of every partition (a write of N partitions into a table of M: O(N + M))."""

    def __init__(self, existing: list[Any]) -> None:
        from itertools import product

        self.by_key: dict[tuple[Any, ...], list[Any]] = {}
        for p in existing:
            alternatives = []
            for column, value in p.values.items():
                keys = {(column, _canonical(value))}
                text = p.spec.get(column)
                if text is not None:
                    keys.add((column, _canonical(text)))
                alternatives.append(sorted(keys, key=repr))
            for combo in product(*alternatives):
                self.by_key.setdefault(tuple(sorted(combo, key=repr)), []).append(p)

    def find(self, spec: dict[str, str]) -> list[Any]:
        """The partitions the text spec names (normally zero or one)."""
        key = tuple(sorted(((c, _canonical(t)) for c, t in spec.items()), key=repr))
        seen: list[Any] = []
        for p in self.by_key.get(key, []):
            if _spec_matches(spec, p) and not any(p is q for q in seen):
                seen.append(p)
        return seen


def _files(items: list[dict[str, Any]] | None) -> list[DataFile]:
    return [DataFile.from_json(d) for d in items or []]


def list_local_files(location: str, table_root: str | None = None) -> list[DataFile] | None:
    """The data files directly in a local directory (``file:`` or a plain path), None for other
    file systems: a partition at its own location whose files were never recorded. With ``table_root``
    (the table's location), the files of the writes that have not committed (their staging directories:
    :func:`~ushas_catalog.data.direct_writes.running_writes`) are not data yet: skipped. That set is read
    AFTER the directory is listed: a write's staging directory exists before its first file does and is
    removed only after the write ended, so a file listed here whose write is running is always caught."""
    import os

    from ..data.direct_writes import of_running_write

    if "://" in location or (":" in location.split("/", 1)[0] and not location.startswith("file:")):
        return None
    path = location[len("file:"):] if location.startswith("file:") else location
    while path.startswith("//"):
        path = path[1:]
    out: list[DataFile] = []
    try:
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return []
    running = running_writes(table_root) if table_root is not None else frozenset()
    for e in entries:
        if e.is_file() and not e.name.startswith(("_", ".")) and not of_running_write(e.name, running):
            st = e.stat()
            out.append(DataFile("file:" + os.path.join(path, e.name), st.st_size, int(st.st_mtime * 1000)))
    return out


def plan_write(location: str, partition_by: list[str], existing: list[Any], old_files: list[DataFile] | None,
               old_stats: dict[str, int | None], mode: str, filters: list[dict[str, Any]],
               written: list[dict[str, Any]], rows: int | None, *, managed: bool = True,
               record_listed: bool = False) -> WritePlan:
    """The metadata side of a committed V2 write.

    ``mode``: ``append``, ``truncate`` (replace everything), ``overwrite`` (replace the partitions
    every filter holds for) or ``dynamic`` (replace the partitions written). ``written``: each
    directory the job placed files into (``dt=a/h=1``; ``""`` for an unpartitioned table) with
    this job's files there (``files``: path, size, mtime) and the data files that were there before
    (``existing``); ``rows``: the rows the job wrote. ``old_files``: an unpartitioned table's
    recorded files (None: not recorded). A partition (or table) whose files were not recorded keeps
    being listed after an append unless it was empty; a replaced one gives its files (recorded or
    found there) to the garbage, kept until purge, unless the table is external. ``record_listed``: a
    direct write (its files at their final names, hidden from listings only while its staging directory
    exists): an append into a partition (or table) read by listing records what the directory held
    (``existing``, listed at commit) plus the new files, so the committed files never depend on a listing."""
    if mode not in ("append", "truncate", "overwrite", "dynamic"):
        raise InvalidArgument(f"unknown write mode {mode!r}")
    plan = WritePlan()
    if not partition_by:
        if mode == "overwrite" and any(f["op"] != "true" for f in filters):
            raise InvalidArgument("an unpartitioned table can only be overwritten whole")
        w = written[0] if written else {"files": [], "existing": []}
        new, there = _files(w.get("files")), _files(w.get("existing"))
        if mode == "append":
            if old_files is not None:
                plan.table_files = merge(old_files, new)
            elif not there or record_listed:
                # nothing there to keep listing (or a direct write: recorded, see above): from now on the
                # list is the table
                plan.table_files = merge(there, new)
            listed = plan.table_files if plan.table_files is not None else there + new
            old_rows = old_stats.get("rows")
            plan.stats = {"files": len(listed), "bytes": total_size(listed),
                          "rows": None if rows is None or (old_rows is None and len(listed) != len(new))
                          else (old_rows or 0) + rows}
        else:
            plan.table_files = new
            plan.stats = {"files": len(new), "bytes": total_size(new), "rows": rows}
            if managed:
                plan.garbage.files.extend(old_files if old_files is not None else there)
        return plan

    def replaced(values: dict[str, Any]) -> bool:
        if mode == "truncate":
            return True
        if mode == "overwrite":
            return all(matches(f, values) is True for f in filters)
        return False

    specs = [parse_partition_path(w["path"]) for w in written]
    for spec, w in zip(specs, written):
        if sorted(spec) != sorted(partition_by):
            raise InvalidArgument(f"written directory {w['path']!r} does not name the partition columns "
                                  f"{', '.join(partition_by)}")
    single = rows if len(written) == 1 else None
    index = _ExistingIndex(existing)
    named: set[int] = set()  # id() of the existing partitions a written directory names
    for spec, w in zip(specs, written):
        values = {k: (None if v == NULL_PARTITION else v) for k, v in spec.items()}
        hits = index.find(spec)
        named.update(id(p) for p in hits)
        old = hits[0] if hits else None
        typed = old.values if old is not None else values
        target = _join(location, w["path"])
        new, there = _files(w.get("files")), _files(w.get("existing"))
        data_files: list[DataFile] | None
        if old is not None and (mode == "dynamic" or replaced(typed)):
            data_files, n, where = new, single, target
            if managed:
                if old.data_files is not None:
                    plan.garbage.files.extend(old.data_files)
                elif not old.location or old.location.rstrip("/") == target:
                    plan.garbage.files.extend(there)
                else:
                    plan.garbage.directories.append(old.location)
        elif old is None:
            data_files, n, where = new, single, target
        else:
            where = old.location or target
            n = None if single is None or old.rows is None else old.rows + single
            if old.data_files is not None:
                data_files = merge(old.data_files, new)
            elif where.rstrip("/") == target:
                # keep listing the directory unless it was empty; a direct write records it (see above)
                data_files = merge(there, new) if record_listed else None if there else new
            else:
                found = list_local_files(where, location)
                if found is None:
                    raise InvalidArgument(f"cannot append to partition {w['path']} of the table: it lives at "
                                          f"{where}, whose files were never recorded; overwrite it instead")
                data_files = merge(found, new)
        listed = data_files if data_files is not None else there + new
        plan.put.append(Partition(values=values, location=where, files=len(listed), bytes=total_size(listed),
                                  rows=n, properties=dict(old.properties) if old is not None else {},
                                  data_files=data_files))
    for p in existing:
        if mode == "dynamic" or not replaced(p.values):
            continue
        if id(p) in named:
            continue
        plan.drop.append(dict(p.values))
        if managed:
            plan.garbage.add_partition(p)
    return plan


def appended_table_files(written: list[dict[str, Any]], rows: int | None,
                         old_stats: dict[str, int | None]) -> tuple[list[DataFile], dict[str, str], list[str]] | None:
    """An append into an unpartitioned table without reading its file list: the files it adds, the stats
    properties to set and to remove (files and bytes from the table's stats plus the new ones; rows
    unknown when either is). None: the table's file and byte counts are not known (plan the whole list)."""
    files, size = old_stats.get("files"), old_stats.get("bytes")
    if files is None or size is None:
        return None
    new = _files((written[0] if written else {}).get("files"))
    old_rows = old_stats.get("rows")
    props = {STATS_PROPERTIES["files"]: str(files + len(new)), STATS_PROPERTIES["bytes"]: str(size + total_size(new))}
    if rows is not None and old_rows is not None:
        return new, {**props, STATS_PROPERTIES["rows"]: str(old_rows + rows)}, []
    return new, props, [STATS_PROPERTIES["rows"]] if old_rows is not None else []


def append_table(ms: Any, name: tuple[str, str, str], version: int, r: dict[str, Any],
                 old_stats: dict[str, int | None], detail: dict[str, Any], fenced: dict[str, Any]) -> dict[str, Any] | None:
    """An append (request ``r``) into an unpartitioned table at ``version`` whose files are recorded: this
    job's files go in as chunks of its list, at a cost independent of the files already there (the list is
    neither read nor rewritten). None: not possible (files or stats not recorded; nothing written): plan it
    whole. ``fenced``: the fence arguments of the write."""
    from ..errors import FilesNotRecorded

    planned = appended_table_files(list(r.get("written") or []), r.get("rows"), old_stats)
    if planned is None:
        return None
    files, props, remove = planned
    try:
        v = ms.write_table_files(name, files, "APPEND", set_properties=props, remove_properties=remove,
                                 expected_version=version, detail=detail, append=True, **fenced)
    except FilesNotRecorded:
        return None
    return {"registered": 0, "version": v}


def appended_partitions(location: str, partition_by: list[str], written: list[dict[str, Any]],
                        rows: int | None) -> list[Partition]:
    """An append into a partitioned table as :meth:`~ushas_catalog.catalog.partitions.PartitionOps.
    replace_partitions` takes it with ``append=True``: per written directory, the files this job added
    there (and their count, size and the job's rows when it wrote one directory)."""
    single = rows if len(written) == 1 else None
    out: list[Partition] = []
    for w in written:
        values = written_values(w["path"], partition_by)
        new = _files(w.get("files"))
        out.append(Partition(values=values, location=_join(location, w["path"]), files=len(new),
                             bytes=total_size(new), rows=single, properties={}, data_files=new))
    return out


def _file_key(path: str) -> str:
    """A file path as both sides spell it (``file:///a`` and ``file:/a`` are one file)."""
    p = path.strip()
    if p.startswith("file://"):
        p = "file:/" + p[len("file://"):].lstrip("/")
    elif p.startswith("/"):
        p = "file:" + p
    return p


def plan_file_replacement(location: str, partition_by: list[str], existing: list[Any],
                          old_files: list[DataFile] | None, replaced: list[dict[str, Any]],
                          written: list[dict[str, Any]], rows: int | None, *, managed: bool = True) -> WritePlan:
    """The metadata side of a row-level rewrite (DELETE / UPDATE / MERGE, docs/row-level.md): the files
    the statement read (``replaced``: ``[{"values": {...}, "files": [path, ...]}]``, by partition) leave
    the table, the files it wrote (``written``, as :func:`plan_write` takes them) join it; every other
    file stays where it is. A replaced file that is no longer in the table (another write replaced or
    dropped it since the statement read it) is a :class:`WriteConflict` naming its partition: nothing is
    committed. A partition left with no file is dropped; a rewritten partition's row count is unknown."""
    from ..errors import WriteConflict

    gone: dict[str, str] = {}  # file key -> partition text, for the conflict message
    if not partition_by:
        current = old_files if old_files is not None else _files((written[0] if written else {}).get("existing"))
        keys = {_file_key(f.path) for f in current}
        for group in replaced:
            for path in group.get("files") or []:
                if _file_key(path) not in keys:
                    raise WriteConflict(f"file {path} of the table was replaced or removed by another write since "
                                        f"the statement read it: the statement was not committed")
                gone[_file_key(path)] = ""
        new = [f for w in written for f in _files(w.get("files"))]
        kept = [f for f in current if _file_key(f.path) not in gone]
        plan = WritePlan(table_files=merge(kept, new))
        if managed:
            plan.garbage.files.extend(f for f in current if _file_key(f.path) in gone)
        listed = plan.table_files or []
        plan.stats = {"files": len(listed), "bytes": total_size(listed), "rows": rows if not kept else None}
        return plan

    plan = WritePlan()
    touched: dict[int, tuple[Any, list[DataFile], list[DataFile]]] = {}  # existing index -> (p, kept, new)

    def files_of(p: Any) -> list[DataFile]:
        if p.data_files is not None:
            return list(p.data_files)
        found = list_local_files(p.location or location, location)
        if found is None:
            raise InvalidArgument(f"partition {p.spec} of the table lives at {p.location}, whose files were never "
                                  f"recorded: rewrite it with INSERT OVERWRITE instead")
        return found

    for group in replaced:
        values = dict(group.get("values") or {})
        index = next((i for i, p in enumerate(existing)
                      if all(_same(p.values.get(c), values.get(c)) if values.get(c) is not None
                             else p.values.get(c) is None for c in partition_by)), None)
        text = "/".join(f"{c}={values.get(c)}" for c in partition_by)
        if index is None:
            raise WriteConflict(f"partition {text} was dropped by another write since the statement read it: "
                                f"the statement was not committed")
        p = existing[index]
        current = touched[index][1] if index in touched else files_of(p)
        keys = {_file_key(f.path) for f in current}
        for path in group.get("files") or []:
            if _file_key(path) not in keys:
                raise WriteConflict(f"file {path} of partition {text} was replaced or removed by another write "
                                    f"since the statement read it: the statement was not committed")
            gone[_file_key(path)] = text
        kept = [f for f in current if _file_key(f.path) not in gone]
        if managed:
            plan.garbage.files.extend(f for f in current if _file_key(f.path) in gone)
        touched[index] = (p, kept, [])
    single = rows if len(written) == 1 else None
    for w in written:
        spec = parse_partition_path(w["path"])
        if sorted(spec) != sorted(partition_by):
            raise InvalidArgument(f"written directory {w['path']!r} does not name the partition columns "
                                  f"{', '.join(partition_by)}")
        new = _files(w.get("files"))
        index = next((i for i, p in enumerate(existing) if _spec_matches(spec, p)), None)
        if index is None:  # a partition the statement creates (a MERGE's insert, an UPDATE moving rows)
            values = {k: (None if v == NULL_PARTITION else v) for k, v in spec.items()}
            plan.put.append(Partition(values=values, location=_join(location, w["path"]), files=len(new),
                                      bytes=total_size(new), rows=single, properties={}, data_files=new))
            continue
        p, kept, added = touched[index] if index in touched else (existing[index], files_of(existing[index]), [])
        touched[index] = (p, kept, added + new)
    for p, kept, added in touched.values():
        listed = merge(kept, added)
        if not listed:
            plan.drop.append(dict(p.values))
            continue
        plan.put.append(Partition(values=p.values, location=p.location, files=len(listed), bytes=total_size(listed),
                                  rows=None, properties=dict(p.properties), data_files=listed))
    return plan


#: the table property choosing a row-level statement's isolation (docs/row-level.md)
ISOLATION_PROPERTY = "ushas.row-level.isolation"
ISOLATION_LEVELS = ("serializable", "snapshot")


def row_level_isolation(properties: dict[str, str]) -> str:
    """The table's isolation level for DELETE / UPDATE / MERGE: ``serializable`` (the default, as
    Iceberg's ``write.*.isolation-level``) or ``snapshot``; another value is an InvalidArgument."""
    level = str(properties.get(ISOLATION_PROPERTY) or "serializable").strip().lower()
    if level not in ISOLATION_LEVELS:
        raise InvalidArgument(f"table property {ISOLATION_PROPERTY}={properties.get(ISOLATION_PROPERTY)!r} is not "
                              f"one of {', '.join(ISOLATION_LEVELS)}: the statement was not committed")
    return level


def check_nothing_added(base: Any, location: str, partition_by: list[str], existing: list[Any],
                        old_files: list[DataFile] | None, replaced: list[dict[str, Any]],
                        written: list[dict[str, Any]]) -> None:
    """Serializable isolation of a row-level rewrite: a file added since ``base`` (the
    :class:`~ushas_catalog.catalog.time_travel.FilesAsOf` of the version the statement read) to a
    partition it read or writes (the whole table, unpartitioned) is a :class:`WriteConflict` naming
    the partition: the statement did not see those rows (a MERGE would duplicate their keys)."""
    from ..errors import WriteConflict

    hint = (f"the statement was not committed (isolation serializable; the table property "
            f"{ISOLATION_PROPERTY}=snapshot allows it)")
    if not partition_by:
        if base.files is None or old_files is None:
            return
        before = {_file_key(f.path) for f in base.files}
        added = [f.path for f in old_files if _file_key(f.path) not in before]
        if added:
            raise WriteConflict(f"{len(added)} file(s) were added to the table by another write since version "
                                f"{base.version}, which the statement read: {hint}")
        return
    if base.scheme is None:
        return
    then = {tuple(sorted(base.scheme.spec(key).items())): record for key, record in base.partitions}
    scanned: set[int] = set()
    for group in replaced:
        values = dict(group.get("values") or {})
        scanned.update(i for i, p in enumerate(existing)
                       if all(_same(p.values.get(c), values.get(c)) if values.get(c) is not None
                              else p.values.get(c) is None for c in partition_by))
    for w in written:
        spec = parse_partition_path(w["path"])
        scanned.update(i for i, p in enumerate(existing) if _spec_matches(spec, p))
    for i in sorted(scanned):
        p = existing[i]
        current = p.data_files if p.data_files is not None else list_local_files(p.location or location, location)
        record = then.get(tuple(sorted(p.spec.items())))
        if current is None or (record is not None and not record.files_recorded):
            continue  # files never recorded: nothing to compare
        before = set() if record is None else {_file_key(f.path) for f in record.data_files}
        added = [f.path for f in current if _file_key(f.path) not in before]
        if added:
            text = "/".join(f"{k}={v}" for k, v in p.spec.items())
            raise WriteConflict(f"partition {text} had {len(added)} file(s) added by another write since version "
                                f"{base.version}, which the statement read: {hint}")


def written_values(path: str, partition_by: list[str]) -> dict[str, str | None]:
    """The partition values a written directory (``a=1/b=x``, relative to the table) names; an
    InvalidArgument when it does not name exactly the partition columns."""
    spec = parse_partition_path(path)
    if sorted(spec) != sorted(partition_by):
        raise InvalidArgument(f"written directory {path!r} does not name the partition columns "
                              f"{', '.join(partition_by)}")
    return {k: (None if v == NULL_PARTITION else v) for k, v in spec.items()}
