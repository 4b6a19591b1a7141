"""``ushas demo`` end to end in a subprocess (its own Spark, Derby and store), then
``ushas import-hive`` through the CLI on the Derby metastore the demo left behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def ushas(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("USHAS_URI", None)
    return subprocess.run([sys.executable, "-m", "ushas_catalog", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def test_demo_then_import_hive_cli(tmp_path: Path) -> None:
    from ushas_catalog.metastore import Metastore

    demo_dir = tmp_path / "demo"
    done = ushas("demo", "--dir", str(demo_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out, err = done.stdout, done.stderr
    for n, stage in enumerate(["store", "starting Spark", "orders", "schema change", "customers: a Hive table",
                               "enriched", "exports/daily", "a view and the final report", "waiting for"], 1):
        assert f"[{n}/9] {stage}" in err
    assert "log4j profile" not in err and "WARN Utils" not in err  # Spark's startup chatter stays out
    uri = f"sqlite:///{demo_dir / 'ushas.db'}"
    assert "table orders (order_id, customer_id, amount, country, dt, channel)" in out or \
           "table orders (order_id, customer_id, amount, country, channel, dt)" in out
    assert "schema 2, partitioned by dt: 4 partitions" in out
    assert "view  big_orders (order_id, amount, segment)" in out
    assert "Report ushas.shop.report: 6 rows" in out
    tree = out[out.index("Lineage of ushas.shop.report"):]
    assert "ushas.shop.report.revenue" in tree and "ushas.shop.orders.amount" in tree
    assert f"file:{demo_dir / 'exports' / 'daily'}.total  [AGGREGATION]" in tree
    assert "spark_catalog.default.customers.segment  [IDENTITY]" in tree
    assert f"ushas --uri {uri} ui" in out

    m = Metastore.open(uri)
    try:
        orders = m.get_table("ushas.shop.orders")
        assert orders.schema_id == 2 and "channel" in orders.schema.names
        assert [p.spec["dt"] for p in m.list_partitions("ushas.shop.orders")] == [
            "2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"]
        assert m.get_view("ushas.shop.big_orders").sql.strip().startswith("SELECT order_id")
        assert [h.operation for h in m.history("ushas.shop.orders")][-1] == "CREATE TABLE"
    finally:
        m.close()

    # the Hive table the demo made, imported through the CLI (the demo's Spark has stopped: Derby is free)
    imported = ushas("--uri", uri, "--json", "import-hive", "--metastore-db", str(demo_dir / "derby" / "metastore_db"),
                     "--catalog", "hive", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-3000:]
    report = json.loads(imported.stdout)
    assert report["tables"]["created"] == ["default.customers"]
    assert "importing" not in imported.stderr  # --json and no terminal: no progress line
    m = Metastore.open(uri)
    try:
        customers = m.get_table("hive.default.customers")
        assert customers.schema.names == ["customer_id", "name", "segment"] and customers.format == "parquet"
    finally:
        m.close()
