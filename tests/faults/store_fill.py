"""A small store with one of everything ``ushas check`` looks at, and a dump of a store's keys
(``tests/`` is on ``sys.path``)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from ushas_catalog.model.data_files import DataFile
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition

SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {"comment": "the id"}},
    {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]}
VIEW_SCHEMA = {"type": "struct", "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}]}


def fill(ms: Metastore) -> None:
    """Catalog main, database main.sales with a partitioned table (one partition with recorded
    files), an unpartitioned one, a dropped one, a view and metadata; a dropped database."""
    ms.create_catalog("main", comment="main catalog")
    ms.create_database("main.sales", location="/wh/sales")
    ms.create_table("main.sales.orders", SCHEMA, partition_by=["dt"], location="/wh/sales/orders",
                    properties={"a": "b"})
    ms.add_partitions("main.sales.orders", [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}])
    ms.replace_partitions("main.sales.orders", [], [Partition(
        values={"dt": "2024-01-03"}, files=1, bytes=10,
        data_files=[DataFile("/wh/sales/orders/dt=2024-01-03/a.parquet", 10, 1)])])
    ms.create_table("main.sales.flat", SCHEMA, location="/wh/sales/flat")
    ms.write_table_files("main.sales.flat", [DataFile("/wh/sales/flat/a.parquet", 5, 1)], "APPEND")
    ms.create_table("main.sales.gone", SCHEMA, location="/wh/sales/gone")
    ms.drop_table("main.sales.gone")
    ms.create_view("main.sales.v", "select 1 as x", VIEW_SCHEMA)
    ms.metadata.set("main.sales.orders", {"team": "growth"})
    ms.metadata.tag("main.sales.orders.id", ["pii"])
    ms.create_database("main.old")
    ms.create_table("main.old.t", SCHEMA, partition_by=["dt"], location="/wh/old/t")
    ms.add_partitions("main.old.t", [{"dt": "x"}])
    ms.drop_database("main.old", cascade=True)


def dump(ms: Metastore, *, project_only: bool = True) -> dict[bytes, bytes]:
    """Every key and value of the project (of the whole store when not ``project_only``)."""
    begin, end = ms.project_path.range() if project_only else (b"", b"\xff")
    return ms.db.run(lambda tr: {kv.key: kv.value for kv in tr.get_range(begin, end)})


def file_digest(path: Path) -> str:
    """The bytes of a sqlite store and its -wal file."""
    h = hashlib.sha256()
    for p in (path, path.with_name(path.name + "-wal")):
        if p.exists():
            h.update(p.read_bytes())
    return h.hexdigest()
