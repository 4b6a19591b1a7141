"""Registered files stay in their table: the bounds every registration of data files is checked against.

A table's recorded files (an append, an overwrite, a replace, added partitions, a staged CTAS / RTAS, a commit
from Spark, a branch write) and what a write says it lets go (a ``Garbage``: files and partition directories)
are what ``ushas purge`` deletes once the table, the partition or the version is gone. So a governed caller
registers only paths under the table's location or under the location of the partition they are registered in
(a partition's own location is checked for placement when it is added or moved: CREATE EXTERNAL TABLE on the
declared location holding it, no overlap with another table); anything else needs what deleting and reading
that path by path needs (:meth:`~ushas_catalog.catalog.locations.LocationOps._check_registered`). Else a
user with MODIFY on their own table could have the owner's next purge delete another user's files.

Checked in the transaction that writes (one string prefix check per path; the policy is read only for a path
outside), or, for a write that goes in chunks, in a transaction of its own before anything is staged. A caller
whose calls are not checked (authorization off) is not bounded.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from .. import records as rec
from ..data.locations import dotted, normalized, outside
from ..kv import Transaction
from ..model.names import TableName
from .authorization import ANYONE, PROJECT, Requirement, requiring
from .locations import A_PARTITION


def garbage_paths(garbage: Any) -> list[str]:
    """The paths a ``Garbage`` (or None) names: its files, then its directories."""
    if not garbage:
        return []
    return [f.path for f in garbage.files] + list(garbage.directories)


def check_table_files(ms: Any, tr: Transaction, tn: TableName, location: str, files: Iterable[Any] | None,
                      garbage: Any = None) -> None:
    """An unpartitioned table's write: ``files`` (DataFile) and ``garbage`` under ``location``."""
    if not ms.caller().authorization:
        return
    ms._check_registered(tr, tn, [location], [f.path for f in files or ()])
    ms._check_registered(tr, tn, [location], garbage_paths(garbage), what="file let go")


def check_partitions(ms: Any, tr: Transaction, tn: TableName, location: str,
                     placed: Sequence[tuple[rec.Partition, rec.Partition | None]], garbage: Any = None,
                     released: Iterable[rec.Partition] = (), *, placement_checked: bool = False) -> None:
    """A partitioned table's write: each new partition record of ``placed`` (with the one it replaces, or
    None) at its location, its files under the table's ``location`` or its own; ``garbage`` under the table's
    or one of the partitions' (``released``: the partitions it drops). A location outside the table's that
    the partition did not have before is a placement (:meth:`LocationOps.check_placement`), unless
    ``placement_checked`` (``add_partitions`` checked it before its transaction)."""
    if not ms.caller().authorization:
        return
    root = normalized(location) if location else ""
    prefix = root.rstrip("/") + "/" if root else None
    inner: list[str] = []  # files of partitions inside the table's location: one check against it
    roots = [location]
    for r, old in placed:
        if not r.location or (prefix is not None and normalized(r.location).startswith(prefix)
                              and not dotted(r.location)):
            inner.extend(f.path for f in r.data_files)
            continue
        if not placement_checked and (old is None or normalized(old.location) != normalized(r.location)):
            ms._check_placement(tr, r.location, tn, own=root or None, what=A_PARTITION)
        roots.append(r.location)
        ms._check_registered(tr, tn, [location, r.location], [f.path for f in r.data_files])
    ms._check_registered(tr, tn, [location], inner)
    if garbage:
        roots.extend(old.location for _, old in placed if old is not None and old.location)
        roots.extend(p.location for p in released if p.location)
        ms._check_registered(tr, tn, roots, garbage_paths(garbage), what="file let go")


def check_before_chunks(ms: Any, tn: TableName, items: Sequence[Any], garbage: Any = None, *,
                        placement_checked: bool = False) -> None:
    """:func:`check_partitions` of a write that goes in chunks (``items``: model ``Partition`` inputs), in a
    transaction of its own before anything is staged."""
    if not ms.caller().authorization:
        return

    def fn(tr: Transaction) -> None:
        t = ms.resolver.table(tr, tn)
        scheme = ms.resolver.scheme(tr, t)
        storage = t.store("TableStorage").load(tr, ())
        location = storage.location if storage is not None else ""
        store = t.partitions(scheme) if scheme else None
        placed: list[tuple[rec.Partition, rec.Partition | None]] = []
        released: list[rec.Partition] = []
        for p in items:
            r = rec.Partition(location=p.location or "")
            r.data_files.extend(rec.DataFile(path=f.path) for f in p.data_files or ())
            old = None
            if p.location and store is not None and outside([p.location], [location]):
                old = store.load(tr, scheme.key(p.values))
                if old is not None:
                    released.append(old)
            placed.append((r, old))
        check_partitions(ms, tr, tn, location, placed, garbage, released, placement_checked=placement_checked)

    with requiring(Requirement(ANYONE, PROJECT)):
        ms.run(fn)


def check_planned(ms: Any, tn: TableName, location: str, items: Sequence[Any]) -> None:
    """A staged CTAS / RTAS that goes in chunks: its partitions (model ``Partition``) under the new table's
    ``location`` (checked for placement before), in a transaction of its own."""
    if not ms.caller().authorization:
        return

    paths = [p.location for p in items if p.location] + [f.path for p in items for f in p.data_files or ()]

    def fn(tr: Transaction) -> None:
        ms._check_registered(tr, tn, [location], paths)

    with requiring(Requirement(ANYONE, PROJECT)):
        ms.run(fn)


__all__ = ["check_before_chunks", "check_partitions", "check_planned", "check_table_files", "garbage_paths"]
