"""The streaming progress a commit records (``ushas_catalog.changes.streams``), through the Python API:
a micro-batch commits once per (query id, batch id), in the commit's own transaction; bad ids are refused
before anything is written; purge removes a table's progress."""
from __future__ import annotations

from typing import Any

import pytest

from ushas_catalog.errors import InvalidArgument, WriteConflict
from ushas_catalog.metastore import Metastore


@pytest.fixture
def ms(store_uri: str) -> Any:
    m = Metastore.open(store_uri, project="p")
    m.create_catalog("c")
    m.create_database("c.d")
    m.create_table("c.d.t", "a INT")
    yield m
    m.close()


def append(ms: Any, query: Any, batch: Any) -> int:
    return ms.write_table_files("c.d.t", [], "APPEND", detail={"query_id": query, "batch_id": batch})


def test_each_batch_commits_once_and_in_order(ms: Any) -> None:
    v0 = append(ms, "q1", 0)
    append(ms, "q1", 1)
    append(ms, "q2", 0)  # another query: its own sequence
    version = ms.get_table("c.d.t").version
    for batch in (1, 0):
        with pytest.raises(WriteConflict, match=f"micro-batch {batch} of streaming query q1 .* already committed batch 1"):
            append(ms, "q1", batch)
    assert ms.get_table("c.d.t").version == version  # refused whole: no commit, no history entry
    progress = {p.query_id: p for p in ms.streams("c.d.t")}
    assert (progress["q1"].last_batch, progress["q1"].batches, progress["q1"].version) == (1, 2, v0 + 1)
    assert (progress["q2"].last_batch, progress["q2"].batches) == (0, 1)
    append(ms, "q1", 5)  # a later batch (Spark's ids may skip after a restart with no data)
    assert {p.query_id: p.last_batch for p in ms.streams("c.d.t")} == {"q1": 5, "q2": 0}


@pytest.mark.parametrize("query, batch, message", [
    ("", 0, "invalid streaming query id"),
    ("q\n", 0, "invalid streaming query id"),
    ("x" * 201, 0, "invalid streaming query id"),
    (7, 0, "invalid streaming query id"),
    ("q", -1, "invalid micro-batch id"),
    ("q", "1", "invalid micro-batch id"),
    ("q", True, "invalid micro-batch id"),
    ("q", None, "invalid micro-batch id"),
])
def test_bad_ids_are_refused_and_nothing_is_written(ms: Any, query: Any, batch: Any, message: str) -> None:
    version = ms.get_table("c.d.t").version
    with pytest.raises(InvalidArgument, match=message):
        append(ms, query, batch)
    assert ms.get_table("c.d.t").version == version and ms.streams("c.d.t") == []


def test_purge_removes_the_progress_of_the_table(ms: Any) -> None:
    from ushas_catalog.changes.streams import list_progress

    def everything() -> list[tuple[str, str]]:
        return sorted((p.table_id, p.query_id) for p in ms.run(lambda tr: list_progress(tr, ms.project_path)))

    append(ms, "q1", 0)
    old = ms.get_table("c.d.t").id
    ms.drop_table("c.d.t")
    ms.create_table("c.d.t", "a INT")  # a new table of the same name: its own progress
    assert ms.streams("c.d.t") == []
    append(ms, "q1", 0)
    new = ms.get_table("c.d.t").id
    assert everything() == sorted([(old, "q1"), (new, "q1")])
    assert ms.purge_table("c.d.t") == 1  # the dropped one
    assert everything() == [(new, "q1")]
