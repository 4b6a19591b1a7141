"""Search-index merges never run on the caller's path when ``index_merges`` is "background" (what the
Spark bridge sets): the call returns while its merge is still running, on another thread, and the
merge then moves every pending entry. The merge is subscribed to the metastore's commit hook."""
from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest

from ushas_catalog.metadata import store as metadata_store
from ushas_catalog.metadata.store import MetadataKeys
from ushas_catalog.metastore import Metastore
from ushas_catalog.spark.registry import Registry


def _pending(ms: Metastore) -> int:
    keys = MetadataKeys(ms.project_path)
    return ms.db.run(lambda tr: sum(1 for _ in tr.get_range(*keys.pending_range())))


@pytest.fixture
def ms(store_uri: str) -> Iterator[Metastore]:
    m = Metastore.open(store_uri, project="acme", user="tester")
    m.index_merge_at = 10**12  # no merge while the fixture's objects are made
    m.create_catalog("main")
    m.create_database("main.db")
    yield m
    m.close()


def test_a_call_returns_before_its_index_merge(ms: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata_store.merge_pending
    release = threading.Event()
    merging: list[int] = []

    def held_merge(tr: Any, keys: MetadataKeys, *args: Any) -> Any:
        merging.append(threading.get_ident())
        release.wait(60)  # a merge on the caller's path would keep create_table from returning
        return real(tr, keys, *args)

    monkeypatch.setattr(metadata_store, "merge_pending", held_merge)
    ms.index_merges = "background"
    ms.index_merge_at = 1  # this create makes a merge due
    ms.create_table("main.db.t1", "customer_id BIGINT")
    returned_while_merge_held = not release.is_set()
    release.set()
    assert ms.wait_for_index(60)
    assert returned_while_merge_held
    assert merging and threading.get_ident() not in merging
    assert _pending(ms) == 0  # the background merge moved every pending object


def test_inline_merges_run_before_the_call_returns(ms: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    merging: list[int] = []
    real = metadata_store.merge_pending
    monkeypatch.setattr(metadata_store, "merge_pending",
                        lambda tr, keys, *a: merging.append(threading.get_ident()) or real(tr, keys, *a))
    ms.index_merge_at = 1
    ms.create_table("main.db.t1", "customer_id BIGINT")
    assert merging and set(merging) == {threading.get_ident()}
    assert _pending(ms) == 0


def test_the_commit_hook_is_per_instance(store_uri: str) -> None:
    a = Metastore.open(store_uri, project="acme")
    b = Metastore.open(store_uri, project="acme")
    try:
        seen: list[str] = []
        a.hooks.on_commit(lambda tr, m: seen.append(m.operation))
        a.create_catalog("one")
        b.create_catalog("two")
        assert seen == ["CREATE CATALOG"]
    finally:
        a.close()
        b.close()


def test_the_bridge_merges_in_the_background(store_uri: str) -> None:
    registry = Registry()
    try:
        assert registry.get(store_uri, "acme").metastore.index_merges == "background"
    finally:
        registry.close()
