"""Metadata search: the index against a full scan of the same store, and what keeping the index
costs table creation, measured in the same run.

    python bench/search.py [--quick] [--tables N] [--rounds R]

- Load: ``--tables`` tables (10,000; 1,000 with ``--quick``) of ~20 columns each, names drawn
  from 5,000 column names, with 3 tags (from 300) and an ``owner`` (from 1,000 teams) set
  through Spark-style table properties (``ushas.tag.*``, ``ushas.meta.owner``), one
  transaction per table, on ``sqlite://...?synchronous=normal``.
- Search: prefix searches by tag, key=value and column name, through the index
  (``Metastore.search``) and by a full scan (``search.scan_search``: every table's schema,
  comments and metadata read and matched). Both return the same page (checked). Figures are
  medians over ``--rounds``; the ratio is scan / index (goal >= 50x).
- Write cost: creating tables of the same shape with the index (``Metastore``) and without it
  (a ``Metastore`` whose ``_metadata_commit`` does nothing), alternating, in two fresh stores,
  under ``synchronous=normal`` and ``synchronous=full`` (the default); the ratio is with /
  without (goal <= 1.5x).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from ushas_catalog.kv.base import Transaction  # noqa: E402
from ushas_catalog.metastore import Metastore, Mutation  # noqa: E402
from ushas_catalog.search import scan_search  # noqa: E402

WORDS = ["customer", "order", "amount", "price", "store", "region", "product", "event", "user", "session"]
COLUMN_NAMES = [f"{w}_{i}" for w in WORDS for i in range(500)]
TAGS = [f"domain_{i}" for i in range(300)]
TEAMS = [f"team_{i:03d}" for i in range(1000)]
SEARCH_GOAL, WRITE_GOAL = 50.0, 1.5
#: (label, query, counted toward the goal); the last one matches about a third of the tables
QUERIES = [("tag prefix", "tag:domain_12*", True), ("key=value prefix", "owner=team_04*", True),
           ("column name prefix", "customer_12*", True), ("column, broad (~36%)", "customer_1*", False)]


class NoIndex(Metastore):
    """The same metastore without metadata bookkeeping (the write-cost baseline)."""

    def _metadata_commit(self, tr: Transaction, m: Mutation) -> None:
        return None


def table_args(rng: random.Random) -> tuple[str, dict[str, str]]:
    cols = rng.sample(COLUMN_NAMES, rng.randint(17, 23))
    ddl = ", ".join(f"{c} {rng.choice(['STRING', 'BIGINT', 'DOUBLE', 'DATE'])}" for c in cols)
    props = {f"ushas.tag.{t}": "true" for t in rng.sample(TAGS, 3)}
    props["ushas.meta.owner"] = rng.choice(TEAMS)
    return ddl, props


def median_time(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(rounds):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def load(ms: Metastore, n: int, rng: random.Random) -> float:
    ms.create_catalog("main")
    ms.create_database("main.db")
    t = time.perf_counter()
    for i in range(n):
        ddl, props = table_args(rng)
        ms.create_table(f"main.db.t{i:05d}", ddl, properties=props)
        if (i + 1) % 2000 == 0:
            print(f"  loaded {i + 1} tables ({time.perf_counter() - t:.0f} s)", flush=True)
    return time.perf_counter() - t


def write_cost(tmp: Path, n: int, sync: str, rng: random.Random) -> tuple[float, float]:
    stores = {cls: cls.open(f"sqlite:///{tmp}/write-{sync}-{cls.__name__}.db?synchronous={sync}", project="bench")
              for cls in (NoIndex, Metastore)}
    spent = {cls: 0.0 for cls in stores}
    for ms in stores.values():
        ms.create_catalog("main")
        ms.create_database("main.db")
        ms.create_table("main.db.warmup", "a INT")
    for i in range(n):
        ddl, props = table_args(rng)
        order = list(stores.items()) if i % 2 == 0 else list(reversed(stores.items()))
        for cls, ms in order:
            t = time.perf_counter()
            ms.create_table(f"main.db.t{i:05d}", ddl, properties=props)
            spent[cls] += time.perf_counter() - t
    for ms in stores.values():
        ms.close()
    return spent[NoIndex] / n, spent[Metastore] / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 tables, fewer rounds")
    parser.add_argument("--tables", type=int, help="tables to load (default 10,000; 1,000 with --quick)")
    parser.add_argument("--rounds", type=int, help="rounds per search (default 5; 3 with --quick)")
    parser.add_argument("--writes", type=int, help="tables created per store for the write cost "
                                                   "(default 500; 150 with --quick)")
    args = parser.parse_args()
    n = args.tables or (1_000 if args.quick else 10_000)
    rounds = args.rounds or (3 if args.quick else 5)
    writes = args.writes or (150 if args.quick else 500)
    rng = random.Random(6)
    ok = True
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ms = Metastore.open(f"sqlite:///{tmp}/search.db?synchronous=normal", project="bench")
        print(f"loading {n} tables (~20 columns, 3 tags, an owner each) ...", flush=True)
        spent = load(ms, n, rng)
        print(f"  {n} tables in {spent:.1f} s ({spent / n * 1000:.2f} ms per table)\n")
        print(f"{'search':<22} {'query':<18} {'hits':>6} {'index ms':>10} {'scan ms':>10} {'scan/index':>11}")
        for label, q, counted in QUERIES:
            index_s, page = median_time(lambda: ms.search(q, limit=20), rounds)
            scan_s, ref = median_time(lambda: scan_search(ms, q, limit=20), max(1, rounds // 2))
            if page.to_json() != ref.to_json():
                print(f"  MISMATCH for {q!r}: the index and the scan disagree")
                ok = False
            ratio = scan_s / index_s
            ok &= ratio >= SEARCH_GOAL or not counted
            print(f"{label:<22} {q:<18} {page.total:>6} {index_s * 1000:>10.2f} {scan_s * 1000:>10.1f} "
                  f"{ratio:>10.0f}x{'' if counted else '  (not counted)'}")
        ms.close()
        print(f"goal: scan/index >= {SEARCH_GOAL:.0f}x on the selective queries\n")
        print(f"{'table creation':<22} {'sync':<8} {'no index ms':>12} {'index ms':>10} {'ratio':>7}")
        for sync in ("normal", "full"):
            without, with_ = write_cost(tmp, writes, sync, rng)
            ratio = with_ / without
            ok &= ratio <= WRITE_GOAL
            print(f"{'':<22} {sync:<8} {without * 1000:>12.2f} {with_ * 1000:>10.2f} {ratio:>6.2f}x")
        print(f"goal: with index / without <= {WRITE_GOAL}x")
    print("all goals met" if ok else "GOAL MISSED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
