"""``Metastore.restore_table`` (``CALL ushas.system.restore_table``) and ``set_statistics``
(``analyze_table``) at the metastore level: one commit each, partitions undone from their history, the
purge list kept consistent with what the table reads."""
from __future__ import annotations

import datetime as dt

import pytest

from ushas_catalog.data.garbage import Garbage
from ushas_catalog.errors import InvalidArgument, NoSuchVersion
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn, SetProperty

T = "main.sales.t"
SCHEMA = {"type": "struct", "fields": [
    {"name": "a", "type": "integer", "nullable": True, "metadata": {}},
    {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]}


def files(*names: str) -> list[DataFile]:
    return [DataFile(f"file:/wh/sales/t/{n}", 10, 1) for n in names]


def garbage_paths(ms: Metastore) -> set[str]:
    return {f.path for e in ms.garbage(T) for f in e.files}


def spec_files(ms: Metastore) -> dict[str, list[str]]:
    return {p.spec["dt"]: sorted(f.path.rsplit("/", 1)[1] for f in p.data_files or []) for p in ms.list_partitions(T)}


@pytest.fixture
def table(sales: Metastore) -> Metastore:
    """Version 1 created, 2 partitions a, b; 3 a column and a property; 4 a overwritten, c added, b dropped."""
    sales.create_table(T, SCHEMA, partition_by=["dt"])
    sales.replace_partitions(T, [], [Partition({"dt": "a"}, data_files=files("a1")),
                                     Partition({"dt": "b"}, data_files=files("b1"))])
    sales.alter_table(T, [AddColumn(("c",), parse_type("STRING")), SetProperty("k", "v")])
    g = Garbage(files=files("a1", "b1"))
    sales.replace_partitions(T, [{"dt": "a"}, {"dt": "b"}], [Partition({"dt": "a"}, data_files=files("a2")),
                                                            Partition({"dt": "c"}, data_files=files("c1"))],
                             garbage=g)
    return sales


def test_restore_undoes_schema_properties_and_partitions_in_one_commit(table: Metastore) -> None:
    ms = table
    assert ms.get_table(T).version == 4 and spec_files(ms) == {"a": ["a2"], "c": ["c1"]}
    r = ms.restore_table(T, 2)
    assert (r.version, r.restored_version, r.schema_changed, r.properties_changed) == (5, 2, True, True)
    assert (r.partitions_added, r.partitions_dropped, r.partitions_replaced) == (1, 1, 1)
    t = ms.get_table(T)
    assert t.version == 5 and [f.name for f in t.schema.fields] == ["a", "dt"] and "k" not in t.properties
    assert spec_files(ms) == {"a": ["a1"], "b": ["b1"]}
    assert ms.history(T, limit=1)[0].operation == "RESTORE"
    # what it reads is not purged; what it let go is
    assert garbage_paths(ms) == {"file:/wh/sales/t/a2", "file:/wh/sales/t/c1"}

    r = ms.restore_table(T, 4)  # undone
    assert r.version == 6 and spec_files(ms) == {"a": ["a2"], "c": ["c1"]}
    assert [f.name for f in ms.get_table(T).schema.fields] == ["a", "c", "dt"]
    assert garbage_paths(ms) == {"file:/wh/sales/t/a1", "file:/wh/sales/t/b1"}
    assert ms.get_table(T, as_of=5).version == 5  # the restore is a version like any other
    from ushas_catalog.check import run_checks

    report = run_checks(ms)
    assert report.ok, report.lines()  # versions, partitions, data files, search index, change feed agree


def test_restore_to_the_current_state_commits_nothing(table: Metastore) -> None:
    r = table.restore_table(T, 4)
    assert r.version is None and table.get_table(T).version == 4


def test_restore_by_time_and_bad_versions(table: Metastore) -> None:
    ms = table
    r = ms.restore_table(T, dt.datetime.now(dt.timezone.utc))
    assert r.restored_version == 4 and r.version is None
    with pytest.raises(NoSuchVersion):
        ms.restore_table(T, 99)
    with pytest.raises(NoSuchVersion):
        ms.restore_table(T, dt.datetime(2000, 1, 1))
    assert ms.get_table(T).version == 4


def test_partition_columns_cannot_be_restored(sales: Metastore) -> None:
    sales.create_table(T, SCHEMA, partition_by=["dt"])
    sales.replace_table(T, SCHEMA, partition_by=[])
    with pytest.raises(InvalidArgument, match="partition columns cannot be restored"):
        sales.restore_table(T, 1)


def test_set_statistics_is_one_commit(table: Metastore) -> None:
    ms = table
    ms.set_statistics(T, {"spark.sql.statistics.colStats.a.min": "1"}, [])
    v = ms.set_statistics(T, {"numRows": "3", "spark.sql.statistics.colStats.c.nullCount": "0"},
                          ["spark.sql.statistics.colStats.a."], [({"dt": "a"}, 2), ({"dt": "c"}, 1)],
                          size_property="spark.sql.statistics.totalSize")
    t = ms.get_table(T)
    assert t.version == v == 6 and ms.history(T, limit=1)[0].operation == "ANALYZE TABLE"  # one commit each
    assert "spark.sql.statistics.colStats.a.min" not in t.properties and t.properties["numRows"] == "3"
    assert "spark.sql.statistics.totalSize" not in t.properties  # no partition recorded its bytes: unknown
    assert {p.spec["dt"]: p.rows for p in ms.list_partitions(T)} == {"a": 2, "c": 1}
    assert spec_files(ms) == {"a": ["a2"], "c": ["c1"]}  # only the counts changed
    from ushas_catalog.check import run_checks

    assert run_checks(ms).ok
