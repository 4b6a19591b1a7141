"""Change hooks: a downstream system told, reliably, about catalog changes (partitions added,
replaced or dropped, schema changes, drops ...), from the change feed, keeping its own progress
(docs/hooks.md).

- :mod:`.events`: event types, the kinds a hook subscribes to, the table pattern, the payload JSON.
- :mod:`.transport`: calling a hook (HTTP POST or a Python function) and what counts as a failure.
- :mod:`.store`: definitions, progress, deliveries, dead letters, status (``HookStore``).
- :mod:`.worker`: the delivery worker (``HookWorker``) and its thread in ``ushas serve`` (``HookRunner``).
"""
from __future__ import annotations

from .events import KINDS, PAYLOAD_VERSION, Subscription, classify, payload
from .store import DeadLetter, Delivery, Hook, HookStatus, HookStore
from .transport import HookUnavailable, Outcome
from .worker import HookRunner, HookWorker, PassResult

__all__ = ["KINDS", "PAYLOAD_VERSION", "DeadLetter", "Delivery", "Hook", "HookRunner", "HookStatus", "HookStore",
           "HookUnavailable", "HookWorker", "Outcome", "PassResult", "Subscription", "classify", "payload"]
