"""Partition tags through the Python API and the CLI: set / unset by spec or filter, the tag index kept in
step with every partition change (overwrite keeps tags, drop removes them, bulk drops, REPLACE TABLE,
drop / undrop / purge of the table), per-tag statistics, and selection by tag at 100,000 partitions
reading only the index keys of the tag."""
from __future__ import annotations

import json
from typing import Any

import fdb.tuple as fdbtuple
import pytest

from ushas_catalog import bulk, bulk_objects
from ushas_catalog.catalog.partition_tags import WINDOW, index_path
from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument, NoSuchTable
from ushas_catalog.kv.read_count import KeyReads
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.names import TableName
from ushas_catalog.model.partition_tags import parse_filter_text, where_filter
from ushas_catalog.model.partitions import Partition

T = "main.geo.cities"
DAYS = ("2024-01-01", "2024-01-02")
CITIES = {"Pune": "MH", "Mumbai": "MH", "Nagpur": "MH", "Delhi": "DL", "Chennai": "TN"}


@pytest.fixture
def geo(ms: Metastore) -> Metastore:
    ms.create_catalog("main")
    ms.create_database("main.geo", location="/wh/geo")
    ms.create_table(T, "id BIGINT, dt DATE, city STRING", partition_by=["dt", "city"])
    ms.add_partitions(T, [Partition({"dt": d, "city": c}, bytes=100 * (i + 1), rows=10 * (i + 1))
                          for d in DAYS for i, c in enumerate(CITIES)])
    return ms


def index_keys(ms: Metastore, table: str = T) -> list[tuple[Any, ...]]:
    """The table's tag index entries: (tag key, tag value, partition key elements...)."""
    def read(tr: Any) -> list[tuple[Any, ...]]:
        t = ms.resolver.table(tr, TableName.parse(table))
        base = index_path(t.path).key()
        return [fdbtuple.unpack(kv.key[len(base):]) for kv in tr.get_range(base + b"\x00", base + b"\xff")]

    return ms.run(read)


def tagged(ms: Metastore, key: str, value: str | None = None) -> list[tuple[str, str]]:
    return [(p.spec["dt"], p.spec["city"]) for p in ms.partitions_by_tag(T, key, value)]


# ---- naming partitions -----------------------------------------------------------------------------
def test_spec_and_filter_texts() -> None:
    assert where_filter("dt=2024-01-01/city=Pune") == {"op": "and", "children": [
        {"op": "eq", "column": "dt", "value": "2024-01-01"}, {"op": "eq", "column": "city", "value": "Pune"}]}
    assert where_filter("city=New Delhi") == {"op": "eq", "column": "city", "value": "New Delhi"}
    assert where_filter("") is None and where_filter("*") is None
    assert parse_filter_text("city IN ('Pune', 'Nagpur') AND NOT dt < DATE '2024-01-02'") == {
        "op": "and", "children": [{"op": "in", "column": "city", "values": ["Pune", "Nagpur"]},
                                  {"op": "not", "child": {"op": "lt", "column": "dt", "value": "2024-01-02"}}]}
    assert parse_filter_text("city <> 'O''Hare' OR city IS NULL")["children"][0] == {
        "op": "not", "child": {"op": "eq", "column": "city", "value": "O'Hare"}}
    for bad, message in (("city = Pune", "quote strings"), ("city IN ('a'", r"expected '\)'"),
                         ("city >", "expected a value"), ("= 'x'", "partition column")):
        with pytest.raises(InvalidArgument, match=message):
            parse_filter_text(bad)


def test_set_by_spec_filter_and_everything(geo: Metastore) -> None:
    r = geo.set_partition_tags(T, "city=Pune", {"province": "MH"})  # a spec of a non-leading column
    assert (r.matched, r.changed) == (2, 2) and r.version is not None
    r = geo.set_partition_tags(T, "city IN ('Mumbai', 'Nagpur') AND dt >= '2024-01-02'", {"province": "MH"})
    assert (r.matched, r.changed) == (2, 2)
    r = geo.set_partition_tags(T, {"dt": "2024-01-01", "city": "Delhi"}, {"province": "DL", "size": "mega"})
    assert r.changed == 1
    assert tagged(geo, "province", "MH") == [("2024-01-01", "Pune"), ("2024-01-02", "Mumbai"),
                                              ("2024-01-02", "Nagpur"), ("2024-01-02", "Pune")]
    assert tagged(geo, "province") == [("2024-01-01", "Delhi"), ("2024-01-01", "Pune"), ("2024-01-02", "Mumbai"),
                                       ("2024-01-02", "Nagpur"), ("2024-01-02", "Pune")]
    again = geo.set_partition_tags(T, "city=Pune", {"province": "MH"})  # nothing changes: no commit
    assert (again.version, again.matched, again.changed) == (None, 2, 0)
    r = geo.set_partition_tags(T, "", {"country": "IN"})
    assert (r.matched, r.changed) == (10, 10)
    p = geo.get_partition(T, {"dt": "2024-01-01", "city": "Delhi"})
    assert p.tags == {"province": "DL", "size": "mega", "country": "IN"} and p.to_json()["tags"] == p.tags
    listed = {(p.spec["dt"], p.spec["city"]): p.tags for p in geo.list_partitions(T)}
    assert listed[("2024-01-01", "Pune")] == {"province": "MH", "country": "IN"}
    # a value changes: the old index entry goes
    geo.set_partition_tags(T, "dt=2024-01-01/city=Pune", {"province": "XX"})
    assert tagged(geo, "province", "XX") == [("2024-01-01", "Pune")]
    assert ("2024-01-01", "Pune") not in tagged(geo, "province", "MH")
    assert ("province", "MH", 19723, "Pune") not in index_keys(geo)


def test_unset_and_bad_calls(geo: Metastore) -> None:
    geo.set_partition_tags(T, "", {"a": "1", "b": "2"})
    r = geo.unset_partition_tags(T, "dt=2024-01-01", ["a", "never"])
    assert (r.matched, r.changed) == (5, 5)
    assert len(tagged(geo, "a")) == 5 and len(tagged(geo, "b")) == 10
    assert geo.unset_partition_tags(T, "dt=2024-01-01", ["a"]).version is None
    cases = [
        (lambda: geo.set_partition_tags(T, "nope=1", {"a": "1"}), "'nope' is not a partition column"),
        (lambda: geo.set_partition_tags(T, "dt=yesterday", {"a": "1"}), "is not a value of partition column dt"),
        (lambda: geo.set_partition_tags(T, "city=Pune", {}), "no tags given"),
        (lambda: geo.set_partition_tags(T, "city=Pune", {"": "1"}), "non-empty"),
        (lambda: geo.set_partition_tags(T, "city=Pune", {"a=b": "1"}), "must not contain '='"),
        (lambda: geo.set_partition_tags(T, "city=Pune", {"a": None}), "must be a string"),
        (lambda: geo.set_partition_tags(T, "city=Pune", {"a": "x" * 2000}), "longer than"),
        (lambda: geo.set_partition_tags(T, "city='Pune", {"a": "1"}), "cannot read"),
    ]
    for fn, message in cases:
        with pytest.raises(InvalidArgument, match=message):
            fn()
    with pytest.raises(NoSuchTable):
        geo.set_partition_tags("main.geo.nope", "", {"a": "1"})
    geo.create_table("main.geo.flat", "id BIGINT")
    with pytest.raises(InvalidArgument, match="not partitioned"):
        geo.set_partition_tags("main.geo.flat", "", {"a": "1"})


def test_too_many_partitions_in_one_call(geo: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    from ushas_catalog.catalog import partition_tags

    monkeypatch.setattr(partition_tags, "MAX_PARTITIONS_PER_CALL", 3)
    version = geo.get_table(T).version
    with pytest.raises(InvalidArgument, match="more than 3 partitions"):
        geo.set_partition_tags(T, "", {"a": "1"})
    assert geo.get_table(T).version == version and index_keys(geo) == []  # nothing half-written
    assert geo.set_partition_tags(T, "dt=2024-01-01/city=Pune", {"a": "1"}).changed == 1


# ---- history and the change feed ------------------------------------------------------------------------
def test_a_tag_change_is_a_commit_and_a_change_event(geo: Metastore) -> None:
    before = geo.get_table(T).version
    r = geo.set_partition_tags(T, "city=Delhi", {"province": "DL"})
    assert r.version == before + 1
    h = geo.history(T, limit=1)[0]
    assert h.operation == "SET PARTITION TAGS" and h.detail["tags"] == {"province": "DL"}
    assert h.detail["partitions"] == 2 and {"dt": "2024-01-01", "city": "Delhi"} in h.detail["specs"]
    r = geo.unset_partition_tags(T, "city=Delhi", ["province"])
    events = list(geo.changes())[-2:]
    assert [(e.change, e.operation, e.version) for e in events] == [
        ("ALTERED", "SET PARTITION TAGS", before + 1), ("ALTERED", "UNSET PARTITION TAGS", before + 2)]
    assert events[0].detail["tags"] == {"province": "DL"} and events[1].detail["keys"] == ["province"]
    assert not events[0].added and not events[0].dropped  # no partition was added or dropped


# ---- the index follows the partitions ---------------------------------------------------------------------
def test_tags_are_kept_across_an_overwrite_and_go_with_a_drop(geo: Metastore) -> None:
    geo.set_partition_tags(T, "city=Pune", {"province": "MH", "band": "5M"})
    pune1 = {"dt": "2024-01-01", "city": "Pune"}
    # an overwrite of the partition (INSERT OVERWRITE ... PARTITION, dynamic overwrite): replaced, tags kept
    geo.replace_partitions(T, [pune1], [Partition(pune1, bytes=999, rows=99)])
    p = geo.get_partition(T, pune1)
    assert p.bytes == 999 and p.tags == {"province": "MH", "band": "5M"}
    assert tagged(geo, "band", "5M") == [("2024-01-01", "Pune"), ("2024-01-02", "Pune")]
    stats = {(s.key, s.value): s for s in geo.partition_tag_stats(T)}
    assert (stats[("band", "5M")].partitions, stats[("band", "5M")].bytes) == (2, 999 + 100)
    # an overwrite that drops the partition (static overwrite of dt=2024-01-01 without Pune)
    geo.replace_partitions(T, [{"dt": "2024-01-01"}], [Partition({"dt": "2024-01-01", "city": "Mumbai"})])
    assert tagged(geo, "band") == [("2024-01-02", "Pune")]
    # drop partition
    geo.drop_partitions(T, [{"dt": "2024-01-02", "city": "Pune"}])
    assert tagged(geo, "band") == [] and index_keys(geo) == []
    # a partition added again under the same values starts untagged
    geo.add_partitions(T, [{"dt": "2024-01-02", "city": "Pune"}])
    assert geo.get_partition(T, {"dt": "2024-01-02", "city": "Pune"}).tags == {}


def test_truncate_restore_and_replace_table(geo: Metastore) -> None:
    geo.set_partition_tags(T, "city=Chennai", {"province": "TN"})
    tagged_at = geo.get_table(T).version
    geo.drop_partitions(T, [{"city": "Chennai"}])
    assert index_keys(geo) == []
    geo.restore_table(T, tagged_at)  # the partitions come back with the tags they had
    assert tagged(geo, "province", "TN") == [("2024-01-01", "Chennai"), ("2024-01-02", "Chennai")]
    assert len(index_keys(geo)) == 2
    geo.replace_table(T, "id BIGINT, dt DATE, city STRING", partition_by=["dt", "city"])
    assert index_keys(geo) == [] and tagged(geo, "province") == []


def test_table_drop_undrop_and_purge(geo: Metastore) -> None:
    geo.set_partition_tags(T, "city=Pune", {"province": "MH"})
    geo.drop_table(T)
    with pytest.raises(NoSuchTable):
        geo.partitions_by_tag(T, "province")
    geo.undrop_table(T)
    assert tagged(geo, "province", "MH") == [("2024-01-01", "Pune"), ("2024-01-02", "Pune")]
    geo.drop_table(T, purge=True)
    prefix = geo.project_path.key()
    leftovers = geo.run(lambda tr: [kv.key for kv in tr.get_range(prefix, prefix + b"\xff")
                                    if b"Txt" in kv.key])
    assert leftovers == []


def test_a_bulk_drop_removes_the_index_entries(geo: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (bulk, bulk_objects):
        monkeypatch.setattr(module, "BULK_AT", 3)
        monkeypatch.setattr(module, "CHUNK_ITEMS", 2)
    geo.set_partition_tags(T, "", {"country": "IN"})
    assert len(index_keys(geo)) == 10
    r = geo.drop_partitions(T, [{"dt": "2024-01-01", "city": c} for c in CITIES])  # 5 > BULK_AT: in chunks
    assert r.dropped == 5
    assert len(tagged(geo, "country", "IN")) == 5 and len(index_keys(geo)) == 5


# ---- statistics ---------------------------------------------------------------------------------------
def test_stats_per_tag(geo: Metastore) -> None:
    for city, province in CITIES.items():
        geo.set_partition_tags(T, f"city={city}", {"province": province})
    geo.set_partition_tags(T, "dt=2024-01-02", {"day": "tue"})
    got = [(s.key, s.value, s.partitions, s.bytes, s.rows) for s in geo.partition_tag_stats(T)]
    assert got == [("day", "tue", 5, 1500, 150), ("province", "DL", 2, 800, 80), ("province", "MH", 6, 1200, 120),
                   ("province", "TN", 2, 1000, 100)]
    assert [s.value for s in geo.partition_tag_stats(T, "province")] == ["DL", "MH", "TN"]


# ---- 100,000 partitions -------------------------------------------------------------------------------------
def test_selection_by_tag_at_100k_partitions_reads_only_the_tag(ms: Metastore) -> None:
    big = "main.geo.big"
    ms.create_catalog("main")
    ms.create_database("main.geo", location="/wh/geo")
    ms.create_table(big, "id BIGINT, city STRING, ward INT", partition_by=["city", "ward"])
    ms.add_partitions(big, [{"city": f"c{c:04d}", "ward": w} for c in range(1_000) for w in range(100)])
    # 300 partitions of three cities, tagged by filter; one more city by spec
    r = ms.set_partition_tags(big, "city IN ('c0007', 'c0500', 'c0999')", {"band": "metro"})
    assert r.changed == 300
    with KeyReads.on(ms.db) as reads:
        r = ms.set_partition_tags(big, "city=c0123", {"band": "town"})
    assert r.changed == 100 and reads.keys < 400  # the key range of one city, not 100,000 partitions
    with KeyReads.on(ms.db) as reads:
        found = ms.partitions_by_tag(big, "band", "metro")
    assert len(found) == 300 and {p.spec["city"] for p in found} == {"c0007", "c0500", "c0999"}
    # the tag's index keys and their records (read in windows of WINDOW keys while they are close), not 100,000
    assert reads.keys <= 2 * 300 + 4 * WINDOW
    with KeyReads.on(ms.db) as reads:
        stats = ms.partition_tag_stats(big, "band")
    assert [(s.value, s.partitions) for s in stats] == [("metro", 300), ("town", 100)]
    assert reads.keys <= 2 * 400 + 5 * WINDOW


# ---- the CLI ----------------------------------------------------------------------------------------------------
def run(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli(geo: Metastore, store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    geo.close()
    rc, out, _ = run(capsys, store_uri, "partition-tags", "set", T, "city=Pune", "province=MH", "size=large")
    assert rc == 0 and "tagged 2 of 2 partitions" in out
    rc, out, _ = run(capsys, store_uri, "partition-tags", "set", T, "city IN ('Mumbai', 'Nagpur')", "province=MH")
    assert rc == 0 and "tagged 4 of 4" in out
    rc, out, _ = run(capsys, store_uri, "--json", "partition-tags", "set", T, "dt=2024-01-01/city=Delhi",
                     "province=DL")
    assert json.loads(out)["changed"] == 1
    rc, out, _ = run(capsys, store_uri, "partitions", T, "--tag", "province=MH")
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 7 and "TAGS" in lines[0] and "province=MH,size=large" in lines[3]
    rc, out, _ = run(capsys, store_uri, "partitions", T, "--tag", "province=MH", "--tag", "size", "--json")
    assert [p["spec"]["city"] for p in json.loads(out)] == ["Pune", "Pune"]
    rc, out, _ = run(capsys, store_uri, "partitions", T, "--tag", "province=MH", "--prefix", "dt=2024-01-02",
                     "--limit", "2", "--json")
    assert [(p["spec"]["dt"], p["spec"]["city"]) for p in json.loads(out)] == [("2024-01-02", "Mumbai"),
                                                                              ("2024-01-02", "Nagpur")]
    rc, out, _ = run(capsys, store_uri, "partition-tags", "stats", T)
    assert rc == 0 and out.splitlines()[0].split() == ["KEY", "VALUE", "PARTITIONS", "BYTES", "ROWS"]
    rc, out, _ = run(capsys, store_uri, "--json", "partition-tags", "stats", T, "--key", "province")
    assert [(s["value"], s["partitions"]) for s in json.loads(out)] == [("DL", 1), ("MH", 6)]
    rc, out, _ = run(capsys, store_uri, "partition-tags", "unset", T, "city=Pune", "size")
    assert rc == 0 and "untagged 2 of 2" in out
    rc, out, err = run(capsys, store_uri, "partition-tags", "set", T, "city=Pune", "province")
    assert rc == 2 and "must be KEY=VALUE" in err and len(err.strip().splitlines()) == 1
    rc, out, err = run(capsys, store_uri, "partition-tags", "set", T, "town=Pune", "a=b")
    assert rc == 2 and "'town' is not a partition column" in err


def test_ushas_check_compares_the_index_with_the_records(geo: Metastore) -> None:
    from ushas_catalog.check import check_partition_tags

    geo.set_partition_tags(T, "city=Pune", {"province": "MH"})
    geo.replace_partitions(T, [{"dt": "2024-01-01", "city": "Pune"}], [{"dt": "2024-01-01", "city": "Pune"}])
    geo.drop_partitions(T, [{"dt": "2024-01-02", "city": "Pune"}])
    assert list(check_partition_tags(geo)) == []

    def corrupt(tr: Any) -> None:
        base = index_path(geo.resolver.table(tr, TableName.parse(T)).path).key()
        tr.clear(base + fdbtuple.pack(("province", "MH", 19723, "Pune")))
        tr.set(base + fdbtuple.pack(("province", "MH", 19723, "Delhi")), b"")

    geo.run(corrupt)
    found = [str(f) for f in check_partition_tags(geo)]
    assert len(found) == 2 and "without that tag" in found[0] and "not in the index" in found[1]


def test_a_spec_naming_no_partition_is_an_error_a_filter_is_not(geo: Metastore) -> None:
    from ushas_catalog.errors import NoSuchPartition

    with pytest.raises(NoSuchPartition, match="no partition city=Goa in main.geo.cities"):
        geo.set_partition_tags(T, "city=Goa", {"a": "1"})
    with pytest.raises(NoSuchPartition):
        geo.unset_partition_tags(T, {"dt": "2023-01-01"}, ["a"])
    assert geo.set_partition_tags(T, "city = 'Goa'", {"a": "1"}).matched == 0
    assert geo.set_partition_tags(T, "city = Pune ", {"a": "1"}).changed == 2  # a spec: values trimmed


def test_an_overwrite_planned_before_a_tag_change_commits_and_keeps_the_tags(geo: Metastore) -> None:
    planned = geo.get_table(T).version
    geo.set_partition_tags(T, "city=Pune", {"province": "MH"})
    pune = {"dt": "2024-01-01", "city": "Pune"}
    r = geo.replace_partitions(T, [pune], [Partition(pune, rows=1)], unchanged_since=planned)
    assert r.replaced == 1  # no WriteConflict: a tag change is not a change of the partition's data
    assert geo.get_partition(T, pune).tags == {"province": "MH"}
    assert len(tagged(geo, "province", "MH")) == 2


def test_tags_given_with_added_and_replaced_partitions(geo: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    geo.add_partitions(T, [Partition({"dt": "2024-02-01", "city": "Goa"}, tags={"province": "GA"})])
    assert tagged(geo, "province", "GA") == [("2024-02-01", "Goa")]
    goa = {"dt": "2024-02-01", "city": "Goa"}
    geo.replace_partitions(T, [goa], [Partition(goa, tags={"beach": "yes"})])  # given tags join the kept ones
    assert geo.get_partition(T, goa).tags == {"province": "GA", "beach": "yes"}
    listed = [p for p in geo.list_partitions(T) if p.spec["city"] == "Goa"]
    geo.replace_partitions(T, [goa], listed)  # a listing written back: the same tags
    assert geo.get_partition(T, goa).tags == {"province": "GA", "beach": "yes"}
    assert sorted(e[:2] for e in index_keys(geo)) == [("beach", "yes"), ("province", "GA")]
    with pytest.raises(InvalidArgument, match="must not contain '='"):
        geo.add_partitions(T, [Partition({"dt": "2024-02-02", "city": "Goa"}, tags={"a=b": "1"})])
    monkeypatch.setattr(bulk, "BULK_AT", 1)
    with pytest.raises(InvalidArgument, match="then tag them"):
        geo.add_partitions(T, [Partition({"dt": "2024-02-0%d" % d, "city": "Goa"}, tags={"a": "1"}) for d in (3, 4)])


def test_reads_by_tag_of_scattered_and_split_partition_records(ms: Metastore) -> None:
    from ushas_catalog.model.data_files import DataFile

    t = "main.geo.wards"
    ms.create_catalog("main")
    ms.create_database("main.geo", location="/wh/geo")
    ms.create_table(t, "id BIGINT, ward INT", partition_by=["ward"])
    ms.add_partitions(t, [{"ward": w} for w in range(1_000)])
    ms.set_partition_tags(t, "ward IN (" + ", ".join(str(w) for w in range(0, 1_000, 37)) + ")", {"z": "1"})
    files = [DataFile(f"/wh/geo/wards/ward=5/part-{i:05d}-{'x' * 60}.parquet", 10, 1) for i in range(1_500)]
    ms.replace_partitions(t, [{"ward": 5}], [Partition({"ward": 5}, data_files=files, files=1_500, bytes=15_000)])
    ms.set_partition_tags(t, "ward BETWEEN 5 AND 6", {"z": "1", "big": "yes"})  # ward 5: over 100 kB, split
    with KeyReads.on(ms.db) as reads:
        found = ms.partitions_by_tag(t, "z", "1")
    assert [p.values["ward"] for p in found] == sorted({*range(0, 1_000, 37), 5, 6})
    assert reads.keys < 400  # scattered: a window, then one read each (not the 1,000 partitions)
    assert [len(p.data_files or []) for p in ms.partitions_by_tag(t, "big")] == [1_500, 0]
    assert [(s.value, s.partitions, s.bytes) for s in ms.partition_tag_stats(t, "big")] == [("yes", 2, 15_000)]


def test_too_many_record_bytes_in_one_call(geo: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    from ushas_catalog.catalog import partition_tags

    monkeypatch.setattr(partition_tags, "MAX_REWRITE_BYTES", 100)
    version = geo.get_table(T).version
    with pytest.raises(InvalidArgument, match="more than 100 bytes of records"):
        geo.set_partition_tags(T, "", {"a": "1"})
    assert geo.get_table(T).version == version and index_keys(geo) == []
    assert [p.tags for p in geo.list_partitions(T)] == [{}] * 10
