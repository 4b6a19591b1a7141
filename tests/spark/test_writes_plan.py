"""plan_write without Spark: which partitions a committed V2 write puts (with their file lists) and
drops, and which files it lets go (kept until purge)."""
from __future__ import annotations

import pytest

from ushas_catalog.model.data_files import DataFile
from ushas_catalog.errors import InvalidArgument
from ushas_catalog.model.partitions import Partition
from ushas_catalog.spark.writes import plan_write

LOC = "file:/w/t"


def f(path: str, size: int = 10) -> DataFile:
    return DataFile(f"{LOC}/{path}", size, 1)


def part(dt: str, files: int = 1, rows: int | None = 5, location: str | None = None,
         recorded: bool = True) -> Partition:
    data = [f(f"dt={dt}/old-{i}.parquet") for i in range(files)] if recorded else None
    return Partition(values={"dt": dt}, location=location or f"{LOC}/dt={dt}", files=files, bytes=10 * files,
                     rows=rows, spec={"dt": dt}, data_files=data)


def written(path: str, new: int, existing: int = 0) -> dict[str, object]:
    prefix = f"{path}/" if path else ""
    return {"path": path, "files": [f(f"{prefix}new-{i}.parquet").to_json() for i in range(new)],
            "existing": [f(f"{prefix}there-{i}.parquet").to_json() for i in range(existing)]}


EXISTING = [part("a"), part("b"), part("c")]


def test_append_adds_to_the_file_list() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, None, {}, "append", [], [written("dt=a", 1, 1)], 3)
    assert plan.drop == [] and not plan.garbage
    [p] = plan.put
    assert (p.values, p.location, p.files, p.bytes, p.rows) == ({"dt": "a"}, f"{LOC}/dt=a", 2, 20, 8)
    assert [x.path for x in p.data_files] == [f"{LOC}/dt=a/old-0.parquet", f"{LOC}/dt=a/new-0.parquet"]


def test_append_to_unrecorded_partition_keeps_listing_it_unless_empty() -> None:
    old = [part("a", files=2, recorded=False), part("b", files=0, recorded=False)]
    plan = plan_write(LOC, ["dt"], old, None, {}, "append", [], [written("dt=a", 1, 2), written("dt=b", 1, 0)], 3)
    a, b = plan.put
    assert a.data_files is None and a.files == 3
    assert [x.path for x in b.data_files] == [f"{LOC}/dt=b/new-0.parquet"]


def test_append_to_two_partitions_leaves_rows_unknown() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, None, {}, "append", [], [written("dt=a", 1), written("dt=d", 1)], 3)
    assert [p.rows for p in plan.put] == [None, None] and [p.files for p in plan.put] == [2, 1]


def test_dynamic_replaces_only_written_partitions_and_keeps_their_files_for_purge() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, None, {}, "dynamic", [], [written("dt=b", 1), written("dt=d", 1)], 4)
    assert plan.drop == []
    assert [(p.values["dt"], p.files) for p in plan.put] == [("b", 1), ("d", 1)]  # b: the new file only
    assert [x.path for x in plan.put[0].data_files] == [f"{LOC}/dt=b/new-0.parquet"]
    assert [x.path for x in plan.garbage.files] == [f"{LOC}/dt=b/old-0.parquet"] and not plan.garbage.directories


def test_truncate_drops_what_was_not_written() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, None, {}, "truncate", [], [written("dt=a", 1)], 1)
    assert plan.drop == [{"dt": "b"}, {"dt": "c"}]
    assert [(p.values["dt"], p.files, p.rows) for p in plan.put] == [("a", 1, 1)]
    assert sorted(x.path for x in plan.garbage.files) == [f"{LOC}/dt={d}/old-0.parquet" for d in "abc"]


def test_overwrite_by_filter() -> None:
    flt = [{"op": "in", "column": "dt", "values": ["b", "c"]}]
    plan = plan_write(LOC, ["dt"], EXISTING, None, {}, "overwrite", flt, [written("dt=b", 1), written("dt=a", 1)], 2)
    assert plan.drop == [{"dt": "c"}]
    # b replaced (new files only); a is outside the condition: appended to
    assert [(p.values["dt"], p.files) for p in plan.put] == [("b", 1), ("a", 2)]
    assert sorted(x.path for x in plan.garbage.files) == [f"{LOC}/dt=b/old-0.parquet", f"{LOC}/dt=c/old-0.parquet"]


def test_replaced_unrecorded_partitions_give_what_was_there() -> None:
    old = [part("a", recorded=False), part("b", recorded=False)]
    plan = plan_write(LOC, ["dt"], old, None, {}, "truncate", [], [written("dt=a", 1, 2)], 1)
    assert sorted(x.path for x in plan.garbage.files) == [f"{LOC}/dt=a/there-0.parquet", f"{LOC}/dt=a/there-1.parquet"]
    assert plan.garbage.directories == [f"{LOC}/dt=b"]


def test_external_tables_give_nothing_to_purge() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, None, {}, "truncate", [], [written("dt=a", 1)], 1, managed=False)
    assert not plan.garbage and plan.drop == [{"dt": "b"}, {"dt": "c"}]


def test_overwrite_keeps_partition_properties_and_refuses_data_columns() -> None:
    old = Partition(values={"dt": "a"}, location=f"{LOC}/dt=a", properties={"k": "v"}, spec={"dt": "a"})
    plan = plan_write(LOC, ["dt"], [old], None, {}, "overwrite", [{"op": "eq", "column": "dt", "value": "a"}],
                      [written("dt=a", 1)], 1)
    assert plan.put[0].properties == {"k": "v"}
    with pytest.raises(InvalidArgument, match="not a partition column"):
        plan_write(LOC, ["dt"], [old], None, {}, "overwrite", [{"op": "eq", "column": "id", "value": 1}], [], 0)


def test_null_and_typed_partition_values_match_written_directories() -> None:
    old = [Partition(values={"n": None}, location=f"{LOC}/n=__HIVE_DEFAULT_PARTITION__", spec={"n": "x"}),
           Partition(values={"n": 7}, location=f"{LOC}/n=7", spec={"n": "7"})]
    plan = plan_write(LOC, ["n"], old, None, {}, "dynamic", [],
                      [written("n=__HIVE_DEFAULT_PARTITION__", 1), written("n=7", 1)], 2)
    assert [p.values for p in plan.put] == [{"n": None}, {"n": "7"}] and plan.drop == []


def test_unpartitioned_file_lists_and_stats() -> None:
    w = [written("", 1, 2)]
    rec = [DataFile(f"{LOC}/old-{i}.parquet", 10, 1) for i in range(2)]
    append = plan_write(LOC, [], [], rec, {"rows": 4}, "append", [], w, 2)
    assert append.stats == {"files": 3, "bytes": 30, "rows": 6} and len(append.table_files) == 3
    assert plan_write(LOC, [], [], None, {"rows": None}, "append", [], w, 2).stats["rows"] is None
    assert plan_write(LOC, [], [], None, {}, "append", [], w, 2).table_files is None  # files there: listed
    assert len(plan_write(LOC, [], [], None, {}, "append", [], [written("", 1)], 2).table_files) == 1
    over = plan_write(LOC, [], [], rec, {"rows": 4}, "dynamic", [], w, 2)
    assert over.stats == {"files": 1, "bytes": 10, "rows": 2} and over.garbage.files == rec
    unrecorded = plan_write(LOC, [], [], None, {}, "truncate", [], w, 2)
    assert [x.path for x in unrecorded.garbage.files] == [f"{LOC}/there-0.parquet", f"{LOC}/there-1.parquet"]
    with pytest.raises(InvalidArgument, match="overwritten whole"):
        plan_write(LOC, [], [], None, {}, "overwrite", [{"op": "eq", "column": "x", "value": 1}], w, 1)
    with pytest.raises(InvalidArgument, match="unknown write mode"):
        plan_write(LOC, [], [], None, {}, "merge", [], w, 1)


def test_written_directory_must_name_the_partition_columns() -> None:
    with pytest.raises(InvalidArgument, match="partition columns"):
        plan_write(LOC, ["dt", "h"], [], None, {}, "append", [], [written("dt=a", 1)], 1)


def test_replaced_partition_at_its_own_location_moves_to_the_written_directory() -> None:
    old = [part("a", location="file:/custom/a", recorded=False)]
    plan = plan_write(LOC, ["dt"], old, None, {}, "dynamic", [], [written("dt=a", 1)], 1)
    assert plan.put[0].location == f"{LOC}/dt=a" and plan.garbage.directories == ["file:/custom/a"]


def test_append_to_partition_at_its_own_location_records_both(tmp_path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"12345")
    old = [part("a", location=f"file:{tmp_path}", recorded=False)]
    plan = plan_write(LOC, ["dt"], old, None, {}, "append", [], [written("dt=a", 1)], 1)
    p = plan.put[0]
    assert p.location == f"file:{tmp_path}"
    assert sorted(x.path for x in p.data_files) == sorted([f"file:{tmp_path}/x.parquet", f"{LOC}/dt=a/new-0.parquet"])


def test_file_replacement_replaces_exactly_the_files_read_and_conflicts_when_one_is_gone() -> None:
    from ushas_catalog.errors import WriteConflict
    from ushas_catalog.spark.writes import plan_file_replacement

    existing = [part("a", files=3), part("b", files=2), part("c")]
    read = [{"values": {"dt": "a"}, "files": ["file:///w/t/dt=a/old-1.parquet"]},  # spelled file:/// by Hadoop
            {"values": {"dt": "c"}, "files": [f"{LOC}/dt=c/old-0.parquet"]}]
    plan = plan_file_replacement(LOC, ["dt"], existing, None, read, [written("dt=a", 1), written("dt=d", 1)], 4)
    by = {p.values["dt"]: [x.path.rsplit("/", 1)[1] for x in p.data_files] for p in plan.put}
    # a: one file swapped, the others kept; b: untouched (not put); c: its only file gone, so dropped; d: new
    assert by == {"a": ["old-0.parquet", "old-2.parquet", "new-0.parquet"], "d": ["new-0.parquet"]}
    assert plan.drop == [{"dt": "c"}]
    assert sorted(x.path for x in plan.garbage.files) == [f"{LOC}/dt=a/old-1.parquet", f"{LOC}/dt=c/old-0.parquet"]
    # the statement read a file another write has replaced since, or a partition another write dropped
    for stale, where in [({"values": {"dt": "b"}, "files": [f"{LOC}/dt=b/gone.parquet"]}, "partition dt=b"),
                         ({"values": {"dt": "z"}, "files": [f"{LOC}/dt=z/old-0.parquet"]}, "partition dt=z")]:
        with pytest.raises(WriteConflict, match=where):
            plan_file_replacement(LOC, ["dt"], existing, None, [stale], [], 0)
    # unpartitioned: the recorded list minus what was read, plus what was written; rows unknown if any file stays
    old = [f(f"old-{i}.parquet") for i in range(3)]
    flat = plan_file_replacement(LOC, [], [], old, [{"values": {}, "files": [f"{LOC}/old-2.parquet"]}],
                                 [written("", 1)], 2)
    assert [x.path.rsplit("/", 1)[1] for x in flat.table_files or []] == ["old-0.parquet", "old-1.parquet",
                                                                          "new-0.parquet"]
    assert flat.stats["rows"] is None and [x.path for x in flat.garbage.files] == [f"{LOC}/old-2.parquet"]
    with pytest.raises(WriteConflict, match="replaced or removed"):
        plan_file_replacement(LOC, [], [], old, [{"values": {}, "files": [f"{LOC}/nope.parquet"]}], [], 0)


class _Scheme:
    def spec(self, key: tuple[str, ...]) -> dict[str, str]:
        return {"dt": key[0]}


class _Record:
    def __init__(self, p: Partition) -> None:
        self.data_files, self.files_recorded = p.data_files or [], p.data_files is not None


def _base(parts: list[Partition], files: list[DataFile] | None = None) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(version=3, scheme=_Scheme() if parts else None, files=files,
                           partitions=[((p.values["dt"],), _Record(p)) for p in parts])


def _grown(p: Partition) -> Partition:
    """``p`` after another writer appended one file to it."""
    return Partition(values=p.values, location=p.location, spec=p.spec,
                     data_files=(p.data_files or []) + [f(f"dt={p.values['dt']}/other.parquet")])


@pytest.mark.parametrize("case,now,groups,writes,conflict", [
    ("nothing added", ["a", "b"], [("a", ["old-0"]), ("b", [])], [], None),
    ("added to a rewritten partition", ["a+", "b"], [("a", ["old-0"]), ("b", [])], [], "dt=a"),
    ("added to a partition only read", ["a", "b+"], [("a", ["old-0"]), ("b", [])], [], "dt=b"),
    ("added to a partition not read", ["a", "b+"], [("a", ["old-0"])], [], None),
    ("added to a partition written into", ["a", "b+"], [], ["dt=b"], "dt=b"),
    ("a partition created since and written into", ["a", "c+"], [("a", [])], ["dt=c"], "dt=c"),
    ("a new partition of the statement", ["a"], [("a", [])], ["dt=d"], None),
])
def test_serializable_isolation_refuses_files_added_since_the_scan(case: str, now: list[str],
                                                                   groups: list[tuple[str, list[str]]],
                                                                   writes: list[str], conflict: str | None) -> None:
    from ushas_catalog.errors import WriteConflict
    from ushas_catalog.spark.writes import check_nothing_added

    then = [part(d) for d in ("a", "b")]
    existing = [(_grown(part(d.rstrip("+"))) if d.endswith("+") else part(d)) for d in now]
    if "c+" in now:  # created after the statement's version: every file of it is new
        existing[-1] = part("c")
    read = [{"values": {"dt": d}, "files": [f"{LOC}/dt={d}/{n}.parquet" for n in names],
             **({} if names else {"scanned_only": True})} for d, names in groups]
    args = (_base(then), LOC, ["dt"], existing, None, read, [written(w, 1) for w in writes])
    if conflict is None:
        check_nothing_added(*args)
    else:
        with pytest.raises(WriteConflict, match=f"partition {conflict} had 1 file"):
            check_nothing_added(*args)


def test_serializable_isolation_of_an_unpartitioned_table_and_the_property() -> None:
    from ushas_catalog.errors import WriteConflict
    from ushas_catalog.spark.writes import check_nothing_added, row_level_isolation

    old = [f("old-0.parquet")]
    check_nothing_added(_base([], old), LOC, [], [], old, [], [])
    with pytest.raises(WriteConflict, match="1 file\\(s\\) were added to the table by another write since version 3"):
        check_nothing_added(_base([], old), LOC, [], [], old + [f("other.parquet")], [], [])
    assert row_level_isolation({}) == "serializable"
    assert row_level_isolation({"ushas.row-level.isolation": " Snapshot"}) == "snapshot"
    with pytest.raises(InvalidArgument, match="ushas.row-level.isolation='none' is not one of serializable"):
        row_level_isolation({"ushas.row-level.isolation": "none"})

@pytest.mark.parametrize("values, spec, text, named", [
    ({"h": 3}, {"h": "3"}, "h=3", True),                          # typed value, directory text
    ({"h": 3}, {"h": "3"}, "h=03", True),                         # same number, other text (as _same)
    ({"h": 3}, {"h": "3"}, "h=4", False),
    ({"h": None}, {"h": "__HIVE_DEFAULT_PARTITION__"}, "h=__HIVE_DEFAULT_PARTITION__", True),
    ({"h": None}, {"h": "__HIVE_DEFAULT_PARTITION__"}, "h=0", False),
    ({"d": "2024-01-01"}, {"d": "2024-01-01"}, "d=2024-01-01", True),
    ({"d": "x", "h": 1}, {"d": "x", "h": "1"}, "d=x/h=1", True),
    ({"d": "x", "h": 1}, {"d": "x", "h": "1"}, "d=x/h=2", False),
])
def test_a_written_directory_finds_its_partition_by_value(values: dict[str, object], spec: dict[str, str],
                                                          text: str, named: bool) -> None:
    """The written directories are matched with the table's partitions by a lookup (a write of N partitions
    into a table of M is O(N + M)), with the same rule as before: the directory's text or the value."""
    where = "/".join(f"{k}={v}" for k, v in spec.items())
    old = Partition(values=values, location=f"{LOC}/{where}", files=1, bytes=10, rows=1, spec=spec,
                    properties={"kept": "yes"}, data_files=[f("old.parquet")])
    plan = plan_write(LOC, sorted(values), [old], None, {}, "overwrite", [{"op": "true"}], [written(text, 1)], 2)
    [p] = plan.put
    assert (p.properties == {"kept": "yes"}) == named
    assert plan.drop == ([] if named else [values])


def test_many_partitions_are_planned_in_linear_time() -> None:
    """Replacing every one of 20,000 partitions: each written directory is one lookup (the scan of every
    partition per directory took minutes at this size)."""
    n = 20_000
    existing = [part(str(i)) for i in range(n)]
    plan = plan_write(LOC, ["dt"], existing, None, {}, "dynamic", [], [written(f"dt={i}", 1) for i in range(n)], None)
    assert len(plan.put) == n and plan.drop == []
    assert all(len(p.data_files) == 1 for p in plan.put[:: n // 10])


@pytest.mark.parametrize("path, partition_by, values", [
    ("dt=2024-01-01", ["dt"], {"dt": "2024-01-01"}),
    ("a=1/b=x%2Fy", ["a", "b"], {"a": "1", "b": "x/y"}),
    ("b=x/a=1", ["a", "b"], {"a": "1", "b": "x"}),
    ("dt=__HIVE_DEFAULT_PARTITION__", ["dt"], {"dt": None}),
])
def test_a_written_directory_names_its_partition_values(path: str, partition_by: list[str],
                                                        values: dict[str, str | None]) -> None:
    from ushas_catalog.spark.writes import written_values

    assert written_values(path, partition_by) == values


@pytest.mark.parametrize("path, partition_by", [("dt=1", ["dt", "h"]), ("x=1", ["dt"]), ("dt=1/h=2", ["dt"])])
def test_a_written_directory_that_does_not_name_the_partition_columns_is_refused(path: str,
                                                                                 partition_by: list[str]) -> None:
    from ushas_catalog.spark.writes import written_values

    with pytest.raises(InvalidArgument, match=rf"written directory '{path}' does not name the partition columns"):
        written_values(path, partition_by)
