"""OpenLineage RunEvents of one run: a START and a COMPLETE / FAIL event, built with the
``openlineage.client`` classes (spec 2-0-2). Shared by the file export (``lineage.openlineage``,
runs read back from the store) and the HTTP producer (``lineage.openlineage_http``, runs as the
capture builds them).

Facets: ``columnLineage`` (outputs), ``schema``, ``dataSource``, ``symlinks`` (a catalog table and
its storage location are one dataset), ``lifecycleStateChange`` (outputs), ``outputStatistics``
(output facet: rows, bytes, files of the write), ``sql`` and ``jobType`` (job),
``errorMessage`` (run, on FAIL).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Sequence

from .model import Dataset, DatasetKind
from .openlineage_facts import RunFacts
from .store import CapturedRun, Run, RunStatus

PRODUCER = "https://github.com/ushas/ushas-catalog"


@dataclass(frozen=True)
class ColumnEdge:
    """One column edge as OpenLineage sees it (``target_column`` None: the whole dataset)."""

    target: Dataset
    target_column: str | None
    source: Dataset
    source_column: str | None
    kind: str
    subtype: str
    expression: str | None


def captured_edges(captured: CapturedRun) -> list[ColumnEdge]:
    """The column edges of a run as the capture built it (the rules the store applies: no
    in-query source; a dataset-wide edge belongs to the run's only written dataset)."""
    writes = [d for d in captured.writes if d.kind is not DatasetKind.INLINE]
    out = []
    for e in captured.edges:
        src = e.source.dataset
        if src is None or src.kind is DatasetKind.INLINE:
            continue
        target = e.target.dataset if e.target is not None else (writes[0] if len(writes) == 1 else None)
        if target is None or target.kind is DatasetKind.INLINE:
            continue
        out.append(ColumnEdge(target, e.target.name if e.target is not None else None, src, e.source.name,
                              e.kind.value, e.subtype.value, e.expression))
    return out


def event_time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")


def job_name(run: Run) -> str:
    """The run's job name (runs stored before names existed: ``<app>.execution_<id>``)."""
    return run.job or f"{run.application_name or run.application_id}.execution_{run.execution_id}"


def data_source_uri(namespace: str) -> str:
    """A URI for the ``dataSource`` facet: the namespace when it is one, else ``catalog:<name>``."""
    return namespace if ":" in namespace else f"catalog:{namespace}"


def run_events(run: Run, inputs: Sequence[Dataset], outputs: Sequence[Dataset], edges: Sequence[ColumnEdge], *,
               namespace: str, facts: RunFacts | None = None) -> list[Any]:
    """The START and the COMPLETE / FAIL event of ``run`` (``openlineage.client`` RunEvents)."""
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, RunEvent, RunState
    from openlineage.client.event_v2 import Run as OLRun
    from openlineage.client.generated.column_lineage_dataset import (ColumnLineageDatasetFacet, Fields,
                                                                     InputField, Transformation)
    from openlineage.client.generated.datasource_dataset import DatasourceDatasetFacet
    from openlineage.client.generated.error_message_run import ErrorMessageRunFacet
    from openlineage.client.generated.job_type_job import JobTypeJobFacet
    from openlineage.client.generated.lifecycle_state_change_dataset import (LifecycleStateChange,
                                                                             LifecycleStateChangeDatasetFacet,
                                                                             PreviousIdentifier)
    from openlineage.client.generated.output_statistics_output_dataset import OutputStatisticsOutputDatasetFacet
    from openlineage.client.generated.schema_dataset import SchemaDatasetFacet, SchemaDatasetFacetFields
    from openlineage.client.generated.sql_job import SQLJobFacet
    from openlineage.client.generated.symlinks_dataset import Identifier, SymlinksDatasetFacet

    facts = facts or RunFacts()

    def column_lineage(target: Dataset) -> Any:
        # every written column is listed, one without any source with empty inputFields
        fields: dict[str, Any] = {c: Fields(inputFields=[]) for c in run.columns} if len(outputs) == 1 else {}
        wide: list[Any] = []
        for e in edges:
            if e.target != target:
                continue
            ns, name = e.source.openlineage_name()
            field = InputField(namespace=ns, name=name, field=e.source_column or "", transformations=[
                Transformation(type=e.kind, subtype=e.subtype, description=e.expression or "", masking=False)])
            if e.target_column is None:
                wide.append(field)
            else:
                fields.setdefault(e.target_column, Fields(inputFields=[])).inputFields.append(field)
        if not fields and not wide:
            return None
        return ColumnLineageDatasetFacet(fields=fields, dataset=wide)

    def common(ds: Dataset) -> dict[str, Any]:
        ns, _ = ds.openlineage_name()
        out: dict[str, Any] = {"dataSource": DatasourceDatasetFacet(name=ns, uri=data_source_uri(ns))}
        schema = facts.schemas.get(ds)
        if schema:
            out["schema"] = SchemaDatasetFacet(fields=[SchemaDatasetFacetFields(name=n, type=t) for n, t in schema])
        location = facts.locations.get(ds) if ds.kind is DatasetKind.TABLE else None
        if location:
            lns, lname = Dataset.path(location).openlineage_name()
            out["symlinks"] = SymlinksDatasetFacet(identifiers=[Identifier(namespace=lns, name=lname,
                                                                           type="LOCATION")])
        return out

    ol_inputs = []
    for ds in inputs:
        ns, name = ds.openlineage_name()
        ol_inputs.append(InputDataset(namespace=ns, name=name, facets=common(ds)))
    ol_outputs = []
    bare_outputs = []
    for i, ds in enumerate(outputs):
        ns, name = ds.openlineage_name()
        facets = common(ds)
        lineage = column_lineage(ds)
        if lineage is not None:
            facets["columnLineage"] = lineage
        change = facts.lifecycle.get(ds)
        if change is not None:
            state, previous = change
            prev = None
            if previous is not None:
                pns, pname = previous.openlineage_name()
                prev = PreviousIdentifier(name=pname, namespace=pns)
            facets["lifecycleStateChange"] = LifecycleStateChangeDatasetFacet(
                lifecycleStateChange=LifecycleStateChange(state), previousIdentifier=prev)
        output_facets: dict[str, Any] = {}
        stats = facts.statistics
        if i == 0 and stats and run.status is RunStatus.COMPLETE:
            output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(
                rowCount=stats.get("rows"), size=stats.get("bytes"), fileCount=stats.get("files"))
        ol_outputs.append(OutputDataset(namespace=ns, name=name, facets=facets, outputFacets=output_facets))
        bare_outputs.append(OutputDataset(namespace=ns, name=name, facets=common(ds)))
    job_facets: dict[str, Any] = {"jobType": JobTypeJobFacet(processingType="BATCH", integration="SPARK",
                                                             jobType=run.kind or "QUERY")}
    if run.sql:
        job_facets["sql"] = SQLJobFacet(query=run.sql)
    job = Job(namespace=namespace, name=job_name(run), facets=job_facets)
    start = RunEvent(eventType=RunState.START, eventTime=event_time(run.start_ms), run=OLRun(runId=str(run.run_id)),
                     job=job, inputs=ol_inputs, outputs=bare_outputs, producer=PRODUCER)
    run_facets: dict[str, Any] = {}
    if run.status is RunStatus.FAIL:
        run_facets["errorMessage"] = ErrorMessageRunFacet(message=run.error or "failed", programmingLanguage="SQL")
    end = RunEvent(eventType=RunState.COMPLETE if run.status is RunStatus.COMPLETE else RunState.FAIL,
                   eventTime=event_time(run.end_ms), run=OLRun(runId=str(run.run_id), facets=run_facets), job=job,
                   inputs=ol_inputs, outputs=ol_outputs, producer=PRODUCER)
    return [start, end]


def to_json(event: Any) -> str:
    """One event as compact JSON, keys sorted (``openlineage.client.serde.Serde.to_dict``: no nulls,
    enums as values; orjson writes it in one pass)."""
    import orjson
    from openlineage.client.serde import Serde

    return orjson.dumps(Serde.to_dict(event), option=orjson.OPT_SORT_KEYS).decode()


__all__ = ["PRODUCER", "ColumnEdge", "captured_edges", "data_source_uri", "event_time", "job_name", "run_events", "to_json"]
