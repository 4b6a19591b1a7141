"""The checkpoint registry without Spark (lineage.checkpoints): bounded, keyed by the saved rows'
output attributes, and never keeping a lineage that does not fit them."""
from __future__ import annotations

from typing import Any

import pytest

from lineage import checkpoints
from lineage.model import ColumnNode, Dataset, Derivation, LineageResult, Step
from lineage.kinds import EdgeSubtype

T = Dataset.table("spark_catalog", "db", "t")


def result(*names: str) -> LineageResult:
    outputs = tuple(ColumnNode(n, expr_id=i) for i, n in enumerate(names))
    derivations = {c: Derivation("Project", c.name, (Step(ColumnNode.column(T, c.name), EdgeSubtype.IDENTITY),))
                   for c in outputs}
    return LineageResult(outputs=outputs, derivations=derivations)


def test_remember_and_look_up(monkeypatch: Any) -> None:
    monkeypatch.setattr(checkpoints, "_KNOWN", type(checkpoints._KNOWN)())  # noqa: SLF001 - a fresh registry
    r = result("a", "b")
    checkpoints.remember((101, 102), r)
    assert checkpoints.lineage_of((101, 102)) is r
    assert checkpoints.lineage_of((102, 101)) is None
    checkpoints.remember((103,), r)  # one attribute for two columns: not the rows r describes
    assert checkpoints.lineage_of((103,)) is None


def test_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(checkpoints, "_KNOWN", type(checkpoints._KNOWN)())  # noqa: SLF001
    monkeypatch.setattr(checkpoints, "MAX_CHECKPOINTS", 3)
    for i in range(5):
        checkpoints.remember((i,), result("a"))
    assert [checkpoints.lineage_of((i,)) is not None for i in range(5)] == [False, False, True, True, True]


def _checkpoint_action(func: str, status: Any, ids: tuple[int, ...]) -> Any:
    """A captured action whose root execution is ``func`` over a plan with output attributes ``ids``."""
    import json

    from lineage.capture_events import ActionEvent, ExecutionEvent

    plan = json.dumps({"format": "ushas-plan", "version": 2, "kinds": ["Project"],
                       "attrs": [[f"c{i}", i, "int"] for i in ids], "outputs": [list(range(len(ids)))],
                       "nodes": [{"k": 0, "o": 0}], "root": 0, "exprs": []})
    root = ExecutionEvent(execution_id=7, func=func, plan=plan)
    return ActionEvent(application_id="app", application_name="job", user="u", execution_id=7, start_ms=0,
                       end_ms=1, status=status, executions=(root,))


@pytest.mark.parametrize("func, status, remembered", [
    ("checkpoint", "COMPLETE", True), ("localCheckpoint", "COMPLETE", True),
    ("checkpoint", "FAIL", False),  # nothing was saved
    ("collect", "COMPLETE", False),  # any other action: its rows are no LogicalRDD
])
def test_a_captured_checkpoint_action_is_remembered(monkeypatch: Any, func: str, status: str,
                                                    remembered: bool) -> None:
    """lineage.checkpoints.link: what capture does for a checkpoint action reported by the listener
    (a configuration-only session, a Connect server, a JVM job): its plan's lineage, for its outputs."""
    from lineage.store import RunStatus

    monkeypatch.setattr(checkpoints, "_KNOWN", type(checkpoints._KNOWN)())  # noqa: SLF001
    r = result("a", "b")
    resolved: list[Any] = []

    def resolver(doc: Any) -> LineageResult:
        resolved.append(doc)
        return r

    event = _checkpoint_action(func, RunStatus(status), (501, 502))
    out = checkpoints.link(event, resolver)
    assert out.executions[0].plan == event.executions[0].plan  # the plan kept, for the run itself
    assert (checkpoints.lineage_of((501, 502)) is r) is remembered
    assert len(resolved) == int(remembered)
    broken = _checkpoint_action(func, RunStatus(status), (503,))  # one attribute for two columns
    checkpoints.link(broken, resolver)
    assert checkpoints.lineage_of((503,)) is None
