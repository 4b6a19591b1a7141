"""Spark catalogs over a mounted share: which metastore a bridge call runs against, and what a share
catalog refuses.

A Spark catalog instance whose metastore catalog (``spark.sql.catalog.<name>``, or its ``.catalog``
option) is a mount of the project (``ushas shares mount OWNER.SHARE AS <name>``) is served by the
read-only view of :func:`ushas_catalog.catalog.share_view.open_view`: its reads resolve the owner's keys,
filtered by the share, checked in every call's own transaction. :func:`handle` runs one bridge call:

- only the read operations (:data:`READS`) run; any other (DDL, writes, partitions, functions,
  procedures) is :class:`~ushas_catalog.errors.ShareReadOnly` naming the share and the object, before
  anything is read or written;
- a table answer carries ``write_error``: the shim refuses to load it for writing (INSERT, writeTo,
  insertInto) with that error, so no data file of a write is ever staged;
- functions are not shared (``SHOW FUNCTIONS`` lists none, a call is ``NoSuchFunction``);
- the reserved ``system`` namespace (system tables, procedures) is not read through a share: it would
  be the owner's; the recipient reads its own catalogs' system tables.

Whether a catalog is a mount is remembered per opened store and Spark catalog (no extra transaction
per call): a call that meets a mount where a plain catalog was remembered (``ShareCatalog``), or a
mount that changed, is run again once with what the store says now.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

from ..catalog.share_view import mounted, open_view
from ..errors import NoSuchCatalog, NoSuchFunction, NoSuchNamespace, ShareCatalog, ShareReadOnly
from ..governance.shares import ShareRef
from ..model.names import SYSTEM_DATABASE, quote

Handler = Callable[[Any, dict[str, Any]], dict[str, Any]]

#: the operations a share catalog answers: reads only
READS = frozenset({
    "list_namespaces", "namespace_exists", "load_namespace", "load_relation", "load_table", "relation_exists",
    "list_relations", "list_partitions", "partition_exists", "load_partition", "describe", "list_files",
    "table_size", "rows_table", "rows_page", "list_procedures", "load_procedure",
})

#: opened metastore -> catalog name -> the view (None: a plain catalog of the project)
_KNOWN: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()


def handle(opened: Any, op: str, handler: Handler, request: dict[str, Any]) -> dict[str, Any]:
    """``handler(metastore, request)`` against the project's metastore or, for a share catalog, the
    share's read-only view (see the module docstring)."""
    ctx = request.get("ctx") or {}
    catalog = ctx.get("catalog")
    if not isinstance(catalog, str) or not catalog:
        return handler(opened.metastore, request)
    known = _KNOWN.setdefault(opened.metastore, {})
    for attempt in (1, 2):
        view = _known_view(opened, catalog)
        try:
            if view is None:
                return handler(opened.metastore, request)
            return _on_share(view, op, handler, request)
        except ShareCatalog:  # a plain catalog became a mount
            known.pop(catalog, None)
            if attempt == 2:
                raise
        except NoSuchCatalog as e:  # the mount went away or mounts another share now
            if not e.detail.get("share_changed") or attempt == 2:
                raise
            known.pop(catalog, None)
    raise AssertionError("unreachable")


def plain(opened: Any, request: dict[str, Any]) -> bool:
    """Whether the request's catalog is one of the project's own, not a share's mount (what :func:`handle`
    remembers of it, read once per opened store and catalog)."""
    catalog = (request.get("ctx") or {}).get("catalog")
    if not isinstance(catalog, str) or not catalog:
        return True
    return _known_view(opened, catalog) is None


def _known_view(opened: Any, catalog: str) -> Any:
    """The share view ``catalog`` mounts on ``opened``'s store (None: a plain catalog), read once and remembered."""
    known = _KNOWN.setdefault(opened.metastore, {})
    if catalog not in known:
        known[catalog] = _view_of(opened.metastore, catalog)
    return known[catalog]


def _view_of(ms: Any, catalog: str) -> Any:
    ref = ms.db.run(lambda tr: mounted(tr, ms.layout, ms.project, catalog.lower()))  # unchecked: no secret
    return open_view(ms, catalog.lower(), ref) if ref is not None else None


def _on_share(view: Any, op: str, handler: Handler, r: dict[str, Any]) -> dict[str, Any]:
    ref: ShareRef = view.share
    mount = r["ctx"]["catalog"]
    namespace = list(r.get("namespace") or ())
    if op == "open":  # initialize: nothing to create; the share is checked at once
        from .cache import CacheSettings
        from .registry import REGISTRY

        settings = CacheSettings.of(r.get("cache_options"))
        REGISTRY.get(r["ctx"]["uri"], r["ctx"].get("project") or "default").cache(
            r["ctx"].get("spark_catalog") or mount).configure(settings)
        view.list_databases(mount)
        return {"catalog": mount, "cache": settings.to_json()}
    if namespace == [SYSTEM_DATABASE]:
        if op in ("namespace_exists", "list_relations", "list_procedures", "list_functions"):
            return {"exists": False} if op == "namespace_exists" else _empty(op)
        raise NoSuchNamespace(f"{mount}.{SYSTEM_DATABASE}: system tables and procedures are not read through "
                              f"share {ref}; use those of your own catalogs", database=f"{mount}.{SYSTEM_DATABASE}")
    if op in ("list_functions", "load_function", "describe_function"):  # functions are not shared
        if op == "list_functions":
            return _empty(op)
        raise NoSuchFunction(f"function {'.'.join([mount, *namespace, str(r.get('name'))])} does not exist: "
                             f"functions are not shared (share {ref})", function=str(r.get("name")))
    if op not in READS or op == "load_procedure":
        raise refused(ref, mount, op, r)
    answer = handler(view, r)
    if op in ("load_table", "load_relation") and isinstance(answer.get("table"), dict):
        answer["table"]["write_error"] = refused(ref, mount, "write", r).answer()
    if op == "list_namespaces" and not namespace:
        answer["namespaces"] = [n for n in answer.get("namespaces", []) if n != [SYSTEM_DATABASE]]
    return answer


def _empty(op: str) -> dict[str, Any]:
    return {"list_relations": {"relations": []}, "list_procedures": {"procedures": []},
            "list_functions": {"names": [], "functions": []}}[op]


#: what a refused operation was, in words
_VERBS = {"write": "write into", "commit_write": "write into", "commit_files": "write into", "truncate": "truncate",
          "create_table": "create table", "create_table_like": "create table", "stage_table": "create table",
          "alter_table": "alter", "drop_table": "drop", "rename_table": "rename", "create_view": "create view",
          "drop_view": "drop view", "rename_view": "rename view", "create_namespace": "create database",
          "alter_namespace": "alter database", "drop_namespace": "drop database", "add_partitions": "add partitions to",
          "drop_partitions": "drop partitions of", "repair": "repair", "create_function": "create function",
          "drop_function": "drop function", "call_procedure": "call", "load_procedure": "call"}


def refused(ref: ShareRef, mount: str, op: str, r: dict[str, Any]) -> ShareReadOnly:
    """The error of operation ``op`` on a share catalog, naming the share and the object."""
    parts = [mount, *list(r.get("namespace") or ())]
    if r.get("name") is not None:
        parts.append(str(r["name"]))
    if r.get("procedure") is not None:
        parts = [mount, SYSTEM_DATABASE, str(r["procedure"])]
    shown = ".".join(quote(p) for p in parts)
    what = _VERBS.get(op, "change")
    return ShareReadOnly(f"cannot {what} {shown}: catalog {quote(mount)} is share {ref} of project "
                         f"{ref.project!r}, read-only (SELECT only)", share=str(ref), object=shown, operation=op)


__all__ = ["READS", "handle", "plain", "refused"]
