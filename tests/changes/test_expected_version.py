"""Optimistic concurrency: every mutation takes ``expected_version``; a stale one fails with
a Conflict naming both versions and changes nothing; retries re-check it; concurrent
updates without one both land."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from ushas_catalog.errors import Conflict, InvalidArgument
from ushas_catalog.metastore import Metastore, Mutation
from ushas_catalog.kv.base import Transaction
from ushas_catalog.model.table_changes import SetProperty

T = "main.sales.orders"
V = "main.sales.v"


def _setup(ms: Metastore) -> None:
    ms.create_table(T, "id INT, d STRING", partition_by=["d"])
    ms.add_partitions(T, [{"d": "a"}])            # table at version 2
    ms.create_view(V, "SELECT 1 AS a", "a INT")
    ms.alter_view(V, set_properties={"x": "y"})   # view at version 2
    ms.alter_database("main.sales", comment="c")  # database at version 2
    ms.alter_catalog("main", comment="c")         # catalog at version 2


Op = Callable[[Metastore, int], Any]
#: (what, operation with expected version e); every object is at version 2 when it runs
OPS: list[tuple[str, Op]] = [
    ("alter catalog", lambda ms, e: ms.alter_catalog("main", set_properties={"k": "v"}, expected_version=e)),
    ("alter database", lambda ms, e: ms.alter_database("main.sales", comment="d", expected_version=e)),
    ("alter table", lambda ms, e: ms.alter_table(T, [SetProperty("k", "v")], expected_version=e)),
    ("replace table", lambda ms, e: ms.replace_table(T, "id INT", expected_version=e)),
    ("rename table", lambda ms, e: ms.rename_table(T, "main.sales.o2", expected_version=e)),
    ("drop table", lambda ms, e: ms.drop_table(T, expected_version=e)),
    ("add partitions", lambda ms, e: ms.add_partitions(T, [{"d": "b"}], expected_version=e)),
    ("drop partitions", lambda ms, e: ms.drop_partitions(T, [{"d": "a"}], expected_version=e)),
    ("replace partitions", lambda ms, e: ms.replace_partitions(T, [{"d": "a"}], [{"d": "c"}], expected_version=e)),
    ("replace view", lambda ms, e: ms.create_view(V, "SELECT 2 AS a", "a INT", replace=True, expected_version=e)),
    ("alter view", lambda ms, e: ms.alter_view(V, set_properties={"k": "v"}, expected_version=e)),
    ("rename view", lambda ms, e: ms.rename_view(V, "main.sales.w", expected_version=e)),
    ("drop view", lambda ms, e: ms.drop_view(V, expected_version=e)),
    ("drop database", lambda ms, e: ms.drop_database("main.sales", cascade=True, expected_version=e)),
    ("drop catalog", lambda ms, e: ms.drop_catalog("main", cascade=True, expected_version=e)),
]


@pytest.mark.parametrize("what,op", OPS, ids=[w for w, _ in OPS])
def test_stale_expected_version_conflicts_and_changes_nothing(ms: Metastore, what: str, op: Op) -> None:
    _setup(ms)
    head = ms.change_feed.latest_cursor()
    with pytest.raises(Conflict, match="is at version 2, not the expected 1") as err:
        op(ms, 1)
    assert err.value.detail["expected_version"] == 1 and err.value.detail["actual_version"] == 2
    assert ms.change_feed.latest_cursor() == head  # nothing committed
    op(ms, 2)                                      # the current version: it goes through
    assert ms.change_feed.latest_cursor() != head


def test_undrop_checks_the_dropped_objects_version(ms: Metastore) -> None:
    _setup(ms)
    ms.drop_table(T)                               # version 3
    with pytest.raises(Conflict, match="dropped table main.sales.orders is at version 3, not the expected 2"):
        ms.undrop_table(T, expected_version=2)
    assert ms.undrop_table(T, expected_version=3).version == 4
    ms.drop_database("main.sales", cascade=True)   # database version 3
    with pytest.raises(Conflict, match="at version 3, not the expected 9"):
        ms.undrop_database("main.sales", expected_version=9)
    ms.undrop_database("main.sales", expected_version=3)
    ms.drop_catalog("main", cascade=True)
    with pytest.raises(Conflict, match="at version 3, not the expected 1"):
        ms.undrop_catalog("main", expected_version=1)
    assert ms.undrop_catalog("main", expected_version=3).version == 4


def test_expected_version_of_a_missing_object(ms: Metastore) -> None:
    with pytest.raises(Conflict, match="does not exist"):
        ms.replace_table(T, "id INT", expected_version=1)
    with pytest.raises(Conflict, match="does not exist"):
        ms.create_view(V, "SELECT 1", "a INT", replace=True, expected_version=1)
    assert not ms.table_exists(T) and not ms.view_exists(V)


@pytest.mark.parametrize("bad", [0, -1, True, "2", 1.0])
def test_expected_version_must_be_a_positive_integer(ms: Metastore, bad: Any) -> None:
    ms.create_table(T, "id INT")
    with pytest.raises(InvalidArgument, match="expected_version must be an integer >= 1"):
        ms.alter_table(T, [SetProperty("k", "v")], expected_version=bad)


def _interfere_once(ms: Metastore, store_uri: str) -> list[int]:
    """Make the first commit attempt of ``ms`` lose a race: another connection alters the
    table after this transaction read it, so sqlite refuses the commit and it is retried."""
    calls: list[int] = []
    original = ms._commit

    def commit(tr: Transaction, m: Mutation) -> int:
        calls.append(m.version)
        if len(calls) == 1:
            with Metastore.open(store_uri, project="acme", user="other") as other:
                other.alter_table(T, [SetProperty("other", "x")])
        return original(tr, m)

    ms._commit = commit  # type: ignore[method-assign]
    return calls


def test_a_retry_rechecks_the_expected_version(ms: Metastore, store_uri: str) -> None:
    ms.create_table(T, "id INT")
    calls = _interfere_once(ms, store_uri)
    with pytest.raises(Conflict, match="is at version 2, not the expected 1"):
        ms.alter_table(T, [SetProperty("mine", "y")], expected_version=1)
    assert calls == [2]  # the retry stopped at the expectation, before committing
    info = ms.get_table(T)
    assert (info.version, info.properties) == (2, {"other": "x"})


def test_a_retry_without_expectation_loses_no_update(ms: Metastore, store_uri: str) -> None:
    ms.create_table(T, "id INT")
    calls = _interfere_once(ms, store_uri)
    assert ms.alter_table(T, [SetProperty("mine", "y")]).version == 3
    assert calls == [2, 3]
    info = ms.get_table(T)
    assert (info.version, info.properties) == (3, {"other": "x", "mine": "y"})
    assert [(e.version, e.user) for e in ms.changes() if e.kind == "table"] == [(1, "tester"), (2, "other"),
                                                                                 (3, "tester")]
