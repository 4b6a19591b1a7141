"""plan_write without Spark: which partitions a committed V2 write puts, drops and cleans."""
from __future__ import annotations

import pytest

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.partitions import Partition
from ushas_catalog.spark_writes import plan_write

LOC = "file:/w/t"


def part(dt: str, files: int = 1, rows: int | None = 5, location: str | None = None) -> Partition:
    return Partition(values={"dt": dt}, location=location or f"{LOC}/dt={dt}", files=files, bytes=10 * files,
                     rows=rows, spec={"dt": dt})


def written(path: str, files: int, new: int) -> dict[str, object]:
    return {"path": path, "files": files, "bytes": 10 * files, "new_files": new, "new_bytes": 10 * new}


EXISTING = [part("a"), part("b"), part("c")]


def test_append_adds_to_partition_totals() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, {}, "append", [], [written("dt=a", 2, 1)], 3)
    assert plan.drop == [] and plan.clean == []
    [p] = plan.put
    assert (p.values, p.location, p.files, p.bytes, p.rows) == ({"dt": "a"}, f"{LOC}/dt=a", 2, 20, 8)


def test_append_to_two_partitions_leaves_rows_unknown() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, {}, "append", [], [written("dt=a", 2, 1), written("dt=d", 1, 1)], 3)
    assert [p.rows for p in plan.put] == [None, None] and [p.files for p in plan.put] == [2, 1]


def test_dynamic_replaces_only_written_partitions() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, {}, "dynamic", [], [written("dt=b", 3, 1), written("dt=d", 1, 1)], 4)
    assert plan.drop == []
    assert [(p.values["dt"], p.files) for p in plan.put] == [("b", 1), ("d", 1)]  # b: the new file only
    assert plan.clean == [f"{LOC}/dt=b", f"{LOC}/dt=d"]


def test_truncate_drops_what_was_not_written() -> None:
    plan = plan_write(LOC, ["dt"], EXISTING, {}, "truncate", [], [written("dt=a", 2, 1)], 1)
    assert plan.drop == [{"dt": "b"}, {"dt": "c"}]
    assert [(p.values["dt"], p.files, p.rows) for p in plan.put] == [("a", 1, 1)]
    assert sorted(plan.clean) == [f"{LOC}/dt=a", f"{LOC}/dt=b", f"{LOC}/dt=c"]


def test_overwrite_by_filter() -> None:
    flt = [{"op": "in", "column": "dt", "values": ["b", "c"]}]
    plan = plan_write(LOC, ["dt"], EXISTING, {}, "overwrite", flt, [written("dt=b", 2, 1), written("dt=a", 2, 1)], 2)
    assert plan.drop == [{"dt": "c"}]
    # b replaced (new files only); a is outside the condition: appended to
    assert [(p.values["dt"], p.files) for p in plan.put] == [("b", 1), ("a", 2)]
    assert sorted(plan.clean) == [f"{LOC}/dt=b", f"{LOC}/dt=c"]


def test_overwrite_keeps_partition_properties_and_refuses_data_columns() -> None:
    old = Partition(values={"dt": "a"}, location=f"{LOC}/dt=a", properties={"k": "v"}, spec={"dt": "a"})
    plan = plan_write(LOC, ["dt"], [old], {}, "overwrite", [{"op": "eq", "column": "dt", "value": "a"}],
                      [written("dt=a", 1, 1)], 1)
    assert plan.put[0].properties == {"k": "v"}
    with pytest.raises(InvalidArgument, match="not a partition column"):
        plan_write(LOC, ["dt"], [old], {}, "overwrite", [{"op": "eq", "column": "id", "value": 1}], [], 0)


def test_null_and_typed_partition_values_match_written_directories() -> None:
    old = [Partition(values={"n": None}, location=f"{LOC}/n=__HIVE_DEFAULT_PARTITION__", spec={"n": "x"}),
           Partition(values={"n": 7}, location=f"{LOC}/n=7", spec={"n": "7"})]
    plan = plan_write(LOC, ["n"], old, {}, "dynamic", [],
                      [written("n=__HIVE_DEFAULT_PARTITION__", 1, 1), written("n=7", 1, 1)], 2)
    assert [p.values for p in plan.put] == [{"n": None}, {"n": "7"}] and plan.drop == []


def test_unpartitioned_stats() -> None:
    w = [written("", 3, 1)]
    assert plan_write(LOC, [], [], {"rows": 4}, "append", [], w, 2).stats == {"files": 3, "bytes": 30, "rows": 6}
    assert plan_write(LOC, [], [], {"rows": None}, "append", [], w, 2).stats["rows"] is None
    over = plan_write(LOC, [], [], {"rows": 4}, "dynamic", [], w, 2)
    assert over.stats == {"files": 1, "bytes": 10, "rows": 2} and over.clean == [LOC]
    with pytest.raises(InvalidArgument, match="overwritten whole"):
        plan_write(LOC, [], [], {}, "overwrite", [{"op": "eq", "column": "x", "value": 1}], w, 1)
    with pytest.raises(InvalidArgument, match="unknown write mode"):
        plan_write(LOC, [], [], {}, "merge", [], w, 1)


def test_written_directory_must_name_the_partition_columns() -> None:
    with pytest.raises(InvalidArgument, match="partition columns"):
        plan_write(LOC, ["dt", "h"], [], {}, "append", [], [written("dt=a", 1, 1)], 1)


def test_replaced_custom_location_is_cleaned_too() -> None:
    old = [part("a", location="file:/custom/a")]
    plan = plan_write(LOC, ["dt"], old, {}, "dynamic", [], [written("dt=a", 1, 1)], 1)
    assert plan.put[0].location == f"{LOC}/dt=a" and plan.clean == [f"{LOC}/dt=a", "file:/custom/a"]
