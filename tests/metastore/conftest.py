"""Metastore fixtures. ``store_uri`` is a fresh store for one test; in the modules of
:data:`ON_POSTGRESQL` every test using it runs on both engines (``[sqlite]`` and ``[postgresql]``:
a fresh schema on the session's throw-away PostgreSQL server, tests/pg_server.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from ushas_catalog.metastore import Metastore

#: the modules whose store tests run on the PostgreSQL engine as well (the metastore suite, bulk
#: operations, fenced writes, concurrent writers, the cache's version checks, restores)
ON_POSTGRESQL = frozenset({"test_metastore", "test_bulk", "test_write_fence", "test_concurrency", "test_objects",
                           "test_partition_keys", "test_one_transaction", "test_value_limits", "test_cache",
                           "test_restore"})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if "engine" in metafunc.fixturenames and module in ON_POSTGRESQL:
        metafunc.parametrize("engine", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)],
                             indirect=True)


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture
def store_uri(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    if engine == "sqlite":
        yield f"sqlite:///{tmp_path / 'ushas.db'}"
        return
    server = request.getfixturevalue("postgres")
    uri = server.fresh_uri()
    yield uri
    server.drop_schema(uri)


@pytest.fixture
def ms(store_uri: str) -> Iterator[Metastore]:
    m = Metastore.open(store_uri, project="acme", user="tester")
    yield m
    m.close()


@pytest.fixture
def sales(ms: Metastore) -> Metastore:
    """A metastore with catalog main and database main.sales (location /wh/sales)."""
    ms.create_catalog("main")
    ms.create_database("main.sales", location="/wh/sales")
    return ms


def raw_keys(ms: Metastore, begin: bytes = b"", end: bytes = b"\xff") -> list[bytes]:
    return ms.db.run(lambda tr: [kv.key for kv in tr.get_range(begin, end)])
