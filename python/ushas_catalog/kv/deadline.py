"""The caller's deadline of the current call: past it, nobody waits for the answer any more.

The Spark shim sends every bridge call's deadline (the moment its own timeout gives up, epoch
milliseconds); the bridge runs the call inside :func:`until`, and :meth:`Database.run` stops
retrying a busy store once it has passed, so a call its caller abandoned ends and releases the
store instead of waiting for the lock and committing after Spark reported a failure.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from ..errors import CallAbandoned

#: epoch seconds after which the current call's caller no longer waits (None: no deadline)
_DEADLINE: ContextVar[float | None] = ContextVar("ushas_call_deadline", default=None)


@contextmanager
def until(deadline_ms: Any) -> Iterator[None]:
    """Run the body with the caller's deadline ``deadline_ms`` (epoch ms; None or absent: none)."""
    if deadline_ms is None or isinstance(deadline_ms, bool) or not isinstance(deadline_ms, (int, float)):
        yield
        return
    token = _DEADLINE.set(deadline_ms / 1000)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left before the current call's deadline (negative: passed; None: no deadline)."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.time()


def check(doing: str) -> None:
    """Raise :class:`CallAbandoned` when the current call's deadline has passed."""
    left = remaining()
    if left is not None and left < 0:
        raise CallAbandoned(f"the caller stopped waiting {-left:.1f} s ago; {doing} was abandoned")


__all__ = ["until", "remaining", "check"]
