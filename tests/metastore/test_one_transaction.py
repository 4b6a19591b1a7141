"""One Spark call, one transaction (issue 21, "One call, one transaction, tested"): every
Spark-facing operation the shim sends (``spark_ops.OPS``) runs in exactly one KV transaction,
counted on the store's ``Database``."""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.spark.ops import OPS
from ushas_catalog.spark.tables import SparkCtx, location_of

T = "main.sales.orders"
U = "main.sales.flat"


class Counter:
    """Counts the transactions a ``Database`` runs (one per ``run``: retries inside it are the same
    transaction, tried again)."""

    def __init__(self, ms: Metastore) -> None:
        self.count = 0
        inner = ms.db.run

        def run(fn: Callable[[Any], Any]) -> Any:
            self.count += 1
            return inner(fn)

        ms.db.run = run  # type: ignore[method-assign]

    def __call__(self, op: str, ms: Metastore, request: dict[str, Any]) -> Any:
        self.count = 0
        answer = OPS[op](ms, request)
        assert self.count == 1, f"{op} ran {self.count} transactions"
        return answer


@pytest.fixture
def setup(sales: Metastore, store_uri: str, tmp_path: Any) -> Iterator[tuple[Metastore, Counter, dict[str, Any]]]:
    sales.alter_database("main.sales", location=str(tmp_path / "wh"))
    sales.create_table(T, "id BIGINT, dt STRING", partition_by=["dt"])
    sales.create_table(U, "id BIGINT")
    sales.add_partitions(T, [Partition({"dt": d}, data_files=None) for d in ("a", "b", "c", "d")])
    ctx = {"ctx": {"uri": store_uri, "project": "acme", "catalog": "main", "warehouse": str(tmp_path / "wh")},
           "namespace": ["sales"]}
    yield sales, Counter(sales), ctx


def _write(ms: Metastore, ctx: dict[str, Any], name: str, mode: str, dt: str | None, job: str) -> dict[str, Any]:
    r = {**ctx, "name": name}
    location = location_of(SparkCtx.of(r), ms.get_table(f"main.sales.{name}"))
    path = f"dt={dt}" if dt else ""
    files = [{"path": f"{location}/{path + '/' if path else ''}part-{job}.parquet", "size": 1, "mtime": 1}]
    return {**r, "location": location, "mode": mode, "rows": 1, "filters": [], "write_id": job,
            "deadline_ms": time.time_ns() // 1_000_000 + 60_000, "base_version": ms.get_table(f"main.sales.{name}").version,
            "written": [{"path": path, "existing": [], "files": files}]}


def test_each_spark_operation_is_one_transaction(setup: tuple[Metastore, Counter, dict[str, Any]]) -> None:
    ms, one, ctx = setup
    # write commits: append, INSERT OVERWRITE (replace partitions), unpartitioned
    one("commit_write", ms, _write(ms, ctx, "orders", "append", "e", "job-1"))
    one("commit_write", ms, _write(ms, ctx, "orders", "dynamic", "a", "job-2"))
    one("commit_write", ms, _write(ms, ctx, "flat", "append", None, "job-3"))
    assert {p.values["dt"] for p in ms.list_partitions(T)} == {"a", "b", "c", "d", "e"}
    # partitions: add, drop, drop with purge (answers the paths to delete)
    one("add_partitions", ms, {**ctx, "name": "orders", "partitions": [{"values": {"dt": "f"}}]})
    out = one("drop_partitions", ms, {**ctx, "name": "orders", "partitions": [{"dt": "b"}]})
    assert out["dropped"] and out["delete_paths"] == []
    out = one("drop_partitions", ms, {**ctx, "name": "orders", "partitions": [{"dt": "a"}], "purge": True})
    assert out["delete_paths"] and all("part-job-2" in p or p.endswith("dt=a") for p in out["delete_paths"])
    # truncate: a partition, the whole table, an unpartitioned table
    version = ms.get_table(T).version
    one("truncate", ms, {**ctx, "name": "orders", "partitions": [{"dt": "c"}]})
    one("truncate", ms, {**ctx, "name": "orders"})
    one("truncate", ms, {**ctx, "name": "flat"})
    assert ms.get_table(T).version == version + 2
    # rename (an external-style table: no data move), drop, drop with purge, drop namespace cascade
    ms.create_table("main.sales.ext", "id BIGINT", location="/elsewhere/ext", external=True)
    one("rename_table", ms, {**ctx, "name": "ext", "to": ["ext2"]})
    assert ms.table_exists("main.sales.ext2")
    one("drop_table", ms, {**ctx, "name": "ext2"})
    out = one("drop_table", ms, {**ctx, "name": "flat", "purge": True})
    assert out["dropped"]
    one("drop_namespace", ms, {**ctx, "namespace": ["sales"], "cascade": True})
    assert not ms.database_exists("main.sales")


def test_a_failed_operation_leaves_nothing(setup: tuple[Metastore, Counter, dict[str, Any]]) -> None:
    """The operation is one transaction: an error after its first write undoes the write."""
    from ushas_catalog.errors import NoSuchPartition

    ms, _, ctx = setup
    before = (ms.get_table(T).version, len(list(ms.changes())))
    with pytest.raises(NoSuchPartition):
        OPS["drop_partitions"](ms, {**ctx, "name": "orders", "partitions": [{"dt": "a"}, {"dt": "zz"}]})
    assert (ms.get_table(T).version, len(list(ms.changes()))) == before
    assert {p.values["dt"] for p in ms.list_partitions(T)} == {"a", "b", "c", "d"}
