"""The ``store`` fixture: one fresh store per test, parametrized over every engine.

``sqlite`` always runs (a fresh file). ``postgresql`` always runs too: a fresh schema on the
session's throw-away server (fixture ``postgres``, tests/pg_server.py). ``fdb`` runs when ``USHAS_FDB_CLUSTER_FILE`` names a
cluster file and is skipped otherwise; on a cluster every test works under its own random
prefix, cleared afterwards."""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from skip_policy import FDB_SKIP_REASON  # the one skip reason a run accepts without USHAS_ALLOW_SKIPS

from ushas_catalog.kv import Database, open_database


@dataclass
class Store:
    engine: str
    uri: str
    db: Database
    prefix: bytes

    def key(self, suffix: bytes) -> bytes:
        return self.prefix + suffix

    def end(self) -> bytes:
        return self.prefix[:-1] + bytes([self.prefix[-1] + 1])

    def reopen(self) -> Database:
        return open_database(self.uri)


def engine_uri(engine: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> str:
    if engine == "sqlite":
        return f"sqlite://{tmp_path / 'kv.db'}"
    if engine == "postgresql":
        assert request is not None
        return request.getfixturevalue("postgres").fresh_uri()
    cluster = os.environ.get("USHAS_FDB_CLUSTER_FILE")
    if not cluster:
        pytest.skip(FDB_SKIP_REASON)
    return f"fdb://{Path(cluster).resolve()}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql), pytest.param("fdb", marks=pytest.mark.fdb)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    uri = engine_uri(request.param, tmp_path, request)
    db = open_database(uri)
    prefix = b"ushas-kv-test/" + uuid.uuid4().hex.encode() + b"/"
    s = Store(request.param, uri, db, prefix)
    yield s                                   # a test may replace s.db (reopen)
    if request.param == "fdb":
        s.db.run(lambda tr: tr.clear_range_startswith(prefix))
    s.db.close()
    if request.param == "postgresql":
        request.getfixturevalue("postgres").drop_schema(uri)


@pytest.fixture
def filled(tmp_path: Path) -> str:
    """A small sqlite store (tests/small_store.py)."""
    from small_store import fill

    return fill(f"sqlite://{tmp_path / 'u.db'}")


@pytest.fixture
def locked(filled: str) -> Iterator[str]:
    """``filled`` while another process holds its write lock."""
    from store_lock import LockHolder

    holder = LockHolder(Path(filled.removeprefix("sqlite://")))
    try:
        yield filled
    finally:
        holder.release()
