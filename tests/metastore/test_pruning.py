"""Partition pruning by the catalog: filters -> key ranges + residual, checked against evaluating
every filter on every partition (the ranges read only what can match, and lose nothing)."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ushas_catalog.metastore import Metastore
from ushas_catalog.data.pruning import Pruning
from ushas_catalog.spark.reads import list_files

DAYS = [dt.date(2024, 1, d) for d in range(1, 8)]
HOURS = [0, 1, 5, 12, 23]
REGIONS = ["eu", "us", "", "é"]


@pytest.fixture
def events(ms: Metastore) -> Metastore:
    """main.sales.events partitioned by (dt DATE, h INT, region STRING) with 7 * 5 * 4 + NULLs."""
    ms.create_catalog("main")
    ms.create_database("main.sales", location="/wh/sales")
    ms.create_table("main.sales.events", schema="id BIGINT, dt DATE, h INT, region STRING",
                    partition_by=["dt", "h", "region"])
    specs: list[dict[str, Any]] = [{"dt": d, "h": h, "region": r} for d in DAYS for h in HOURS for r in REGIONS]
    specs += [{"dt": None, "h": 1, "region": "eu"}, {"dt": DAYS[0], "h": None, "region": None}]
    ms.add_partitions("main.sales.events", specs)
    return ms


def _truth(f: dict[str, Any] | None, values: dict[str, Any]) -> Any:
    """SQL three-valued evaluation on decoded values (None = NULL)."""
    if f is None:
        return True
    op = f["op"]
    if op in ("and", "or"):
        rs = [_truth(c, values) for c in f["children"]]
        if op == "and":
            return False if False in rs else (None if None in rs else True)
        return True if True in rs else (None if None in rs else False)
    if op == "not":
        r = _truth(f["child"], values)
        return None if r is None else not r
    v = values[f["column"]]
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if v is None:
        return None
    if op == "in":
        return v in [_decode(f["column"], x) for x in f["values"]]
    lit = _decode(f["column"], f["value"])
    return {"eq": v == lit, "lt": v < lit, "le": v <= lit, "gt": v > lit, "ge": v >= lit}[op]


def _decode(column: str, x: Any) -> Any:
    if column == "dt":
        return dt.date(1970, 1, 1) + dt.timedelta(days=x["days"]) if isinstance(x, dict) else dt.date.fromisoformat(x)
    return x


def _day(d: dt.date) -> dict[str, int]:
    return {"days": (d - dt.date(1970, 1, 1)).days}


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    cmp = st.sampled_from(["eq", "lt", "le", "gt", "ge"])
    return st.one_of(
        st.builds(lambda op, d: {"op": op, "column": "dt", "value": _day(d)}, cmp,
                  st.dates(dt.date(2023, 12, 30), dt.date(2024, 1, 9))),
        st.builds(lambda op, d: {"op": op, "column": "dt", "value": d.isoformat()}, cmp, st.sampled_from(DAYS)),
        st.builds(lambda op, h: {"op": op, "column": "h", "value": h}, cmp, st.integers(-1, 24)),
        st.builds(lambda op, r: {"op": op, "column": "region", "value": r}, cmp, st.sampled_from(REGIONS + ["e"])),
        st.builds(lambda vs: {"op": "in", "column": "h", "values": vs}, st.lists(st.integers(0, 24), max_size=4)),
        st.builds(lambda vs: {"op": "in", "column": "dt", "values": [_day(v) for v in vs]},
                  st.lists(st.sampled_from(DAYS), max_size=3)),
        st.builds(lambda c: {"op": "is_null", "column": c}, st.sampled_from(["dt", "h", "region"])),
        st.builds(lambda c: {"op": "is_not_null", "column": c}, st.sampled_from(["dt", "h", "region"])),
    )


FILTERS = st.recursive(_leaf(), lambda inner: st.one_of(
    st.builds(lambda cs: {"op": "and", "children": cs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda cs: {"op": "or", "children": cs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda c: {"op": "not", "child": c}, inner)), max_leaves=6)


def _selected(ms: Metastore, f: dict[str, Any] | None) -> list[dict[str, Any]]:
    holder: dict[str, Pruning] = {}

    def ranges(scheme: Any) -> list[tuple[bytes, bytes]]:
        holder["p"] = Pruning(scheme, f)
        return holder["p"].key_ranges()

    scheme, parts = ms.scan_partitions("main.sales.events", ranges)
    return [scheme.values(key) for key, _ in parts if holder["p"].keep(key)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(f=FILTERS)
def test_pruning_keeps_every_match_once(events: Metastore, f: dict[str, Any]) -> None:
    every = list(events.list_partitions("main.sales.events"))
    expected = [p.values for p in every if _truth(f, p.values) is True]
    got = _selected(events, f)
    keys = [tuple(v.values()) for v in got]
    assert len(keys) == len(set(keys)), "a partition was read twice"
    assert all(v in got for v in expected), "a matching partition was pruned"
    # exact on what the catalog can evaluate: every filter here is fully evaluable
    assert sorted(map(repr, got)) == sorted(map(repr, expected))


@pytest.mark.parametrize("f, ranges", [
    (None, 1),
    ({"op": "eq", "column": "dt", "value": "2024-01-03"}, 1),
    ({"op": "in", "column": "dt", "values": ["2024-01-03", "2024-01-05"]}, 2),
    ({"op": "and", "children": [{"op": "eq", "column": "dt", "value": "2024-01-03"},
                                {"op": "in", "column": "h", "values": [1, 5]}]}, 2),
    ({"op": "and", "children": [{"op": "ge", "column": "dt", "value": "2024-01-03"},
                                {"op": "lt", "column": "dt", "value": "2024-01-05"}]}, 1),
    ({"op": "or", "children": [{"op": "eq", "column": "dt", "value": "2024-01-03"},
                               {"op": "eq", "column": "dt", "value": "2024-01-04"}]}, 2),
    ({"op": "eq", "column": "h", "value": 5}, 1),         # a later column: the whole table, filtered
    ({"op": "unknown"}, 1),
    ({"op": "false"}, 0),
    ({"op": "and", "children": [{"op": "eq", "column": "dt", "value": "2024-01-03"},
                                {"op": "eq", "column": "dt", "value": "2024-01-04"}]}, 0),
])
def test_key_ranges_follow_leading_columns(events: Metastore, f: Any, ranges: int) -> None:
    scheme, _ = events.list_partition_keys("main.sales.events")
    assert len(Pruning(scheme, f).key_ranges()) == ranges


def test_ranges_touch_only_selected_keys(events: Metastore) -> None:
    """One day of seven: the range read holds that day's partitions and nothing else."""
    scheme, _ = events.list_partition_keys("main.sales.events")
    (begin, end), = Pruning(scheme, {"op": "eq", "column": "dt", "value": "2024-01-03"}).key_ranges()
    scheme, parts = events.scan_partitions("main.sales.events", lambda s: [(begin, end)])
    days = {scheme.values(key)["dt"] for key, _ in parts}
    assert days == {dt.date(2024, 1, 3)}


def test_unknown_parts_prune_nothing_they_cannot_judge(events: Metastore) -> None:
    f = {"op": "or", "children": [{"op": "eq", "column": "dt", "value": "2024-01-03"}, {"op": "unknown"}]}
    assert len(_selected(events, f)) == len(list(events.list_partitions("main.sales.events")))
    f = {"op": "and", "children": [{"op": "eq", "column": "dt", "value": "2024-01-03"}, {"op": "unknown"}]}
    assert {v["dt"] for v in _selected(events, f)} == {dt.date(2024, 1, 3)}


def test_list_files_answers_rows_locations_and_files(events: Metastore) -> None:
    from ushas_catalog.model.partitions import Partition

    events.add_partitions("main.sales.events", [Partition({"dt": "2024-02-01", "h": 1, "region": "x"},
                                                          location="file:/elsewhere/day")])
    r = {"ctx": {"uri": "-", "project": "acme", "catalog": "main", "spark_catalog": "main", "warehouse": "/wh"},
         "namespace": ["sales"], "name": "events",
         "filter": {"op": "eq", "column": "dt", "value": {"days": (dt.date(2024, 2, 1) - dt.date(1970, 1, 1)).days}}}
    answer = list_files(events, r)
    assert answer["columns"] == ["dt", "h", "region"]
    assert answer["rows"] == [["2024-02-01", 1, "x"]]
    assert answer["locations"] == ["file:/elsewhere/day"]
    assert answer["files"] == [None]  # nothing recorded its files: the shim lists that directory


def test_bad_filter_is_refused(events: Metastore) -> None:
    from ushas_catalog.errors import InvalidArgument

    r = {"ctx": {"uri": "-", "project": "acme", "catalog": "main", "spark_catalog": "main", "warehouse": "/wh"},
         "namespace": ["sales"], "name": "events", "filter": ["dt"]}
    with pytest.raises(InvalidArgument):
        list_files(events, r)
