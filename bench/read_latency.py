"""Read latency with a concurrent writer against without one (embedded engine), in one run.

    python bench/read_latency.py [--quick] [--tables N] [--rounds R] [--reads K]

A store with N tables (200; 50 with --quick). Three conditions, alternated every round:

- ``idle``     nobody else uses the store;
- ``locked``   another process holds the store's write lock (``BEGIN IMMEDIATE``, a write pending)
               for the whole round: the situation where opening a store used to wait 5 s and fail;
- ``writing``  another process commits table creations and drops through the Metastore API in a loop.

In each, K reads through the Python API: ``open`` (open the store read-only-if-needed, read one table,
close: what one CLI command does) and ``get_table`` (one table on an open metastore), and one ``ushas
tables`` CLI process per round. Prints medians and the with / without ratios (goal <= 1.2 for the
reads; the ``writing`` ratio includes sharing 2 cores with the writer).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from ushas_catalog.metastore import Metastore  # noqa: E402

HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT OR REPLACE INTO kv (k, v) VALUES (x'00', x'00')")
print("ready", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""

WRITER = r"""
import sys, threading
from ushas_catalog.metastore import Metastore
ms = Metastore.open(sys.argv[1], project="bench")
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
print("ready", flush=True)
i = 0
while not stop.is_set():
    ms.create_table(f"main.sales.w{i % 20}", "id BIGINT")
    ms.drop_table(f"main.sales.w{i % 20}", purge=True)
    i += 1
ms.close()
"""


class Other:
    """Another process on the store (a lock holder or a writer) until :meth:`stop`."""

    def __init__(self, script: str, arg: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", script, arg], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def fill(uri: str, tables: int) -> None:
    ms = Metastore.open(uri, project="bench")
    ms.create_catalog("main")
    ms.create_database("main.sales")
    for i in range(tables):
        ms.create_table(f"main.sales.t{i}", "id BIGINT, amount DOUBLE, dt DATE", partition_by=["dt"])
    ms.close()


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tables", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--reads", type=int)
    args = ap.parse_args()
    tables = args.tables or (50 if args.quick else 200)
    rounds = args.rounds or (3 if args.quick else 6)
    reads = args.reads or (50 if args.quick else 200)
    root = Path(tempfile.mkdtemp(prefix="ushas-read-latency-"))
    path = root / "ushas.db"
    uri = f"sqlite://{path}"
    fill(uri, tables)
    samples: dict[str, dict[str, list[float]]] = {c: {"open": [], "get_table": [], "cli": []}
                                                  for c in ("idle", "locked", "writing")}
    reader = Metastore.open(uri, project="bench", create=False)

    def open_read() -> None:
        ms = Metastore.open(uri, project="bench", create=False)
        ms.get_table("main.sales.t7")
        ms.close()

    def cli() -> None:
        done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, "--project", "bench",
                               "tables", "main.sales"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    for r in range(rounds):
        for cond in ("idle", "locked", "writing"):
            other = None if cond == "idle" else Other(HOLDER if cond == "locked" else WRITER,
                                                       str(path) if cond == "locked" else uri)
            try:
                samples[cond]["open"] += timed(open_read, reads)
                samples[cond]["get_table"] += timed(lambda: reader.get_table("main.sales.t7"), reads)
                samples[cond]["cli"] += timed(cli, 1)
            finally:
                if other is not None:
                    other.stop()
    reader.close()

    def med(cond: str, what: str) -> float:
        return statistics.median(samples[cond][what]) * 1000

    print(f"read latency, median ms ({tables} tables, {rounds} rounds x {reads} reads; CLI: 1 per round)")
    print(f"{'read':<10} {'idle':>9} {'locked':>9} {'writing':>9} {'locked/idle':>12} {'writing/idle':>13}")
    for what in ("open", "get_table", "cli"):
        idle, locked, writing = med("idle", what), med("locked", what), med("writing", what)
        print(f"{what:<10} {idle:>9.3f} {locked:>9.3f} {writing:>9.3f} {locked / idle:>11.2f}x "
              f"{writing / idle:>12.2f}x")
    print("goal: locked/idle <= 1.2 (a reader never waits for a writer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
