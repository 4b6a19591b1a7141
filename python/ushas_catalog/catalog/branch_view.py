"""Branches at the key level: what the catalog (``main``) keeps for its branches, and the transaction a
branch reads and writes through. docs/branches.md has the design; in short:

- A branch of catalog C is a record (``Branch``) with a *branch point*: a number of C's
  ``BranchPoints`` counter, bumped by every create. Nothing else is written: creating a branch is
  O(1) keys, whatever the catalog holds.
- While C has live branches, every write of ``main`` to a key below C first keeps the key's value
  as it was at the latest branch point (``BranchUndo``: (key, point) -> value, or (key, point, None):
  the key did not exist), once per key and point (:class:`KeepingTransaction`, the transaction
  every metastore's ``run`` gets).
- A branch reads a key below C from its own overlay (``BranchOverlay``: (key,) -> value, (key, None):
  removed in the branch), else from ``main`` as of its branch point: the first kept value of the
  key at a point at or after the branch's, else the key's current value
  (:class:`BranchTransaction`; ranges merge the three sorted streams lazily).
- A branch writes only its overlay (copy-on-write per key: what it does not change, it keeps
  reading from ``main``). Keys outside the catalog it may write are the data garbage its writes
  leave (kept in the overlay until merged; a staged write's files, recorded before it touches an
  object, and removals of garbage records go to the project as on main) and the project's
  lineage / usage / fenced-write outcomes; anything else is
  :class:`~ushas_catalog.errors.BranchUnsupported`.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar

import fdb.tuple as fdbtuple

from ..errors import BranchUnsupported, NoSuchBranch
from ..keyspace.layout import (BRANCH, BRANCH_POINTS, CATALOG, DATA_GARBAGE,
                               DATA_LINEAGE, USAGE_PROFILE, WRITE_OUTCOME, Layout)
from ..kv.base import Database, KeyValue, Transaction
from ..records.branch_pb2 import BranchPoints, BranchState, SubBranchRecord
from ..records.names_pb2 import ObjectName
from ..records.store import RecordStore

T = TypeVar("T")

#: the branch of a catalog that is the catalog itself
MAIN = "main"
_NO: Any = object()
#: the subspaces below a catalog that hold the branches themselves (never kept, never branched)
_MACHINERY = tuple(fdbtuple.pack((code,)) for code in ("Cb", "Cbp", "Cbu", "Cbo"))
#: an overlay key of a data garbage record: b"\xff" + the key below the project (never a catalog key)
GARBAGE_MARK = b"\xff"


class Keys:
    """Which catalog a key is below, and the keys of a catalog's branch subspaces."""

    def __init__(self, layout: Layout, project: str) -> None:
        self.layout = layout
        self.project = project
        self.project_key = layout.project(project).key()
        self.catalogs = layout.project(project).add(CATALOG).key()
        self.garbage = layout.project(project).add(DATA_GARBAGE).key()
        self.passing = tuple(layout.project(project).add(s).key()
                             for s in (DATA_LINEAGE, USAGE_PROFILE, WRITE_OUTCOME))

    def catalog_of(self, key: bytes) -> bytes | None:
        """The key of the catalog (``.../Catalog/<uuid>``) whose subtree holds ``key``, if any."""
        n = len(self.catalogs)
        if len(key) > n + 17 and key[n] == 0x30 and key.startswith(self.catalogs):
            return key[:n + 17]
        return None

    def path(self, catalog_key: bytes) -> Any:
        return self.layout.catalog(self.project, uuid.UUID(bytes=catalog_key[len(self.catalogs) + 1:]))

    @staticmethod
    def machinery(rel: bytes) -> bool:
        return rel.startswith(_MACHINERY)

    @staticmethod
    def undo(catalog_key: bytes) -> bytes:
        return catalog_key + fdbtuple.pack(("Cbu",))

    @staticmethod
    def overlay(catalog_key: bytes, branch_id: uuid.UUID) -> bytes:
        return catalog_key + fdbtuple.pack(("Cbo", branch_id))


def points(tr: Transaction, catalog_path: Any) -> BranchPoints:
    return RecordStore.of(catalog_path, BRANCH_POINTS).load(tr, ()) or BranchPoints()


def branch_record(tr: Transaction, catalog_path: Any, name: str) -> SubBranchRecord | None:
    found = RecordStore.of(catalog_path, BRANCH).load(tr, (name,))
    return found if found is not None and found.state == BranchState.BRANCH_ACTIVE else None


# ---- kept values of main, read as of a branch point ------------------------------------------
def _first(rows: Iterable[KeyValue]) -> KeyValue | None:
    for kv in rows:
        return kv
    return None


def kept_value(tr: Transaction, undo: bytes, rel: bytes, point: int, *, snapshot: bool = False) -> Any:
    """The value ``main`` kept of key ``rel`` at a point >= ``point`` (None: the key did not exist);
    ``_NO``: nothing kept (the key is as it was)."""
    begin = undo + fdbtuple.pack((rel, point))
    kv = _first(tr.get_range(begin, undo + fdbtuple.pack((rel,)) + b"\xff", limit=1, snapshot=snapshot))
    if kv is None:
        return _NO
    return None if len(fdbtuple.unpack(kv.key[len(undo):])) == 3 else kv.value


def value_at(tr: Transaction, catalog_key: bytes, rel: bytes, point: int, *, snapshot: bool = False) -> bytes | None:
    """Key ``catalog_key + rel`` of ``main`` as it was at branch point ``point``."""
    kept = kept_value(tr, Keys.undo(catalog_key), rel, point, snapshot=snapshot)
    return tr.get(catalog_key + rel, snapshot=snapshot) if kept is _NO else kept


def _merge(a: Iterator[tuple[bytes, Any]], b: Iterator[tuple[bytes, Any]],
           reverse: bool) -> Iterator[tuple[bytes, Any, Any]]:
    """Two streams sorted by key (the same direction) -> (key, value in a or _NO, value in b or _NO)."""
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and ((x[0] > y[0]) if reverse else (x[0] < y[0]))):
            assert x is not None
            yield x[0], x[1], _NO
            x = next(a, None)
        elif x is None or x[0] != y[0]:
            yield y[0], _NO, y[1]
            y = next(b, None)
        else:
            yield x[0], x[1], y[1]
            x, y = next(a, None), next(b, None)


def _kept_stream(tr: Transaction, undo: bytes, b_rel: bytes, e_rel: bytes, point: int, reverse: bool,
                 snapshot: bool) -> Iterator[tuple[bytes, Any]]:
    """(key, kept value or None) of every key in [b_rel, e_rel) with a value kept at a point >= ``point``."""
    group: bytes | None = None
    chosen: Any = _NO
    rows = tr.get_range(undo + fdbtuple.pack((b_rel,)), undo + fdbtuple.pack((e_rel,)), reverse=reverse,
                        snapshot=snapshot)
    for kv in rows:
        t = fdbtuple.unpack(kv.key[len(undo):])
        rel, at = t[0], t[1]
        if rel != group:
            if group is not None and chosen is not _NO:
                yield group, chosen
            group, chosen = rel, _NO
        if at >= point and (reverse or chosen is _NO):  # the smallest point >= the branch's wins
            chosen = None if len(t) == 3 else kv.value
    if group is not None and chosen is not _NO:
        yield group, chosen


def main_range_at(tr: Transaction, catalog_key: bytes, b_rel: bytes, e_rel: bytes, point: int, reverse: bool,
                  snapshot: bool) -> Iterator[tuple[bytes, bytes]]:
    """(key below the catalog, value) of ``main`` in [b_rel, e_rel) as at branch point ``point``, in order."""
    n = len(catalog_key)
    current = ((kv.key[n:], kv.value) for kv in tr.get_range(catalog_key + b_rel, catalog_key + e_rel,
                                                              reverse=reverse, snapshot=snapshot)
               if not Keys.machinery(kv.key[n:]))
    kept = _kept_stream(tr, Keys.undo(catalog_key), b_rel, e_rel, point, reverse, snapshot)
    for rel, now, then in _merge(current, kept, reverse):
        value = now if then is _NO else then
        if value is not None and value is not _NO:
            yield rel, value


# ---- main: keep what branches read ----------------------------------------------------------
class KeepingTransaction:
    """``main``'s transaction: before a write to a key of a catalog with live branches, keeps the key's
    value at the latest branch point (once per key and point). Reads pass through."""

    def __init__(self, tr: Transaction, keys: Keys) -> None:
        self._tr = tr
        self._keys = keys
        self._points: dict[bytes, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tr, name)

    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        return self._tr.get(key, snapshot=snapshot)

    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[KeyValue]:
        return self._tr.get_range(begin, end, limit=limit, reverse=reverse, snapshot=snapshot)

    def get_range_startswith(self, prefix: bytes, *, limit: int = 0, reverse: bool = False,
                             snapshot: bool = False) -> Iterator[KeyValue]:
        return self._tr.get_range(prefix, prefix + b"\xff", limit=limit, reverse=reverse, snapshot=snapshot)

    def _point(self, cat: bytes) -> int:
        found = self._points.get(cat)
        if found is None:
            p = points(self._tr, self._keys.path(cat))
            found = self._points[cat] = p.current if p.live > 0 else 0
        return found

    def _keep(self, key: bytes) -> None:
        cat = self._keys.catalog_of(key)
        if cat is None:
            return
        rel = key[len(cat):]
        if Keys.machinery(rel):
            self._points.pop(cat, None)  # a branch was made, dropped or merged in this transaction
            return
        point = self._point(cat)
        if not point:
            return
        undo = Keys.undo(cat)
        if _first(self._tr.get_range(undo + fdbtuple.pack((rel, point)), undo + fdbtuple.pack((rel, point + 1)),
                                     limit=1)) is not None:
            return
        old = self._tr.get(key)
        if old is None:
            self._tr.set(undo + fdbtuple.pack((rel, point, None)), b"")
        else:
            self._tr.set(undo + fdbtuple.pack((rel, point)), old)

    def set(self, key: bytes, value: bytes) -> None:
        self._keep(key)
        self._tr.set(key, value)

    def set_many(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        for key, value in pairs:
            self.set(key, value)

    def clear(self, key: bytes) -> None:
        self._keep(key)
        self._tr.clear(key)

    def add(self, key: bytes, delta: int) -> None:
        self._keep(key)
        self._tr.add(key, delta)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        cat = self._keys.catalog_of(begin)
        if cat is not None and end <= cat + b"\xff" and not Keys.machinery(begin[len(cat):]) \
                and self._point(cat):
            for kv in list(self._tr.get_range(begin, end)):
                self._keep(kv.key)
        self._tr.clear_range(begin, end)

    def clear_range_startswith(self, prefix: bytes) -> None:
        self.clear_range(prefix, prefix + b"\xff")


class KeepingDatabase:
    """A store whose every transaction is a :class:`KeepingTransaction` (what a metastore's ``db`` is)."""

    #: a metastore wraps its store in this only once (a branch's store is never wrapped)
    branching = True

    def __init__(self, db: Database, layout: Layout, project: str) -> None:
        object.__setattr__(self, "inner", db)
        object.__setattr__(self, "keys", Keys(layout, project))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        """What this wrapper defines (``run``, ``close``) is set on it; anything else (the store's settings,
        a spy on ``create_transaction``) on the store it wraps."""
        if hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self.__dict__:
            object.__delattr__(self, name)
        else:
            delattr(self.inner, name)

    def run(self, fn: Callable[[Any], T]) -> T:
        return self.inner.run(lambda tr: fn(KeepingTransaction(tr, self.keys)))

    def close(self) -> None:
        self.inner.close()


# ---- a branch: its overlay over main as of its branch point -----------------------------------
@dataclass(frozen=True)
class Opened:
    """A branch as one transaction reads it: its catalog's key, overlay, undo prefix and branch point."""

    catalog: bytes
    overlay: bytes
    undo: bytes
    point: int


class BranchTransaction:
    """A transaction of branch ``name``: see the module docstring."""

    def __init__(self, tr: Transaction, keys: Keys, name: str) -> None:
        self._tr = tr
        self._keys = keys
        self._name = name
        self._open: dict[bytes, Opened] = {}
        self._last: Opened | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tr, name)

    def opened(self, cat: bytes) -> Opened:
        found = self._open.get(cat)
        if found is None:
            path = self._keys.path(cat)
            record = branch_record(self._tr, path, self._name)
            if record is None:
                raise NoSuchBranch(f"catalog {catalog_name(self._tr, self._keys, cat)} has no branch {self._name!r}",
                                   branch=self._name)
            found = self._open[cat] = Opened(cat, Keys.overlay(cat, uuid.UUID(bytes=record.id)), Keys.undo(cat),
                                             record.branch_point)
        self._last = found
        return found

    def _split(self, key: bytes) -> tuple[Opened, bytes] | None:
        cat = self._keys.catalog_of(key)
        if cat is None:
            return None
        rel = key[len(cat):]
        if Keys.machinery(rel):
            return None
        return self.opened(cat), rel

    # reads
    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        split = self._split(key)
        if split is None:
            return self._tr.get(key, snapshot=snapshot)
        o, rel = split
        mine = _first(self._tr.get_range(o.overlay + fdbtuple.pack((rel,)), o.overlay + fdbtuple.pack((rel,)) + b"\xff",
                                         limit=1, snapshot=snapshot))
        if mine is not None:
            return None if len(fdbtuple.unpack(mine.key[len(o.overlay):])) == 2 else mine.value
        return value_at(self._tr, o.catalog, rel, o.point, snapshot=snapshot)

    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[KeyValue]:
        cat = self._keys.catalog_of(begin) or self._keys.catalog_of(end)
        if cat is None or not (cat <= begin and end <= cat + b"\xff"):
            return self._tr.get_range(begin, end, limit=limit, reverse=reverse, snapshot=snapshot)
        return self._branch_range(self.opened(cat), begin[len(cat):], end[len(cat):], limit, reverse, snapshot)

    def _branch_range(self, o: Opened, b_rel: bytes, e_rel: bytes, limit: int, reverse: bool,
                      snapshot: bool) -> Iterator[KeyValue]:
        parent = main_range_at(self._tr, o.catalog, b_rel, e_rel, o.point, reverse, snapshot)
        n = len(o.overlay)
        mine = ((t[0], None if len(t) == 2 else kv.value)
                for kv in self._tr.get_range(o.overlay + fdbtuple.pack((b_rel,)), o.overlay + fdbtuple.pack((e_rel,)),
                                             reverse=reverse, snapshot=snapshot)
                for t in (fdbtuple.unpack(kv.key[n:]),))
        count = 0
        for rel, then, own in _merge(parent, mine, reverse):
            value = then if own is _NO else own
            if value is None:
                continue
            yield KeyValue(o.catalog + rel, value)
            count += 1
            if limit and count >= limit:
                return

    def get_range_startswith(self, prefix: bytes, *, limit: int = 0, reverse: bool = False,
                             snapshot: bool = False) -> Iterator[KeyValue]:
        return self.get_range(prefix, prefix + b"\xff", limit=limit, reverse=reverse, snapshot=snapshot)

    # writes
    def _refuse(self, key: bytes, what: str) -> BranchUnsupported:
        area = "the catalog names (create, drop or rename catalogs on main)" if key.startswith(self._keys.catalogs) \
            else "project-wide state (metadata, grants, shares, hooks, pending work)"
        return BranchUnsupported(f"branch {self._name!r} cannot {what} {area}: a branch changes only its catalog's "
                                 f"objects; nothing was written", branch=self._name)

    def _own(self, o: Opened, rel: bytes, value: bytes | None) -> None:
        k = o.overlay + fdbtuple.pack((rel,))
        if value is None:
            self._tr.clear(k)
            self._tr.set(o.overlay + fdbtuple.pack((rel, None)), b"")
        else:
            self._tr.clear(o.overlay + fdbtuple.pack((rel, None)))
            self._tr.set(k, value)

    def set(self, key: bytes, value: bytes) -> None:
        split = self._split(key)
        if split is not None:
            self._own(split[0], split[1], value)
        elif key.startswith(self._keys.garbage) and self._last is not None:  # files a change of the branch let go
            self._own(self._last, GARBAGE_MARK + key[len(self._keys.project_key):], value)
        elif key.startswith(self._keys.garbage):  # a staged write's files, before any object is touched
            self._tr.set(key, value)
        elif key.startswith(self._keys.passing):
            self._tr.set(key, value)
        else:
            raise self._refuse(key, "write")

    def set_many(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        for key, value in pairs:
            self.set(key, value)

    def clear(self, key: bytes) -> None:
        split = self._split(key)
        if split is not None:
            self._own(split[0], split[1], None)
        elif key.startswith(self._keys.passing + (self._keys.garbage,)):
            self._tr.clear(key)
        else:
            raise self._refuse(key, "remove")

    def clear_range(self, begin: bytes, end: bytes) -> None:
        cat = self._keys.catalog_of(begin)
        if cat is not None and end <= cat + b"\xff" and not Keys.machinery(begin[len(cat):]):
            o = self.opened(cat)
            b_rel, e_rel = begin[len(cat):], end[len(cat):]
            gone = [kv.key[len(cat):] for kv in self._branch_range(o, b_rel, e_rel, 0, False, False)]
            self._tr.clear_range(o.overlay + fdbtuple.pack((b_rel,)), o.overlay + fdbtuple.pack((e_rel,)))
            for rel in gone:
                self._tr.set(o.overlay + fdbtuple.pack((rel, None)), b"")
        elif begin.startswith(self._keys.passing + (self._keys.garbage,)):
            self._tr.clear_range(begin, end)
        else:
            raise self._refuse(begin, "clear")

    def clear_range_startswith(self, prefix: bytes) -> None:
        self.clear_range(prefix, prefix + b"\xff")

    def add(self, key: bytes, delta: int) -> None:
        if not key.startswith(self._keys.passing):
            raise self._refuse(key, "add to")
        self._tr.add(key, delta)

    def set_versionstamped_key(self, key: bytes, value: bytes) -> None:
        if not key.startswith(self._keys.passing):
            raise self._refuse(key, "log to")
        self._tr.set_versionstamped_key(key, value)


class BranchDatabase:
    """The store as branch ``name`` sees it: each transaction a :class:`BranchTransaction`."""

    branching = True

    def __init__(self, db: Any, layout: Layout, project: str, name: str) -> None:
        self.inner = getattr(db, "inner", db)  # the raw store: a branch keeps nothing for other branches
        self.keys = Keys(layout, project)
        self.branch = name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, fn: Callable[[Any], T]) -> T:
        return self.inner.run(lambda tr: fn(BranchTransaction(tr, self.keys, self.branch)))

    def close(self) -> None:
        pass  # the metastore the branch was opened from owns the store


def catalog_name(tr: Transaction, keys: Keys, cat: bytes) -> str:
    """The name of the catalog whose key is ``cat`` (its id if it has no live name)."""
    cid = cat[len(keys.catalogs) + 1:]
    names = keys.catalogs + fdbtuple.pack(("n",))
    for kv in tr.get_range(names, names + b"\xff"):
        if ObjectName.FromString(kv.value).id == cid:
            return str(fdbtuple.unpack(kv.key[len(keys.catalogs):])[1])
    return str(uuid.UUID(bytes=cid))


def main_transaction(tr: Any) -> Any:
    """The transaction of ``main`` under branch transaction ``tr`` (its current keys, not as of the branch
    point), or None when ``tr`` is not a branch's: what a branch reads the catalog's current row filters and
    column masks through (docs/governance.md, "Branches")."""
    return tr._tr if isinstance(tr, BranchTransaction) else None


__all__ = ["main_transaction", "MAIN", "GARBAGE_MARK", "Keys", "KeepingTransaction", "KeepingDatabase", "BranchTransaction",
           "BranchDatabase", "Opened", "points", "branch_record", "kept_value", "value_at", "main_range_at",
           "catalog_name"]
