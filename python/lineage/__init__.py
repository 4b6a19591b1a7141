"""Column-level lineage: plan model, resolver, rendering, capture, store, queries, exports.

``lineage.record(inputs=[...], output=...)`` stores a run by hand (:mod:`lineage.manual`)."""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "record":  # imported on first use: ``import lineage.plan`` stays light
        from .manual import record

        return record
    raise AttributeError(f"module 'lineage' has no attribute {name!r}")
