"""Views in column lineage.

- **A view definition is a write of the view.** ``CREATE [OR REPLACE] VIEW v AS q`` (V2
  ``CreateView``, V1 ``CreateViewCommand`` for a persistent view) and ``ALTER VIEW v AS q``
  (``AlterViewAs``, V1 ``AlterViewAsCommand``) resolve like an INSERT into ``v``: view column <- the columns of ``q``, typed
  edges and expressions. Captured, each is a run writing the view, so the store keeps every
  definition by time (versioned) and upstream / downstream / impact walk through the view.
  The walks use the definition in force: of a view's definitions in the window asked, the
  latest (``lineage.links.ViewVersions``). Temporary views are not datasets: their definitions stay table-level reads, and a query over a
  temporary view sees straight through it, as before.
- **A query reading a persistent view** depends on the view (its columns are a step of the
  plan: the ``View`` node) and on the tables under it: the captured edges name both
  (:func:`view_edges`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .model import Dataset, Edge, LineageResult
from .plan import PlanNode

VIEW_KINDS = frozenset({"CreateView", "AlterViewAs", "CreateViewCommand", "AlterViewAsCommand"})
#: the derivation ``expression_kind`` of a persistent view's column (``TempView`` for temporary ones)
VIEW_COLUMN = "View"
TEMP_VIEW_COLUMN = "TempView"
TEMP_VIEW_TYPES = frozenset({"LocalTempView", "GlobalTempView"})
#: ``Dataset.description`` of a view as its definition writes it: the store keeps, per run, that the
#: run defined the view, so walks use the definition in force (lineage.links.ViewVersions)
VIEW_DESCRIPTION = "view"


def as_view(ds: Dataset | None) -> Dataset | None:
    return ds._replace(description=VIEW_DESCRIPTION) if ds is not None else None


def _identifier(args: Mapping[str, Any]) -> Dataset | None:
    """The view a ``ResolvedIdentifier`` / ``ResolvedPersistentView`` names."""
    ident = args.get("identifier")
    cat = args.get("catalog")
    if isinstance(ident, Mapping) and ident.get("t") == "Identifier":
        return Dataset.table(cat["name"] if isinstance(cat, Mapping) else None,
                             *ident.get("namespace", ()), ident["name"])
    return None


def view_definition(node: PlanNode, nodes: Sequence[PlanNode]) -> tuple[Dataset | None, int | None, list[str] | None]:
    """(view, index of the defining query's plan node, the view's column names when given) of a
    view definition node; the view is None for a temporary view (not a dataset)."""
    a = node.args
    if node.kind in ("CreateViewCommand", "AlterViewAsCommand"):  # session catalog (V1) views
        if node.kind == "CreateViewCommand" and a.get("viewType") != "PersistedView":
            return None, None, None  # temporary (or a shim too old to say): as before
        name = a.get("name")
        if not isinstance(name, Mapping) or not name.get("database"):
            return None, None, None  # ALTER VIEW of a temporary view: its name is not qualified
        target = as_view(Dataset.table(name.get("catalog") or "spark_catalog", name["database"], name["table"]))
        query = node.plans.get("plan", node.plans.get("query"))
    else:
        ident_idx = node.plans.get("child", node.children[0] if node.children else None)
        target = as_view(_identifier(nodes[ident_idx].args)) if ident_idx is not None else None
        query = node.plans.get("query")
    columns = a.get("userSpecifiedColumns")
    names = [str(c) for c in columns] if isinstance(columns, list) and columns else None
    return target, query, names


def has_persistent_views(result: LineageResult) -> bool:
    return any(d.expression_kind == VIEW_COLUMN and d.operator == "View" for d in result.derivations.values())


def view_edges(result: LineageResult) -> tuple[Edge, ...]:
    """The edges of ``result`` with persistent views as leaves: what a query reading a view
    takes from the view's columns (the edges through the view to its tables are
    ``result.edges``)."""
    if not has_persistent_views(result):
        return ()
    cut = {n: d for n, d in result.derivations.items()
           if not (d.expression_kind == VIEW_COLUMN and d.operator == "View" and n.is_dataset_column)}
    stopped = LineageResult(outputs=result.outputs, derivations=cut, indirect=result.indirect,
                            unresolved=result.unresolved, target=result.target, operation=result.operation,
                            producer=result.producer)
    return stopped.edges
