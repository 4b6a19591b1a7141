"""``GET /api/v1/changes?since=CURSOR&limit=N``: the change feed, oldest first, one page at a
time; ``next_cursor`` continues after the last change of the page (``since`` again when the
page is empty: nothing new yet)."""
from __future__ import annotations

from itertools import islice
from typing import Any

from flask import Blueprint

from .routing import int_arg, str_arg
from .state import ServiceState


def register(bp: Blueprint, state: ServiceState) -> None:
    @bp.get("/changes")
    @state.endpoint
    def changes() -> Any:
        since = str_arg("since")
        limit = int_arg("limit", 100, 1, 1000) or 100
        items = [c.to_json() for c in islice(state.metastore.changes(since, batch=min(limit, 500)), limit)]
        return {"items": items, "next_cursor": items[-1]["cursor"] if items else since}


__all__ = ["register"]
