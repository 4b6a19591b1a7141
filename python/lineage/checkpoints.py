"""Checkpointed DataFrames reach their sources.

``df.checkpoint()`` / ``df.localCheckpoint()`` return a DataFrame whose plan is a ``LogicalRDD``
over the saved rows: the plan that produced them is gone from every later plan. It is known when
``checkpoint()`` is called, so :mod:`lineage.dataframe` wraps both methods to remember the
lineage of the DataFrame being checkpointed, keyed by the output attributes (exprIds) of the new
``LogicalRDD`` (Spark keeps the checkpointed plan's output attributes). The resolver
(:mod:`lineage.resolve`) looks a ``LogicalRDD`` up here and derives its columns from the
remembered lineage, as it sees through ``cache()``.

Per Python process: ``df.lineage()`` and capture in the process that called ``checkpoint()``
(``configure()``'s capture) see through it. Capture elsewhere (a configuration-only session's
bridge process, a Spark Connect server, a Java or Scala job) learns it from the checkpoint action
itself (:func:`link`): Spark runs ``checkpoint()`` as an action over the checkpointed plan, which
the listener reports. The most recent :data:`MAX_CHECKPOINTS` checkpoints are kept.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from .model import LineageResult
from .store_values import RunStatus

if TYPE_CHECKING:
    from .capture_events import ActionEvent

log = logging.getLogger("ushas.lineage.capture")

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


#: the names Spark gives the action of ``Dataset.checkpoint`` / ``localCheckpoint`` (its ``withAction``)
CHECKPOINT_ACTIONS = frozenset({"checkpoint", "localCheckpoint"})


def remembering(method: Callable[..., Any], remember: Callable[[Any, Any], None]) -> Callable[..., Any]:
    """``method`` (a DataFrame's ``checkpoint`` / ``localCheckpoint``, classic or Connect) that then calls
    ``remember(self, saved)``, so the saved rows keep the lineage of what they were made from."""
    def checkpointed(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        remember(self, out)
        return out

    checkpointed.__wrapped__ = method  # type: ignore[attr-defined]
    checkpointed.__doc__ = method.__doc__
    checkpointed.ushas_lineage = True  # type: ignore[attr-defined]
    return checkpointed


def link(event: ActionEvent, resolver: Callable[[Any], LineageResult]) -> ActionEvent:
    """A captured ``checkpoint()`` / ``localCheckpoint()`` action: Spark runs it as an action over
    the plan being checkpointed, and the listener reports it with that plan; remember its lineage
    for the ``LogicalRDD`` Spark returns (whose output attributes are that plan's), so the later
    writes of the checkpointed DataFrame reach the source tables even when the Python wrapper
    (``lineage.dataframe``) did not run in this process: a configuration-only session's bridge, a
    Spark Connect server, a Scala or Java job. Capture handles actions one at a time, in the order
    Spark ran them, so the checkpoint is remembered before any write of its rows is resolved.
    Returns ``event`` with its plan read (a plan file is read once); never raises."""
    from .plan import parse

    root = next((x for x in event.executions if x.execution_id == event.execution_id), None)
    if root is None or root.func not in CHECKPOINT_ACTIONS or event.status is not RunStatus.COMPLETE:
        return event
    try:
        text = root.read_plan()
        if text is None:
            return event
        event = replace(event, executions=tuple(replace(x, plan=text, plan_file=None) if x is root else x
                                                for x in event.executions))
        doc = parse(text)
        remember(tuple(a.expr_id for a in doc.root_node.output), resolver(doc))
    except Exception as exc:  # noqa: BLE001 - the link is an extra: the run is stored without it
        log.debug("lineage: checkpoint %s not remembered: %s", event.execution_id, exc)
    return event
