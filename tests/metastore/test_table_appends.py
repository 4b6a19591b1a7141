"""Appends into an unpartitioned table without rewriting its file list (``write_table_files(append=True)``):
what each append writes does not grow with the files already there, and every reader of the list (reads,
time travel, restore, streaming reads, check, compaction-style whole rewrites, overwrite checks, purge of a
dropped table) sees the same files as with whole rewrites."""
from __future__ import annotations

from typing import Any

import pytest

from ushas_catalog.check import check_data_files
from ushas_catalog.errors import FilesNotRecorded, InvalidArgument, WriteConflict
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile

T = "main.sales.u"


def f(name: str, size: int = 10) -> DataFile:
    return DataFile(f"file:/wh/sales/u/{name}", size, 1)


def append(ms: Metastore, *names: str) -> int:
    return ms.write_table_files(T, [f(n) for n in names], "APPEND", append=True)


def names(files: Any) -> list[str]:
    return [x.path.rsplit("/", 1)[1] for x in files or []]


def written_keys(ms: Metastore, fn: Any) -> int:
    """How many keys ``fn`` set in the table's file list and its history."""
    count = 0
    real = ms.db.run

    def counting(body: Any, *a: Any, **kw: Any) -> Any:
        def wrapped(tr: Any) -> Any:
            set_ = tr.set

            def counted(key: bytes, value: bytes) -> None:
                nonlocal count
                count += 1
                set_(key, value)

            tr.set = counted
            try:
                return body(tr)
            finally:
                tr.set = set_
        return real(wrapped, *a, **kw)

    ms.db.run = counting  # type: ignore[method-assign]
    try:
        fn()
    finally:
        ms.db.run = real  # type: ignore[method-assign]
    return count


@pytest.fixture
def table(sales: Metastore) -> Metastore:
    sales.create_table(T, "v BIGINT")
    return sales


def test_appends_write_a_chunk_each_and_every_reader_sees_every_file(table: Metastore) -> None:
    ms = table
    versions = [append(ms, "f000")] + [append(ms, f"f{i:03d}") for i in range(1, 40)]
    assert names(ms.table_data_files(T)) == [f"f{i:03d}" for i in range(40)]
    # time travel, restore and streaming reads go back through the appends
    assert names(ms.files_as_of(T, versions[9]).files) == [f"f{i:03d}" for i in range(10)]
    assert names(ms.files_as_of(T, versions[0]).files) == ["f000"]
    assert ms.files_as_of(T, versions[0] - 1).files == []
    found = ms.stream_commits(T, versions[0])
    assert [names(a.file for a in c.added) for c in found.commits] == [[f"f{i:03d}"] for i in range(1, 40)]
    assert all(c.removed == 0 for c in found.commits)
    assert not [x for x in check_data_files(ms)]
    ms.restore_table(T, versions[4])
    assert names(ms.table_data_files(T)) == [f"f{i:03d}" for i in range(5)]
    append(ms, "g1")
    assert names(ms.table_data_files(T)) == [f"f{i:03d}" for i in range(5)] + ["g1"]
    # an overwrite started before an append conflicts with it; a whole rewrite (compaction) collapses chunks
    v = ms.get_table(T).version
    append(ms, "g2")
    with pytest.raises(WriteConflict, match="another write"):
        ms.write_table_files(T, [f("o")], "OVERWRITE", unchanged_since=v)
    c = ms.write_table_files(T, [f("big")], "COMPACT")
    assert names(ms.table_data_files(T)) == ["big"]
    assert len(ms.files_as_of(T, c - 1).files or []) == 7
    append(ms, "h1")
    assert names(ms.table_data_files(T)) == ["big", "h1"]
    assert names(ms.files_as_of(T, c).files) == ["big"]


def test_what_an_append_writes_does_not_grow_with_the_files_there(table: Metastore) -> None:
    ms = table
    append(ms, "first")
    counts = []
    for i in range(30):
        counts.append(written_keys(ms, lambda i=i: append(ms, f"x{i:03d}")))
    assert len(set(counts)) == 1  # the same keys each time: one chunk, one history entry, the commit
    big = written_keys(ms, lambda: ms.write_table_files(T, list(ms.table_data_files(T) or []) + [f("w")], "APPEND"))
    assert len(names(ms.table_data_files(T))) == 32 and big >= counts[0]


def test_an_append_to_a_table_whose_files_are_not_recorded_writes_nothing(sales: Metastore) -> None:
    sales.create_table(T, "v BIGINT", location="file:/elsewhere/u", external=True)  # external: its files are listed
    v = sales.get_table(T).version
    with pytest.raises(FilesNotRecorded, match="not recorded"):
        sales.write_table_files(T, [f("x")], "APPEND", append=True)
    assert sales.get_table(T).version == v and sales.table_data_files(T) is None
    with pytest.raises(InvalidArgument, match="an append gives the files it adds"):
        sales.write_table_files(T, [f("x")], "OVERWRITE", append=True)


def test_a_dropped_table_with_appended_files_is_purged_whole(table: Metastore) -> None:
    """A dropped table's purge deletes every file its appends added (here listed: the location is shared
    with a live table of the same directory), not only the list as its first write saved it."""
    ms = table
    ms.write_table_files(T, [f("a0")], "APPEND")
    append(ms, "a1")
    append(ms, "a2")
    ms.drop_table(T)
    ms.create_table(T, "v BIGINT")  # a live table at the same location: the dropped one's files are listed
    paths: list[str] = []
    assert ms.purge_table(T, data_paths=paths) == 1
    assert sorted(names(DataFile(p, 0, 0) for p in paths)) == ["a0", "a1", "a2"]
