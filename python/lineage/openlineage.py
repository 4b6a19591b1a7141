"""OpenLineage export of captured runs: each run as a START and a COMPLETE / FAIL ``RunEvent``
(inputs, outputs with the ``columnLineage`` facet, the SQL as the ``sql`` job facet, the error
as the ``errorMessage`` run facet), built with ``openlineage.client`` classes and written as
JSON lines (``openlineage.client.serde.Serde``)."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any, Iterator, TextIO

from .model import Dataset
from .store import Access, LineageStore, Run, RunStatus

PRODUCER = "https://github.com/ushas/ushas-catalog"


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")


def run_events(store: LineageStore, run: Run) -> list[Any]:
    """The START and the COMPLETE / FAIL event of one stored run."""
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, RunEvent, RunState
    from openlineage.client.event_v2 import Run as OLRun
    from openlineage.client.generated.column_lineage_dataset import (ColumnLineageDatasetFacet, Fields,
                                                                     InputField, Transformation)
    from openlineage.client.generated.error_message_run import ErrorMessageRunFacet
    from openlineage.client.generated.sql_job import SQLJobFacet

    datasets = store.run_datasets(run.run_id)
    by_key = {ref.key: ref.dataset for _, ref in datasets}
    edges = store.run_edges(run.run_id)
    for e, _ in edges:  # datasets of edges are always among the run's datasets; be safe
        for key in (e.target, e.source):
            if key not in by_key:
                ref = store.dataset(key)
                if ref is not None:
                    by_key[key] = ref.dataset

    def ol_name(ds: Dataset) -> tuple[str, str]:
        return ds.openlineage_name()

    def facet_for(target_key: Any) -> Any:
        fields: dict[str, Any] = {}
        wide: list[Any] = []
        for e, expression in edges:
            if e.target != target_key or e.source not in by_key:
                continue
            ns, name = ol_name(by_key[e.source])
            field = InputField(namespace=ns, name=name, field=e.source_column, transformations=[
                Transformation(type=e.kind.value, subtype=e.subtype.value, description=expression,
                               masking=False)])
            if e.target_column is None:
                wide.append(field)
            else:
                fields.setdefault(e.target_column, Fields(inputFields=[])).inputFields.append(field)
        if not fields and not wide:
            return None
        return ColumnLineageDatasetFacet(fields=fields, dataset=wide)

    inputs = []
    outputs = []
    for access, ref in datasets:
        ns, name = ol_name(ref.dataset)
        if access is Access.READ:
            inputs.append(InputDataset(namespace=ns, name=name))
        else:
            facet = facet_for(ref.key)
            outputs.append(OutputDataset(namespace=ns, name=name,
                                         facets={"columnLineage": facet} if facet is not None else {}))
    job_facets: dict[str, Any] = {}
    if run.sql:
        job_facets["sql"] = SQLJobFacet(query=run.sql)
    job = Job(namespace=f"ushas/{store.project}", name=f"{run.application_name or run.application_id}"
              f".execution_{run.execution_id}", facets=job_facets)
    start = RunEvent(eventType=RunState.START, eventTime=_time(run.start_ms), run=OLRun(runId=str(run.run_id)),
                     job=job, inputs=inputs, outputs=[OutputDataset(namespace=o.namespace, name=o.name)
                                                      for o in outputs], producer=PRODUCER)
    run_facets: dict[str, Any] = {}
    if run.status is RunStatus.FAIL:
        run_facets["errorMessage"] = ErrorMessageRunFacet(message=run.error or "failed", programmingLanguage="SQL")
    end = RunEvent(eventType=RunState.COMPLETE if run.status is RunStatus.COMPLETE else RunState.FAIL,
                   eventTime=_time(run.end_ms), run=OLRun(runId=str(run.run_id), facets=run_facets), job=job,
                   inputs=inputs, outputs=outputs, producer=PRODUCER)
    return [start, end]


def export_events(store: LineageStore, since: int | None = None, until: int | None = None) -> Iterator[Any]:
    """RunEvents of every run that ended in ``[since, until]``, in time order."""
    for run in store.runs_between(since, until):
        yield from run_events(store, run)


def write_json_lines(store: LineageStore, out: TextIO, since: int | None = None, until: int | None = None) -> int:
    """Write the events as JSON lines; the number of events written."""
    from openlineage.client.serde import Serde

    n = 0
    for event in export_events(store, since, until):
        out.write(json.dumps(json.loads(Serde.to_json(event)), separators=(",", ":"), sort_keys=True))
        out.write("\n")
        n += 1
    return n


__all__ = ["PRODUCER", "export_events", "run_events", "write_json_lines"]
