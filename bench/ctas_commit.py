"""The shim's commit of a CTAS too big for one transaction (no Spark): ``stage_table``, then ``commit_staged``
with N written partition directories (one file each), timed; the store in ``--dir``.

    python bench/ctas_commit.py --partitions 60000 --dir /dev/shm --rounds 3
    PYTHONPATH=/other/tree/python python bench/ctas_commit.py ...   # another tree's code, to compare

Each round times the commit twice, alternating which goes first: as an ungoverned caller and as a governed one
(authorization on: privileges, placement and registered-file checks). It prints both medians and their ratio,
measured in the same run: what governance costs the commit.

The commit is tried in one transaction first; at tens of thousands of partitions that does not fit, and
the write is staged in chunks (hidden, ``ushas_catalog.bulk_ctas``) and published in one transaction.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import uuid

from ushas_catalog.metastore import Metastore
from ushas_catalog.spark.staged import OPS

SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]})


def commit_seconds(n: int, where: str | None, governed: bool = False) -> float:
    """Seconds of ``commit_staged`` of a CTAS of ``n`` partitions into a fresh store under ``where``;
    ``governed``: as a user whose calls are checked (the project's owner)."""
    d = tempfile.mkdtemp(dir=where)
    try:
        uri = f"sqlite:///{d}/ushas.db"
        ms = Metastore.open(uri, project="p")
        ms.create_catalog("c")
        ms.create_database(("c", "d"), location=f"file:{d}/wh")
        if governed:
            ms.grant("OWN", "project", "user:bench")
            ms.close()
            ms = Metastore.open(uri, project="p", user="bench", authorization=True)
        who = {"user": "bench", "authorization": True} if governed else {}
        request = {"ctx": {"uri": uri, "project": "p", "catalog": "c", "warehouse": d, **who}, "namespace": ["d"],
                   "name": "t", "kind": "create", "schema": SCHEMA, "properties": {},
                   "partitioning": [{"transform": "identity", "columns": ["dt"], "text": "dt"}]}
        staged = OPS["stage_table"](ms, request)
        location = staged["table"]["location"]
        written = [{"path": f"dt={i}", "existing": [],
                    "files": [{"path": f"{location}/dt={i}/part-00000-{uuid.uuid4()}.c000.snappy.parquet",
                               "size": 1000, "mtime": 1}]} for i in range(n)]
        commit = {**request, "write_id": staged["write_id"], "deadline_ms": time.time_ns() // 1_000_000 + 600_000,
                  "location": location, "write": {"written": written, "rows": n}}
        start = time.perf_counter()
        OPS["commit_staged"](ms, commit)
        seconds = time.perf_counter() - start
        listed = sum(1 for _ in ms.list_partitions(("c", "d", "t")))
        assert listed == n, f"{listed} partitions listed, not {n}"
        ms.close()
        return seconds
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=60_000)
    ap.add_argument("--dir", help="where the store goes (default: the temporary directory)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    took: dict[bool, list[float]] = {False: [], True: []}
    for r in range(args.rounds):
        for governed in ((False, True) if r % 2 == 0 else (True, False)):
            took[governed].append(commit_seconds(args.partitions, args.dir, governed))
    plain, governed = statistics.median(took[False]), statistics.median(took[True])
    print(f"commit_staged of {args.partitions:,} partitions, medians of {args.rounds} round(s): ungoverned "
          f"{plain:.2f} s, governed {governed:.2f} s: governed / ungoverned {governed / plain:.2f}x")


if __name__ == "__main__":
    main()
