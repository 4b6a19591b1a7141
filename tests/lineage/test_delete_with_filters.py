"""The plan of a metadata-only DELETE as the catalog plans it at analysis (``DeleteFromTableWithFilters``: the target
in ``plans["table"]``, the condition as V2 predicates, io.ushas.spark.MetadataOnlyDelete), without Spark: the run is
a ``delete_from``; the table is written (and read, column-level); the WHERE columns are an INDIRECT FILTER; the
table-level fallback of the capture (a plan over budget) still records the write."""
from __future__ import annotations

import json

from lineage.capture_analysis import default_relations
from lineage.model import Dataset
from lineage.plan import parse
from lineage.plan_datasets import relations
from lineage.resolve import resolve
from lineage.run_names import command_of

TABLE = {"table": {"t": "Table", "name": "ushas.l.t"}, "catalog": {"t": "CatalogPlugin", "name": "ushas"},
         "identifier": {"t": "Identifier", "namespace": ["l"], "name": "t"}}
PLAN = {"format": "ushas-plan", "version": 2, "spark": "4.3.0",
        "kinds": ["DataSourceV2Relation", "DeleteFromTableWithFilters"],
        "attrs": [["id", 3, "int"], ["v", 4, "string"], ["dt", 5, "string"], ["d", 6, "date"]],
        "outputs": [[0, 1, 2, 3], []], "exprs": [],
        "nodes": [{"k": 0, "c": [], "o": 0, "a": TABLE},
                  {"k": 1, "c": [], "o": 1, "p": {"table": 0},
                   "a": {"condition": [{"t": "Predicate", "sql": "dt = 'y'", "columns": ["dt"]},
                                       {"t": "Predicate", "sql": "d IS NOT NULL", "columns": ["D"]}]}}],
        "root": 1}


def test_a_metadata_only_delete_plan_is_a_delete_of_its_table() -> None:
    doc = parse(json.dumps(PLAN))
    t = Dataset.table("ushas", "l", "t")
    assert command_of(doc.root_node, doc) == "delete_from"
    assert relations(doc) == ((t,), (t,))
    assert default_relations(doc) == ((), (t,))
    text = str(resolve(doc))
    assert text.startswith("DeleteFromTable -> ushas.l.t"), text
    assert "FILTER DeleteFromTableWithFilters ( dt = 'y', d IS NOT NULL )" in text, text
    assert "+- dt" in text and "+- d\n" in text + "\n", text
