"""Checkpointed DataFrames reach their sources.

``df.checkpoint()`` / ``df.localCheckpoint()`` return a DataFrame whose plan is a ``LogicalRDD``
over the saved rows: the plan that produced them is gone from every later plan. It is known when
``checkpoint()`` is called, so :mod:`lineage.dataframe` wraps both methods to remember the
lineage of the DataFrame being checkpointed, keyed by the output attributes (exprIds) of the new
``LogicalRDD`` (Spark keeps the checkpointed plan's output attributes). The resolver
(:mod:`lineage.resolve`) looks a ``LogicalRDD`` up here and derives its columns from the
remembered lineage, as it sees through ``cache()``.

Per Python process: ``df.lineage()`` and capture in the process that called ``checkpoint()``
(``configure()``'s capture) see through it; a bridge process launched for a configuration-only
session does not (the ``LogicalRDD`` stays an in-query source there). The most recent
:data:`MAX_CHECKPOINTS` checkpoints are kept.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from .model import LineageResult

MAX_CHECKPOINTS = 512

_LOCK = threading.Lock()
_KNOWN: OrderedDict[tuple[int, ...], LineageResult] = OrderedDict()


def remember(output_ids: tuple[int, ...], lineage: LineageResult) -> None:
    """The checkpoint whose ``LogicalRDD`` outputs ``output_ids`` holds the rows ``lineage`` describes."""
    if not output_ids or len(output_ids) != len(lineage.outputs):
        return
    with _LOCK:
        _KNOWN[output_ids] = lineage
        _KNOWN.move_to_end(output_ids)
        while len(_KNOWN) > MAX_CHECKPOINTS:
            _KNOWN.popitem(last=False)


def lineage_of(output_ids: tuple[int, ...]) -> LineageResult | None:
    with _LOCK:
        return _KNOWN.get(output_ids)
