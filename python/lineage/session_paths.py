"""``df.lineage()`` with one identity per dataset: a path leaf that lies in the location of a
table of one of the session's ushas catalogs becomes that table (lineage.identity), keeping the
path on the dataset (``Dataset.uri``: the OpenLineage symlink).

The catalogs are read from the session's configuration (``spark.sql.catalog.<name>`` set to
the ushas catalog class, with its ``.uri``, ``.project`` and ``.catalog``); their locations from
the metastore (one scan, reused for :data:`LOCATIONS_TTL_S` seconds). Nothing is looked up when
the lineage has no path leaf.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

from .identity import TableLocations, linked
from .model import ColumnNode, Dataset, DatasetKind, Derivation, IndirectDependency, LineageResult, Step

LOCATIONS_TTL_S = 2.0
_CACHE: dict[tuple[str, str], TableLocations] = {}
_LOCK = threading.Lock()

Finder = Callable[[Dataset], "Dataset | None"]


def path_leaves(result: LineageResult) -> set[Dataset]:
    found: set[Dataset] = set()
    for deriv in result.derivations.values():
        for s in deriv.inputs:
            ds = s.source.dataset
            if ds is not None and ds.kind is DatasetKind.PATH:
                found.add(ds)
    return found


def link_paths(result: LineageResult, find: Finder) -> LineageResult:
    """``result`` with each path leaf ``find`` maps to a table replaced by that table."""
    mapping = {ds: t for ds in path_leaves(result) if (t := find(ds)) is not None}
    if not mapping:
        return result

    def node(n: ColumnNode) -> ColumnNode:
        ds = n.dataset
        return n._replace(dataset=mapping[ds]) if ds is not None and ds in mapping else n

    derivations = {node(n): Derivation(d.operator, d.expression, tuple(Step(node(s.source), s.subtype) for s in d.inputs),
                                       d.expression_kind, d.resolved)
                   for n, d in result.derivations.items()}
    indirect = tuple(IndirectDependency(d.operator, d.subtype, d.expression, tuple(node(s) for s in d.sources),
                                        node(d.scope) if d.scope is not None else None) for d in result.indirect)
    return LineageResult(outputs=tuple(node(c) for c in result.outputs), derivations=derivations, indirect=indirect,
                         unresolved=result.unresolved, target=mapping.get(result.target, result.target)
                         if result.target is not None else None, operation=result.operation,
                         producer=result.producer)


#: the shim's catalog class (``ushas_catalog.spark.options.CATALOG_CLASS``, which sits a layer above
#: lineage; tests/test_architecture.py checks the two agree)
CATALOG_CLASS = "io.ushas.spark.UshasCatalog"


def session_catalogs(spark: Any) -> list[tuple[str, str, str, str]]:
    """(Spark catalog name, store uri, project, metastore catalog) of each ushas catalog of ``spark``."""
    conf: Mapping[str, str]
    try:
        conf = dict(spark.conf.getAll)
    except Exception:  # noqa: BLE001 - older pyspark: the static configuration
        conf = dict(spark.sparkContext.getConf().getAll())
    out = []
    prefix = "spark.sql.catalog."
    for key, value in conf.items():
        name = key[len(prefix):]
        if key.startswith(prefix) and "." not in name and value == CATALOG_CLASS and conf.get(f"{key}.uri"):
            out.append((name, conf[f"{key}.uri"], conf.get(f"{key}.project", "default"), conf.get(f"{key}.catalog", name)))
    return out


def _locations(uri: str, project: str) -> TableLocations:
    key = (uri, project)
    with _LOCK:
        cached = _CACHE.get(key)
    if cached is not None and time.monotonic() - cached.built <= LOCATIONS_TTL_S:
        return cached
    from ushas_catalog.metastore import Metastore

    from .tables import table_locations

    ms = Metastore.open(uri, project=project, create=False)
    try:
        fresh = TableLocations.of(ms.db.run(lambda tr: list(table_locations(ms, tr))))
    finally:
        ms.close()
    with _LOCK:
        _CACHE[key] = fresh
    return fresh


def session_finder(spark: Any) -> Finder:
    catalogs = session_catalogs(spark)

    def find(ds: Dataset) -> Dataset | None:
        for spark_name, uri, project, ms_catalog in catalogs:
            try:
                found = _locations(uri, project).find(ds.uri or "")
            except Exception:  # noqa: BLE001 - an unreachable store leaves the path as it is
                continue
            if found is not None and found.table.catalog == ms_catalog:
                shown = ms_catalog if found.table.kind == "object" else spark_name  # objects: not Spark tables
                return linked(ds, Dataset.table(shown, found.table.database, found.table.table))
        return None

    return find


def link_session_paths(spark: Any, result: LineageResult) -> LineageResult:
    if not path_leaves(result):
        return result
    return link_paths(result, session_finder(spark))
