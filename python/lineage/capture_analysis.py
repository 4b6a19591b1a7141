"""From the plans of one captured action to one run (:func:`analyze`): every execution's plan
resolved (or taken at table level when over budget), merged into one set of reads, writes and edges,
named after what it did."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .capture_events import ActionEvent, CaptureSettings
from .micro_batches import TABLE_SINK
from .model import ColumnNode, Dataset, DatasetKind, Edge, LineageResult
from .openlineage_facts import LIFECYCLE, RunFacts
from .openlineage_facts import collect as collect_facts
from .run_names import best_command, command_of, run_name
from .store import CapturedRun, Run
from .views import view_edges

log = logging.getLogger("ushas.lineage.capture")

# ---- from plans to a run -------------------------------------------------------------------
Resolver = Callable[[Any], LineageResult]
Relations = Callable[[Any], tuple[tuple[Dataset, ...], tuple[Dataset, ...]]]


def default_resolver(doc: Any) -> LineageResult:
    """The shared plan resolver (``lineage.resolve``)."""
    from . import resolve

    return resolve.resolve(doc)  # NEEDED-BY-CAPTURE: lineage.resolve.resolve(PlanDocument) -> LineageResult


@dataclass
class _RelationPass:
    """The part of the resolver's pass state that its relation / write-target readers use."""

    doc: Any
    datasets: dict[int, Dataset] = field(default_factory=dict)


def default_relations(doc: Any) -> tuple[tuple[Dataset, ...], tuple[Dataset, ...]]:
    """(read, written) datasets of a plan without resolving its columns (table-level capture):
    one pass over the nodes, reading relation identities and write targets only."""
    from . import plan_datasets

    # NEEDED-BY-CAPTURE: a public lineage.resolve.relations(PlanDocument) -> (reads, writes);
    # until then the resolver's relation_dataset and write_target are used as they are.
    p = _RelationPass(doc)
    reads: dict[Dataset, None] = {}
    writes: dict[Dataset, None] = {}
    for node in doc.nodes:
        if node.kind in plan_datasets.RELATIONS:
            ds = plan_datasets.relation_dataset(p, node)  # type: ignore[arg-type]
            if ds is not None:
                p.datasets[node.index] = ds
                reads.setdefault(ds)
        elif node.kind in plan_datasets.WRITE_KINDS:
            target = plan_datasets.write_target(p, node)  # type: ignore[arg-type]
            if target is not None:
                writes.setdefault(target)
        elif node.kind == "DeleteFromTableWithFilters" and node.plans.get("table") in p.datasets:
            writes.setdefault(p.datasets[node.plans["table"]])  # a metadata-only DELETE: its table is written
        elif node.children and node.children[0] in p.datasets and node.kind == "SubqueryAlias":
            p.datasets[node.index] = p.datasets[node.children[0]]
    for target in writes:
        reads.pop(target, None)
    return tuple(d for d in reads if d.kind is not DatasetKind.INLINE), tuple(writes)


@dataclass
class Analysis:
    """What the plans of one action say."""

    reads: dict[Dataset, None] = field(default_factory=dict)
    writes: dict[Dataset, None] = field(default_factory=dict)
    edges: dict[Edge, None] = field(default_factory=dict)
    markers: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    commands: list[str | None] = field(default_factory=list)
    #: the columns each write's plan names for its target, in order
    columns: dict[Dataset, tuple[str, ...]] = field(default_factory=dict)


def facts_of(doc: Any, command: str | None, facts: RunFacts) -> tuple[tuple[str, str], ...]:
    from . import plan_datasets

    p = _RelationPass(doc)

    def relation(node: Any) -> Dataset | None:
        ds = plan_datasets.relation_dataset(p, node)  # type: ignore[arg-type]
        if ds is not None:
            p.datasets[node.index] = ds
        return ds

    return collect_facts(doc, command, facts, relation)


def analyze(event: ActionEvent, settings: CaptureSettings, resolver: Resolver = default_resolver,
            relations: Relations = default_relations, facts: RunFacts | None = None) -> CapturedRun:
    """The run of one action: every execution's plan resolved (or taken at table level when it
    is over budget or cannot be resolved), merged into one set of reads, writes and edges,
    named after what it did (lineage.run_names). ``facts``: also collect what OpenLineage's
    dataset facets need (schemas, locations, lifecycle changes, write statistics) into it."""
    from .plan import parse

    acc = Analysis()
    for x in event.executions:
        if facts is not None:
            facts.add_statistics(x.write_metrics)
        acc.operations.append(x.func)
        try:
            text = x.read_plan()
        except OSError as exc:
            acc.markers.append(f"execution {x.execution_id}: plan file unreadable ({exc})")
            continue
        if text is None:
            acc.markers.append(f"execution {x.execution_id}: no plan ({x.error or 'not serialized'})")
            continue
        try:
            doc = parse(text)
        except Exception as exc:  # noqa: BLE001 - any malformed plan is a marker, not a lost run
            acc.markers.append(f"execution {x.execution_id}: unreadable plan ({exc})")
            continue
        command = command_of(doc.root_node, doc)
        acc.commands.append(command)
        written: tuple[tuple[str, str], ...] = ()
        if facts is not None:
            try:
                written = facts_of(doc, command, facts)
            except Exception as exc:  # noqa: BLE001 - facets are extras: never lose the run for them
                log.debug("lineage: OpenLineage facts of execution %s failed: %s", x.execution_id, exc)
        if len(text) > settings.max_plan_chars:
            acc.markers.append(f"execution {x.execution_id}: plan of {len(text)} chars over the "
                               f"{settings.max_plan_chars} budget")
            _table_level(acc, doc, relations)
            continue
        started = time.perf_counter()
        try:
            result = resolver(doc)
        except Exception as exc:  # noqa: BLE001
            log.warning("lineage: resolving execution %s of %s failed, captured at table level: %s",
                        x.execution_id, event.application_id, exc)
            acc.markers.append(f"execution {x.execution_id}: resolver failed ({type(exc).__name__}: {exc})")
            _table_level(acc, doc, relations)
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if elapsed > settings.max_resolve_ms:
            acc.markers.append(f"execution {x.execution_id}: resolution took {elapsed:.0f} ms, over the "
                               f"{settings.max_resolve_ms:.0f} ms budget")
            _add_datasets(acc, result)
            continue
        _add_datasets(acc, result)
        if result.target is not None:
            acc.columns.setdefault(result.target, tuple(c.name for c in result.outputs))
        if result.target is None and command is None:
            # a query that only reads (collect, count, show): every relation it scans is read, even
            # one no output column derives from (count(*))
            for d in relations(doc)[0]:
                acc.reads.setdefault(d)
        if facts is not None and written and result.target is not None:
            facts.schemas[result.target] = written
        for e in _target_edges(result):
            acc.edges.setdefault(e)
    writes = _dedup_writes(acc.writes, len(event.executions) > 1)
    reads = [d for d in acc.reads if d.kind is not DatasetKind.INLINE]
    edges = [e for e in acc.edges if e.target is None or e.target.dataset in writes]
    if len(edges) > settings.max_edges:
        acc.markers.append(f"{len(edges)} column edges over the {settings.max_edges} budget")
        edges = []
    command = best_command(acc.commands)
    if any(x.func == TABLE_SINK for x in event.executions):  # format("ushas"): a micro-batch's streaming write
        command = "streaming_write"
    stream = next((x.stream for x in event.executions if x.stream), None)
    name = run_name(event.application_name, command, writes or (facts.ddl_outputs if facts else ()), reads)
    if facts is not None and name.command in LIFECYCLE:
        for d in writes:
            facts.lifecycle.setdefault(d, (LIFECYCLE[name.command], None))
    run = Run(run_id=event.run_id, application_id=event.application_id,
              application_name=event.application_name, execution_id=event.execution_id, user=event.user,
              start_ms=event.start_ms, end_ms=event.end_ms, status=event.status,
              operation=",".join(dict.fromkeys(o for o in acc.operations if o)), sql=event.sql,
              error=event.error, table_level="; ".join(acc.markers) or None, job=name.job, kind=name.kind,
              session_id=event.client.get("session"), client_kind=event.client.get("kind"),
              client_type=event.client.get("type"),
              stream_query_id=stream.get("query_id") if stream else None,
              batch_id=stream.get("batch_id") if stream else None,
              columns=acc.columns.get(writes[0], ()) if len(writes) == 1 else ())
    return CapturedRun(run, reads=tuple(reads), writes=tuple(writes), edges=tuple(edges))


def _table_level(acc: Analysis, doc: Any, relations: Relations) -> None:
    reads, writes = relations(doc)
    for d in reads:
        acc.reads.setdefault(d)
    for d in writes:
        acc.writes.setdefault(d)


def _add_datasets(acc: Analysis, result: LineageResult) -> None:
    """Writes: the result's target. Reads: every dataset column some step or dependency reads
    (relation leaves). The write target itself is a read only when its data flows somewhere (a
    source of an edge or of a dependency: INSERT OVERWRITE t ... FROM t reads t); a V2 write names
    its target as a relation too (AppendData's DataSourceV2Relation), which is not a read."""
    target = result.target
    if target is not None:
        acc.writes.setdefault(target)
        if any(e.source.dataset == target for e in result.edges):
            acc.reads.setdefault(target)
    for deriv in result.derivations.values():
        for step in deriv.inputs:
            if step.source.is_dataset_column and step.source.dataset is not None \
                    and step.source.dataset != target:
                acc.reads.setdefault(step.source.dataset)
    for dep in result.indirect:
        for src in dep.sources:
            if src.is_dataset_column and src.dataset is not None:
                acc.reads.setdefault(src.dataset)
    for u in result.unresolved:
        for c in u.columns:
            if c.dataset is not None and c.dataset != result.target:
                acc.reads.setdefault(c.dataset)


def _target_edges(result: LineageResult) -> list[Edge]:
    """Leaf-level edges of a write, their targets as columns of the written dataset."""
    if result.target is None:
        return []
    out = []
    for e in (*result.edges, *view_edges(result)):  # through persistent views, and to their columns
        target = e.target
        if target is not None and target.dataset is None:
            target = ColumnNode.column(result.target, target.name)
        out.append(Edge(target, e.source, e.kind, e.subtype, e.expression))
    return out


def _dedup_writes(writes: Mapping[Dataset, None], nested: bool) -> list[Dataset]:
    """One action writing a catalog table also reports, as a nested execution, the write of the
    table's files by path (V1 writes): keep the table, drop the path."""
    out = [d for d in writes if d.kind is not DatasetKind.INLINE]
    if nested and any(d.kind is DatasetKind.TABLE for d in out):
        out = [d for d in out if d.kind is not DatasetKind.PATH]
    # ``df.write.saveAsTable("t")`` into the session catalog: Spark's SaveAsV1TableCommand names the
    # table as the user typed it (no database); its nested CTAS / insert names it qualified. One
    # table: keep the qualified name (else a malformed ``spark_catalog.t`` output, and the
    # dataset-wide INDIRECT edges, which belong to the single write, would have no owner)
    qualified = {(d.catalog, d.identifier[-1]) for d in out if d.kind is DatasetKind.TABLE and len(d.identifier) > 1}
    return [d for d in out if not (d.kind is DatasetKind.TABLE and len(d.identifier) == 1
                                   and (d.catalog, d.identifier[0]) in qualified)]
