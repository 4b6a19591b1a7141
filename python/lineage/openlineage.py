"""OpenLineage export of captured runs: each run as a START and a COMPLETE / FAIL ``RunEvent``
(inputs, outputs with the ``columnLineage`` facet, the SQL as the ``sql`` job facet, the error
as the ``errorMessage`` run facet), built with ``openlineage.client`` classes and written as
JSON lines (``openlineage.client.serde.Serde``)."""
from __future__ import annotations

from typing import Any, Iterator, TextIO

from .openlineage_events import PRODUCER, ColumnEdge, to_json
from .openlineage_events import run_events as build
from .openlineage_facts import LIFECYCLE, RunFacts
from .store import Access, LineageStore, Run

def run_events(store: LineageStore, run: Run) -> list[Any]:
    """The START and the COMPLETE / FAIL event of one stored run (``lineage.openlineage_events``
    builds them, as for the HTTP producer; schemas and write statistics are not stored, so
    those facets are sent live only)."""
    datasets = store.run_datasets(run.run_id)
    by_key = {ref.key: ref.dataset for _, ref in datasets}
    stored_edges = store.run_edges(run.run_id)
    for e, _ in stored_edges:  # datasets of edges are always among the run's datasets; be safe
        for key in (e.target, e.source):
            if key not in by_key:
                ref = store.dataset(key)
                if ref is not None:
                    by_key[key] = ref.dataset
    edges = [ColumnEdge(by_key[e.target], e.target_column, by_key[e.source], e.source_column, e.kind.value,
                        e.subtype.value, expression)
             for e, expression in stored_edges if e.target in by_key and e.source in by_key]
    inputs = [ref.dataset for access, ref in datasets if access is Access.READ]
    outputs = [ref.dataset for access, ref in datasets if access is Access.WRITE]
    facts = RunFacts()
    state = LIFECYCLE.get(run.kind.lower().replace(" ", "_"))
    if state is not None:
        facts.lifecycle.update((d, (state, None)) for d in outputs)
    return build(run, inputs, outputs, edges, namespace=f"ushas/{store.project}", facts=facts)


def export_events(store: LineageStore, since: int | None = None, until: int | None = None) -> Iterator[Any]:
    """RunEvents of every run that ended in ``[since, until]``, in time order."""
    for run in store.runs_between(since, until):
        yield from run_events(store, run)


def write_json_lines(store: LineageStore, out: TextIO, since: int | None = None, until: int | None = None) -> int:
    """Write the events as JSON lines; the number of events written."""
    n = 0
    for event in export_events(store, since, until):
        out.write(to_json(event))
        out.write("\n")
        n += 1
    return n


__all__ = ["PRODUCER", "export_events", "run_events", "write_json_lines"]
