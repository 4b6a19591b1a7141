"""``ushas serve`` on a PostgreSQL store: its answers never show where the store is (host, port,
database, schema), also when the server is down, and it answers again once the server is back."""
from __future__ import annotations

from typing import Iterator

import pytest

from app.uistore import build
from pg_server import PgServer

from .live import Live, running

pytestmark = pytest.mark.postgresql


@pytest.fixture
def pg_live(postgres: PgServer) -> Iterator[Live]:
    uri = postgres.fresh_uri(unreachable_s="0.5")
    build(uri)
    try:
        for svc in running(uri):
            yield svc
    finally:
        postgres.drop_schema(uri)


def test_store_errors_never_show_where_the_store_is_and_the_service_recovers(postgres: PgServer,
                                                                             pg_live: Live) -> None:
    assert pg_live.get("/api/v1/catalogs").status == 200
    schema = pg_live.uri.split("schema=")[1].split("&")[0]
    secrets = ["127.0.0.1", str(postgres.port), postgres.dbname, schema]
    info = pg_live.get("/api/v1/info")
    assert info.status == 200 and not [s for s in secrets if s in info.body.decode()]
    postgres.stop("immediate")
    try:
        down = pg_live.get("/api/v1/catalogs")
    finally:
        postgres.start()
    assert down.status == 503 and down.json["error"]["type"] == "StoreUnavailable"
    message = down.json["error"]["message"]
    assert "unreachable" in message and "\n" not in message
    assert [s for s in secrets if s in message] == [], message
    assert pg_live.get("/api/v1/catalogs").status == 200
