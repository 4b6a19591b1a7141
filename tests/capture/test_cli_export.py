"""``ushas lineage`` subcommands over captured runs, and the OpenLineage export validated against
the spec's JSON schemas (python/lineage/openlineage_spec; no Spark: runs made by hand in a real store)."""
from __future__ import annotations

import json

import jsonschema
import pytest

from lineage.store import LineageStore, run_id_for
from ushas_catalog.cli import main

from .openlineage_schema import validate_event
from .pipeline import clean_run, report_run


@pytest.fixture
def uri(store_uri: str) -> str:
    store = LineageStore.open(store_uri, "p")
    store.record(clean_run())
    store.record(report_run())
    store.close()
    return store_uri


def cli(capsys, uri: str, *argv: str) -> tuple[int, str]:
    rc = main(["--uri", uri, "--project", "p", *argv])
    return rc, capsys.readouterr().out


def test_upstream_downstream_impact_runs_run_status(capsys, uri: str) -> None:
    rc, out = cli(capsys, uri, "--json", "lineage", "upstream", "file:/data/report.total")
    assert rc == 0
    assert {c["name"] for c in json.loads(out)["columns"]} >= {"spark_catalog.default.cleaned.amount",
                                                               "ushas.sales.raw.amount"}
    rc, out = cli(capsys, uri, "--json", "lineage", "upstream", "file:/data/report.total", "--depth", "1")
    assert json.loads(out)["truncated"] is True
    rc, out = cli(capsys, uri, "--json", "lineage", "downstream", "ushas.sales.raw.amount", "--until", "2023-11-14T22:13:20")
    assert {c["name"] for c in json.loads(out)["columns"]} == {"spark_catalog.default.cleaned.amount"}
    rc, out = cli(capsys, uri, "lineage", "impact", "ushas.sales.raw.amount", "--explain", "--flat")
    assert rc == 0 and "file:/data/report.total" in out and "runs:" in out
    rc, out = cli(capsys, uri, "--json", "lineage", "runs", "spark_catalog.default.cleaned")
    assert [r["access"] for r in json.loads(out)] == ["write", "read"]
    rc, out = cli(capsys, uri, "lineage", "run", str(run_id_for("app-1", 1))[:13])
    assert "INSERT INTO cleaned" in out and "inputs: ushas.sales.raw" in out
    rc, out = cli(capsys, uri, "--json", "lineage", "status")
    assert json.loads(out)["captured"] == 2
    assert main(["--uri", uri, "--project", "p", "lineage", "upstream", "no.such.table"]) == 1
    assert main(["--uri", uri, "--project", "p", "lineage", "runs", "x", "--since", "yesterday"]) == 2


def test_openlineage_export_validates(capsys, uri: str) -> None:
    rc, out = cli(capsys, uri, "lineage", "export", "--openlineage")
    events = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [e["eventType"] for e in events] == ["START", "COMPLETE", "START", "COMPLETE"]
    for e in events:
        validate_event(e)
    complete = events[1]
    (output,) = complete["outputs"]
    assert (output["namespace"], output["name"]) == ("spark_catalog", "default.cleaned")
    fields = output["facets"]["columnLineage"]["fields"]
    assert fields["amount"]["inputFields"][0]["transformations"][0]["subtype"] == "TRANSFORMATION"
    assert output["facets"]["columnLineage"]["dataset"][0]["transformations"][0]["subtype"] == "FILTER"
    assert complete["job"]["facets"]["sql"]["query"].startswith("INSERT INTO cleaned")
    rc, out = cli(capsys, uri, "lineage", "export", "--openlineage", "--since", "1700000000001")
    assert len(out.splitlines()) == 2
    bad = dict(events[0], eventType="DONE")
    with pytest.raises(jsonschema.ValidationError):
        validate_event(bad)


@pytest.mark.parametrize("argv", [["upstream", "spark_catalog.default.cleaned.amout"],
                                  ["downstream", "spark_catalog.default.cleaned.amout"],
                                  ["impact", "spark_catalog.default.cleaned.amout"]])
def test_a_misspelt_column_exits_1_naming_the_columns(capsys, uri: str, argv: list[str]) -> None:
    rc = main(["--uri", uri, "--project", "p", "lineage", *argv])
    out, err = capsys.readouterr()
    assert rc == 1 and out == ""
    assert "NoSuchColumn: spark_catalog.default.cleaned has no column 'amout': its columns are amount, country, id" \
        in err


def test_walks_print_trees_with_every_hop_and_its_kind(capsys, uri: str) -> None:
    rc, out = cli(capsys, uri, "lineage", "impact", "ushas.sales.raw.amount")
    assert rc == 0
    assert out.splitlines()[:8] == [
        "impact of ushas.sales.raw.amount",
        "  ushas.sales.raw.amount",
        "  ├── spark_catalog.default.cleaned  [FILTER]",  # the filter in between is a hop of its own
        "  │   ├── file:/data/report  [GROUP_BY]  (from spark_catalog.default.cleaned.country)",
        "  │   ├── file:/data/report.country  [IDENTITY]  (from spark_catalog.default.cleaned.country)",
        "  │   └── file:/data/report.total  [AGGREGATION]  (from spark_catalog.default.cleaned.amount)",
        "  └── spark_catalog.default.cleaned.amount  [TRANSFORMATION]",
        "      └── file:/data/report.total  [AGGREGATION]"]
    rc, out = cli(capsys, uri, "lineage", "upstream", "file:/data/report.total", "--explain")
    assert out.splitlines()[1:4] == [
        "  file:/data/report.total",
        "  └── spark_catalog.default.cleaned.amount  [AGGREGATION]  sum(amount)",
        "      └── ushas.sales.raw.amount  [TRANSFORMATION]  (amount * 100)"]
    rc, out = cli(capsys, uri, "lineage", "upstream", "file:/data/report", "--flat")
    assert "  spark_catalog.default.cleaned.amount" in out.splitlines()  # the list by depth


def test_exported_event_lists_columns_without_a_source(capsys, store_uri: str) -> None:
    """``SELECT country, count(*) AS n, 1 AS one …``: ``n`` and ``one`` have no source column; the
    exported event lists them, with empty inputFields, as df.lineage().to_openlineage() does."""
    from dataclasses import replace

    from .pipeline import CLEANED, REPORT, col, edge
    from lineage.model import EdgeSubtype
    from lineage.store import CapturedRun

    base = report_run()
    captured = CapturedRun(replace(base.run, columns=("country", "n", "one")), reads=(CLEANED,), writes=(REPORT,),
                           edges=(edge(col(REPORT, "country"), col(CLEANED, "country"), EdgeSubtype.IDENTITY),
                                  edge(None, col(CLEANED, "country"), EdgeSubtype.GROUP_BY, "country")))
    store = LineageStore.open(store_uri, "p")
    store.record(captured)
    assert store.get_run(captured.run.run_id).columns == ("country", "n", "one")
    store.close()
    rc, out = cli(capsys, store_uri, "lineage", "export", "--openlineage")
    complete = [json.loads(line) for line in out.splitlines()][1]
    validate_event(complete)
    fields = complete["outputs"][0]["facets"]["columnLineage"]["fields"]
    assert sorted(fields) == ["country", "n", "one"]
    assert fields["n"]["inputFields"] == [] and fields["one"]["inputFields"] == []
    assert fields["country"]["inputFields"][0]["field"] == "country"
