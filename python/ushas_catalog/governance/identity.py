"""Who calls: the caller of the current metastore call (its user, whether its calls are checked).

A metastore has a configured user and authorization setting (``Metastore.open(..., user=,
authorization=)``); a server that calls one metastore for many clients (the Spark bridge, ``ushas
serve``) says who calls for the duration of each call with :func:`calling`. Identity is configured,
never guessed from a request's content: see docs/governance.md ("Identity").
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Caller:
    user: str
    authorization: bool = False

    @property
    def principal(self) -> str:
        return f"user:{self.user}"


_CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("ushas_caller", default=None)


def current() -> Caller | None:
    """The caller :func:`calling` set for this context, or None (the metastore's own settings)."""
    return _CALLER.get()


@contextlib.contextmanager
def calling(caller: Caller | None) -> Iterator[None]:
    """Calls made inside run as ``caller`` (None: as the metastore is configured)."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)
