"""Reads as of a version (``Metastore.files_as_of`` / ``table_as_of``), tags and what purge leaves
readable, at the metastore level (Spark's ``VERSION AS OF``: tests/spark/test_time_travel.py)."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from ushas_catalog.data.garbage import Garbage
from ushas_catalog.data.purge import purge
from ushas_catalog.errors import AlreadyExists, InvalidArgument, NoSuchVersion, NotFound
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.names import TableName
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn, SetProperty

T = "main.sales.t"
F = "main.sales.f"
SCHEMA = {"type": "struct", "fields": [
    {"name": "a", "type": "integer", "nullable": True, "metadata": {}},
    {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]}
FLAT = {"type": "struct", "fields": [{"name": "a", "type": "integer", "nullable": True, "metadata": {}}]}


@pytest.fixture
def files(tmp_path: Path):
    def make(*names: str) -> list[DataFile]:
        out = []
        for n in names:
            p = tmp_path / n
            p.write_text(n)
            out.append(DataFile(f"file:{p}", 10, 1))
        return out
    return make


def parts_at(ms: Metastore, version: int) -> dict[str, list[str]]:
    got = ms.files_as_of(T, version)
    assert got.scheme is not None and got.files is None
    return {key[0]: sorted(f.path.rsplit("/", 1)[1] for f in r.data_files) for key, r in got.partitions}


def flat_at(ms: Metastore, version: int) -> list[str]:
    got = ms.files_as_of(F, version)
    assert got.scheme is None and got.files is not None
    return sorted(f.path.rsplit("/", 1)[1] for f in got.files)


@pytest.fixture
def table(sales: Metastore, files, tmp_path: Path) -> Metastore:
    """Partitioned T: 1 created; 2 a, b; 3 a column; 4 a overwritten, c added, b dropped.
    Unpartitioned F: 1 created; 2 x1; 3 overwritten by x2; 4 appended x3. T's files lie in its location
    (a purge deletes only those: data.purge.bounded)."""
    sales.create_table(T, SCHEMA, partition_by=["dt"], location=str(tmp_path))
    sales.replace_partitions(T, [], [Partition({"dt": "a"}, data_files=files("a1")),
                                     Partition({"dt": "b"}, data_files=files("b1"))])
    sales.alter_table(T, [AddColumn(("c",), parse_type("STRING")), SetProperty("k", "v")])
    sales.replace_partitions(T, [{"dt": "a"}, {"dt": "b"}], [Partition({"dt": "a"}, data_files=files("a2")),
                                                            Partition({"dt": "c"}, data_files=files("c1"))],
                             garbage=Garbage(files=files("a1", "b1")))
    sales.create_table(F, FLAT)
    sales.write_table_files(F, files("x1"), "WRITE")
    sales.write_table_files(F, files("x2"), "WRITE", garbage=Garbage(files=files("x1")))
    sales.write_table_files(F, files("x2", "x3"), "WRITE")
    return sales


def test_each_version_reads_exactly_its_files_partitioned_or_not(table: Metastore) -> None:
    ms = table
    assert [parts_at(ms, v) for v in (1, 2, 3, 4)] == [
        {}, {"a": ["a1"], "b": ["b1"]}, {"a": ["a1"], "b": ["b1"]}, {"a": ["a2"], "c": ["c1"]}]
    assert [flat_at(ms, v) for v in (1, 2, 3, 4)] == [[], ["x1"], ["x2"], ["x2", "x3"]]


def test_the_schema_and_properties_are_those_of_the_version(table: Metastore) -> None:
    old, now = table.table_as_of(T, 2), table.table_as_of(T, "4")
    assert (old.version, [f.name for f in old.schema.fields], "k" in old.properties) == (2, ["a", "dt"], False)
    assert (now.version, [f.name for f in now.schema.fields], now.properties["k"]) == (4, ["a", "c", "dt"], "v")
    later = table.table_as_of(T, dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1))
    assert later.version == 4


#: as_of -> the error it gets (type, words of its message)
BAD = [(0, NoSuchVersion, "versions 1 to 4"), (5, NoSuchVersion, "not 5"), ("nope", NoSuchVersion, "no version or tag"),
       (dt.datetime(2000, 1, 1), NoSuchVersion, "did not exist")]


@pytest.mark.parametrize("as_of,error,words", BAD)
def test_unknown_versions_are_refused_naming_them(table: Metastore, as_of, error, words) -> None:
    with pytest.raises(error, match=words):
        table.table_as_of(T, as_of)


def test_a_replace_keeps_the_old_files_readable(table: Metastore, files) -> None:
    info = table.get_table(F)
    assert info.version == 4
    table.write_table_files(F, [], "TRUNCATE TABLE", garbage=Garbage(files=files("x2", "x3")))
    assert flat_at(table, 5) == [] and flat_at(table, 4) == ["x2", "x3"]


def test_purge_makes_old_versions_unreadable_naming_it_and_keeps_tagged_ones(table: Metastore) -> None:
    ms = table
    tag = ms.create_tag(T, "gold", 2)
    assert (tag.name, tag.version) == ("gold", 2)
    with pytest.raises(AlreadyExists, match="gold"):
        ms.create_tag(T, "gold", 3)
    with pytest.raises(InvalidArgument, match="not a number"):
        ms.create_tag(T, "12", 3)
    assert ms.first_readable_version(T) == 1
    summary = purge(ms, TableName.parse(T))
    assert summary.garbage == 0  # the entry stays: tag gold reads a1 and b1
    assert ms.first_readable_version(T) == 4
    with pytest.raises(NoSuchVersion, match=r"version 3 of table main\.sales\.t is no longer readable: the purge of"):
        ms.files_as_of(T, 3)
    assert parts_at(ms, 2) == {"a": ["a1"], "b": ["b1"]}  # tagged: its files survived
    assert ms.table_as_of(T, "gold").version == 2
    assert all(Path(r.data_files[0].path[len("file:"):]).exists() for _, r in ms.files_as_of(T, 2).partitions)
    ms.drop_tag(T, "gold")
    with pytest.raises(NotFound, match="gold"):
        ms.drop_tag(T, "gold")
    assert purge(ms, TableName.parse(T)).garbage == 1
    with pytest.raises(NoSuchVersion, match="no longer readable"):
        ms.files_as_of(T, 2)
    assert parts_at(ms, 4) == {"a": ["a2"], "c": ["c1"]}


def test_retention_keeps_replaced_files_and_so_old_versions(table: Metastore) -> None:
    table.alter_table(F, [SetProperty("ushas.retention", "7d")])
    purge(table, TableName.parse(F))
    assert flat_at(table, 2) == ["x1"] and table.first_readable_version(F) == 1
    table.alter_table(F, [SetProperty("ushas.retention", "soon")])
    with pytest.raises(InvalidArgument, match="ushas.retention='soon'"):
        purge(table, TableName.parse(F))


def test_restore_brings_an_unpartitioned_tables_files_back(table: Metastore) -> None:
    r = table.restore_table(F, 2)
    assert r.version == 5
    assert sorted(f.path.rsplit("/", 1)[1] for f in table.table_data_files(F) or []) == ["x1"]
    assert flat_at(table, 5) == ["x1"] and flat_at(table, 4) == ["x2", "x3"]
    garbage = {f.path.rsplit("/", 1)[1] for e in table.garbage(F) for f in e.files}
    assert garbage == {"x2", "x3"}  # x1 is read again: out of the purge list
    assert table.history(F, limit=1)[0].changed == ["TableDataFiles"]
