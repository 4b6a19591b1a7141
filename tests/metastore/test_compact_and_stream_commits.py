"""Without Spark: the commits a streaming read takes (each one's added files, in commit order:
``Metastore.stream_commits``) and compaction's commit (``procedures.compact``): a compaction racing
an append keeps the append's files, retries on a conflict, and a stream skips it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.catalog.stream_source import COMPACT
from ushas_catalog.errors import Conflict
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition
from ushas_catalog.procedures.compact import _commit
from ushas_catalog.procedures.registry import Call

T = "main.sales.t"


def f(root: Path, name: str, size: int = 10) -> DataFile:
    return DataFile(f"file:{root}/dt=a/{name}", size, 1)


def append(ms: Metastore, root: Path, *names: str) -> int:
    old = [p.data_files for p in ms.list_partitions(T)]
    files = list(old[0] or [] if old else []) + [f(root, n) for n in names]
    return ms.replace_partitions(T, [], [Partition({"dt": "a"}, data_files=files)], operation="APPEND").version


@pytest.fixture
def table(sales: Metastore, tmp_path: Path) -> tuple[Metastore, Path]:
    sales.create_table(T, "v BIGINT, dt STRING", partition_by=["dt"], location=f"file:{tmp_path}")
    return sales, tmp_path


def test_stream_commits_are_each_commits_added_files_in_order(table: Any) -> None:
    ms, root = table
    v1 = append(ms, root, "x1", "x2")
    v2 = append(ms, root, "x3")
    found = ms.stream_commits(T, v1 - 1)
    assert [(c.version, [a.file.path.rsplit("/", 1)[1] for a in c.added], c.removed) for c in found.commits] == [
        (v1, ["x1", "x2"], 0), (v2, ["x3"], 0)]
    assert found.head == v2 and found.columns == ["dt"] and found.commits[0].added[0].partition == ("a",)
    assert ms.stream_commits(T, v2).commits == []
    v3 = ms.replace_partitions(T, [{"dt": "a"}], [Partition({"dt": "a"}, data_files=[f(root, "y")])],
                               operation="OVERWRITE PARTITIONS").version
    [c] = ms.stream_commits(T, v2).commits
    assert (c.version, c.removed, c.changes_data) == (v3, 3, True)


def test_compaction_keeps_a_racing_append_and_retries_a_conflict(table: Any, monkeypatch: Any) -> None:
    ms, root = table
    append(ms, root, "s1", "s2", "s3")
    groups = [{"spec": {"dt": "a"}, "replaced": [f(root, n).to_json() for n in ("s1", "s2", "s3")],
               "dir": f"file:{root}/dt=a/compact-1"}]
    new = {"path": f"file:{root}/dt=a/compact-1/big", "size": 30, "mtime": 2}
    append(ms, root, "late")  # a stream's batch between the rewrite and its commit
    real, calls = ms.replace_partitions, []

    def racing(*args: Any, **kwargs: Any) -> Any:  # the first commit attempt loses a race
        calls.append(kwargs["expected_version"])
        if len(calls) == 1:
            raise Conflict("table moved on")
        return real(*args, **kwargs)

    monkeypatch.setattr(ms, "replace_partitions", racing)
    call = Call(ms, None, {"table": "sales.t"}, {"step": "rewrite", "groups": groups}, [[], [new]])
    out = _commit(call, ("main", "sales", "t"), call.state, call.jvm_result)
    assert out.rows[0][1:4] == [1, 3, 1] and len(calls) == 2
    files = sorted(x.path.rsplit("/", 1)[1] for x in ms.get_partition(T, {"dt": "a"}).data_files or [])
    assert files == ["big", "late"]  # nothing lost
    assert ms.history(T)[0].operation == COMPACT
    assert {f(root, n).path for n in ("s1", "s2", "s3")} <= {x.path for g in ms.garbage(T) for x in g.files}
    # a stream reading across the compaction sees its commit as one that removed files, and skips it
    [c] = ms.stream_commits(T, ms.get_table(T).version - 1).commits
    assert c.operation == COMPACT and not c.changes_data


def test_compaction_leaves_a_partition_overwritten_meanwhile(table: Any) -> None:
    ms, root = table
    append(ms, root, "s1", "s2")
    groups = [{"spec": {"dt": "a"}, "replaced": [f(root, n).to_json() for n in ("s1", "s2")],
               "dir": f"file:{root}/dt=a/compact-2"}]
    ms.replace_partitions(T, [{"dt": "a"}], [Partition({"dt": "a"}, data_files=[f(root, "o")])], operation="OVERWRITE")
    version = ms.get_table(T).version
    call = Call(ms, None, {"table": "sales.t"}, {"step": "rewrite", "groups": groups},
                [[], [{"path": f"file:{root}/dt=a/compact-2/n", "size": 20, "mtime": 2}]])
    out = _commit(call, ("main", "sales", "t"), call.state, call.jvm_result)
    assert out.rows[0][1:] == [0, 0, 0, None] and out.delete_paths == [f"file:{root}/dt=a/compact-2"]
    assert ms.get_table(T).version == version
