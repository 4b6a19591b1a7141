"""The batch writes a ``writeStream.foreachBatch`` function makes, as runs of their own.

Spark runs them inside the micro-batch's execution: each is a nested execution whose root is the
micro-batch (Spark's ``IncrementalExecution``, ``func == "microBatch"``), so the listener reports them
with the micro-batch as one action. :func:`split` makes that action one run per batch write: the
nested executions are grouped by time (an execution that started and ended within another nested
execution belongs to it: a ``saveAsTable`` and its inner CTAS, a V1 insert and its file write), each
group is a run named by its first execution (its own run id), carrying the micro-batch's stream ids;
the micro-batch's own execution stays a run of its own (what it read). A micro-batch that writes
a table itself (``writeStream.toTable``: its ``WriteToMicroBatchDataSource`` names the table's
relation) is not split: it is one run with whatever nested executions its write made. A micro-batch into
``writeStream.format("ushas")`` (its sink ``UshasStreamSink(table)``, whose batch write is one nested
execution) is the streaming write of that table too: its batch write is the micro-batch's one run, named
as a ``toTable`` micro-batch's (``streaming_write``), with the stream's ids; the micro-batch's own
execution only links the rows (no run of its own). Lineage of each write is
resolved as any write's: the batch DataFrame's rows link to the streaming plan through
``lineage.checkpoints`` (``lineage.dataframe.remember_stream``)."""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable

from .capture_events import ActionEvent, ExecutionEvent
from .model import LineageResult

log = logging.getLogger("ushas.lineage.capture")

MICRO_BATCH = "microBatch"
#: the ``func`` of a format("ushas") sink's batch write: its run is the micro-batch's streaming write
TABLE_SINK = "ushasStreamSink"
#: how the shim's format("ushas") sink names itself in the micro-batch's plan
_TABLE_SINK_NAME = "UshasStreamSink("
#: output ids of the batches :func:`link` linked (not lineage.dataframe), oldest first
_LINKED: dict[tuple[int, ...], None] = {}


def split(event: ActionEvent) -> list[ActionEvent]:
    """``event`` as is, or, for a micro-batch with nested executions, one event per batch write
    (in start order) and the micro-batch's own execution last."""
    root = next((x for x in event.executions if x.execution_id == event.execution_id), None)
    nested = [x for x in event.executions if x is not root]
    if root is None or root.func != MICRO_BATCH or not nested:
        return [event]
    root, own_write, table_sink = _own_write(root)
    event = replace(event, executions=tuple(root if x.execution_id == root.execution_id else x
                                            for x in event.executions))
    if own_write:
        return [event]
    out = [_event(event, group, root, table_sink) for group in groups(nested)]
    out.append(replace(event, executions=(root,)))
    return out


def is_table_sink_write(event: ActionEvent) -> bool:
    """A format("ushas") sink's batch write (:func:`split` marked it): the micro-batch's run."""
    return any(x.func == TABLE_SINK for x in event.executions)


def _own_write(root: ExecutionEvent) -> tuple[ExecutionEvent, bool, bool]:
    """``root`` with its plan read (a plan file is read once), whether the micro-batch writes a
    table itself (toTable: ``WriteToMicroBatchDataSource`` with a ``relation``; foreachBatch's sink
    has none), and whether its sink is format("ushas")'s. A plan that cannot be read or parsed counts as
    no own write (split as foreachBatch)."""
    from .plan import parse

    try:
        text = root.read_plan()
        if text is None:
            return root, False, False
        root = replace(root, plan=text, plan_file=None)
        doc = parse(text)
    except Exception as exc:  # noqa: BLE001 - the runs are stored anyway, one per batch write
        log.debug("lineage: micro-batch %s plan not read: %s", root.execution_id, exc)
        return root, False, False
    own = any(n.kind == "WriteToMicroBatchDataSource" and "relation" in n.plans for n in doc.nodes)
    sink = any(n.kind.startswith("WriteToMicroBatchDataSource") and any(_names_table_sink(v) for v in n.args.values())
               for n in doc.nodes)
    return root, own, sink


def _names_table_sink(value: Any) -> bool:
    """An argument of the micro-batch's write node that is the format("ushas") sink (``{"t": "Table",
    "name": "UshasStreamSink(…)"}``)."""
    return isinstance(value, dict) and str(value.get("name", "")).startswith(_TABLE_SINK_NAME)


def groups(executions: list[ExecutionEvent]) -> list[list[ExecutionEvent]]:
    """Nested executions grouped by time containment, in start order: the first of a group is an
    execution the previous group's first does not contain; an execution without times joins the
    last group begun by an earlier execution id (Spark numbers executions as they start)."""
    timed = sorted((x for x in executions if x.start_ms is not None and x.end_ms is not None),
                   key=lambda x: (x.start_ms or 0, -(x.end_ms or 0), x.execution_id))
    out: list[list[ExecutionEvent]] = []
    for x in timed:
        if out and _contains(out[-1][0], x):
            out[-1].append(x)
        else:
            out.append([x])
    for x in (x for x in executions if x.start_ms is None or x.end_ms is None):
        earlier = [g for g in out if g[0].execution_id < x.execution_id]
        if earlier:
            earlier[-1].append(x)
        elif out:
            out[0].append(x)
        else:
            out.append([x])
    return out


def _event(event: ActionEvent, group: list[ExecutionEvent], root: ExecutionEvent, table_sink: bool) -> ActionEvent:
    first = group[0]
    return replace(event, execution_id=first.execution_id,
                   start_ms=first.start_ms if first.start_ms is not None else event.start_ms,
                   end_ms=first.end_ms if first.end_ms is not None else event.end_ms,
                   executions=tuple(replace(x, stream=x.stream or root.stream, func=TABLE_SINK if table_sink else x.func)
                                     for x in group), sql=None)


def _contains(outer: ExecutionEvent, inner: ExecutionEvent) -> bool:
    if outer.start_ms is None or outer.end_ms is None or inner.start_ms is None or inner.end_ms is None:
        return False
    return outer.start_ms <= inner.start_ms and inner.end_ms <= outer.end_ms and outer.execution_id < inner.execution_id


def link(root: ActionEvent, resolver: Callable[[Any], LineageResult]) -> ActionEvent:
    """The micro-batch's own plan says where the batch DataFrame's rows come from: remember its
    lineage for the batch's ``LogicalRDD`` (its output attributes are the streaming query's:
    lineage.checkpoints), so the batch writes reach the stream's sources even when the Python
    wrapper (lineage.dataframe.remember_stream) did not run in this process (a Scala job, a
    configuration-only session's bridge). Returns ``root`` with its plan read (a plan file is read
    once); never raises."""
    from . import checkpoints
    from .plan import parse

    (x,) = root.executions
    try:
        text = x.read_plan()
        if text is None:
            return root
        root = replace(root, executions=(replace(x, plan=text, plan_file=None),))
        doc = parse(text)
        node = doc.root_node
        while not node.output and node.children:  # the sink node: the query below it
            node = doc.nodes[node.children[-1]]
        ids = tuple(a.expr_id for a in node.output)
        # each batch reads its own input (a file source: the batch's files): the latest batch's
        # lineage, unless lineage.dataframe linked the stream itself (its sources, better)
        if ids and (ids in _LINKED or checkpoints.lineage_of(ids) is None):
            checkpoints.remember(ids, resolver(doc))
            _LINKED[ids] = None
            while len(_LINKED) > checkpoints.MAX_CHECKPOINTS:
                del _LINKED[next(iter(_LINKED))]
    except Exception as exc:  # noqa: BLE001 - the link is an extra: the runs are stored without it
        log.debug("lineage: micro-batch %s not linked: %s", x.execution_id, exc)
    return root
