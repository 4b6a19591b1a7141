"""``POST /api/v1/lineage``: the OpenLineage receiver (:mod:`lineage.openlineage_receive`):
validates one RunEvent and, at its run's terminal event, stores the run, its dataset accesses
and column lineage in the project's lineage store. Answers 201 with what was taken."""
from __future__ import annotations

from typing import Any

from flask import Blueprint

from flask import request

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.service.routing import body_object, parse_json
from ushas_catalog.service.state import ServiceState

#: the most a gzip-compressed event may inflate to
MAX_EVENT_BYTES = 16 << 20


def event_body() -> dict[str, Any]:
    """The posted event; a gzip body (the openlineage-python client's ``compression: gzip``) too."""
    if request.headers.get("Content-Encoding", "").lower() != "gzip":
        return body_object()
    import zlib

    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflate.decompress(request.get_data(), MAX_EVENT_BYTES)
    except zlib.error:
        raise InvalidArgument("the gzip body could not be read") from None
    if inflate.unconsumed_tail:
        raise InvalidArgument(f"the event is larger than {MAX_EVENT_BYTES} bytes")
    event = parse_json(data)
    if not isinstance(event, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return event


def register(bp: Blueprint, state: ServiceState, namespaces: dict[str, str]) -> None:
    from ..openlineage_receive import Receiver

    receiver: list[Receiver] = []

    def get() -> Receiver:
        if not receiver:
            receiver.append(Receiver(lambda captured: state.lineage.store.record(captured),
                                     lambda name: state.metastore.catalog_exists((name,)), namespaces))
        return receiver[0]

    def receive() -> Any:
        return get().receive(event_body()).to_json()

    bp.add_url_rule("/lineage", "receive_run_event", state.endpoint(receive, status=201), methods=["POST"])


__all__ = ["register"]
