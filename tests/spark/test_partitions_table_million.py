"""``<table>.partitions`` at 1,000,000 partitions: a filter on the partition column is a range read
(the keys read follow the partitions selected, not the table), and a full read streams in pages
(the Python side's peak memory stays within a fixed bound, far below the table's size)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.spark.sql_tables_support import count_key_reads

MILLION = 1_000_000


def _peak_rss_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # Linux: resets VmHWM (the peak RSS) to the current RSS
        f.write("5")


def _kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


@pytest.mark.slow  # builds 10^6 partitions through the bulk API (~15 s) and reads them all through Spark (~30 s)
def test_million_partitions_filtered_is_a_range_and_full_read_streams(spark: Any, db: str, ms: Any) -> None:
    name = f"ushas.{db}.orders"
    spark.sql(f"CREATE TABLE {name} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    ms.add_partitions(name, [{"dt": f"2024-{i:07d}"} for i in range(MILLION)])  # chunked: ushas_catalog.bulk

    with count_key_reads(spark) as reads:
        got = spark.sql(f"SELECT dt, location FROM {name}.partitions WHERE dt >= '2024-0999000'").collect()
    assert len(got) == 1000 and got[0].location.endswith("dt=2024-0999000")
    assert reads.keys < 1000 + 100, reads  # the selected keys and a few point reads, not 10^6

    try:
        _peak_rss_reset()
    except OSError:
        pytest.skip("this kernel does not let a process reset its peak RSS (/proc/self/clear_refs)")
    before = _kb("VmRSS")
    row = spark.sql(f"SELECT count(*) AS n, max(dt) AS last FROM {name}.partitions").first()
    grown_mb = (_kb("VmHWM") - before) / 1024
    assert (row.n, row.last) == (MILLION, "2024-0999999")
    # the million keys as Python values alone are ~100 MB; one page of rows a few MB
    assert grown_mb < 64, f"the bridge's memory grew by {grown_mb:.0f} MB while streaming 10^6 partitions"

    # gone at once, not kept for UNDROP: 2 x 10^6 keys left in the shared store would slow every later
    # test that reads the whole store (tests/spark/test_session_catalog_options.py compares it all)
    spark.sql(f"DROP TABLE {name} PURGE")
