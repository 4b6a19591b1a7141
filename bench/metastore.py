"""Metastore benchmark on the embedded (sqlite) engine: 100,000 partitions on one table.

    python bench/metastore.py [--quick] [--partitions N] [--batch N] [--peer-sample N | --full-peer]

Prints, from one run:
- batched add (``add_partitions`` of ``--batch`` partitions per transaction);
- list all partitions, against the engine floor (a bare range read of the same keys);
- list one prefix (one day), against listing all;
- drop + purge of the table (one ``clear_range``), against deleting the same keys one
  transaction each (the peer). Deleting 200k keys one durable transaction each takes many
  minutes, so by default the peer deletes ``--peer-sample`` of them and its time is scaled
  to all keys (said so in the output); ``--full-peer`` deletes every key;
- bytes per partition key: our layout (UUID path elements, typed values) against a flat
  layout with string ids (``("partition", project, "<catalog-uuid>/<db-uuid>/<table-uuid>",
  "dt=2020-01-01/shard=7")``), same partitions.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
import uuid
from pathlib import Path

import fdb.tuple as fdbtuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from ushas_catalog.metastore import Metastore  # noqa: E402
from ushas_catalog.model.names import TableName  # noqa: E402

SHARDS = 100


def specs(n: int) -> list[dict[str, object]]:
    d0 = dt.date(2020, 1, 1)
    return [{"dt": d0 + dt.timedelta(days=i // SHARDS), "shard": i % SHARDS} for i in range(n)]


def timed(fn):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def make_table(ms: Metastore, name: str, parts: list[dict[str, object]], batch: int) -> float:
    ms.create_table(name, "id BIGINT, payload STRING, dt DATE, shard INT", partition_by=["dt", "shard"])

    def add() -> None:
        for i in range(0, len(parts), batch):
            ms.add_partitions(name, parts[i:i + batch])

    return timed(add)[0]


def table_range(ms: Metastore, name: str) -> tuple[bytes, bytes]:
    return ms.db.run(lambda tr: ms.resolver.table(tr, TableName.parse(name)).path.range())


def partition_range(ms: Metastore, name: str) -> tuple[bytes, bytes]:
    return ms.db.run(lambda tr: ms.resolver.table(tr, TableName.parse(name)).path.add("TablePartition").range())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 partitions instead of 100,000")
    ap.add_argument("--partitions", type=int, help="number of partitions (overrides --quick)")
    ap.add_argument("--batch", type=int, default=5000, help="partitions per add_partitions transaction")
    ap.add_argument("--peer-sample", type=int, help="keys the per-key peer deletes (default 2000, quick 500)")
    ap.add_argument("--full-peer", action="store_true", help="the peer deletes every key (slow)")
    args = ap.parse_args(argv)
    n = args.partitions or (10_000 if args.quick else 100_000)
    sample = args.peer_sample or (500 if args.quick else 2000)

    with tempfile.TemporaryDirectory(prefix="ushas-bench-") as tmp:
        uri = f"sqlite:///{Path(tmp) / 'bench.db'}"
        ms = Metastore.open(uri, project="bench", user="bench")
        ms.create_catalog("main")
        ms.create_database("main.db", location="/warehouse/db")
        parts = specs(n)
        print(f"metastore bench: {n:,} partitions (dt x {SHARDS} shards), sqlite engine, batches of {args.batch:,}")
        print()

        # --- add ---------------------------------------------------------------------------
        add_s = make_table(ms, "main.db.a", parts, args.batch)
        print(f"{'batched add':34s} {add_s:8.2f} s   {n / add_s:10,.0f} partitions/s")

        # --- list all, against the engine floor ---------------------------------------------
        list(ms.list_partitions("main.db.a", limit=10))  # warm the page cache
        list_s = min(timed(lambda: sum(1 for _ in ms.list_partitions("main.db.a")))[0] for _ in range(3))
        b, e = partition_range(ms, "main.db.a")
        floor_s = min(timed(lambda: ms.db.run(lambda tr: sum(1 for _ in tr.get_range(b, e))))[0] for _ in range(3))
        print(f"{'list all':34s} {list_s:8.3f} s   {n / list_s:10,.0f} partitions/s   "
              f"= {list_s / floor_s:.2f}x a bare range read of the same keys ({floor_s:.3f} s)")

        # --- list one prefix ---------------------------------------------------------------
        day = parts[n // 2]["dt"]
        prefix_s, count = min(timed(lambda: sum(1 for _ in ms.list_partitions("main.db.a", prefix={"dt": day})))
                              for _ in range(5))
        print(f"{'list one prefix':34s} {prefix_s * 1000:8.2f} ms  {count:10,d} partitions    "
              f"= 1/{list_s / prefix_s:,.0f} of list all")

        # --- bytes per key ------------------------------------------------------------------
        keys = ms.db.run(lambda tr: [kv.key for kv in tr.get_range(b, e)])
        ours = sum(map(len, keys)) / len(keys)
        ids = f"{uuid.uuid4()}/{uuid.uuid4()}/{uuid.uuid4()}"
        flat = [fdbtuple.pack(("partition", "bench", ids, f"dt={p['dt']}/shard={p['shard']}")) for p in parts]
        flat_avg = sum(map(len, flat)) / len(flat)
        print(f"{'bytes per partition key':34s} {ours:8.1f} B   flat layout with string ids {flat_avg:.1f} B "
              f"= {flat_avg / ours:.2f}x ours")

        # --- drop + purge vs per-key deletes -------------------------------------------------
        tb, te = table_range(ms, "main.db.a")
        table_keys = ms.db.run(lambda tr: sum(1 for _ in tr.get_range(tb, te)))
        drop_s = timed(lambda: ms.drop_table("main.db.a"))[0]
        purge_s = timed(lambda: ms.purge_table("main.db.a"))[0]
        left = ms.db.run(lambda tr: sum(1 for _ in tr.get_range(tb, te)))
        assert left == 0, f"{left} keys left after purge"
        print(f"{'drop + purge':34s} {(drop_s + purge_s) * 1000:8.2f} ms  ({table_keys:,} keys: drop "
              f"{drop_s * 1000:.2f} ms, purge {purge_s * 1000:.2f} ms; 0 keys left)")

        make_table(ms, "main.db.b", parts, args.batch)
        pb, pe = table_range(ms, "main.db.b")
        peer_keys = ms.db.run(lambda tr: [kv.key for kv in tr.get_range(pb, pe)])
        todo = peer_keys if args.full_peer else peer_keys[:sample]

        def delete_each() -> None:
            for k in todo:
                ms.db.run(lambda tr, k=k: tr.clear(k))

        peer_s = timed(delete_each)[0]
        scaled = peer_s * len(peer_keys) / len(todo)
        how = "measured" if len(todo) == len(peer_keys) else f"{len(todo):,} measured, scaled to {len(peer_keys):,}"
        print(f"{'delete keys one transaction each':34s} {scaled:8.2f} s   ({how}; "
              f"{peer_s / len(todo) * 1e6:.0f} us per key)")
        print(f"{'drop + purge speed-up':34s} {scaled / (drop_s + purge_s):8,.0f}x  (goal >= 100x)")
        ms.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
