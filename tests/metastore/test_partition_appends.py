"""Appends without rewriting a partition's file list (``replace_partitions(append=True)``,
:mod:`ushas_catalog.catalog.partition_appends`): what each append writes does not grow with the files
already there, and every reader of file lists (reads, time travel, restore, streaming reads, tags, bulk
drops, check, a full rewrite after appends) sees the same files as with whole rewrites."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ushas_catalog import records as rec
from ushas_catalog.check import check_data_files
from ushas_catalog.errors import InvalidArgument
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition

T = "main.sales.t"


def f(root: Path, dt: str, name: str, size: int = 10) -> DataFile:
    return DataFile(f"file:{root}/dt={dt}/{name}", size, 1)


def append(ms: Metastore, root: Path, dt: str, *names: str, rows: int | None = None) -> int:
    new = [f(root, dt, n) for n in names]
    p = Partition({"dt": dt}, files=len(new), bytes=10 * len(new), rows=rows, data_files=new)
    return ms.replace_partitions(T, [], [p], operation="APPEND", append=True).version


def names(files: Any) -> list[str]:
    return [x.path.rsplit("/", 1)[1] for x in files or []]


@pytest.fixture
def table(sales: Metastore, tmp_path: Path) -> tuple[Metastore, Path]:
    sales.create_table(T, "v BIGINT, dt STRING", partition_by=["dt"], location=f"file:{tmp_path}")
    return sales, tmp_path


def test_appends_write_a_chunk_each_and_every_reader_sees_every_file(table: Any) -> None:
    ms, root = table
    v0 = append(ms, root, "a", "f000", rows=3)  # a new partition: added whole
    versions = [v0] + [append(ms, root, "a", f"f{i:03d}", rows=2) for i in range(1, 40)]
    p = ms.get_partition(T, {"dt": "a"})
    assert names(p.data_files) == [f"f{i:03d}" for i in range(40)]
    assert (p.files, p.bytes, p.rows) == (40, 400, 3 + 2 * 39)
    # what each append wrote does not grow: one chunk per append, history entries of one size
    history = [c for c in ms.db.run(lambda tr: list(ms.resolver.table(tr, _tn()).partition_history(
        ms.resolver.scheme(tr, ms.resolver.table(tr, _tn()))).scan(tr)))]
    appended = [c.record for c in history if c.record.action == rec.PartitionChange.APPENDED]
    assert len(appended) == 39 and all(not c.previous.data_files and len(c.appended) == 1 for c in appended)
    sizes = {len(c.SerializeToString()) for c in appended}
    assert max(sizes) - min(sizes) <= 4  # varint widths of the counters, not the list
    # time travel, restore and streaming reads go back through the appends
    assert names(_files_at(ms, versions[9])) == [f"f{i:03d}" for i in range(10)]
    assert names(_files_at(ms, versions[0])) == ["f000"]
    found = ms.stream_commits(T, versions[0])
    assert [names(a.file for a in c.added) for c in found.commits] == [[f"f{i:03d}"] for i in range(1, 40)]
    assert all(c.removed == 0 for c in found.commits)
    assert not [x for x in check_data_files(ms)]
    ms.restore_table(T, versions[4])
    assert names(ms.get_partition(T, {"dt": "a"}).data_files) == [f"f{i:03d}" for i in range(5)]
    assert ms.get_partition(T, {"dt": "a"}).rows == 3 + 2 * 4
    # appends after a restore (a whole rewrite), then tags and a full rewrite of the partition
    append(ms, root, "a", "g1", rows=1)
    ms.set_partition_tags(T, {"dt": "a"}, {"tier": "hot"})
    assert names(ms.get_partition(T, {"dt": "a"}).data_files)[-1] == "g1"
    assert ms.get_partition(T, {"dt": "a"}).tags == {"tier": "hot"}
    append(ms, root, "a", "g2")  # rows unknown from now on: rewritten whole, once
    p = ms.get_partition(T, {"dt": "a"})
    assert (names(p.data_files)[-2:], p.rows, p.files, p.tags) == (["g1", "g2"], None, 7, {"tier": "hot"})
    v = ms.replace_partitions(T, [{"dt": "a"}], [Partition({"dt": "a"}, data_files=[f(root, "a", "big")])],
                              operation="COMPACT").version
    assert names(ms.get_partition(T, {"dt": "a"}).data_files) == ["big"]
    assert len(names(_files_at(ms, v - 1))) == 7
    append(ms, root, "a", "h1")
    assert names(ms.get_partition(T, {"dt": "a"}).data_files) == ["big", "h1"]
    ms.drop_partitions(T, [{"dt": "a"}])
    assert list(ms.list_partitions(T)) == []


def test_an_append_names_its_files_and_drops_nothing(table: Any) -> None:
    ms, _ = table
    with pytest.raises(InvalidArgument, match="names the files it adds"):
        ms.replace_partitions(T, [{"dt": "a"}], [Partition({"dt": "a"}, data_files=[])], append=True)
    with pytest.raises(InvalidArgument, match="names the files it adds"):
        ms.replace_partitions(T, [], [Partition({"dt": "a"})], append=True)


def test_an_append_to_a_partition_whose_files_are_not_recorded_writes_nothing(table: Any) -> None:
    from ushas_catalog.errors import FilesNotRecorded

    ms, root = table
    ms.add_partitions(T, [{"dt": "b"}])  # ADD PARTITION: files not recorded
    v = ms.get_table(T).version
    with pytest.raises(FilesNotRecorded, match="not recorded"):
        append(ms, root, "b", "x")
    assert ms.get_partition(T, {"dt": "b"}).data_files is None and ms.get_table(T).version == v


def test_an_append_reads_one_key_and_big_appends_are_several_whole_chunks(table: Any, monkeypatch: Any) -> None:
    """After the first append the next one reads the newest chunk alone (it carries the partition's fields),
    not the file list; an append over the value limit is several chunks, each a message of its own."""
    from ushas_catalog.records.store import RecordStore

    ms, root = table
    append(ms, root, "a", "first")
    append(ms, root, "a", "second")
    loads: list[Any] = []
    real = RecordStore.load
    monkeypatch.setattr(RecordStore, "load", lambda self, tr, pk, **kw: loads.append(pk) or real(self, tr, pk, **kw))
    append(ms, root, "a", *[f"x{i:04d}" for i in range(3000)])  # ~150 kB of file entries
    assert ("a",) not in loads  # the partition's record was not read whole
    monkeypatch.undo()
    p = ms.get_partition(T, {"dt": "a"})
    assert (p.files, len(p.data_files or []), names(p.data_files)[-1]) == (3002, 3002, "x2999")
    assert not [x for x in check_data_files(ms)]


def _tn() -> Any:
    from ushas_catalog.model.names import TableName

    return TableName.parse(T)


def _files_at(ms: Metastore, v: int) -> list[DataFile]:
    got = ms.files_as_of(T, v)
    return [x for _, r in got.partitions for x in _records(r)]


def _records(r: Any) -> list[DataFile]:
    return [DataFile(x.path, x.size, x.mtime) for x in r.data_files]
