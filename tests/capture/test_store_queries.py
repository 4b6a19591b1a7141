"""The lineage store and its queries, from hand-made runs (no Spark)."""
from __future__ import annotations

import uuid

import pytest

from lineage.model import Dataset, EdgeSubtype
from lineage.query import LineageQueries, NodeRef
from lineage.store import Access, CapturedRun, LineageStore, RunStatus, run_id_for
from ushas_catalog.errors import InvalidArgument, NoSuchRun, NoSuchTable

from .pipeline import (CLEANED, RAW, T1, T2, T3, FakeTables, clean_run, col, edge, report_run, run)


@pytest.fixture
def tables() -> FakeTables:
    t = FakeTables()
    t.add(RAW)
    return t


@pytest.fixture
def store(store_uri: str, tables: FakeTables):
    s = LineageStore.open(store_uri, "p1", tables=tables)
    yield s
    s.close()


@pytest.fixture
def q(store: LineageStore) -> LineageQueries:
    assert store.record(clean_run())
    assert store.record(report_run())
    return LineageQueries(store)


def names(q: LineageQueries, nodes) -> set[str]:
    return {q.node_name(n) for n in nodes}


def test_metastore_tables_are_keyed_by_id(q: LineageQueries, tables: FakeTables) -> None:
    assert q.resolve("ushas.sales.raw") == NodeRef(tables.names["ushas.sales.raw"])
    assert q.resolve("ushas.sales.raw.amount") == NodeRef(tables.names["ushas.sales.raw"], "amount")
    assert q.resolve("spark_catalog.default.cleaned.amount") == NodeRef("spark_catalog.default.cleaned", "amount")
    assert q.resolve("default.cleaned") == NodeRef("spark_catalog.default.cleaned")  # session catalog implied
    assert q.resolve("file:/data/report.total") == NodeRef("file:/data/report", "total")


@pytest.mark.parametrize("start, depth, expected, truncated", [
    ("file:/data/report.total", None,
     {"spark_catalog.default.cleaned.amount", "spark_catalog.default.cleaned.country",
      "ushas.sales.raw.amount", "ushas.sales.raw.country"}, False),
    ("file:/data/report.total", 1,
     {"spark_catalog.default.cleaned.amount", "spark_catalog.default.cleaned.country"}, True),
    ("spark_catalog.default.cleaned.id", None, {"ushas.sales.raw.id", "ushas.sales.raw.amount"}, False),
    ("ushas.sales.raw.amount", None, set(), False),
    ("file:/data/report", None,
     {"spark_catalog.default.cleaned.amount", "spark_catalog.default.cleaned.country",
      "ushas.sales.raw.amount", "ushas.sales.raw.country"}, False),
])
def test_upstream(q: LineageQueries, start: str, depth: int | None, expected: set[str], truncated: bool) -> None:
    answer = q.upstream(start, depth=depth)
    assert names(q, answer.columns()) == expected
    assert answer.truncated is truncated


def test_downstream_follows_dataset_wide_edges(q: LineageQueries) -> None:
    answer = q.downstream("ushas.sales.raw.amount")
    assert names(q, answer.columns()) == {"spark_catalog.default.cleaned.amount", "file:/data/report.total",
                                          "file:/data/report.country"}
    assert {q.display(k)["name"] for k in answer.datasets()} == {"spark_catalog.default.cleaned", "file:/data/report"}
    direct = q.downstream("ushas.sales.raw.id")
    assert names(q, direct.columns()) == {"spark_catalog.default.cleaned.id"}


def test_impact_lists_runs_per_edge(q: LineageQueries) -> None:
    answer = q.impact("ushas.sales.raw.amount")
    data = q.answer_json(answer)
    runs = {(e["target"], e["source"]): e["runs"] for e in data["edges"]}
    assert runs[("spark_catalog.default.cleaned.amount", "ushas.sales.raw.amount")] == [str(run_id_for("app-1", 1))]
    assert runs[("file:/data/report.total", "spark_catalog.default.cleaned.amount")] == [str(run_id_for("app-1", 2))]
    with pytest.raises(InvalidArgument):
        q.impact("ushas.sales.raw")


def test_explain_path_with_expressions(q: LineageQueries) -> None:
    answer = q.upstream("file:/data/report.total")
    path = answer.path(NodeRef(q.resolve("ushas.sales.raw").dataset, "amount"))
    assert [(q.node_name(h.target), q.node_name(h.source), h.subtype) for h in path] == [
        ("file:/data/report.total", "spark_catalog.default.cleaned.amount", EdgeSubtype.AGGREGATION),
        ("spark_catalog.default.cleaned.amount", "ushas.sales.raw.amount", EdgeSubtype.TRANSFORMATION)]
    explained = q.answer_json(answer, explain=True)["paths"]["ushas.sales.raw.amount"]
    assert [h["expression"] for h in explained] == ["sum(amount)", "(amount * 100)"]


def test_runs_of_a_dataset_and_one_run(q: LineageQueries) -> None:
    rows = q.runs("spark_catalog.default.cleaned")
    assert [(acc, r.execution_id) for acc, r in rows] == [(Access.WRITE, 1), (Access.READ, 2)]
    assert [r.execution_id for _, r in q.runs("spark_catalog.default.cleaned", since=T1 + 1)] == [2]
    assert [r.execution_id for _, r in q.runs("spark_catalog.default.cleaned", until=T1)] == [1]
    one = q.run(str(run_id_for("app-1", 1))[:8])
    assert one["run"]["sql"].startswith("INSERT INTO cleaned")
    assert [d["name"] for d in one["inputs"]] == ["ushas.sales.raw"]
    assert [d["name"] for d in one["outputs"]] == ["spark_catalog.default.cleaned"]
    assert {(e["target"], e["source"], e["subtype"]) for e in one["edges"]} == {
        ("spark_catalog.default.cleaned.id", "ushas.sales.raw.id", "IDENTITY"),
        ("spark_catalog.default.cleaned.amount", "ushas.sales.raw.amount", "TRANSFORMATION"),
        ("spark_catalog.default.cleaned.country", "ushas.sales.raw.country", "IDENTITY"),
        ("spark_catalog.default.cleaned", "ushas.sales.raw.amount", "FILTER")}


def test_as_of_time_windows(store: LineageStore, q: LineageQueries) -> None:
    # a later version of the cleaning job derives amount from raw.cents instead
    later = CapturedRun(run(3, T3), reads=(RAW,), writes=(CLEANED,),
                        edges=(edge(col(CLEANED, "amount"), col(RAW, "cents"), EdgeSubtype.TRANSFORMATION),))
    assert store.record(later)
    before = q.upstream("spark_catalog.default.cleaned.amount", until=T2)
    after = q.upstream("spark_catalog.default.cleaned.amount", since=T3)
    every = q.upstream("spark_catalog.default.cleaned.amount")
    assert names(q, before.columns()) == {"ushas.sales.raw.amount"}
    assert names(q, after.columns()) == {"ushas.sales.raw.cents"}
    assert names(q, every.columns()) == {"ushas.sales.raw.amount", "ushas.sales.raw.cents"}
    with pytest.raises(InvalidArgument):
        q.upstream("spark_catalog.default.cleaned.amount", since=T3, until=T1)


def test_rename_keeps_lineage_and_drop_shows_dropped(store: LineageStore, q: LineageQueries,
                                                     tables: FakeTables) -> None:
    tables.rename("ushas.sales.raw", "ushas.sales.landing")
    answer = q.downstream("ushas.sales.landing.amount")
    assert "spark_catalog.default.cleaned.amount" in names(q, answer.columns())
    up = q.upstream("spark_catalog.default.cleaned.amount")
    assert names(q, up.columns()) == {"ushas.sales.landing.amount"}
    # the old name still finds the table through the names the store has seen
    assert q.resolve("ushas.sales.raw") == q.resolve("ushas.sales.landing")
    tables.drop("ushas.sales.landing")
    up = q.answer_json(q.upstream("spark_catalog.default.cleaned.amount"))
    assert up["datasets"][0]["name"] == "ushas.sales.landing" and up["datasets"][0]["dropped"] is True


def test_cycles_terminate(store: LineageStore) -> None:
    a, b = Dataset.path("file:/a"), Dataset.path("file:/b")
    store.record(CapturedRun(run(10, T1), reads=(a,), writes=(b,),
                             edges=(edge(col(b, "x"), col(a, "x"), EdgeSubtype.IDENTITY),)))
    store.record(CapturedRun(run(11, T2), reads=(b,), writes=(a,),
                             edges=(edge(col(a, "x"), col(b, "x"), EdgeSubtype.TRANSFORMATION),)))
    q = LineageQueries(store)
    up = q.upstream("file:/a.x")
    assert names(q, up.columns()) == {"file:/b.x", "file:/a.x"}
    down = q.downstream("file:/a.x", depth=50)
    assert names(q, down.columns()) == {"file:/b.x", "file:/a.x"} and not down.truncated


def test_storing_a_run_twice_is_a_no_op(store: LineageStore, q: LineageQueries) -> None:
    before = store.status().captured
    assert store.record(clean_run()) is False
    assert store.status().captured == before == 2
    assert len(q.runs("ushas.sales.raw")) == 1


def test_failed_run_has_no_edges_and_no_usage(store: LineageStore) -> None:
    bad = CapturedRun(run(20, T1, status=RunStatus.FAIL), reads=(RAW,), writes=(CLEANED,),
                      edges=(edge(col(CLEANED, "id"), col(RAW, "id"), EdgeSubtype.IDENTITY),))
    store.record(bad)
    q = LineageQueries(store)
    data = q.run(run_id_for("app-1", 20))
    assert data["run"]["status"] == "FAIL" and data["edges"] == []
    assert [d["name"] for d in data["outputs"]] == ["spark_catalog.default.cleaned"]
    assert store.usage("spark_catalog.default.cleaned") == []


def test_usage_counters_per_day(store: LineageStore, q: LineageQueries) -> None:
    store.record(CapturedRun(run(30, T3), reads=(CLEANED,), writes=()))
    usage = store.usage("spark_catalog.default.cleaned")
    assert [(u.day, u.reads, u.writes) for u in usage] == [("2023-11-14", 1, 1), ("2023-11-16", 1, 0)]
    assert [(u.reads, u.writes) for u in store.usage("spark_catalog.default.cleaned", since=T3)] == [(1, 0)]


def test_projects_are_separate(store_uri: str, q: LineageQueries) -> None:
    other = LineageStore.open(store_uri, "p2")
    try:
        assert other.runs_between() == []
        with pytest.raises(NoSuchTable):
            LineageQueries(other).resolve("file:/data/report")
    finally:
        other.close()


def test_bad_input_is_a_typed_error(q: LineageQueries) -> None:
    with pytest.raises(NoSuchTable):
        q.upstream("nope.nothing.here")
    with pytest.raises(InvalidArgument):
        q.upstream("file:/data/report.total", depth=0)
    with pytest.raises(NoSuchRun):
        q.run(uuid.uuid4())
    with pytest.raises(NoSuchRun):
        q.run("zzzz")


def test_status_counts_and_sources(store: LineageStore, q: LineageQueries) -> None:
    store.add_dropped(3)
    store.report_source("app-1", captured=2, dropped=3, pending=4)
    status = store.status()
    assert (status.captured, status.dropped, status.pending) == (2, 3, 4)
    assert status.sources["app-1"]["pending"] == 4
    with pytest.raises(InvalidArgument):
        store.add_dropped(-1)


def test_runs_between_in_time_order(store: LineageStore, q: LineageQueries) -> None:
    assert [r.execution_id for r in store.runs_between()] == [1, 2]
    assert [r.execution_id for r in store.runs_between(reverse=True, limit=1)] == [2]
    assert [r.execution_id for r in store.runs_between(since=T2)] == [2]


# ---- a column that does not exist is an error naming it and the dataset's columns (issue 36) -------------
@pytest.mark.parametrize("call", ["upstream", "downstream", "impact", "resolve"])
@pytest.mark.parametrize("name, columns", [
    ("spark_catalog.default.cleaned.amout", "amount, country, id"),
    ("file:/data/report.totl", "country, total"),
    ("ushas.sales.raw.idd", "amount, country, id"),
])
def test_a_misspelt_column_names_the_columns(q: LineageQueries, call: str, name: str, columns: str) -> None:
    from ushas_catalog.errors import NoSuchColumn

    with pytest.raises(NoSuchColumn, match=f"has no column '{name.rsplit('.', 1)[1]}': its columns are {columns}$"):
        getattr(q, call)(name)


def test_column_names_match_case_insensitively(q: LineageQueries) -> None:
    assert q.resolve("spark_catalog.default.cleaned.AMOUNT").column == "amount"
    assert q.store.columns_of(q.resolve("file:/data/report").dataset) == ["country", "total"]


def test_an_impact_path_keeps_the_dataset_wide_hop(q: LineageQueries) -> None:
    """report.country is impacted by raw.amount through the FILTER that makes cleaned: its path shows that
    hop, then the column it flows on from (issue 36: the filter in between was left out)."""
    answer = q.impact("ushas.sales.raw.amount")
    report_country = next(n for n in answer.nodes if q.node_name(n) == "file:/data/report.country")
    assert [(q.node_name(h.source), h.subtype.value, q.node_name(h.target)) for h in answer.path(report_country)] == [
        ("ushas.sales.raw.amount", "FILTER", "spark_catalog.default.cleaned"),
        ("spark_catalog.default.cleaned.country", "IDENTITY", "file:/data/report.country")]
