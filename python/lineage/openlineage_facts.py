"""What OpenLineage's dataset facets say of a run, read from its analyzed plans: the schema of
each dataset read or written, a catalog table's storage location (the ``symlinks`` facet: the
path and the table are one dataset), the lifecycle change of a write or a DDL statement
(``CREATE``, ``DROP``, ``OVERWRITE``, ``ALTER``, ``TRUNCATE``, ``RENAME``) and the write's
statistics (rows, bytes, files, from the write's Spark metrics, passed by the listener).

Collected only when the OpenLineage transport is on: one extra pass over the plan's nodes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .model import Dataset

#: command (``lineage.run_names``) -> the lifecycle state change of the written dataset
LIFECYCLE: Mapping[str, str] = {
    "create_table_as_select": "CREATE", "create_table": "CREATE", "replace_table_as_select": "OVERWRITE",
    "insert_overwrite": "OVERWRITE", "insert_overwrite_directory": "OVERWRITE", "drop_table": "DROP",
    "truncate_table": "TRUNCATE", "rename_table": "RENAME", "alter_table": "ALTER", "create_view": "CREATE",
    "alter_view": "ALTER",
}
_QUERY_KEYS = ("query", "child")


@dataclass
class RunFacts:
    """Facet material of one run (filled execution by execution)."""

    schemas: dict[Dataset, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    #: catalog table -> its storage location (a path URI)
    locations: dict[Dataset, str] = field(default_factory=dict)
    #: dataset -> (lifecycle state, the previous dataset of a RENAME or None)
    lifecycle: dict[Dataset, tuple[str, Dataset | None]] = field(default_factory=dict)
    #: the datasets a DDL statement changed (no data read or written, still an output)
    ddl_outputs: list[Dataset] = field(default_factory=list)
    #: rows / bytes / files the write reported
    statistics: dict[str, int] = field(default_factory=dict)

    def add_statistics(self, metrics: Mapping[str, Any] | None) -> None:
        """One execution's write metrics; nested executions of one write report the same rows:
        the largest of each is kept."""
        for key in ("rows", "bytes", "files"):
            value = (metrics or {}).get(key)
            if isinstance(value, (int, float)) and value >= 0:
                self.statistics[key] = max(self.statistics.get(key, 0), int(value))


def _identifier(args: Mapping[str, Any]) -> Dataset | None:
    """A ResolvedIdentifier / ResolvedTable's dataset."""
    ident, cat = args.get("identifier"), args.get("catalog")
    catalog = cat.get("name") if isinstance(cat, Mapping) else None
    if isinstance(ident, Mapping) and ident.get("t") == "Identifier":
        return Dataset.table(catalog, *ident.get("namespace", ()), ident["name"])
    return None


def _table_identifier(t: Any, catalog: str | None = None) -> Dataset | None:
    if not isinstance(t, Mapping) or t.get("t") != "TableIdentifier":
        return None
    parts = [p for p in (t.get("database"), t.get("table")) if p]
    return Dataset.table(t.get("catalog") or catalog or "spark_catalog", *parts)


def collect(doc: Any, command: str | None, facts: RunFacts, relation_dataset: Any) -> tuple[tuple[str, str], ...]:
    """Add the facts of one execution's plan to ``facts``; returns the schema of what its write
    node writes (its query's output, named as written), () when it writes nothing.
    ``relation_dataset(node)``: the resolver's identity of a relation node."""
    written: tuple[tuple[str, str], ...] = ()
    root = doc.root_node
    for node in doc.nodes:
        a = node.args
        if node.kind in ("LogicalRelation", "HiveTableRelation", "DataSourceV2Relation", "DataSourceV2ScanRelation"):
            ds = relation_dataset(node)
            if ds is None:
                continue
            if ds not in facts.schemas and node.output:
                facts.schemas[ds] = tuple((x.name, x.data_type) for x in node.output)
            table = a.get("catalogTable") or a.get("tableMeta")
            if isinstance(table, Mapping) and isinstance(table.get("location"), str):
                facts.locations.setdefault(ds, table["location"])
    if node_is_write(root):
        idx = next((root.plans[k] for k in _QUERY_KEYS if k in root.plans), None)
        if idx is None and root.children:
            idx = root.children[-1]
        if idx is not None:
            out = doc.nodes[idx].output
            names = root.args.get("outputColumnNames")
            if isinstance(names, list) and len(names) == len(out):
                written = tuple((str(n), x.data_type) for n, x in zip(names, out))
            else:
                written = tuple((x.name, x.data_type) for x in out)
    ddl = _ddl_target(doc, root)
    if ddl is not None and command is not None and command in LIFECYCLE:
        target, previous = ddl
        facts.ddl_outputs.append(target)
        facts.lifecycle[target] = (LIFECYCLE[command], previous)
    return written


def node_is_write(node: Any) -> bool:
    from .plan_datasets import WRITE_KINDS

    return node.kind in WRITE_KINDS


def _ddl_target(doc: Any, root: Any) -> tuple[Dataset, Dataset | None] | None:
    """(the dataset a DDL statement changes, its previous name for a RENAME)."""
    a = root.args
    if root.kind in ("DropTable", "TruncateTable", "TruncatePartition", "RenameTable", "CreateTable") \
            or (root.children and doc.nodes[root.children[0]].kind == "ResolvedTable" and not node_is_write(root)):
        child = doc.nodes[root.children[0]] if root.children else None
        if child is None or child.kind not in ("ResolvedIdentifier", "ResolvedTable"):
            return None
        ds = _identifier(child.args)
        if ds is None:
            return None
        if root.kind == "RenameTable" and isinstance(a.get("newName"), list):
            new = [str(x) for x in a["newName"]]
            if len(new) > len(ds.identifier):
                new = new[len(new) - len(ds.identifier):]
            return Dataset.table(ds.catalog, *new), ds
        return ds, None
    if root.kind == "AlterTableRenameCommand":
        old = _table_identifier(a.get("oldName"))
        renamed = _table_identifier(a.get("newName"), old.catalog if old else None)
        return (renamed, old) if renamed is not None else None
    for key in ("tableName", "table"):
        ds = _table_identifier(a.get(key))
        if ds is not None and root.kind.endswith("Command") and not node_is_write(root):
            return ds, None
    return None


__all__ = ["LIFECYCLE", "RunFacts", "collect", "node_is_write"]
