"""A catalog table as a Structured Streaming source: ``spark.readStream.table("ushas.db.t")``.

The shim's ``io.ushas.spark.UshasStreamSource`` (Spark's micro-batch ``Source`` with admission control)
asks :func:`stream_latest` where the data ends now and :func:`stream_batch` for the files between two
offsets; both answer from the catalog (:mod:`ushas_catalog.catalog.stream_source`), nothing is kept
in the JVM. An offset is a position in the table's sequence of *units*: the table's files at the
version the stream started from (the default start, as Delta's), then each later commit's added
files, in commit order; inside a unit its files are ordered by partition then path, so a position is
``(version, index, snapshot)``: the unit of ``version`` (the snapshot or the commit) with its first
``index`` files read (``-1``: all of it). Every offset carries the stream's origin (where it started)
and the table's id: a table dropped, or replaced by one of the same name, stops the query.

Options (of ``readStream``): ``startingVersion`` (``latest``: only commits after the start;
``earliest``: every commit from the table's creation; a version number: commits from that one on),
``startingTimestamp`` (commits from the first at or after that time), neither (the table as it is,
then every later commit); ``maxFilesPerTrigger`` / ``maxBytesPerTrigger`` (at least one file is taken);
``skipChangeCommits`` (``true``: commits that removed files — overwrites, deletes, truncates, dropped
partitions — are skipped whole, else such a commit stops the query with an error naming it).
Compactions are always skipped (the same rows in other files).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Iterator

from ..catalog.stream_source import COMPACT
from ..errors import InvalidArgument
from ..model.data_files import DataFile
from .stream_schema import check_read_schema
from .tables import SparkCtx, location_of, table_name

Request = dict[str, Any]
Answer = dict[str, Any]

#: offset format of this module (a checkpoint of a newer format is refused, not misread)
OFFSET_FORMAT = 1


@dataclass(frozen=True)
class Position:
    """After ``index`` files of the unit of ``version`` (``-1``: all of it; ``snapshot``: the unit is the
    table's files at ``version``, else the files commit ``version`` added)."""

    version: int
    index: int = -1
    snapshot: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "index": self.index, "snapshot": self.snapshot}

    @staticmethod
    def of(d: Any) -> "Position":
        if not isinstance(d, dict) or not isinstance(d.get("version"), int):
            raise InvalidArgument(f"not an offset of a catalog table stream: {d!r}")
        return Position(int(d["version"]), int(d.get("index", -1)), bool(d.get("snapshot", False)))


@dataclass(frozen=True)
class Unit:
    """The files one unit offers: (partition row, location, file) in order."""

    version: int
    snapshot: bool
    files: list[tuple[list[Any], str | None, DataFile]]


def _options(r: Request) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (r.get("options") or {}).items()}


def _flag(opts: dict[str, str], key: str) -> bool:
    value = opts.get(key.lower(), "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgument(f"option {key} must be true or false, not {value!r}")
    return value == "true"


def _positive(opts: dict[str, str], key: str) -> int | None:
    text = opts.get(key.lower())
    if text is None:
        return None
    try:
        n = int(text.strip())
    except ValueError:
        n = 0
    if n <= 0:
        raise InvalidArgument(f"option {key} must be a positive number, not {text!r}")
    return n


def _origin(ms: Any, name: tuple[str, str, str], r: Request, head: int) -> Position:
    """Where a new stream starts (the options ``startingVersion`` / ``startingTimestamp``)."""
    opts = _options(r)
    version, stamp = opts.get("startingversion"), opts.get("startingtimestamp")
    if version is not None and stamp is not None:
        raise InvalidArgument("give startingVersion or startingTimestamp, not both")
    if stamp is not None:
        try:
            when = dt.datetime.fromisoformat(stamp.strip().replace(" ", "T"))
        except ValueError:
            raise InvalidArgument(f"startingTimestamp {stamp!r} is not a timestamp (e.g. 2026-11-29 07:00:00)") from None
        when = when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
        return Position(ms.first_version_since(name, when) - 1)
    if version is None:
        return Position(head, 0, True)
    text = version.strip().lower()
    if text == "latest":
        return Position(head)
    if text == "earliest":
        return Position(0)
    if not text.isdigit() or int(text) < 1:
        raise InvalidArgument(f"startingVersion must be latest, earliest or a version number, not {version!r}")
    if int(text) > head + 1:
        raise InvalidArgument(f"startingVersion {text}: table {'.'.join(name)} is at version {head}")
    return Position(int(text) - 1)


def _check_table(info: Any, name: tuple[str, str, str], offset: dict[str, Any] | None) -> None:
    if offset is not None and offset.get("table_id") not in (None, info.id):
        raise InvalidArgument(f"table {'.'.join(name)} was dropped and replaced by another table of that name "
                              f"since this stream started: the stream stops (start a new query, with a new "
                              f"checkpoint, to read the new table)")


def _key_order(item: tuple[tuple[Any, ...], Any]) -> tuple[tuple[bool, Any], ...]:
    """Partitions in key order (a null value first, as the keys sort)."""
    return tuple((x is not None, 0 if x is None else x) for x in item[0])


class Reader:
    """The units of one table from one position on, read from the catalog as needed."""

    def __init__(self, ms: Any, ctx: SparkCtx, name: tuple[str, str, str], skip_changes: bool) -> None:
        self.ms, self.ctx, self.name, self.skip_changes = ms, ctx, name, skip_changes

    def snapshot(self, version: int) -> Unit:
        found = self.ms.files_as_of(self.name, version)
        out: list[tuple[list[Any], str | None, DataFile]] = []
        if found.scheme is None or not found.scheme.names:
            if found.files is None:
                raise InvalidArgument(f"table {'.'.join(self.name)}: its files were not recorded by the catalog, "
                                      f"so it cannot be read as a stream")
            out = [([], None, f) for f in sorted(found.files, key=lambda f: f.path)]
        else:
            row = found.scheme.json_row()
            for key, record in sorted(found.partitions, key=_key_order):
                if not record.files_recorded:
                    raise InvalidArgument(f"partition {dict(zip(found.scheme.names, key))} of table "
                                          f"{'.'.join(self.name)}: its files were not recorded by the catalog, so "
                                          f"it cannot be read as a stream")
                for f in sorted(record.data_files, key=lambda f: f.path):
                    out.append((row(key), record.location or None, DataFile(f.path, f.size, f.mtime)))
        return Unit(version, True, out)

    def commits(self, after: int) -> tuple[Any, list[Unit]]:
        """The commits after ``after`` (a bounded number) as units; a change commit is skipped or
        refused here."""
        found = self.ms.stream_commits(self.name, after)
        units: list[Unit] = []
        for c in found.commits:
            if c.operation == COMPACT:  # the same rows in other files
                units.append(Unit(c.version, False, []))
                continue
            if c.changes_data:
                if self.skip_changes:
                    units.append(Unit(c.version, False, []))
                    continue
                raise InvalidArgument(
                    f"table {'.'.join(self.name)} changed at version {c.version} by {c.operation or 'a commit'} that "
                    f"removed {c.removed} file(s): a streaming read of a table takes appended rows only; read with "
                    f"option skipChangeCommits=true to skip such commits, or start a new query from a later version "
                    f"(option startingVersion)")
            units.append(Unit(c.version, False, [(list(a.partition), a.location, a.file) for a in c.added]))
        return found, units


def _units_from(reader: Reader, pos: Position) -> Iterator[tuple[Unit, int]]:
    """The units from ``pos`` on, each with the index of its first file not read yet."""
    if pos.snapshot:
        yield reader.snapshot(pos.version), pos.index
        after = pos.version
    else:
        after = pos.version if pos.index == -1 else pos.version - 1
    while True:
        found, units = reader.commits(after)
        for unit in units:
            partly = not pos.snapshot and pos.index >= 0 and unit.version == pos.version
            yield unit, pos.index if partly else 0
        if not units or found.through >= found.head:
            return
        after = found.through


#: versions without files a stream moves over without a batch: past it, an empty batch moves it on
EMPTY_STRETCH = 100


def stream_latest(ms: Any, r: Request) -> Answer:
    """``{"offset": {...}, "head"}``: where the data ends now from offset ``start`` (null: a new
    stream, which starts at its origin), taking at most ``max_files`` files / ``max_bytes`` bytes
    (at least one file; null: no limit) and nothing past offset ``until`` (``Trigger.AvailableNow``:
    what there was when the query started). The offset is ``start`` when nothing new was committed."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    start = r.get("start")
    info = ms.get_table(name)
    _check_table(info, name, start)
    check_read_schema(ms, name, info, r.get("read_schema"))
    reader = Reader(ms, ctx, name, _flag(_options(r), "skipChangeCommits"))
    if start is None:
        origin = _origin(ms, name, r, info.version)
        pos = origin
    else:
        origin, pos = Position.of(start.get("origin")), Position.of(start)
    max_files, max_bytes = r.get("max_files"), r.get("max_bytes")
    taken, size, end = 0, 0, pos

    def full() -> bool:
        return (max_files is not None and taken >= int(max_files)) or (max_bytes is not None and size >= int(max_bytes))

    until = Position.of(r["until"]) if r.get("until") is not None else None  # Trigger.AvailableNow's end
    for unit, first in _units_from(reader, pos):
        if until is not None and unit.version > until.version:
            break
        stop = until.index if until is not None and unit.version == until.version and until.index >= 0 else None
        files = unit.files if stop is None else unit.files[:stop]
        if stop is not None and first >= stop:
            break
        i = first
        while i < len(files) and not (taken > 0 and full()):
            taken, size, i = taken + 1, size + unit.files[i][2].size, i + 1
        end = Position(unit.version) if i >= len(unit.files) else Position(unit.version, i, unit.snapshot)
        if full() or stop is not None:
            break
    if start is not None and taken == 0 and end.version - pos.version < EMPTY_STRETCH:
        end = pos  # nothing new: no batch
    offset = {"format": OFFSET_FORMAT, "table_id": info.id, **end.to_json(), "origin": origin.to_json()}
    return {"offset": offset, "head": info.version, "files": taken}


def stream_batch(ms: Any, r: Request) -> Answer:
    """The files after offset ``start`` (null: from the origin ``end`` carries) through ``end``, as
    :func:`ushas_catalog.spark.reads.list_files` answers them (one entry per partition)."""
    ctx = SparkCtx.of(r)
    name = table_name(ctx, r)
    end_offset = r["end"]
    info = ms.get_table(name)
    _check_table(info, name, end_offset)
    start = r.get("start")
    pos = Position.of(start if start is not None else end_offset.get("origin"))
    end = Position.of(end_offset)
    reader = Reader(ms, ctx, name, _flag(_options(r), "skipChangeCommits"))
    picked: list[tuple[list[Any], str | None, DataFile]] = []
    if end != pos:
        for unit, first in _units_from(reader, pos):
            if unit.version > end.version:
                break
            last = end.index if unit.version == end.version and end.index >= 0 else len(unit.files)
            picked += unit.files[first:last]
            if unit.version == end.version:
                break
    columns = list(info.partition_columns)
    out: Answer = {"columns": columns, "rows": [], "locations": [], "files": []}
    groups: dict[str, int] = {}
    default_location = None if columns else location_of(ctx, info)
    for row, location, f in picked:
        key = repr(row)
        if key not in groups:
            groups[key] = len(out["rows"])
            out["rows"].append(row)
            out["locations"].append(location or default_location)
            out["files"].append([])
        out["files"][groups[key]].append([f.path, f.size, f.mtime])
    return out


OPS = {"stream_latest": stream_latest, "stream_batch": stream_batch}
