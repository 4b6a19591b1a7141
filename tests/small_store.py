"""A small store the store-opening, reader and CLI tests share: catalog main, database main.sales,
table main.sales.orders partitioned by dt with one partition (``tests/`` is on ``sys.path``)."""
from __future__ import annotations


def fill(uri: str, user: str = "t") -> str:
    from ushas_catalog.metastore import Metastore

    ms = Metastore.open(uri, project="acme", user=user)
    ms.create_catalog("main")
    ms.create_database("main.sales", location="/wh/sales")
    ms.create_table("main.sales.orders", "id BIGINT, dt DATE", partition_by=["dt"])
    ms.add_partitions("main.sales.orders", [{"dt": "2024-01-01"}])
    ms.close()
    return uri
