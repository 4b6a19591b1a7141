"""The API against its OpenAPI document: the checked-in document is the one the code builds,
the service serves it, and schemathesis (property-based requests from the document) checks
every operation's answers — status codes, content types and bodies — against it, on a live
service (waitress on a free port) over the UI test store, with a write token (so write
operations are exercised too, on whatever objects the generated names find)."""
from __future__ import annotations

import json
from typing import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)
from schemathesis.checks import not_a_server_error

from ushas_catalog.service.api import OPENAPI, openapi_document
from ushas_catalog.service.spec import document

from .live import Live

SCHEMA = schemathesis.openapi.from_dict(document())
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_checked_in_document_is_the_built_one() -> None:
    assert json.loads(OPENAPI.read_text()) == document(), \
        "regenerate: python -c 'from ushas_catalog.service.spec import write_file; write_file()'"
    assert openapi_document()["openapi"].startswith("3.")


def test_service_serves_the_document(live: Live) -> None:
    answer = live.get("/api/v1/openapi.json")
    assert answer.status == 200 and answer.json == document()


def test_every_path_is_routed(live: Live) -> None:
    """No documented path falls through to the 'no such API endpoint' answer."""
    paths = document()["paths"]
    assert len(paths) > 20 and "/api/v1/catalogs" in paths, sorted(paths)  # the document's, not an empty map
    for path, ops in paths.items():
        url = path.format(catalog="shop", database="sales", table="raw", view="fr", run_id="0000", name="churn",
                          version="1", subspace="daily", op="list_namespaces")
        for method in ops:
            answer = live.request(method.upper(), url, body={} if method in ("post", "put") else None)
            assert answer.json != {"error": {"type": "NotFound", "message": "no such API endpoint"}}, (method, path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One live service for every operation's examples (a store per operation would double the time)."""
    from app.uistore import build

    from .live import running, token

    uri = f"sqlite:///{tmp_path_factory.mktemp('contract') / 'ushas.db'}"
    build(uri)
    write = token(uri, "write")
    for svc in running(uri):
        svc.write_token = write  # type: ignore[attr-defined]
        yield svc


@SCHEMA.parametrize()
@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_answers_follow_the_document(case: schemathesis.Case, shared: Live) -> None:
    headers = {"Authorization": f"Bearer {shared.write_token}"}  # type: ignore[attr-defined]
    case.call_and_validate(base_url=shared.base, headers=headers, checks=CHECKS, timeout=30)
