"""``POST /api/v1/lineage``: the OpenLineage receiver (:mod:`lineage.openlineage_receive`):
validates one RunEvent and, at its run's terminal event, stores the run, its dataset accesses
and column lineage in the project's lineage store. Answers 201 with what was taken."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from .routing import body_object
from .state import ServiceState


def register(bp: Blueprint, state: ServiceState, namespaces: dict[str, str]) -> None:
    from lineage.openlineage_receive import Receiver

    receiver: list[Receiver] = []

    def get() -> Receiver:
        if not receiver:
            receiver.append(Receiver(lambda captured: state.lineage.store.record(captured),
                                     lambda name: state.metastore.catalog_exists((name,)), namespaces))
        return receiver[0]

    def receive() -> Any:
        return get().receive(body_object()).to_json()

    bp.add_url_rule("/lineage", "receive_run_event", state.endpoint(receive, status=201), methods=["POST"])


__all__ = ["register"]
