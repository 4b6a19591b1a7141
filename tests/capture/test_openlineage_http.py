"""The OpenLineage HTTP producer end to end: a PySpark application (bounded subprocess, configured
with ``spark.ushas.lineage.openlineage.url``) sends every run to a local receiver started here;
START and COMPLETE / FAIL arrive with their facets and validate against the 2-0-2 schemas. With
the receiver down, the queries still succeed and every event is counted as dropped."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from lineage.openlineage_http import OpenLineageSender, OpenLineageSettings

from .openlineage_receiver import Receiver
from .openlineage_schema import validate_event

APP = Path(__file__).parent / "openlineage_app.py"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_app(tmp_path: Path, url: str, scenario: str) -> tuple[dict[str, Any], str]:
    store = tmp_path / "store"
    store.mkdir()
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run([sys.executable, str(APP), str(store), url, scenario], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-6000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), proc.stderr


def _by_job(posts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in posts:
        out.setdefault(p["event"]["job"]["name"], []).append(p["event"])
    return out


def _output(event: dict[str, Any]) -> dict[str, Any]:
    assert len(event["outputs"]) == 1, event["outputs"]
    return event["outputs"][0]


def test_runs_arrive_as_openlineage_events(tmp_path: Path, receiver: Receiver) -> None:
    result, _ = _run_app(tmp_path, receiver.url, "full")
    stats = result["listeners"][0]["python"]
    assert result["flushed"], result
    assert stats["openlineage_dropped"] == 0 and stats["openlineage_sent"] == len(receiver.posts)
    assert {p["path"] for p in receiver.posts} == {"/api/v1/lineage"}
    assert {p["auth"] for p in receiver.posts} == {"Bearer s3cret"}
    for p in receiver.posts:
        validate_event(p["event"])
    jobs = _by_job(receiver.posts)
    assert set(jobs) == {
        "nightly.create_table_as_select.ushas_sales_orders", "nightly.insert_into.ushas_sales_orders",
        "nightly.create_table.ushas_sales_totals", "nightly.insert_overwrite.ushas_sales_totals",
        "nightly.query.ushas_sales_orders", "nightly.insert_into.ushas_sales_totals",
        f"nightly.insert_overwrite.{(tmp_path / 'store' / 'export').as_posix().strip('/').replace('/', '_')}",
        "nightly.truncate_table.ushas_sales_totals", "nightly.rename_table.ushas_sales_sums",
        "nightly.drop_table.ushas_sales_sums"}, sorted(jobs)
    for name, events in jobs.items():
        assert [e["eventType"] for e in events] == ["START", "FAIL" if name.endswith("insert_into.ushas_sales_totals")
                                                    else "COMPLETE"], name
        assert events[0]["run"]["runId"] == events[1]["run"]["runId"]

    # CTAS: CREATE, schema, statistics of what the commit registered (5 rows, one partition: one file)
    ctas = jobs["nightly.create_table_as_select.ushas_sales_orders"][1]
    out = _output(ctas)
    assert (out["namespace"], out["name"]) == ("ushas", "sales.orders")
    assert out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "CREATE"
    assert [(f["name"], f["type"]) for f in out["facets"]["schema"]["fields"]] == [
        ("id", "bigint"), ("amount", "bigint"), ("status", "string"), ("dt", "string")]
    stats_facet = out["outputFacets"]["outputStatistics"]
    assert stats_facet["rowCount"] == 5 and stats_facet["fileCount"] == 1 and stats_facet["size"] > 0
    assert out["facets"]["dataSource"]["name"] == "ushas"
    assert ctas["job"]["facets"]["jobType"]["jobType"] == "CREATE TABLE AS SELECT"
    assert ctas["job"]["facets"]["sql"]["query"].startswith("CREATE TABLE ushas.sales.orders")

    insert = jobs["nightly.insert_into.ushas_sales_orders"][1]
    assert "lifecycleStateChange" not in _output(insert)["facets"]
    assert _output(insert)["outputFacets"]["outputStatistics"]["rowCount"] == 3

    # INSERT OVERWRITE: OVERWRITE, column lineage, the input with its location as a symlink
    ow = jobs["nightly.insert_overwrite.ushas_sales_totals"][1]
    out = _output(ow)
    assert out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"
    fields = out["facets"]["columnLineage"]["fields"]
    assert {(i["name"], i["field"], i["transformations"][0]["subtype"]) for i in fields["total"]["inputFields"]} \
        == {("sales.orders", "amount", "AGGREGATION")}
    assert [(i["namespace"], i["name"]) for i in ow["inputs"]] == [("ushas", "sales.orders")]
    links = ow["inputs"][0]["facets"]["symlinks"]["identifiers"]
    assert links == [{"namespace": "file", "name": f"{result['warehouse']}/sales.db/orders", "type": "LOCATION"}]
    assert [f["name"] for f in ow["inputs"][0]["facets"]["schema"]["fields"]] == ["id", "amount", "status", "dt"]

    # a query that only reads: its inputs, no outputs
    q = jobs["nightly.query.ushas_sales_orders"][1]
    assert q["outputs"] == [] and [i["name"] for i in q["inputs"]] == ["sales.orders"]
    assert q["job"]["facets"]["jobType"]["jobType"] == "QUERY"

    # the failing write: FAIL with the error, no statistics
    fail = jobs["nightly.insert_into.ushas_sales_totals"][1]
    assert "boom" in fail["run"]["facets"]["errorMessage"]["message"]
    assert "outputStatistics" not in _output(fail).get("outputFacets", {})

    # a path written by Spark's own file writer: its write metrics
    export = next(v for k, v in jobs.items() if k.endswith("_export"))[1]
    out = _output(export)
    assert (out["namespace"], out["name"]) == ("file", str(tmp_path / "store" / "export"))
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 3
    assert out["outputFacets"]["outputStatistics"]["fileCount"] >= 1
    assert out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"

    # DDL: lifecycle changes of the dataset, RENAME with the previous name
    def change(job: str) -> dict[str, Any]:
        return _output(jobs[job][1])["facets"]["lifecycleStateChange"]

    assert change("nightly.create_table.ushas_sales_totals")["lifecycleStateChange"] == "CREATE"
    assert change("nightly.truncate_table.ushas_sales_totals")["lifecycleStateChange"] == "TRUNCATE"
    assert change("nightly.rename_table.ushas_sales_sums") == {
        "_producer": change("nightly.rename_table.ushas_sales_sums")["_producer"],
        "_schemaURL": change("nightly.rename_table.ushas_sales_sums")["_schemaURL"],
        "lifecycleStateChange": "RENAME", "previousIdentifier": {"namespace": "ushas", "name": "sales.totals"}}
    assert change("nightly.drop_table.ushas_sales_sums")["lifecycleStateChange"] == "DROP"


def test_receiver_down_counts_drops_and_queries_succeed(tmp_path: Path) -> None:
    result, stderr = _run_app(tmp_path, f"http://127.0.0.1:{_free_port()}", "small")
    stats = result["listeners"][0]["python"]
    assert stats["captured"] == 2  # the store has both runs
    assert stats["openlineage_sent"] == 0 and stats["openlineage_dropped"] == 4  # START + COMPLETE of each
    assert "4 OpenLineage event(s) not delivered" in stderr, stderr[-4000:]


def test_sender_counts_exactly_what_does_not_fit(receiver: Receiver) -> None:
    gate = threading.Event()
    original = OpenLineageSender._post

    def slow_post(self: OpenLineageSender, body: str) -> str | None:
        gate.wait(10)
        return original(self, body)

    sender = OpenLineageSender(OpenLineageSettings(url=receiver.url, api_key=None), max_pending=3)
    OpenLineageSender._post = slow_post  # type: ignore[method-assign]
    try:
        dropped = [sender.submit([json.dumps({"n": i}), json.dumps({"n": i})]) for i in range(3)]
        gate.set()
        assert sender.flush(10)
    finally:
        OpenLineageSender._post = original  # type: ignore[method-assign]
        sender.close()
    assert dropped == [0, 2, 2]  # 2 queued (one run's pair fits in 3), then whole runs refused
    assert sender.stats().sent == 2 and sender.stats().dropped == 4
    assert [p["event"]["n"] for p in receiver.posts] == [0, 0]
    assert {p["auth"] for p in receiver.posts} == {None}


def test_settings_refuse_bad_options() -> None:
    from ushas_catalog.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="http"):
        OpenLineageSettings.from_options({"url": "localhost:5000"})
    with pytest.raises(InvalidArgument, match="timeout"):
        OpenLineageSettings.from_options({"url": "http://x", "timeout": "soon"})
    s = OpenLineageSettings.from_options({"url": "http://x:1/", "endpoint": "api/v1/lineage", "api_key": "k"})
    assert s.target == "http://x:1/api/v1/lineage" and s.timeout_s == 5.0
