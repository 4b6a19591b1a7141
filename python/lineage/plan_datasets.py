"""The datasets of a plan: the identity of each relation (a catalog table, a path, an in-query
source) and of each write target, and the (read, written) datasets of a plan without resolving
its columns (table-level capture)."""
from __future__ import annotations

import re
from typing import Any, Mapping

from .identity import canonical_uri
from .model import Dataset
from .plan import PlanDocument, PlanNode
from .resolve_pass import Pass
from .views import VIEW_KINDS, view_definition

WRITE_KINDS = frozenset({
    "InsertIntoHadoopFsRelationCommand", "InsertIntoHiveTable", "InsertIntoDataSourceCommand",
    "InsertIntoDataSourceDirCommand", "InsertIntoHiveDirCommand", "SaveIntoDataSourceCommand",
    "CreateDataSourceTableAsSelectCommand", "CreateHiveTableAsSelectCommand",
    "OptimizedCreateHiveTableAsSelectCommand", "AppendData", "OverwriteByExpression",
    "OverwritePartitionsDynamic", "CreateTableAsSelect", "ReplaceTableAsSelect", "SaveAsV1TableCommand",
    "WriteToMicroBatchDataSource",  # a streaming micro-batch into a V2 table (its `relation`)
    "ReplaceData", "WriteDelta",  # MERGE / UPDATE / DELETE as Spark rewrites them (REWRITE_KINDS)
})
#: MERGE / UPDATE / DELETE rewritten by Spark for a table taking row-level operations (lineage.resolve_row_level)
REWRITE_KINDS = frozenset({"ReplaceData", "WriteDelta"})

# ---- datasets -------------------------------------------------------------------------------
def _table_identifier(t: Mapping[str, Any]) -> Dataset:
    parts = [p for p in (t.get("database"), t.get("table")) if p]
    return Dataset.table(t.get("catalog") or "spark_catalog", *parts)


def catalog_table(t: Mapping[str, Any]) -> Dataset:
    return _table_identifier(t["identifier"])


def v2_table(args: Mapping[str, Any]) -> Dataset | None:
    ident = args.get("identifier")
    cat = args.get("catalog")
    if isinstance(ident, Mapping) and ident.get("t") == "Identifier":
        return Dataset.table(cat["name"] if isinstance(cat, Mapping) else None,
                             *ident.get("namespace", ()), ident["name"])
    table = args.get("table")
    if isinstance(table, Mapping) and table.get("t") == "Table":
        return Dataset.table(cat["name"] if isinstance(cat, Mapping) else None, *table["name"].split("."))
    return None


def relation_dataset(p: Pass, node: PlanNode) -> Dataset | None:
    a = node.args
    if node.kind == "LogicalRelation":
        if isinstance(a.get("catalogTable"), Mapping):
            return catalog_table(a["catalogTable"])
        rel = a.get("relation")
        if isinstance(rel, Mapping) and rel.get("t") == "HadoopFsRelation":
            if a.get("isStreaming") is True and isinstance(rel.get("base_path"), str):
                # a file stream's micro-batch reads that batch's files: the source is the stream's
                # directory (its basePath), as the streaming plan's StreamingRelation names it
                return Dataset.path(canonical_uri(rel["base_path"]))
            return Dataset.path(",".join(rel.get("paths", ())), rel.get("format"))
        if isinstance(rel, Mapping):
            return Dataset.inline(rel.get("class", "BaseRelation"))
        return None
    if node.kind == "HiveTableRelation":
        return catalog_table(a["tableMeta"]) if isinstance(a.get("tableMeta"), Mapping) else None
    if node.kind in ("DataSourceV2Relation", "StreamingDataSourceV2Relation"):
        return v2_table(a)
    if node.kind == "DataSourceV2ScanRelation":
        rel = node.plans.get("relation")
        return p.datasets.get(rel) if rel is not None else None
    if node.kind in ("LocalRelation", "ResolvedInlineTable"):
        return Dataset.inline(f"VALUES@{node.index}")
    if node.kind in ("LogicalRDD", "ExternalRDD"):
        return Dataset.inline(f"{node.kind}@{node.index}")
    if node.kind == "StreamingRelation":  # a V1 streaming source: Spark names a file source by its path
        name = a.get("sourceName") or "stream"
        m = _FILE_SOURCE.fullmatch(name)
        # the path as the user wrote it (/data/in): spelled as a batch read of it is (file:/data/in)
        return Dataset.path(canonical_uri(m.group(1))) if m else Dataset.inline(name)
    if node.kind == "StreamingRelationV2":  # a catalog table, or a source such as rate / kafka
        if isinstance(a.get("identifier"), Mapping):
            return v2_table(a)
        return Dataset.inline(a.get("sourceName") or "stream")
    if node.kind == "Range":
        return Dataset.inline(f"range({a.get('start')}, {a.get('end')}, {a.get('step')})")
    return None


RELATIONS = frozenset({"LogicalRelation", "HiveTableRelation", "DataSourceV2Relation",
                       "StreamingDataSourceV2Relation", "DataSourceV2ScanRelation", "LocalRelation",
                       "ResolvedInlineTable",
                       "Range", "LogicalRDD", "ExternalRDD", "StreamingRelation", "StreamingRelationV2"})
_FILE_SOURCE = re.compile(r"FileSource\[(.+)\]")



def subquery_alias(p: Pass, node: PlanNode) -> None:
    if node.children and node.children[0] in p.datasets:
        p.datasets[node.index] = p.datasets[node.children[0]]
        child = p.doc.nodes[node.children[0]]
        ident = node.args.get("identifier")
        if child.kind == "StreamingRelation" and isinstance(ident, Mapping) and ident.get("qualifier"):
            # spark.readStream.table(t) of a file-based table: Spark scans its files (a path), the
            # alias names the table it reads
            table = Dataset.table(*ident["qualifier"], ident["name"])
            p.datasets[node.index] = p.datasets[child.index] = table
            for a in child.output:
                pending = p.lazy.get(a.expr_id)
                if pending is not None and pending[0] is child:
                    p.lazy[a.expr_id] = (child, table, a.name, table.name)



def write_target(p: Pass, node: PlanNode) -> Dataset | None:
    a = node.args
    for key in ("catalogTable", "table", "tableDesc"):
        v = a.get(key)
        if isinstance(v, Mapping) and v.get("t") == "CatalogTable":
            return catalog_table(v)
    for key in ("table", "logicalRelation", "name", "relation"):
        idx = node.plans.get(key)
        if idx is not None and idx in p.datasets:
            return p.datasets[idx]
    if node.kind in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        # the target is the `name` plan (a ResolvedIdentifier once analyzed): a child in some
        # Spark versions, a non-child plan field in 4.3
        idx = node.plans.get("name", node.children[0] if node.children else None)
        name = p.doc.nodes[idx] if idx is not None else None
        if name is not None and name.kind == "ResolvedIdentifier":
            return v2_table(name.args)
    path = a.get("outputPath")
    if isinstance(path, Mapping):
        fmt = a.get("fileFormat", {}).get("format") if isinstance(a.get("fileFormat"), Mapping) else None
        return Dataset.path(path["path"], fmt)
    storage = a.get("storage")
    if isinstance(storage, Mapping) and storage.get("location"):
        provider = a.get("provider")
        return Dataset.path(storage["location"], provider if isinstance(provider, str) else None)
    options = a.get("options")
    if isinstance(options, Mapping) and options.get("path"):
        ds = a.get("dataSource")
        return Dataset.path(options["path"], ds.get("format") if isinstance(ds, Mapping) else None)
    return None


ROW_LEVEL = frozenset({"MergeIntoTable", "UpdateTable", "DeleteFromTable"})


def relations(doc: PlanDocument) -> tuple[tuple[Dataset, ...], tuple[Dataset, ...]]:
    """(read, written) datasets of a plan without resolving columns (table-level capture): one
    pass over the nodes. Views count as read (with their base tables); the table a V2 write
    appends to is written, not read; a MERGE / UPDATE / DELETE target is both."""
    p = Pass(doc)
    write_tables = {idx for n in doc.nodes if n.kind in WRITE_KINDS
                    for key, idx in n.plans.items() if key in ("table", "logicalRelation")}
    reads: dict[Dataset, None] = {}
    writes: dict[Dataset, None] = {}
    for node in doc.nodes:
        if node.kind in RELATIONS:
            ds = relation_dataset(p, node)
            if ds is not None:
                p.datasets[node.index] = ds
                if node.index not in write_tables:
                    reads.setdefault(ds)
        elif node.kind == "View" and isinstance(node.args.get("desc"), Mapping):
            reads.setdefault(catalog_table(node.args["desc"]))
        elif node.kind == "SubqueryAlias":
            subquery_alias(p, node)
        elif node.kind in WRITE_KINDS:
            target = write_target(p, node)
            if target is not None:
                writes.setdefault(target)
        elif node.kind in VIEW_KINDS:
            target = view_definition(node, doc.nodes)[0]
            if target is not None:
                writes.setdefault(target)
        elif node.kind in ROW_LEVEL and node.children and node.children[0] in p.datasets:
            writes.setdefault(p.datasets[node.children[0]])
        elif node.kind == "DeleteFromTableWithFilters" and node.plans.get("table") in p.datasets:
            writes.setdefault(p.datasets[node.plans["table"]])  # the target is read too (its partitions)
    return tuple(reads), tuple(writes)
