"""Branches of a catalog (:mod:`ushas_catalog.catalog.branches`) as procedures: ``create_branch``,
``drop_branch``, ``list_branches``, ``merge_branch``. They run on ``main`` whatever branch the calling
Spark catalog is on; ``catalog`` names a catalog of the project (NULL where optional: this one)."""
from __future__ import annotations

from typing import Any

from .registry import ACTION, DETAIL, OBJECT, Call, Column, Outcome, Param, procedure

CATALOG = Param("catalog", "STRING", "the catalog (this Spark catalog's name means its metastore catalog)")
BRANCH = Param("branch", "STRING", "the branch's name (1 to 64 of a-z, 0-9, _, -)")


def _main(call: Call) -> Any:
    """The metastore on ``main``: branches are made, dropped and merged there."""
    return getattr(call.ms, "parent", None) or call.ms


def _catalog(call: Call) -> str:
    name = call.args.get("catalog")
    if name is None or name in (call.ctx.spark_catalog,):
        return str(call.ctx.catalog)
    return str(name)


@procedure("create_branch", "Branch a catalog: O(1) keys; the branch reads the catalog as of now (or as of "
           "a held branch point) plus its own changes",
           [CATALOG, BRANCH, Param("from_version", "BIGINT", "a branch point a live branch holds (NULL: now)",
                                   "NULL")], [ACTION, OBJECT, DETAIL])
def create_branch(call: Call) -> Outcome:
    fv = call.args.get("from_version")
    info = _main(call).create_branch(_catalog(call), call.required("branch"),
                                     from_version=None if fv is None else int(fv))
    return Outcome([["CREATE BRANCH", f"{info.catalog}@{info.name}", f"from branch point {info.from_version}"]])


@procedure("drop_branch", "Drop a branch and everything it changed", [CATALOG, BRANCH], [ACTION, OBJECT, DETAIL])
def drop_branch(call: Call) -> Outcome:
    catalog, name = _catalog(call), call.required("branch")
    _main(call).drop_branch(catalog, name)
    return Outcome([["DROP BRANCH", f"{catalog}@{name.lower()}", "dropped"]])


@procedure("list_branches", "The live branches of a catalog", [Param("catalog", CATALOG.type, CATALOG.doc, "NULL")],
           [Column("catalog", "STRING"), Column("branch", "STRING"), Column("parent", "STRING"),
            Column("from_version", "BIGINT", "the branch point the branch reads its parent as of"),
            Column("created_by", "STRING"), Column("created_at", "TIMESTAMP"), Column("merges", "BIGINT"),
            Column("changed_keys", "BIGINT", "keys the branch changed since it was made or last merged")])
def list_branches(call: Call) -> Outcome:
    return Outcome([[b.catalog, b.name, b.parent, b.from_version, b.created_by, b.created_at, b.merges,
                     b.changed_keys] for b in _main(call).list_branches(_catalog(call))])


@procedure("merge_branch", "Apply a branch's changes to main in one transaction, or fail naming every "
           "conflicting object (nothing merged)",
           [BRANCH, Param("into", "STRING", "the branch merged into: its parent, main", "'main'"),
            Param("catalog", CATALOG.type, CATALOG.doc, "NULL")], [ACTION, OBJECT, DETAIL])
def merge_branch(call: Call) -> Outcome:
    out = _main(call).merge_branch(_catalog(call), call.required("branch"), into=call.args.get("into") or "main")
    rows = [["MERGE BRANCH", name, f"branch {out['branch']} into {out['into']}"] for name in out["objects"]]
    return Outcome(rows or [["MERGE BRANCH", f"{out['catalog']}@{out['branch']}", "nothing to merge"]])
