"""lineage.micro_batches: a foreachBatch micro-batch's action becomes one run per batch write."""
from __future__ import annotations

import pytest
from dataclasses import replace

from lineage.capture_events import ActionEvent, ExecutionEvent
from lineage.micro_batches import split
from lineage.store import RunStatus

STREAM = {"query_id": "q-1", "run_id": "r-1", "batch_id": 4}


def x(exec_id: int, start: int | None, end: int | None, func: str = "command") -> ExecutionEvent:
    return ExecutionEvent(execution_id=exec_id, func=func, start_ms=start, end_ms=end,
                          stream=STREAM if func == "microBatch" else None)


def event(root: ExecutionEvent, *nested: ExecutionEvent) -> ActionEvent:
    return ActionEvent(application_id="app", application_name="etl", user="u", execution_id=root.execution_id,
                       start_ms=0, end_ms=100, status=RunStatus.COMPLETE, executions=(*nested, root), sql="x")


MB = x(1, 0, 100, "microBatch")


@pytest.mark.parametrize("action, runs", [
    # a micro-batch with no nested execution (toTable, or a function that writes nothing): one run
    (event(MB), [[1]]),
    # saveAsTable (2) with its inner CTAS (3) and file write (4), then save(path) (5): two writes + the batch
    (event(MB, x(2, 10, 40, "saveAsTable"), x(3, 11, 39), x(4, 12, 38), x(5, 41, 60, "save")), [[2, 3, 4], [5], [1]]),
    # zero-length siblings in one millisecond cannot be told from nesting: one run (an earlier id
    # never belongs to a later one)
    (event(MB, x(2, 10, 10), x(3, 10, 10)), [[2, 3], [1]]),
    (event(MB, x(2, 10, 20), x(3, 20, 30)), [[2], [3], [1]]),
    # reported in any order: grouped by time
    (event(MB, x(5, 41, 60), x(3, 11, 39), x(2, 10, 40)), [[2, 3], [5], [1]]),
    # an execution without times joins the group before it
    (event(MB, x(2, 10, 40), x(3, None, None)), [[2, 3], [1]]),
    (event(MB, x(3, 10, 40), x(2, None, None)), [[3, 2], [1]]),
    # not a micro-batch: an action with nested executions is one run, as before
    (event(x(1, 0, 100, "saveAsTable"), x(2, 10, 40)), [[2, 1]]),
])
def test_split_one_run_per_batch_write(action: ActionEvent, runs: list[list[int]]) -> None:
    out = split(action)
    assert [[e.execution_id for e in ev.executions] for ev in out] == runs
    assert len({ev.run_id for ev in out}) == len(out), "every run its own id"
    if len(out) > 1:
        for ev in out[:-1]:  # each batch write: its first execution's id and times, the stream's ids
            first = ev.executions[0]
            assert (ev.execution_id, ev.start_ms, ev.end_ms, ev.sql) == (first.execution_id, first.start_ms,
                                                                         first.end_ms, None)
            assert all(e.stream == STREAM for e in ev.executions)
        assert out[-1].executions == (MB,) and out[-1].execution_id == 1


def _plan(relation: bool) -> str:
    """A micro-batch's plan: WriteToMicroBatchDataSource over a stream, naming the table's relation
    (toTable) or not (foreachBatch: its ForeachBatchSink has none)."""
    import json

    write = {"k": 0, "c": [1], "a": {"table": {"t": "Table", "name": "ushas.db.t" if relation else "ForeachBatchSink"}}}
    nodes = [write, {"k": 1}]
    if relation:
        write["p"] = {"relation": 2}
        nodes.append({"k": 2})
    return json.dumps({"format": "ushas-plan", "version": 2, "kinds": ["WriteToMicroBatchDataSource", "StreamingDataSourceV2ScanRelation", "DataSourceV2Relation"],
                       "nodes": nodes, "root": 0, "exprs": []})


def test_a_micro_batch_that_writes_a_table_itself_is_one_run() -> None:
    # toTable: the micro-batch's own write names the table; its nested executions are part of it
    root = ExecutionEvent(execution_id=1, func="microBatch", start_ms=0, end_ms=100, stream=STREAM, plan=_plan(True))
    (out,) = split(event(root, x(2, 10, 40), x(3, 41, 60)))
    assert sorted(e.execution_id for e in out.executions) == [1, 2, 3] and out.execution_id == 1
    # foreachBatch: the same plan without a relation is split, the micro-batch's plan kept read
    root = replace(root, plan=_plan(False))
    out2 = split(event(root, x(2, 10, 40), x(3, 41, 60)))
    assert [[e.execution_id for e in ev.executions] for ev in out2] == [[2], [3], [1]]
    assert out2[-1].executions == (root,)


def test_a_format_ushas_micro_batch_is_its_batch_writes_run() -> None:
    """writeStream.format("ushas"): the micro-batch's sink is UshasStreamSink(table) and its batch write a
    nested execution; that write is split out marked as the sink's (the micro-batch's streaming-write
    run, with the stream's ids), the micro-batch's own execution last (it only links the rows)."""
    import json

    from lineage.micro_batches import TABLE_SINK, is_table_sink_write

    def plan(sink: str) -> str:
        nodes = [{"k": 0, "c": [1], "a": {"sink": {"t": "Table", "name": sink}}}, {"k": 1}]
        return json.dumps({"format": "ushas-plan", "version": 2, "nodes": nodes, "root": 0, "exprs": [],
                           "kinds": ["WriteToMicroBatchDataSourceV1", "StreamingDataSourceV2ScanRelation"]})

    root = ExecutionEvent(execution_id=1, func="microBatch", start_ms=0, end_ms=100, stream=STREAM,
                          plan=plan("UshasStreamSink(ushas.db.t)"))
    write, last = split(event(root, x(2, 10, 40, "append"), x(3, 11, 39)))
    assert [e.execution_id for e in write.executions] == [2, 3] and last.executions == (root,)
    assert all(e.func == TABLE_SINK and e.stream == STREAM for e in write.executions)
    assert is_table_sink_write(write) and not is_table_sink_write(last)
    # another V1 sink (foreachBatch's): its batch writes stay plain batch writes
    other = split(event(replace(root, plan=plan("ForeachBatchSink")), x(2, 10, 40, "append")))
    assert not any(is_table_sink_write(e) for e in other) and other[0].executions[0].func == "append"
