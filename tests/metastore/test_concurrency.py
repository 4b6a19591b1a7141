"""Concurrent writers of one table serialize through its TableReference."""
from __future__ import annotations

import multiprocessing as mp

import pytest

from ushas_catalog.metastore import Metastore

T = "main.db.events"
PER_PROCESS = 15


def writer(uri: str, worker: int) -> list[int]:
    ms = Metastore.open(uri, project="acme", user=f"w{worker}")
    try:
        return [ms.add_partitions(T, [{"w": worker, "i": i}]).version for i in range(PER_PROCESS)]  # type: ignore[misc]
    finally:
        ms.close()


@pytest.mark.slow
def test_four_processes_add_partitions_to_one_table(store_uri: str) -> None:
    ms = Metastore.open(store_uri, project="acme")
    ms.create_catalog("main")
    ms.create_database("main.db")
    ms.create_table(T, "x INT, w INT, i INT", partition_by=["w", "i"])
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(writer, [(store_uri, w) for w in range(4)])
    # each writer saw its own versions strictly increasing
    for versions in results:
        assert versions == sorted(versions) and len(set(versions)) == PER_PROCESS
    # every version exactly once across writers: 2 .. 1 + 4 * PER_PROCESS
    all_versions = sorted(v for vs in results for v in vs)
    assert all_versions == list(range(2, 2 + 4 * PER_PROCESS))
    parts = [(p.values["w"], p.values["i"]) for p in ms.list_partitions(T)]
    assert parts == [(w, i) for w in range(4) for i in range(PER_PROCESS)]
    history = ms.history(T)
    assert [h.version for h in history] == list(range(1 + 4 * PER_PROCESS, 0, -1))
    assert {h.user for h in history if h.operation == "ADD PARTITIONS"} == {"w0", "w1", "w2", "w3"}
    assert ms.get_table(T).version == 1 + 4 * PER_PROCESS
    ms.close()
