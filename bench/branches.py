"""Creating a branch of a big catalog: keys written and time, against copying the catalog's keys.

    python bench/branches.py [--quick] [--tables N] [--partitions N]

A catalog of N tables (10,000; 200 with --quick) holding P partitions in all (1,000,000; 20,000 with
--quick, spread evenly) in a SQLite store. Measured, in one run:

- ``create_branch``: the keys it writes (the store's keys counted before and after) and its time;
- copying the catalog (what a branch would cost if it copied): every key below the catalog written
  under another catalog id, in transactions of 2,000 keys; its keys and time;
- what a live branch costs main: ``add_partitions`` of 1,000 partitions on main with and without a
  live branch (main keeps each replaced / new key's value at the branch point: keys written);
- reading through the branch: listing one table's partitions on main and on the branch.

Prints the ratios (copy / branch) from this run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from ushas_catalog.keyspace.layout import Layout  # noqa: E402
from ushas_catalog.metastore import Metastore  # noqa: E402
from ushas_catalog.model.names import TableName  # noqa: E402
from ushas_catalog.model.schema import parse_schema  # noqa: E402

BATCH = 2_000


def count_keys(ms: Metastore) -> int:
    begin, end = ms.project_path.range()
    total, start = 0, begin
    while True:
        keys = ms.db.run(lambda tr: [kv.key for kv in tr.get_range(start, end, limit=BATCH)])
        total += len(keys)
        if len(keys) < BATCH:
            return total
        start = keys[-1] + b"\x00"


def build(ms: Metastore, tables: int, partitions: int) -> None:
    ms.create_catalog("big")
    ms.create_database("big.db", location="/wh/big")
    schema = parse_schema("id long, dt string")
    dn = TableName.parse("big.db.x")
    for lo in range(0, tables, 200):
        def fn(tr, lo: int = lo) -> None:  # type: ignore[no-untyped-def]
            db, _ = ms.resolver.relation(tr, dn)
            for i in range(lo, min(tables, lo + 200)):
                ms._create_in(tr, TableName("big", "db", f"t{i}"), db, schema, ["dt"], "parquet",
                              None, None, None, None, False)
        ms.db.run(fn)
    per = max(1, partitions // tables)
    for i in range(tables):
        ms.add_partitions(f"big.db.t{i}", [{"dt": f"{j:07d}"} for j in range(per)])


def copy_catalog(ms: Metastore) -> tuple[int, float]:
    """Every key below catalog ``big`` written below a new catalog id: (keys written, seconds)."""
    src = ms.db.run(lambda tr: ms.resolver.catalog(tr, TableName.parse("big.db.x").database_name.catalog_name,
                                                   load=False)).path
    dst = Layout.catalog(ms.layout, ms.project, uuid.uuid4())
    begin, end = src.range()
    s_key, d_key = src.key(), dst.key()
    written, start = 0, begin
    t0 = time.perf_counter()
    while True:
        def fn(tr, start: bytes = start) -> list[bytes]:  # type: ignore[no-untyped-def]
            rows = list(tr.get_range(start, end, limit=BATCH))
            for kv in rows:
                tr.set(d_key + kv.key[len(s_key):], kv.value)
            return [kv.key for kv in rows]
        keys = ms.db.inner.run(fn)  # type: ignore[attr-defined]  # the raw store: a plain copy
        written += len(keys)
        if len(keys) < BATCH:
            break
        start = keys[-1] + b"\x00"
    seconds = time.perf_counter() - t0
    ms.db.run(lambda tr: tr.clear_range(*dst.range()))
    return written, seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tables", type=int)
    ap.add_argument("--partitions", type=int)
    args = ap.parse_args()
    tables = args.tables or (200 if args.quick else 10_000)
    partitions = args.partitions or (20_000 if args.quick else 1_000_000)
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-branches-"))
    ms = Metastore.open(f"sqlite:///{root / 'ushas.db'}", project="bench")
    ms.index_merge_at = 0
    t0 = time.perf_counter()
    build(ms, tables, partitions)
    print(f"catalog of {tables:,} tables and {partitions:,} partitions built in {time.perf_counter() - t0:.1f} s")

    copy_keys, copy_s = copy_catalog(ms)
    before = count_keys(ms)
    t0 = time.perf_counter()
    ms.create_branch("big", "dev")
    branch_s = time.perf_counter() - t0
    branch_keys = count_keys(ms) - before
    print(f"create_branch: {branch_keys} keys written, {branch_s * 1000:.2f} ms")
    print(f"copy catalog:  {copy_keys:,} keys written, {copy_s:.2f} s")
    print(f"ratio copy / branch: keys {copy_keys / max(1, branch_keys):,.0f}x, time {copy_s / branch_s:,.0f}x")

    new = [{"dt": f"n{j:06d}"} for j in range(1_000)]
    ms.drop_branch("big", "dev")
    before = count_keys(ms)
    plain_s = time.perf_counter()
    ms.add_partitions("big.db.t0", new)
    plain_s = time.perf_counter() - plain_s
    plain_keys = count_keys(ms) - before
    ms.drop_partitions("big.db.t0", new)
    ms.create_branch("big", "dev")
    before = count_keys(ms)
    kept_s = time.perf_counter()
    ms.add_partitions("big.db.t0", new)
    kept_s = time.perf_counter() - kept_s
    kept_keys = count_keys(ms) - before
    print(f"add_partitions of 1,000 on main: {plain_keys:,} new keys, {plain_s * 1000:.0f} ms without a branch; "
          f"{kept_keys:,} new keys, {kept_s * 1000:.0f} ms with a live branch ({kept_s / plain_s:.2f}x)")

    dev = ms.branch("dev")
    table = "big.db.t1"
    t0 = time.perf_counter()
    on_main = sum(1 for _ in ms.list_partitions(table))
    main_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    on_dev = sum(1 for _ in dev.list_partitions(table))
    dev_s = time.perf_counter() - t0
    print(f"list {on_main:,} partitions: main {main_s * 1000:.1f} ms, branch {dev_s * 1000:.1f} ms "
          f"({on_dev:,} partitions, {dev_s / main_s:.2f}x)")
    ms.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
