"""Helpers of the metadata / system table tests: the keys the catalog reads, lineage capture."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def count_key_reads(spark: Any) -> Iterator[Any]:
    """The keys the bridge's metastore reads for the store of the session's ``ushas`` catalog while the
    block runs (:mod:`ushas_catalog.kv.read_count`)."""
    from ushas_catalog.kv.read_count import KeyReads
    from ushas_catalog.spark.registry import REGISTRY

    uri = spark.conf.get("spark.sql.catalog.ushas.uri")
    opened = REGISTRY.get(uri, "default")
    with KeyReads.on(opened.metastore.db) as reads:
        yield reads


def flush_lineage(spark: Any) -> None:
    """Until every action run so far is stored by the lineage listener (it is asynchronous)."""
    from lineage.capture import flush_spark

    assert flush_spark(spark, 60).flushed
