"""Names of captured runs, as OpenLineage's Spark integration names jobs:
``<application name>.<command>.<target>`` (``nightly.insert_into.ushas_sales_orders``), and the
statement kind (``INSERT INTO``), from the analyzed plans of the run's executions instead of
Spark's internal function names (``inner data writing for CTAS/RTAS``, ``collectToPython``).

A run that only reads (``collect``, ``show``, ``toPandas``) is a ``query`` of its first input:
``nightly.query.ushas_sales_orders``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .model import Dataset, DatasetKind

#: root plan node kind -> command (snake case, as in the job name)
COMMANDS: Mapping[str, str] = {
    "AppendData": "insert_into",
    "WriteToMicroBatchDataSource": "streaming_write",  # a micro-batch of a streaming query (one run each)
    "InsertIntoHiveTable": "insert_into",
    "InsertIntoDataSourceCommand": "insert_into",
    "OverwriteByExpression": "insert_overwrite",
    "OverwritePartitionsDynamic": "insert_overwrite",
    "InsertIntoDataSourceDirCommand": "insert_overwrite_directory",
    "InsertIntoHiveDirCommand": "insert_overwrite_directory",
    "SaveIntoDataSourceCommand": "save",
    "CreateTableAsSelect": "create_table_as_select",
    "CreateDataSourceTableAsSelectCommand": "create_table_as_select",
    "CreateHiveTableAsSelectCommand": "create_table_as_select",
    "OptimizedCreateHiveTableAsSelectCommand": "create_table_as_select",
    "ReplaceTableAsSelect": "replace_table_as_select",
    "SaveAsV1TableCommand": "create_table_as_select",
    "CreateView": "create_view",
    "CreateViewCommand": "create_view",
    "AlterViewAs": "alter_view",
    "AlterViewAsCommand": "alter_view",
    "MergeIntoTable": "merge_into",
    "DeleteFromTable": "delete_from",
    "DeleteFromTableWithFilters": "delete_from",  # a metadata-only DELETE (io.ushas.spark.MetadataOnlyDelete)
    "UpdateTable": "update",
    "CreateTable": "create_table",
    "CreateDataSourceTableCommand": "create_table",
    "DropTable": "drop_table",
    "DropTableCommand": "drop_table",
    "TruncateTable": "truncate_table",
    "TruncateTableCommand": "truncate_table",
    "TruncatePartition": "truncate_table",
    "RenameTable": "rename_table",
    "AlterTableRenameCommand": "rename_table",
}
#: a command whose name is kept when a nested execution of the same action names another
#: (CTAS = ``create`` + ``inner data writing``: the run is a create_table_as_select)
_RANK = {"create_table_as_select": 3, "replace_table_as_select": 3, "merge_into": 3, "insert_overwrite": 2,
         "insert_overwrite_directory": 2, "create_view": 2, "alter_view": 2, "insert_into": 1, "save": 1,
         "streaming_write": 1}
QUERY = "query"


@dataclass(frozen=True)
class RunName:
    """The job name of a run and its statement kind (``INSERT OVERWRITE``, ``QUERY``...)."""

    job: str
    command: str

    @property
    def kind(self) -> str:
        return self.command.replace("_", " ").upper()


def command_of(root: Any, doc: Any = None) -> str | None:
    """The command of one execution's analyzed plan, from its root node (a ``PlanNode``); ``doc`` (its
    ``PlanDocument``) tells which statement a row-level rewrite (``ReplaceData``) is."""
    kind = root.kind
    if kind in ("ReplaceData", "WriteDelta"):
        return _rewritten_statement(root, doc)
    if kind == "InsertIntoHadoopFsRelationCommand":
        return "insert_overwrite" if root.args.get("mode") == "Overwrite" else "insert_into"
    if kind in COMMANDS:
        return COMMANDS[kind]
    if kind.startswith(("AlterTable", "AddColumns", "DropColumns", "RenameColumn", "AlterColumn",
                        "ReplaceColumns", "SetTableProperties", "UnsetTableProperties")):
        return "alter_table"
    return None


def _rewritten_statement(root: Any, doc: Any) -> str:
    """MERGE (a MergeRows under the write), DELETE (a Filter of the target's rows) or UPDATE (a projection)."""
    node = doc.nodes[root.children[0]] if doc is not None and root.children else None
    while node is not None:
        if node.kind == "MergeRows":
            return "merge_into"
        if node.kind == "Filter":
            return "delete_from"
        if node.kind != "Project" or not node.children:
            break
        node = doc.nodes[node.children[0]]
    return "update"


def best_command(commands: Iterable[str | None]) -> str | None:
    """The command naming an action of several executions (the highest ranked, first wins ties)."""
    best: str | None = None
    for c in commands:
        if c is not None and (best is None or _RANK.get(c, 0) > _RANK.get(best, 0)):
            best = c
    return best


def _part(text: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z_-]+", "_", text)).strip("_")


def dataset_part(ds: Dataset) -> str:
    """A dataset as a job name part: ``ushas_sales_orders``, ``tmp_x_users`` (``file:/tmp/x/users``)."""
    if ds.kind is DatasetKind.PATH:
        _, name = ds.openlineage_name()
        return _part(name)
    return _part(ds.name)


def run_name(application_name: str, command: str | None, writes: Iterable[Dataset],
             reads: Iterable[Dataset]) -> RunName:
    """``<app>.<command>.<target>``: the target is the first written dataset, or for a run that
    only reads (command ``query``) its first input."""
    writes, reads = list(writes), list(reads)
    if command is None:
        command = QUERY if not writes else "write"
    target = writes[0] if writes else reads[0] if reads else None
    app = _part(application_name) or "spark"
    parts = [app, command] + ([dataset_part(target)] if target is not None else [])
    return RunName(".".join(p for p in parts if p), command)


__all__ = ["COMMANDS", "QUERY", "RunName", "best_command", "command_of", "dataset_part", "run_name"]
