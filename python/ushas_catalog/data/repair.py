"""Registering data that already exists under a table's location: ``MSCK REPAIR TABLE t [ADD|DROP|SYNC
PARTITIONS]``, ``ALTER TABLE t RECOVER PARTITIONS`` (Spark, through the session extension
``io.ushas.spark.UshasExtensions``) and ``ushas repair TABLE`` (the CLI).

Who does what:

- *Listing* the partition directories is the caller's: the JVM lists with Hadoop's FileSystem (any
  scheme), the CLI with :func:`list_directories` (local and ``file:`` locations). A listing is the
  relative paths of the directories found at the depth of the partition columns, each level named
  ``<column>=<value>`` for its column (names starting with ``_`` or ``.`` skipped), as on disk
  (escaped like Spark: ``dt=2024%2F01``).
- *Deciding* is here: :func:`parse_paths` turns paths into typed partition keys (values unescaped
  like Spark's ``ExternalCatalogUtils.unescapePathName``, ``__HIVE_DEFAULT_PARTITION__`` = NULL; a
  value that does not parse for its column's type is reported, not fatal); ADD registers the
  directories not registered yet, DROP unregisters the partitions whose location no longer exists
  (registered locations under the table root that the listing found exist; the others are asked
  to the caller's ``exists``), SYNC does both (drop first, so a partition whose recorded location
  vanished is registered again at the directory found).
- *Registering* is batched: every transaction stays well within FoundationDB's limits (10 MB of
  mutations, 5 s), whatever the number of directories: :data:`BATCH_BYTES` of estimated mutations
  and at most :data:`ADD_BATCH` / :data:`DROP_BATCH` partitions per transaction, halved again if the
  store still reports a limit. Each batch is its own commit (a new table version), so other sessions'
  caches see the partitions as they are registered; a batch that fails leaves the earlier ones
  registered and a repeated repair goes on from there.

The JVM drives the same steps through the bridge op ``repair`` (:func:`ushas_catalog.spark.repair.spark_op`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import urlparse

import fdb.tuple as fdbtuple

from ..errors import InvalidArgument, LimitExceeded
from ..model.names import TableName
from ..model.objects import MutationResult
from ..model.partitions import NULL_PARTITION, Partition, PartitionScheme

#: estimated mutation bytes per transaction (FoundationDB allows 10,000,000)
BATCH_BYTES = 2_000_000
#: partitions added per transaction at most (the existence check is one range read)
ADD_BATCH = 10_000
#: partitions dropped per transaction at most (each is a point read: bounded for the 5 s limit)
DROP_BATCH = 2_000
#: estimated bytes a partition costs besides its location and values (record, history, change feed)
_OVERHEAD_BYTES = 250

#: progress callback: (what is being done, units done in this step)
Tick = Callable[[str, int], None]


class RepairMode(str, Enum):
    """What a repair does: ADD (Spark's default), DROP or SYNC (both)."""

    ADD = "add"
    DROP = "drop"
    SYNC = "sync"

    @classmethod
    def of(cls, add: bool, drop: bool) -> "RepairMode":
        if add and drop:
            return cls.SYNC
        if drop:
            return cls.DROP
        if add:
            return cls.ADD
        raise InvalidArgument("a repair adds, drops or both")

    @property
    def adds(self) -> bool:
        return self is not RepairMode.DROP

    @property
    def drops(self) -> bool:
        return self is not RepairMode.ADD


@dataclass(frozen=True)
class PartitionDir:
    """A partition directory found under the table root."""

    path: str                   # relative to the root, as on disk: "dt=2024-01-01/h=3"
    spec: dict[str, str]        # column -> value text (NULL_PARTITION for NULL), unescaped
    key: tuple[Any, ...]        # the partition key (typed tuple elements)


@dataclass(frozen=True)
class InvalidDir:
    """A directory that is not registered, and why."""

    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass
class RepairReport:
    """What a repair did (or, with ``dry_run``, would do)."""

    table: str
    mode: RepairMode
    dry_run: bool = False
    location: str = ""
    listed: int = 0                                   # partition directories found
    added: list[str] = field(default_factory=list)    # partition names ("dt=2024-01-01")
    dropped: list[str] = field(default_factory=list)
    invalid: list[InvalidDir] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # registered locations whose existence was unknown
    transactions: int = 0
    version: int | None = None                        # the table version after the last commit

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "mode": self.mode.value, "dry_run": self.dry_run, "location": self.location,
                "listed": self.listed, "added": self.added, "dropped": self.dropped,
                "invalid": [d.to_json() for d in self.invalid], "unchecked": self.unchecked,
                "transactions": self.transactions, "version": self.version}

    def summary(self) -> str:
        verb = ("would add", "would drop") if self.dry_run else ("added", "dropped")
        lines = []
        if self.dry_run:
            lines += [f"+ {name}" for name in self.added] + [f"- {name}" for name in self.dropped]
        lines += [f"invalid: {d.path}: {d.reason}" for d in self.invalid]
        lines += [f"not checked (not a local location): {loc}" for loc in self.unchecked]
        counts = []
        if self.mode.adds:
            counts.append(f"{verb[0]} {len(self.added)}")
        if self.mode.drops:
            counts.append(f"{verb[1]} {len(self.dropped)}")
        tail = f" in {self.transactions} transaction(s)" if not self.dry_run and self.transactions else ""
        lines.append(f"{self.table}: {self.listed} partition directories, {', '.join(counts)} partition(s)"
                     f"{tail}, {len(self.invalid)} invalid")
        return "\n".join(lines)


# ---- paths ------------------------------------------------------------------------------------------
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def unescape_path_name(text: str) -> str:
    """Spark's ``ExternalCatalogUtils.unescapePathName``: ``%XX`` (two hex digits) -> that character."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text) if "%" in text else text


def is_hidden(name: str) -> bool:
    """Names Spark's partition discovery skips (``_temporary``, ``_SUCCESS``, ``.staging``...)."""
    return name.startswith(("_", "."))


def column_of(name: str, column: str) -> str | None:
    """The escaped value of a directory named ``<column>=<value>`` for ``column`` (its name compared
    unescaped and case-insensitively, like Spark's resolver), or None when it is not one."""
    eq = name.find("=")
    if eq <= 0:
        return None
    if unescape_path_name(name[:eq]).lower() != column.lower():
        return None
    return name[eq + 1:]


def parse_path(scheme: PartitionScheme, path: str) -> PartitionDir | InvalidDir:
    """A relative partition path -> its typed key, or why it cannot be one."""
    parts = path.strip("/").split("/")
    if len(parts) != len(scheme.columns):
        return InvalidDir(path, f"expected {len(scheme.columns)} level(s) "
                                f"({'/'.join(c.name + '=...' for c in scheme.columns)})")
    spec: dict[str, str] = {}
    elements = []
    for part, column in zip(parts, scheme.columns):
        raw = column_of(part, column.name)
        if raw is None:
            return InvalidDir(path, f"{part!r} is not a directory of partition column {column.name!r}")
        text = unescape_path_name(raw)
        if text == "":
            return InvalidDir(path, f"empty value for partition column {column.name!r} (Spark writes empty "
                                    f"and NULL values as {NULL_PARTITION})")
        try:
            elements.append(column.encode(text))
        except InvalidArgument as e:
            return InvalidDir(path, e.message)
        spec[column.name] = text
    return PartitionDir(path.strip("/"), spec, tuple(elements))


def parse_paths(scheme: PartitionScheme, paths: Iterable[str]) -> tuple[list[PartitionDir], list[InvalidDir]]:
    """Paths -> partition directories in key order, and the invalid ones (a second directory of one
    partition, e.g. ``n=7`` and ``n=07`` of an INT column, is invalid: the first one found wins)."""
    found: dict[bytes, PartitionDir] = {}
    invalid: list[InvalidDir] = []
    for path in paths:
        d = parse_path(scheme, path)
        if isinstance(d, InvalidDir):
            invalid.append(d)
            continue
        packed = fdbtuple.pack(d.key)
        first = found.get(packed)
        if first is not None:
            invalid.append(InvalidDir(d.path, f"the same partition as {first.path}"))
            continue
        found[packed] = d
    return [found[k] for k in sorted(found)], invalid


def join_location(root: str, path: str) -> str:
    return root.rstrip("/") + "/" + path


@dataclass
class Listing:
    """The partition directories under a root (relative paths), and the directories skipped for
    not being named for their partition column."""

    paths: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def local_path(location: str) -> str | None:
    """The local filesystem path of a ``file:`` URI or a plain path; None for any other scheme."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return parsed.path
    return location if not parsed.scheme else None


def list_directories(root: str, columns: Sequence[str], tick: Tick | None = None) -> Listing:
    """The partition directories under the local directory ``root`` (breadth first, os.scandir):
    at each level the subdirectories named ``<column>=...`` for that level's column."""
    out = Listing()
    level = [""]
    for depth, column in enumerate(columns):
        below: list[str] = []
        for rel in level:
            try:
                with os.scandir(os.path.join(root, rel) if rel else root) as it:
                    entries = sorted((e.name for e in it if e.is_dir() and not is_hidden(e.name)))
            except FileNotFoundError:
                continue
            for name in entries:
                child = f"{rel}/{name}" if rel else name
                if column_of(name, column) is None:
                    if "=" in name:
                        out.ignored.append(child)
                    continue
                below.append(child)
            if tick:
                tick("listing", 1)
        level = below
    out.paths = level
    return out


# ---- batches ----------------------------------------------------------------------------------------
def _cost(location: str, spec: dict[str, str]) -> int:
    return _OVERHEAD_BYTES + 2 * len(location) + 3 * sum(len(k) + len(v) for k, v in spec.items())


def batches(items: Sequence[Any], cost: Callable[[Any], int], max_count: int,
            max_bytes: int = BATCH_BYTES) -> Iterator[list[Any]]:
    """Consecutive runs of ``items`` of at most ``max_count`` items and ``max_bytes`` of cost."""
    run: list[Any] = []
    size = 0
    for item in items:
        c = cost(item)
        if run and (len(run) >= max_count or size + c > max_bytes):
            yield run
            run, size = [], 0
        run.append(item)
        size += c
    if run:
        yield run


@dataclass
class BatchOutcome:
    """What a batched registration did."""

    done: int = 0          # partitions added / dropped
    skipped: int = 0       # already registered (add) or already gone (drop)
    transactions: int = 0  # commits made
    version: int | None = None


def _run_batches(items: Sequence[Any], cost: Callable[[Any], int], max_count: int,
                 apply: Callable[[list[Any]], MutationResult], done: Callable[[MutationResult], int],
                 tick: Tick | None, step: str) -> BatchOutcome:
    """``apply`` each batch (one transaction); a batch the store still finds over a limit is split in
    two and retried (nothing of it was committed). ``done``: what a batch's result counts."""
    out = BatchOutcome()
    pending = list(batches(items, cost, max_count))
    pending.reverse()
    while pending:
        batch = pending.pop()
        try:
            result = apply(batch)
        except LimitExceeded:
            if len(batch) == 1:
                raise
            half = len(batch) // 2
            pending += [batch[half:], batch[:half]]
            continue
        out.done += done(result)
        out.skipped += result.skipped
        if result.version is not None:
            out.transactions += 1
            out.version = result.version
        if tick:
            tick(step, len(batch))
    return out


def add_batched(ms: Any, name: Any, partitions: Sequence[Partition], tick: Tick | None = None) -> BatchOutcome:
    """Register ``partitions`` (those already registered are skipped) in transactions within limits."""
    return _run_batches(partitions, lambda p: _cost(p.location or "", p.values), ADD_BATCH,
                        lambda batch: ms.add_partitions(name, batch, if_not_exists=True), lambda r: r.added,
                        tick, "registering")


def drop_batched(ms: Any, name: Any, specs: Sequence[dict[str, str]], tick: Tick | None = None) -> BatchOutcome:
    """Unregister the partitions of ``specs`` (full specs; those already gone are skipped) in
    transactions within limits."""
    return _run_batches(specs, lambda s: _cost("", s), DROP_BATCH,
                        lambda batch: ms.drop_partitions(name, batch, if_exists=True), lambda r: r.dropped,
                        tick, "dropping")


# ---- the repair -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Registered:
    """A registered partition: its key, spec (value texts) and location."""

    key: tuple[Any, ...]
    spec: dict[str, str]
    location: str


def registered(ms: Any, name: Any) -> tuple[PartitionScheme, list[Registered]]:
    """The registered partitions of a table (streamed from the store in batches)."""
    scheme = partition_scheme(ms, name)
    out = [Registered(scheme.key(p.spec), p.spec, p.location or "") for p in ms.list_partitions(name)]
    return scheme, out


def partition_scheme(ms: Any, name: Any) -> PartitionScheme:
    info = ms.get_table(name)
    if not info.partition_columns:
        raise InvalidArgument(f"{info.full_name} is not partitioned: there are no partitions to repair",
                              table=info.full_name)
    return PartitionScheme.of(info.schema, info.partition_columns)


def missing(root: str, listed: Iterable[str], parts: Iterable[Registered],
            exists: Callable[[str], bool | None]) -> tuple[list[Registered], list[str]]:
    """The registered partitions whose location no longer exists, and the locations that could not be
    checked (``exists`` answered None). A location the listing found exists without a check."""
    found = {join_location(root, p) for p in listed}
    gone: list[Registered] = []
    unchecked: list[str] = []
    for p in parts:
        if not p.location or p.location.rstrip("/") in found:
            continue
        answer = exists(p.location)
        if answer is None:
            unchecked.append(p.location)
        elif not answer:
            gone.append(p)
    return gone, unchecked


def repair_table(ms: Any, name: Any, paths: Iterable[str], *, root: str, mode: RepairMode = RepairMode.ADD,
                 exists: Callable[[str], bool | None] | None = None, dry_run: bool = False,
                 on_plan: Callable[[int], None] | None = None, tick: Tick | None = None) -> RepairReport:
    """Repair the registration of the table ``name`` whose directory ``root`` holds the partition
    directories ``paths`` (relative, as listed). ``exists(location)`` tells whether a registered
    location outside the listing exists (True / False / None for unknown); DROP and SYNC need it.
    ``on_plan(n)``: the number of partitions to drop and add, once known; ``tick(step, n)`` after each
    batch (a transaction) of ``n`` of them."""
    tn = TableName.parse(name)
    if mode.drops:
        if exists is None:
            raise InvalidArgument("a DROP or SYNC repair needs to check registered locations (exists)")
        scheme, known = registered(ms, tn)
        known_keys = [p.key for p in known]
    else:  # ADD needs the registered keys only: no partition record is read
        scheme = partition_scheme(ms, tn)
        known, known_keys = [], ms.list_partition_keys(tn)[1]
    root = root.rstrip("/")
    dirs, invalid = parse_paths(scheme, paths)
    report = RepairReport(str(tn), mode, dry_run, root, listed=len(dirs) + len(invalid), invalid=invalid)
    gone: list[Registered] = []
    if mode.drops and exists is not None:
        gone, report.unchecked = missing(root, (d.path for d in dirs), known, exists)
    gone_keys = {fdbtuple.pack(p.key) for p in gone}
    registered_keys = {fdbtuple.pack(k) for k in known_keys} - gone_keys
    to_add = [d for d in dirs if fdbtuple.pack(d.key) not in registered_keys] if mode.adds else []
    report.dropped = [scheme.path(p.key) for p in gone]
    report.added = [scheme.path(d.key) for d in to_add]
    if on_plan:
        on_plan(len(gone) + len(to_add))
    if dry_run:
        return report
    if gone:
        outcome = drop_batched(ms, tn, [p.spec for p in gone], tick)
        report.transactions += outcome.transactions
        report.version = outcome.version or report.version
    if to_add:
        parts = [Partition(values=d.spec, location=join_location(root, d.path)) for d in to_add]
        outcome = add_batched(ms, tn, parts, tick)
        report.transactions += outcome.transactions
        report.version = outcome.version or report.version
    return report


__all__ = ["RepairMode", "RepairReport", "PartitionDir", "InvalidDir", "Listing", "BatchOutcome", "Registered",
           "unescape_path_name", "parse_path", "parse_paths", "list_directories", "local_path", "batches",
           "add_batched", "drop_batched", "registered", "missing", "repair_table"]
