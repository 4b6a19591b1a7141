from __future__ import annotations

from typing import Iterator

import pytest

from ushas_catalog.metadata.store import INDEX_MERGE_AT
from ushas_catalog.metastore import Metastore


@pytest.fixture(params=[INDEX_MERGE_AT, 1], ids=["pending", "merged"])
def ms(store_uri: str, request: pytest.FixtureRequest) -> Iterator[Metastore]:
    """A metastore whose new objects' index entries stay pending (the default: fewer than
    INDEX_MERGE_AT objects here), or are merged into the index after every create."""
    m = Metastore.open(store_uri, project="acme", user="tester")
    m.index_merge_at = request.param
    yield m
    m.close()


@pytest.fixture
def sales(ms: Metastore) -> Metastore:
    """catalog main, database main.sales, table main.sales.orders (partitioned by day) and view
    main.sales.big_orders."""
    ms.create_catalog("main")
    ms.create_database("main.sales")
    ms.create_table("main.sales.orders", "id BIGINT, customer_id BIGINT COMMENT 'the buyer', "
                    "address STRUCT<city: STRING, zip: STRING>, amount DOUBLE, day DATE", partition_by=["day"])
    ms.create_view("main.sales.big_orders", "SELECT id, amount FROM main.sales.orders WHERE amount > 100",
                   "id BIGINT, amount DOUBLE")
    return ms
