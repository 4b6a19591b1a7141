"""Runs: ``/api/v1/runs`` (newest first, of one dataset or of the project; cursor-paged) and
``/api/v1/runs/{run_id}`` (the run with its SQL, status, duration, inputs, outputs and the
column edges it produced)."""
from __future__ import annotations

import base64
import uuid
from typing import Any

from flask import Blueprint

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.service.routing import int_arg, str_arg
from ushas_catalog.service.state import ServiceState

from .api import time_arg


def run_json(run: Any, access: str | None = None) -> dict[str, Any]:
    out = run.to_dict()
    out["duration_ms"] = max(0, run.end_ms - run.start_ms)
    if access is not None:
        out["access"] = access
    return out


def encode_cursor(end_ms: int, run_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(f"{end_ms}:{run_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[int, str] | None:
    if not cursor:
        return None
    try:
        t, _, rid = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().partition(":")
        return int(t), str(uuid.UUID(rid))
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument(f"invalid runs cursor {cursor[:40]!r}") from None


def register(bp: Blueprint, state: ServiceState, namespaces: dict[str, str] | None = None) -> None:
    ep = state.endpoint

    @bp.get("/runs")
    @ep
    def list_runs() -> Any:
        dataset = str_arg("dataset")
        since, until = time_arg("since"), time_arg("until")
        limit = int_arg("limit", 50, 1, 1000) or 50
        after = decode_cursor(str_arg("cursor"))
        if after is not None:
            until = after[0] if until is None else min(until, after[0])
        q = state.lineage
        rows: list[tuple[str | None, Any]]
        if dataset is not None:
            rows = [(acc.value, run) for acc, run in reversed(q.runs(dataset, since=since, until=until))]
        else:
            fetch = limit + 1 + (100 if after is not None else 0)
            rows = [(None, run) for run in q.store.runs_between(since, until, limit=fetch, reverse=True)]
        if after is not None:
            rows = [(a, r) for a, r in rows if (r.end_ms, str(r.run_id)) < after]
        page = rows[:limit]
        more = len(rows) > limit
        return {"items": [run_json(r, a) for a, r in page],
                "next_cursor": encode_cursor(page[-1][1].end_ms, page[-1][1].run_id) if more and page else None}

    @bp.get("/runs/<seg:run_id>")
    @ep
    def get_run(run_id: str) -> Any:
        text = run_id.strip()
        if len(text) < 4 or any(c not in "0123456789abcdefABCDEF-" for c in text):
            from ushas_catalog.errors import NoSuchRun

            raise NoSuchRun(f"no lineage run {run_id[:80]!r} (a run id or a prefix of at least 4 hex digits)")
        detail = state.lineage.run(text)
        run = detail["run"]
        run["duration_ms"] = max(0, int(run["end_ms"]) - int(run["start_ms"]))
        return detail


__all__ = ["register", "run_json"]
