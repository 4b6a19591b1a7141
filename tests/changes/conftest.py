from __future__ import annotations

from typing import Iterator

import pytest

from ushas_catalog.metastore import Metastore


@pytest.fixture
def ms(store_uri: str) -> Iterator[Metastore]:
    """A metastore with catalog main and database main.sales (location /wh/sales)."""
    m = Metastore.open(store_uri, project="acme", user="tester")
    m.create_catalog("main")
    m.create_database("main.sales", location="/wh/sales")
    yield m
    m.close()
