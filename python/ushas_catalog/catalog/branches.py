"""Branches of a catalog as operations: create, list, drop, merge (each one transaction), and the
metastore a branch is read and written through (:func:`open_branch`). The key-level mechanics
(what ``main`` keeps, the overlay) are :mod:`.branch_view`; docs/branches.md has the design."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import fdb.tuple as fdbtuple

from .. import records as rec
from ..errors import BranchAlreadyExists, BranchConflict, InvalidArgument, NoSuchBranch, NoSuchVersion
from ..keyspace.layout import BRANCH, BRANCH_POINTS, CATALOG_ID, TABLE_PARTITION, TABLE_SCHEMA, Layout
from ..keyspace.tree import KeySpacePath
from ..kv import Transaction
from ..model.names import CatalogName, DatabaseName, NameLike, TableName
from ..model.objects import micros_to_datetime
from ..records.branch_pb2 import BranchPoints, BranchState, SubBranchRecord
from ..records.store import RecordStore
from .base import MetastoreBase
from .branch_view import (GARBAGE_MARK, MAIN, BranchDatabase, Keys, branch_record, main_range_at, points,
                          value_at)
from .commits import Mutation
from .values import now_micros

_BRANCH_NAME = re.compile(r"^[a-z0-9_][a-z0-9_\-]{0,63}$")


def branch_name(value: object) -> str:
    """A branch name: 1 to 64 of ``a-z 0-9 _ -`` (upper case is lowered); ``main`` is the catalog itself."""
    if not isinstance(value, str) or not _BRANCH_NAME.match(value.strip().lower()):
        raise InvalidArgument(f"invalid branch name {value!r}: 1 to 64 characters of a-z, 0-9, _ and -, "
                              f"not starting with -", branch=str(value))
    return value.strip().lower()


@dataclass(frozen=True)
class BranchInfo:
    """A branch as ``list_branches`` shows it."""

    catalog: str
    name: str
    parent: str
    from_version: int
    created_by: str
    created_at: Any
    merges: int
    merged_at: Any
    changed_keys: int


def _info(catalog: str, name: str, r: SubBranchRecord, changed: int) -> BranchInfo:
    return BranchInfo(catalog, name, r.parent, r.branch_point, r.created_by, micros_to_datetime(r.created_at_micros),
                      r.merges, micros_to_datetime(r.merged_at_micros) if r.merged_at_micros else None, changed)


def _overlay_rows(tr: Transaction, cat: bytes, r: SubBranchRecord) -> list[tuple[bytes, bytes | None]]:
    """(key below the catalog, value or None: removed) of every key the branch changed."""
    ov = Keys.overlay(cat, uuid.UUID(bytes=r.id))
    out = []
    for kv in tr.get_range(ov + b"\x00", ov + b"\xff"):
        t = fdbtuple.unpack(kv.key[len(ov):])
        out.append((t[0], None if len(t) == 2 else kv.value))
    return out


def _object_of(rel: bytes) -> tuple[Any, ...]:
    """The object a key below a catalog belongs to: ("catalog",), ("database", id), ("database name", name),
    ("table" | "view" | "function", database id, id), ("relation name" | "function name", database id, name)."""
    try:
        t = fdbtuple.unpack(rel)
    except ValueError:  # pragma: no cover - every key below a catalog is a tuple
        return ("catalog",)
    if len(t) < 2 or t[0] != "D":
        return ("catalog",)
    if t[1] in ("n", "d"):
        return ("database name", t[2])
    did = t[1]
    if len(t) < 4 or t[2] not in ("T", "V", "Fn"):
        return ("database", did)
    kind = {"T": "table", "V": "view", "Fn": "function"}[t[2]]
    if t[3] in ("n", "d"):
        return ("function name" if kind == "function" else "relation name", did, t[4])
    return (kind, did, t[3])


#: code of the ``TablePartition`` subspace below a table id (``keyspace/layout.py``)
_PARTITION_CODE = "Tx"
_Table = tuple[str, Any, Any]  # ("table", database id, table id): a table as :func:`_object_of` names it


def _partitions_touched(rows: list[tuple[bytes, bytes | None]]) -> dict[_Table, set[tuple[Any, ...]]]:
    """The partition keys (values after the subspace code, any record suffix included) the branch changed,
    per table."""
    out: dict[_Table, set[tuple[Any, ...]]] = {}
    for rel, _ in rows:
        if rel.startswith(GARBAGE_MARK):
            continue
        t = fdbtuple.unpack(rel)
        if len(t) > 5 and t[0] == "D" and t[2] == "T" and t[4] == _PARTITION_CODE:
            out.setdefault(("table", t[1], t[3]), set()).add(tuple(t[5:]))
        # other keys of the table (schema, properties) are not partitions
    return out


def _partition_delta(before: set[tuple[Any, ...]], after: set[tuple[Any, ...]]) -> tuple[int, int]:
    """(added, dropped) partitions between two sets of present partitions."""
    return len(after - before), len(before - after)


class BranchOps(MetastoreBase):
    """Branches of a catalog: ``create_branch``, ``list_branches``, ``drop_branch``, ``merge_branch``
    (on ``main``: the metastore opened without a branch) and ``branch(name)``: the metastore of a branch."""

    #: the branch this metastore reads and writes (``main``: the catalogs themselves)
    branch_name: str = MAIN

    def _on_main(self, what: str) -> None:
        if self.branch_name != MAIN:
            raise InvalidArgument(f"{what} runs on main: open the metastore without branch= (this one is on "
                                  f"branch {self.branch_name!r})", branch=self.branch_name)

    def _catalog_key(self, tr: Transaction, catalog: NameLike) -> tuple[str, KeySpacePath, bytes]:
        cn = CatalogName.parse(catalog) if not isinstance(catalog, CatalogName) else catalog
        cat = self.resolver.catalog(tr, cn, load=False)
        return cn.catalog, cat.path, cat.path.key()

    def require_branch(self, catalog: NameLike) -> None:
        """:class:`~ushas_catalog.errors.NoSuchBranch` unless ``catalog`` has this metastore's branch (nothing
        on ``main``): what a call that reads no key of the branch (a path check) asks first, so that a catalog
        on a dropped branch answers nothing, as every other call of it does."""
        if self.branch_name != MAIN:
            self.run(lambda tr: self._branch_of(tr, catalog, self.branch_name))

    def _branch_of(self, tr: Transaction, catalog: NameLike,
                   name: str) -> tuple[str, KeySpacePath, bytes, SubBranchRecord]:
        """``catalog``'s name, path, key and the record of its branch ``name``; :class:`NoSuchBranch` if it has none."""
        cname, path, cat = self._catalog_key(tr, catalog)
        record = branch_record(tr, path, name)
        if record is None:
            raise NoSuchBranch(f"catalog {cname} has no branch {name!r}", branch=name, catalog=cname)
        return cname, path, cat, record

    def create_branch(self, catalog: NameLike, branch: str, from_version: int | None = None) -> BranchInfo:
        """Branch ``branch`` of ``catalog``: reads the catalog as it is now (or as at branch point
        ``from_version``, a point a live branch still holds) plus its own changes. One transaction
        writing two keys, whatever the catalog holds."""
        self._on_main("create_branch")
        name = branch_name(branch)
        if name == MAIN:
            raise BranchAlreadyExists(f"branch {MAIN!r} is the catalog itself", branch=name)

        def fn(tr: Transaction) -> BranchInfo:
            cname, path, _ = self._catalog_key(tr, catalog)
            store = RecordStore.of(path, BRANCH)
            if store.load(tr, (name,)) is not None:
                raise BranchAlreadyExists(f"catalog {cname} has a branch {name!r} already", branch=name,
                                          catalog=cname)
            p = points(tr, path)
            if from_version is None:
                point = p.current + 1
                p.current = point
            else:
                held = sorted({r.record.branch_point for r in store.scan(tr)
                               if r.record.state == BranchState.BRANCH_ACTIVE})
                if isinstance(from_version, bool) or not isinstance(from_version, int) or from_version not in held:
                    raise NoSuchVersion(f"catalog {cname} holds branch points {held or 'none'}: a branch starts "
                                        f"now or at the point of a live branch, not at {from_version!r}",
                                        catalog=cname, branch=name)
                point = from_version
            p.live += 1
            record = SubBranchRecord(id=uuid.uuid4().bytes, parent=MAIN, branch_point=point, created_by=self.user,
                                     created_at_micros=now_micros(), state=BranchState.BRANCH_ACTIVE)
            store.save(tr, (name,), record, new=True)
            RecordStore.of(path, BRANCH_POINTS).save(tr, (), p)
            return _info(cname, name, record, 0)

        return self.run(fn)

    def list_branches(self, catalog: NameLike) -> list[BranchInfo]:
        """The live branches of ``catalog`` (not ``main``), by name, with how many keys each changed."""

        def fn(tr: Transaction) -> list[BranchInfo]:
            cname, path, cat = self._catalog_key(tr, catalog)
            out = []
            for r in RecordStore.of(path, BRANCH).scan(tr):
                if r.record.state != BranchState.BRANCH_ACTIVE:
                    continue
                ov = Keys.overlay(cat, uuid.UUID(bytes=r.record.id))
                changed = sum(1 for _ in tr.get_range(ov + b"\x00", ov + b"\xff"))
                out.append(_info(cname, r.key[0], r.record, changed))
            return out

        return self.run(fn)

    def drop_branch(self, catalog: NameLike, branch: str) -> None:
        """Drop ``branch`` and everything it changed (its data files are left to ``ushas purge`` of main
        only if merged; see docs/branches.md). One transaction: the record, the overlay (one range clear)
        and, when it was the last branch, what main kept for branches (one range clear)."""
        self._on_main("drop_branch")
        name = branch_name(branch)

        def fn(tr: Transaction) -> None:
            cname, path, cat, record = self._branch_of(tr, catalog, name)
            ov = Keys.overlay(cat, uuid.UUID(bytes=record.id))
            tr.clear_range(ov + b"\x00", ov + b"\xff")
            RecordStore.of(path, BRANCH).delete(tr, (name,))
            p = points(tr, path)
            p.live = max(0, p.live - 1)
            if p.live == 0:
                undo = Keys.undo(cat)
                tr.clear_range(undo + b"\x00", undo + b"\xff")
            RecordStore.of(path, BRANCH_POINTS).save(tr, (), p)

        self.run(fn)

    def merge_branch(self, catalog: NameLike, branch: str, into: str = MAIN) -> dict[str, Any]:
        """Apply what ``branch`` changed to ``into`` (its parent, ``main``) in one transaction, when none of
        the objects it changed (nor their databases) changed on main since the branch point; else
        :class:`~ushas_catalog.errors.BranchConflict` naming every conflicting object, and nothing is
        written. Each changed object gets a ``MERGE BRANCH`` commit (a new version, a change feed event);
        the branch then starts again from the merged catalog (a new branch point, an empty overlay)."""
        self._on_main("merge_branch")
        name = branch_name(branch)
        if branch_name(into) != MAIN:
            raise InvalidArgument(f"branch {name!r} merges into its parent {MAIN!r}, not {into!r}", branch=name)

        def fn(tr: Transaction) -> dict[str, Any]:
            cname, path, cat, record = self._branch_of(tr, catalog, name)
            rows = _overlay_rows(tr, cat, record)
            objects: dict[tuple[Any, ...], None] = {}
            conflicts: dict[tuple[Any, ...], None] = {}
            databases: set[Any] = set()
            for rel, _ in rows:
                if rel.startswith(GARBAGE_MARK):
                    continue
                obj = _object_of(rel)
                objects[obj] = None
                if obj[0] not in ("catalog", "database name"):
                    databases.add(obj[1])
                if tr.get(cat + rel) != value_at(tr, cat, rel, record.branch_point):
                    conflicts[obj] = None
            for did in databases:  # an ALTER / DROP of the database on main conflicts with changes in it
                rel = fdbtuple.pack(("D", did, "Dr"))
                if tr.get(cat + rel) != value_at(tr, cat, rel, record.branch_point):
                    conflicts[("database", did)] = None
            if conflicts:
                names = sorted(self._describe(tr, cname, cat, o, record) for o in conflicts)
                raise BranchConflict(f"cannot merge branch {name!r} into {MAIN} of catalog {cname}: "
                                     f"{len(names)} object(s) changed on both since the branch point: "
                                     f"{'; '.join(names)}; nothing was merged", branch=name, catalog=cname,
                                     objects=names)
            project_key = Keys(self.layout, self.project).project_key
            touched = _partitions_touched(rows)
            before = {t: self._present(tr, cat, t, parts) for t, parts in touched.items()}
            for rel, value in rows:
                key = project_key + rel[1:] if rel.startswith(GARBAGE_MARK) else cat + rel
                if value is None:
                    tr.clear(key)
                else:
                    tr.set(key, value)
            counts = {t: _partition_delta(before[t], self._present(tr, cat, t, parts)) for t, parts in touched.items()}
            merged = [self._merge_commit(tr, cname, cat, o, name, counts.get(o)) for o in objects]
            ov = Keys.overlay(cat, uuid.UUID(bytes=record.id))
            tr.clear_range(ov + b"\x00", ov + b"\xff")
            p = points(tr, path)
            p.current += 1
            record.branch_point = p.current
            record.merges += 1
            record.merged_at_micros = now_micros()
            RecordStore.of(path, BRANCH_POINTS).save(tr, (), p)
            RecordStore.of(path, BRANCH).save(tr, (name,), record)
            return {"catalog": cname, "branch": name, "into": MAIN, "keys": len(rows),
                    "objects": sorted(m for m in merged if m)}

        return self.run(fn)

    def _present(self, tr: Transaction, cat: bytes, table: _Table,
                 keys: set[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
        """Which of a table's partitions (each key cut to the table's partition columns) exist on main now."""
        _, did, tid = table
        db_path = Layout.database(self.resolver.catalogs.add(CATALOG_ID, uuid.UUID(bytes=cat[-16:])), did)
        path = Layout.table(db_path, tid)
        schema = RecordStore.of(path, TABLE_SCHEMA).load(tr, ())
        arity = len(schema.partition_columns) if schema is not None else 0
        sub = path.add(TABLE_PARTITION).key()
        out = set()
        for values in {k[:arity] for k in keys if arity and len(k) >= arity}:
            prefix = sub + fdbtuple.pack(values)
            if any(True for _ in tr.get_range(prefix, prefix + b"\xff", limit=1)):
                out.add(values)
        return out

    # ---- naming what a branch changed ------------------------------------------------------
    def _names_at(self, tr: Transaction, cat: bytes, prefix: tuple[Any, ...], oid: Any,
                  point: int | None = None) -> str | None:
        """The name under ``prefix`` (a names subspace below the catalog) whose entry has id ``oid``, on main
        now, else (``point`` given) as at that branch point."""
        b_rel = fdbtuple.pack(prefix)
        sources: list[Any] = [((kv.key[len(cat):], kv.value) for kv in tr.get_range(cat + b_rel, cat + b_rel + b"\xff"))]
        if point is not None:
            sources.append(main_range_at(tr, cat, b_rel, b_rel + b"\xff", point, False, False))
        for rows in sources:
            for rel, value in rows:
                if rec.ObjectName.FromString(value).id == oid.bytes:
                    return str(fdbtuple.unpack(rel)[len(prefix)])
        return None

    def _describe(self, tr: Transaction, cname: str, cat: bytes, obj: tuple[Any, ...], r: SubBranchRecord) -> str:
        kind = obj[0]
        if kind == "catalog":
            return f"catalog {cname}"
        if kind == "database name":
            return f"database name {cname}.{obj[1]}"
        db = self._names_at(tr, cat, ("D", "n"), obj[1], r.branch_point) or str(obj[1])
        if kind == "database":
            return f"database {cname}.{db}"
        if kind.endswith(" name"):
            return f"{kind} {cname}.{db}.{obj[2]}"
        sub = "Fn" if kind == "function" else "T"
        found = self._names_at(tr, cat, ("D", obj[1], sub, "n"), obj[2], r.branch_point)
        return f"{kind} {cname}.{db}.{found or obj[2]}"

    def _merge_commit(self, tr: Transaction, cname: str, cat: bytes, obj: tuple[Any, ...], branch: str,
                      partitions: tuple[int, int] | None = None) -> str:
        """A ``MERGE BRANCH`` commit of a merged table, view or database that still exists (its new version,
        commit record and change feed event, as any commit); returns its name ("" when none). ``partitions``:
        (added, dropped) partitions of a table the merge changed, so the SYSTEM ``partition_count`` follows."""
        kind = obj[0]
        if kind not in ("table", "view", "database"):
            return ""
        db_path = Layout.database(self.resolver.catalogs.add(CATALOG_ID, uuid.UUID(bytes=cat[-16:])), obj[1])
        db_name = self._names_at(tr, cat, ("D", "n"), obj[1])
        if kind == "database":
            head = RecordStore.at(db_path.add("DatabaseRecord")).load(tr, ())
            if head is None or db_name is None:
                return ""
            m = Mutation("database", str(DatabaseName(cname, db_name)), db_path, "MERGE BRANCH", head.version + 1,
                         head, {"branch": branch}, previous_head=rec.DatabaseRecord.FromString(head.SerializeToString()))
            self._commit(tr, m)
            return m.name
        path = (Layout.table if kind == "table" else Layout.view)(db_path, obj[2])
        head = RecordStore.at(path.add("TableReference" if kind == "table" else "ViewRecord")).load(tr, ())
        rel_name = self._names_at(tr, cat, ("D", obj[1], "T", "n"), obj[2])
        if head is None or db_name is None or rel_name is None:
            return ""  # dropped in the branch (or with its database): its keys went as they were
        name = str(TableName(cname, db_name, rel_name))
        if kind == "table":
            detail: dict[str, Any] = {"branch": branch}
            changed: tuple[str, ...] = ("TableSchema", "TableProperties", "TableStorage")
            if partitions is not None:
                detail.update(added=partitions[0], dropped=partitions[1])
                changed += ("TablePartition",)
            m = Mutation("table", name, path, "MERGE BRANCH", head.version + 1, head, detail, changed=changed)
        else:
            m = Mutation("view", name, path, "MERGE BRANCH", head.version + 1, head, {"branch": branch},
                         previous_head=rec.ViewRecord.FromString(head.SerializeToString()))
        self._commit(tr, m)
        return name

    # ---- a branch's metastore --------------------------------------------------------------
    def branch(self, name: str) -> Any:
        """This metastore on branch ``name`` of every catalog it touches (``main``: itself)."""
        return open_branch(self, name)


def open_branch(ms: Any, name: str) -> Any:
    """A metastore (the class of ``ms``) whose calls read and write branch ``name`` of the catalogs they touch
    (a catalog without that branch: :class:`~ushas_catalog.errors.NoSuchBranch`). Its commits keep their
    history and versions in the branch; the change feed, metadata sync and search index follow ``main`` only
    (a merge brings the branch's changes there)."""
    name = branch_name(name)
    if name == MAIN:
        return ms
    view = type(ms)(BranchDatabase(ms.db, ms.layout, ms.project, name), ms.project, layout=ms.layout, user=ms.user,
                    authorization=getattr(ms, "authorization", False))
    view.branch_name = name
    view.big = None  # every operation of a branch in one transaction
    view.index_merge_at = 0
    from .partition_tags import index_commit

    view.hooks.commit[:] = [index_commit]  # the partition tag index lives in the table: kept in the branch
    view.hooks.removal.clear()
    view.hooks.purge.clear()
    view.hooks.after.clear()
    view.parent = ms
    return view


__all__ = ["BranchOps", "BranchInfo", "branch_name", "open_branch", "BranchPoints"]
