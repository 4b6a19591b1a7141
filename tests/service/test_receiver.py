"""The OpenLineage receiver (POST /api/v1/lineage) fed by the openlineage-python client's
HttpTransport (as Airflow and dbt send) and by this project's own HTTP transport; a dbt model's
lineage joins the Spark-captured lineage of the same catalog tables into one graph."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Iterator
from urllib.parse import quote

import pytest

from app.uistore import build

from .live import Live, running, token

SPARK_NS = "spark://thrift.example:10000"


@pytest.fixture
def live(store_uri: str) -> Iterator[Live]:
    """The UI test store plus a catalog table shop.sales.summary, served with the dbt-spark
    namespace mapped to catalog shop."""
    from ushas_catalog.metastore import Metastore

    build(store_uri)
    ms = Metastore.open(store_uri, create=False)
    try:
        ms.create_table("shop.sales.summary", "country STRING, total DOUBLE", location="s3a://wh/summary")
    finally:
        ms.close()
    write, read = token(store_uri, "write"), token(store_uri, "read")
    for svc in running(store_uri, namespaces={SPARK_NS: "shop"}):
        svc.write_token, svc.read_token = write, read  # type: ignore[attr-defined]
        yield svc


def client(live: Live, token_text: str) -> Any:
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

    config = HttpConfig(url=live.base, endpoint="api/v1/lineage", timeout=10,
                        auth=ApiKeyTokenProvider({"apiKey": token_text}), retry={"total": 0})
    return OpenLineageClient(transport=HttpTransport(config))


def dbt_events(run_id: str, output: Any) -> list[Any]:
    """A dbt model's START and COMPLETE: reads shop.sales.raw as dbt-spark names it, writes ``output``."""
    from openlineage.client.event_v2 import InputDataset, Job, Run, RunEvent, RunState
    from openlineage.client.generated.column_lineage_dataset import (ColumnLineageDatasetFacet, Fields, InputField,
                                                                     Transformation)
    from openlineage.client.generated.sql_job import SQLJobFacet

    def field(name: str, kind: str, subtype: str, description: str = "") -> Any:
        return InputField(namespace=SPARK_NS, name="sales.raw", field=name, transformations=[
            Transformation(type=kind, subtype=subtype, description=description, masking=False)])

    lineage = ColumnLineageDatasetFacet(fields={
        "country": Fields(inputFields=[field("country", "DIRECT", "IDENTITY")]),
        "total": Fields(inputFields=[field("amount", "DIRECT", "AGGREGATION", "sum(amount)")])},
        dataset=[field("dt", "INDIRECT", "FILTER", "dt >= '2024-01-01'")])
    job = Job(namespace="dbt", name="shop.models.summary",
              facets={"sql": SQLJobFacet(query="select country, sum(amount) as total from raw group by 1")})
    now = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)
    inputs = [InputDataset(namespace=SPARK_NS, name="sales.raw")]
    start = RunEvent(eventType=RunState.START, eventTime=now.isoformat(), run=Run(runId=run_id), job=job,
                     producer="https://github.com/dbt-labs/dbt-core", inputs=inputs, outputs=[])
    end = RunEvent(eventType=RunState.COMPLETE, eventTime=(now + dt.timedelta(seconds=42)).isoformat(),
                   run=Run(runId=run_id), job=job, producer="https://github.com/dbt-labs/dbt-core",
                   inputs=inputs, outputs=[output(lineage)])
    return [start, end]


def test_dbt_run_from_the_openlineage_client_joins_the_spark_graph(live: Live) -> None:
    from openlineage.client.event_v2 import OutputDataset

    run_id = str(uuid.uuid4())
    ol = client(live, live.write_token)  # type: ignore[attr-defined]
    for event in dbt_events(run_id, lambda lineage: OutputDataset(
            namespace=SPARK_NS, name="sales.summary", facets={"columnLineage": lineage})):
        ol.emit(event)
    detail = live.get(f"/api/v1/runs/{run_id}").json
    assert detail["run"]["job"] == "shop.models.summary" and detail["run"]["status"] == "COMPLETE"
    assert detail["run"]["duration_ms"] == 42_000 and detail["run"]["sql"].startswith("select country")
    assert [d["name"] for d in detail["inputs"]] == ["shop.sales.raw"]  # the catalog's table, by table id
    assert [d["name"] for d in detail["outputs"]] == ["shop.sales.summary"]
    assert "table_id" in detail["inputs"][0] and "table_id" in detail["outputs"][0]
    # one graph: from raw.amount, downstream reaches the Spark job's output and the dbt model's
    down = live.get("/api/v1/lineage/graph?node=shop.sales.raw.amount&direction=downstream&depth=5").json
    ids = {n["id"] for n in down["nodes"]}
    assert {"spark_catalog.default.cleaned.amount", "file:/data/report.total", "shop.sales.summary.total"} <= ids
    tables = live.get("/api/v1/lineage/tables?node=shop.sales.raw&direction=downstream").json
    assert {n["name"] for n in tables["nodes"]} == {"shop.sales.raw", "spark_catalog.default.cleaned",
                                                     "file:/data/report", "shop.sales.summary"}
    dbt = next(e for e in tables["edges"] if e["target"] == "shop.sales.summary")
    assert (dbt["direct"], dbt["whole_dataset"]) == (2, 1)
    runs = live.get("/api/v1/runs?dataset=shop.sales.raw").json["items"]
    assert run_id in [r["run_id"] for r in runs]


def test_symlinks_name_the_catalog_table(live: Live) -> None:
    """A Spark OpenLineage listener names a table by its location, with a symlink to the table."""
    from openlineage.client.event_v2 import OutputDataset
    from openlineage.client.generated.symlinks_dataset import Identifier, SymlinksDatasetFacet

    run_id = str(uuid.uuid4())
    symlinks = SymlinksDatasetFacet(identifiers=[Identifier(namespace="shop", name="sales.summary", type="TABLE")])
    for event in dbt_events(run_id, lambda lineage: OutputDataset(
            namespace="s3a://wh", name="/summary", facets={"columnLineage": lineage, "symlinks": symlinks})):
        client(live, live.write_token).emit(event)  # type: ignore[attr-defined]
    assert [d["name"] for d in live.get(f"/api/v1/runs/{run_id}").json["outputs"]] == ["shop.sales.summary"]


def test_other_datasets_keep_their_openlineage_names(live: Live) -> None:
    from openlineage.client.event_v2 import OutputDataset

    run_id = str(uuid.uuid4())
    for event in dbt_events(run_id, lambda lineage: OutputDataset(
            namespace="postgres://wh:5432", name="analytics.public.summary", facets={"columnLineage": lineage})):
        client(live, live.write_token).emit(event)  # type: ignore[attr-defined]
    name = "postgres://wh:5432/analytics.public.summary"
    assert [d["name"] for d in live.get(f"/api/v1/runs/{run_id}").json["outputs"]] == [name]
    up = live.get("/api/v1/lineage/graph?direction=upstream&node=" + quote(name + ".total", safe="")).json
    assert "shop.sales.raw.amount" in {n["id"] for n in up["nodes"]}


def test_this_projects_http_transport(live: Live) -> None:
    from lineage.model import ColumnNode, Dataset, Edge, EdgeSubtype
    from lineage.openlineage_events import captured_edges, run_events, to_json
    from lineage.openlineage_http import OpenLineageSender, OpenLineageSettings
    from lineage.store import CapturedRun, Run, RunStatus

    raw, summary = Dataset.table("shop", "sales", "raw"), Dataset.table("shop", "sales", "summary")
    run = Run(run_id=uuid.uuid4(), application_id="app-x", application_name="nightly", execution_id=7, user="bob",
              start_ms=1_710_000_000_000, end_ms=1_710_000_001_000, status=RunStatus.COMPLETE,
              sql="INSERT INTO shop.sales.summary SELECT country, sum(amount) FROM shop.sales.raw GROUP BY 1",
              kind="INSERT INTO")
    sub = EdgeSubtype.AGGREGATION
    captured = CapturedRun(run, (raw,), (summary,), (Edge(ColumnNode.column(summary, "total"),
                                                          ColumnNode.column(raw, "amount"), sub.kind, sub, "sum"),))
    events = [to_json(e) for e in run_events(run, [raw], [summary], captured_edges(captured), namespace="ushas/x")]
    sender = OpenLineageSender(OpenLineageSettings(url=live.base, api_key=live.write_token))  # type: ignore[attr-defined]
    try:
        assert sender.submit(events) == 0 and sender.flush(30)
        assert sender.stats().sent == 2 and sender.stats().dropped == 0
    finally:
        sender.close()
    detail = live.get(f"/api/v1/runs/{run.run_id}").json
    assert detail["run"]["sql"] == run.sql and [e["target"] for e in detail["edges"]] == ["shop.sales.summary.total"]


def test_bad_events_and_missing_tokens_are_refused(live: Live) -> None:
    good = {"eventType": "COMPLETE", "eventTime": "2024-03-01T12:00:00Z", "producer": "https://x.example/p",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": str(uuid.uuid4())}, "job": {"namespace": "n", "name": "j"}, "inputs": [], "outputs": []}
    h = {"Authorization": f"Bearer {live.write_token}"}  # type: ignore[attr-defined]
    assert live.request("POST", "/api/v1/lineage", good).status == 401
    read = {"Authorization": f"Bearer {live.read_token}"}  # type: ignore[attr-defined]
    assert live.request("POST", "/api/v1/lineage", good, headers=read).status == 403
    for broken, words in (({**good, "eventTime": "yesterday"}, "eventTime"),
                          ({**good, "run": {"runId": "not-a-uuid"}}, "runId"),
                          ({k: v for k, v in good.items() if k not in ("job", "run")}, "run and job"),
                          ({**good, "outputs": [{"namespace": "n"}]}, "outputs")):
        answer = live.request("POST", "/api/v1/lineage", broken, headers=h)
        assert answer.status == 400 and answer.json["error"]["type"] == "InvalidArgument", broken
        assert words in answer.json["error"]["message"], answer.json
    assert live.request("POST", "/api/v1/lineage", raw=b"{", headers=h).status == 400
    job_event = {k: v for k, v in good.items() if k not in ("run", "eventType", "inputs", "outputs")}
    job_event["schemaURL"] = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"
    taken = live.request("POST", "/api/v1/lineage", job_event, headers=h)
    assert taken.status == 201 and taken.json["event_type"] == "JobEvent" and taken.json["stored"] is False
    accepted = live.request("POST", "/api/v1/lineage", good, headers=h)
    assert accepted.status == 201 and accepted.json["stored"] is True
    assert live.request("POST", "/api/v1/lineage", good, headers=h).json["stored"] is False  # the same run again
