"""The checkpoint registry without Spark (lineage.checkpoints): bounded, keyed by the saved rows'
output attributes, and never keeping a lineage that does not fit them."""
from __future__ import annotations

from typing import Any

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
