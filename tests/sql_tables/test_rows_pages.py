"""The Python side of the metadata and system tables without Spark: filters, pages and their tokens,
key ranges (ushas_catalog.sql_tables)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.errors import NoSuchTable
from ushas_catalog.kv.read_count import KeyReads
from ushas_catalog.metastore import Metastore
from ushas_catalog.sql_tables.filters import Filters
from ushas_catalog.sql_tables.ops import rows_page, rows_table

CTX = {"uri": "unused", "catalog": "c", "spark_catalog": "c", "warehouse": "/tmp/w"}


@pytest.fixture
def ms(tmp_path: Path) -> Any:
    m = Metastore.open(f"sqlite:///{tmp_path / 'u.db'}", project="default")
    m.create_catalog("c")
    m.create_database("c.d")
    m.create_table("c.d.t", schema="id INT, dt STRING, h INT", partition_by=["dt", "h"], format="parquet")
    m.add_partitions("c.d.t", [{"dt": f"2024-{d:02d}", "h": h} for d in range(1, 13) for h in range(10)])
    yield m
    m.close()


def read_all(ms: Any, namespace: list[str], name: str, filters: list[Any] | None = None,
             columns: list[str] | None = None, page_size: int = 7) -> tuple[list[list[Any]], int]:
    r: dict[str, Any] = {"ctx": CTX, "namespace": namespace, "name": name, "filters": filters or [],
                         "page_size": page_size}
    if columns is not None:
        r["columns"] = columns
    rows, pages = [], 0
    while True:
        answer = json.loads(json.dumps(rows_page(ms, r)))  # as the bridge sends it
        rows += answer["rows"]
        pages += 1
        if answer["token"] is None:
            return rows, pages
        r["token"] = answer["token"]


def test_pages_resume_after_their_token_and_cover_every_row_once(ms: Any) -> None:
    rows, pages = read_all(ms, ["d", "t"], "partitions", columns=["dt", "h"])
    assert rows == [[f"2024-{d:02d}", h] for d in range(1, 13) for h in range(10)]
    assert pages == 120 // 7 + 1


def test_a_partition_filter_reads_its_key_range_only(ms: Any) -> None:
    flt = [{"op": "ge", "column": "dt", "value": "2024-11"}, {"op": "in", "column": "h", "values": [1, 2]}]
    with KeyReads.on(ms.db) as reads:
        rows, _ = read_all(ms, ["d", "t"], "partitions", flt, ["dt", "h", "files"], page_size=100)
    assert rows == [["2024-11", 1, None], ["2024-11", 2, None], ["2024-12", 1, None], ["2024-12", 2, None]]
    # the 20 keys of dt >= 2024-11 (h is filtered on each) and point reads: not the table's 120
    assert reads.keys < 20 + 25, reads


def test_history_version_and_limit(ms: Any) -> None:
    for i in range(4):
        ms.add_partitions("c.d.t", [{"dt": f"2030-{i:02d}", "h": 0}])
    ms.add_partitions("c.d.t", [{"dt": "2025-01", "h": 0}])
    rows, _ = read_all(ms, ["d", "t"], "history", [{"op": "ge", "column": "version", "value": 2}],
                       ["version", "operation"])
    assert [r[0] for r in rows] == list(range(2, rows[-1][0] + 1)) and len(rows) >= 2


def test_unknown_names_are_not_found(ms: Any) -> None:
    with pytest.raises(NoSuchTable, match="no metadata table"):
        rows_table(ms, {"ctx": CTX, "namespace": ["d", "t"], "name": "snapshots"})
    with pytest.raises(NoSuchTable):
        rows_table(ms, {"ctx": CTX, "namespace": ["d", "missing"], "name": "history"})
    with pytest.raises(NoSuchTable, match="system tables are"):
        rows_table(ms, {"ctx": CTX, "namespace": ["system"], "name": "snapshots"})
    schema = json.loads(rows_table(ms, {"ctx": CTX, "namespace": ["d", "t"], "name": "partitions"})["schema"])
    assert [f["name"] for f in schema["fields"]][:3] == ["dt", "h", "location"]
    assert schema["fields"][1]["type"] == "integer"


def test_system_tables_list_and_filter(ms: Any) -> None:
    rows, _ = read_all(ms, ["system"], "tables", [{"op": "eq", "column": "database", "value": "d"}],
                       ["full_name", "partition_columns"])
    assert rows == [["c.d.t", ["dt", "h"]]]
    rows, _ = read_all(ms, ["system"], "partitions", [{"op": "eq", "column": "table", "value": "t"}],
                       ["spec"], page_size=50)
    assert len(rows) == 120 and rows[0] == [{"dt": "2024-01", "h": "0"}]


def test_filters_are_conservative() -> None:
    f = Filters([{"op": "and", "children": [{"op": "gt", "column": "v", "value": 3},
                                             {"op": "lt", "column": "v", "value": 9}]},
                 {"op": "unknown"}, {"op": "ge", "column": "t", "value": {"micros": 10}}])
    assert (f.bounds("v").lo, f.bounds("v").hi) == (4, 8)
    assert f.bounds("t").lo == 10
    keep = f.matcher(["v", "t"])
    assert keep is not None and keep([5, 10]) and not keep([9, 10]) and not keep([5, 9])
    assert keep([None, 10])  # unknown (a null compared): kept, Spark decides
    assert Filters([{"op": "eq", "column": "v", "value": 1}, {"op": "in", "column": "v", "values": [1, 2]}]).equal("v") == [1]
