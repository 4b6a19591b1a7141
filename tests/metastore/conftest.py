"""Metastore fixtures (``store_uri``, on both engines in some modules: tests/conftest.py)."""
from __future__ import annotations

from typing import Iterator

import pytest

from ushas_catalog.metastore import Metastore


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
