"""Metadata search: the index against a full scan of the same store, and what keeping the index
costs table creation, measured in the same run.

    python bench/search.py [--quick] [--tables N] [--rounds R] [--writes W] [--options Q] [--candidate Q] [--governed]

- Load and write cost: ``--tables`` tables (10,000; 1,000 with ``--quick``) of ~20 columns
  each, names drawn from 5,000 column names, with 3 tags (from 300) and an ``owner`` (from
  1,000 teams) set through Spark-style table properties (``ushas.tag.*``,
  ``ushas.meta.owner``), one transaction per table, on ``sqlite://...?synchronous=normal``,
  into three stores in turn (the order rotates), every table created in all three:

  * ``index``: the product (``Metastore``): the metastore records and commit, the metadata
    (SYSTEM created / updated by and at, format, partition count; the Spark-mirrored USER
    owner and tags with their history records; the state record with the schema field
    names) and the search index: each table's index entries as one pending key, merged into
    the index after about one create in 256 (``metadata.INDEX_MERGE_AT``), inside that
    ``create_table`` call, so counted;
  * ``no index`` (the baseline): the same ``Metastore`` with only the index maintenance
    switched off (``metadata_sync.on_commit(..., index=False)``): every key above but the
    index keys;
  * ``no metadata`` (for information): ``_metadata_commit`` does nothing, which the product
    never does (``meta show``, ``meta history`` and the Spark mirroring need the metadata).

  The write-cost ratio is index / no index of the TOTAL time spent in the ``create_table``
  calls of each store (every call summed: the periodic WAL checkpoints and index merges, which
  fall on a few calls, are counted), for the whole load and for its last tenth (the stores
  then hold 90-100% of the tables); what is still pending at the end is merged then, and that
  merge is counted too (added to the last call); the goal (<= 1.5x) is judged on these totals,
  both of them (the last tenth only when it spans 3 merge periods or more: not with
  ``--quick``, whose last 100 tables hold zero, one or two merges of ~256 tables). For
  information: the same ratio in CPU time of this process (the machine is shared), the median
  over blocks of 100 tables of the per-block ratio (which hides a checkpoint that falls in few
  blocks), the longest single call of each store (a checkpoint pause) and the WAL file sizes
  at the end of the load.
- Engine settings: ``--options QUERY`` gives every store these engine options (URI query
  options, e.g. ``wal_autocheckpoint=4000``; ``page_size=N`` is applied by creating the file
  with it); ``--candidate QUERY`` also loads an ``index`` / ``no index`` pair with those
  options, interleaved with the other stores, reported on its own lines (``C``), with the
  index searches timed on its index store too.
- Search: prefix searches by tag, key=value and column name, through the index
  (``Metastore.search``) and by a full scan (``search.scan_search``: every table's schema,
  comments and metadata read and matched), on the ``index`` store. Both return the same page
  (checked). Figures are medians over ``--rounds``; the ratio is scan / index (goal >= 50x).
  ``--governed``: the same searches, through the index, as a reader with authorization on who holds SELECT on the
  database (every hit is checked, none hidden: the pages must be equal), alternating with the ungoverned ones; the
  ratio is governed / ungoverned.
- ``synchronous=full`` (the engine's default): ``--writes`` tables (500; 150 with
  ``--quick``) created in three fresh stores the same way.
"""
from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from ushas_catalog.metadata import sync as metadata_sync  # noqa: E402
from ushas_catalog.metadata.store import INDEX_MERGE_AT  # noqa: E402
from ushas_catalog.kv.base import Transaction  # noqa: E402
from ushas_catalog.metastore import Metastore, Mutation  # noqa: E402
from ushas_catalog.metadata.search import scan_search  # noqa: E402

WORDS = ["customer", "order", "amount", "price", "store", "region", "product", "event", "user", "session"]
COLUMN_NAMES = [f"{w}_{i}" for w in WORDS for i in range(500)]
TAGS = [f"domain_{i}" for i in range(300)]
TEAMS = [f"team_{i:03d}" for i in range(1000)]
SEARCH_GOAL, WRITE_GOAL = 50.0, 1.5
#: (label, query, counted toward the goal); the last one matches about a third of the tables
QUERIES = [("tag prefix", "tag:domain_12*", True), ("key=value prefix", "owner=team_04*", True),
           ("column name prefix", "customer_12*", True), ("column, broad (~36%)", "customer_1*", False)]
#: tables per block of the write-cost ratio
BLOCK = 100


class NoIndex(Metastore):
    """The baseline: the same metastore and metadata, without the index maintenance."""

    def _metadata_commit(self, tr: Transaction, m: Mutation) -> None:
        metadata_sync.on_commit(self, tr, m, index=False)


class NoMetadata(Metastore):
    """No metadata bookkeeping at all (for information: not a configuration of the product)."""

    def _metadata_commit(self, tr: Transaction, m: Mutation) -> None:
        return None


VARIANTS: tuple[tuple[str, type[Metastore]], ...] = (("index", Metastore), ("no index", NoIndex),
                                                      ("no metadata", NoMetadata))


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


@dataclass
class Timings:
    """Seconds spent in each ``create_table`` call of one store, wall and CPU."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def store_uri(path: Path, sync: str, options: str) -> str:
    """The URI of a fresh store; ``page_size=N`` in ``options`` is applied here (it only takes
    effect on an empty file, so the file is created with it), the other options go to the URI."""
    query = [f"synchronous={sync}"]
    for opt in filter(None, options.split("&")):
        name, _, value = opt.partition("=")
        if name == "page_size":
            conn = sqlite3.connect(path)
            conn.execute(f"PRAGMA page_size = {int(value)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.close()
        else:
            query.append(opt)
    return f"sqlite:///{path}?{'&'.join(query)}"


def open_stores(tmp: Path, tag: str, sync: str, options: str = "",
                variants: tuple[tuple[str, type[Metastore]], ...] = VARIANTS, suffix: str = "") -> dict[str, Metastore]:
    stores = {}
    for label, cls in variants:
        path = tmp / f"{tag}-{label.replace(' ', '-')}{suffix}.db"
        stores[label + suffix] = cls.open(store_uri(path, sync, options), project="bench")
    for ms in stores.values():
        ms.create_catalog("main")
        ms.create_database("main.db")
        ms.create_table("main.db.warmup", "a INT")
    return stores


def create_all(stores: dict[str, Metastore], n: int, rng: random.Random, progress: bool = False) -> dict[str, Timings]:
    """Create the same ``n`` tables in every store, rotating the order, timing each call."""
    timings = {label: Timings() for label in stores}
    items = list(stores.items())
    t0 = time.perf_counter()
    for i in range(n):
        ddl, props = table_args(rng)
        k = i % len(items)
        for label, ms in items[k:] + items[:k]:
            w, c = time.perf_counter(), time.process_time()
            ms.create_table(f"main.db.t{i:05d}", ddl, properties=props)
            timings[label].cpu.append(time.process_time() - c)
            timings[label].wall.append(time.perf_counter() - w)
        if progress and (i + 1) % 2000 == 0:
            print(f"  {i + 1} tables in each store ({time.perf_counter() - t0:.0f} s)", flush=True)
    return timings


def merge_rest(stores: dict[str, Metastore], timings: dict[str, Timings]) -> str:
    """Merge what is still pending in the index stores; the time is added to their last
    ``create_table`` call (the load's index cost includes every merge)."""
    out = []
    for label, ms in stores.items():
        if label.startswith("index"):
            w, c = time.perf_counter(), time.process_time()
            n = ms.merge_index()
            timings[label].cpu[-1] += time.process_time() - c
            timings[label].wall[-1] += time.perf_counter() - w
            out.append(f"{label}: {n} objects, {(time.perf_counter() - w) * 1000:.0f} ms")
    return "; ".join(out)


def block_ratio(num: list[float], den: list[float]) -> float:
    """The median over blocks of BLOCK tables of sum(num) / sum(den) in the block (for information:
    a median hides a checkpoint that falls in few blocks)."""
    ratios = [sum(num[i:i + BLOCK]) / sum(den[i:i + BLOCK]) for i in range(0, len(num) - BLOCK + 1, BLOCK)]
    return statistics.median(ratios) if ratios else sum(num) / sum(den)


WRITE_HEADER = (f"{'table creation':<30} {'ms: no meta':>11} {'no index':>9} {'index':>7} "
                f"{'TOTAL idx/no idx (cpu)':>23} {'median (cpu)':>14} {'idx/no meta':>12} {'longest ms: idx, no idx':>24}")


def report_writes(label: str, t: dict[str, Timings], start: int = 0, suffix: str = "") -> float:
    """One line of the write-cost table; returns the ratio of the TOTAL wall times index / no index
    (every call summed, checkpoints included): the figure the goal is judged on."""
    idx, base, none = t["index" + suffix], t["no index" + suffix], t.get("no metadata" + suffix)
    mean = {k: statistics.mean(v.wall[start:]) * 1000 for k, v in (("index", idx), ("no index", base), ("no metadata", none))
            if v is not None}
    total = sum(idx.wall[start:]) / sum(base.wall[start:])
    total_cpu = sum(idx.cpu[start:]) / sum(base.cpu[start:])
    med = block_ratio(idx.wall[start:], base.wall[start:])
    med_cpu = block_ratio(idx.cpu[start:], base.cpu[start:])
    no_meta = f"{mean['no metadata']:>11.2f}" if none else f"{'-':>11}"
    vs_none = f"{sum(idx.wall[start:]) / sum(none.wall[start:]):>11.2f}x" if none else f"{'-':>12}"
    print(f"{label:<30} {no_meta} {mean['no index']:>9.2f} {mean['index']:>7.2f} "
          f"{total:>14.2f}x ({total_cpu:.2f}x) {med:>6.2f}x ({med_cpu:.2f}x) {vs_none} "
          f"{max(idx.wall[start:]) * 1000:>12.0f}, {max(base.wall[start:]) * 1000:.0f}")
    return total


def wal_sizes(tmp: Path, tag: str) -> str:
    return ", ".join(f"{p.name.removeprefix(tag + '-').removesuffix('.db-wal')} {p.stat().st_size / 2**20:.1f} MB"
                     for p in sorted(tmp.glob(f"{tag}-*.db-wal")))


def governed_reader(ms: Metastore) -> Metastore:
    """A reader of ``ms``'s store with authorization on and SELECT on ``main.db``: it sees every table, so each hit of
    its searches is checked (``catalog.authorization.listed``) and the pages equal the ungoverned ones."""
    ms.grant("SELECT", "main.db", "user:reader")
    return Metastore(ms.db, ms.project, user="reader", authorization=True)


def governed_table(ms: Metastore, rounds: int) -> bool:
    """Times every query through the index, ungoverned and as :func:`governed_reader`, alternating which goes first;
    False when their pages differ."""
    reader, ok = governed_reader(ms), True
    print(f"{'search':<22} {'query':<18} {'hits':>6} {'open ms':>10} {'governed ms':>12} {'governed/open':>14}")
    for label, q, _ in QUERIES:
        times: dict[str, list[float]] = {"open": [], "governed": []}
        pages = {}
        for r in range(rounds):
            order = [("open", ms), ("governed", reader)]
            for who, m in order if r % 2 == 0 else order[::-1]:
                t = time.perf_counter()
                pages[who] = m.search(q, limit=20)
                times[who].append(time.perf_counter() - t)
        if pages["open"].to_json() != pages["governed"].to_json():
            print(f"  MISMATCH for {q!r}: the governed reader's page differs")
            ok = False
        o, g = statistics.median(times["open"]), statistics.median(times["governed"])
        print(f"{label:<22} {q:<18} {pages['open'].total:>6} {o * 1000:>10.2f} {g * 1000:>12.2f} {g / o:>13.2f}x")
    return ok


def search_table(ms: Metastore, rounds: int, scan: bool = True) -> bool:
    """Times every query through the index (and the full scan); False if a goal is missed."""
    ok = True
    print(f"{'search':<22} {'query':<18} {'hits':>6} {'index ms':>10} {'scan ms':>10} {'scan/index':>11}")
    for label, q, counted in QUERIES:
        index_s, page = median_time(lambda: ms.search(q, limit=20), rounds)
        if not scan:
            print(f"{label:<22} {q:<18} {page.total:>6} {index_s * 1000:>10.2f}")
            continue
        scan_s, ref = median_time(lambda: scan_search(ms, q, limit=20), max(1, rounds // 2))
        if page.to_json() != ref.to_json():
            print(f"  MISMATCH for {q!r}: the index and the scan disagree")
            ok = False
        ratio = scan_s / index_s
        ok &= ratio >= SEARCH_GOAL or not counted
        print(f"{label:<22} {q:<18} {page.total:>6} {index_s * 1000:>10.2f} {scan_s * 1000:>10.1f} "
              f"{ratio:>10.0f}x{'' if counted else '  (not counted)'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 tables, fewer rounds")
    parser.add_argument("--tables", type=int, help="tables to load (default 10,000; 1,000 with --quick)")
    parser.add_argument("--rounds", type=int, help="rounds per search (default 5; 3 with --quick)")
    parser.add_argument("--writes", type=int, help="tables per store for the synchronous=full write cost "
                                                   "(default 500; 150 with --quick)")
    parser.add_argument("--options", default="", metavar="QUERY",
                        help="engine options of every store, e.g. wal_autocheckpoint=4000&page_size=8192")
    parser.add_argument("--candidate", metavar="QUERY",
                        help="also load an index / no index pair with these engine options, interleaved")
    parser.add_argument("--governed", action="store_true",
                        help="also time each search as a reader with authorization on, who sees every hit")
    args = parser.parse_args()
    n = args.tables or (1_000 if args.quick else 10_000)
    rounds = args.rounds or (3 if args.quick else 5)
    writes = args.writes or (150 if args.quick else 500)
    rng = random.Random(6)
    ok = True
    key = "+C"   # the candidate's stores: "index+C", "no index+C"
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        stores = open_stores(tmp, "load", "normal", args.options)
        if args.candidate:
            stores |= open_stores(tmp, "load", "normal", args.candidate, VARIANTS[:2], key)
        print(f"creating {n} tables (~20 columns, 3 tags, an owner each) in each of {len(stores)} stores"
              f"{' [' + args.options + ']' if args.options else ''} ...", flush=True)
        timings = create_all(stores, n, rng, progress=True)
        print(f"pending index entries merged at the end (counted): {merge_rest(stores, timings)}")
        tenth = n - n // 10
        print()
        print(WRITE_HEADER)
        total = report_writes(f"normal, 0 -> {n:,} tables", timings)
        last = report_writes(f"normal, {tenth:,} -> {n:,}", timings, tenth)
        if args.candidate:
            print(f"C = {args.candidate} (interleaved with the stores above)")
            report_writes(f"C, 0 -> {n:,} tables", timings, suffix=key)
            report_writes(f"C, {tenth:,} -> {n:,}", timings, tenth, key)
        print(f"WAL files at the end: {wal_sizes(tmp, 'load')}\n")
        if args.governed:
            ok &= governed_table(stores["index"], rounds)
            print()
        ok &= search_table(stores.pop("index"), rounds)
        if args.candidate:
            print(f"search on the index store of C ({args.candidate}), through the index:")
            search_table(stores.pop("index" + key), rounds, scan=False)
        for s in stores.values():
            s.close()
        print(f"goal: scan/index >= {SEARCH_GOAL:.0f}x on the selective queries\n")
        full_stores = open_stores(tmp, "full", "full", args.options)
        full_timings = create_all(full_stores, writes, rng)
        print(f"pending index entries merged at the end (counted): {merge_rest(full_stores, full_timings)}")
        print(WRITE_HEADER)
        full = report_writes(f"full, 0 -> {writes:,} tables", full_timings)
        for s in full_stores.values():
            s.close()
        judge_tail = n // 10 >= 3 * INDEX_MERGE_AT
        ok &= total <= WRITE_GOAL and (last <= WRITE_GOAL or not judge_tail)
        print(f"goal: index / no index <= {WRITE_GOAL}x on the TOTAL time of the create_table calls "
              f"(synchronous=normal, all {n:,} tables: {total:.2f}x, last tenth: {last:.2f}x"
              f"{'' if judge_tail else ' (not judged: shorter than 3 index merge periods)'}; "
              f"synchronous=full: {full:.2f}x)")
    print("all goals met" if ok else "GOAL MISSED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
