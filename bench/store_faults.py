"""What a failing store costs the user's statements and the lineage capture, and how it recovers
(information: no goal).

    python bench/store_faults.py [--quick] [--statements N]

One local[2] session, the ``ushas`` catalog on an embedded sqlite store with ``busy_timeout_ms=200``
(a write waits at most ~0.6 s for another process's lock: three attempts) and the lineage listener.
The same workload runs in three phases of N statements each (120; 30 with --quick), in one session:

- healthy: nothing else touches the store;
- failing: another process holds the store's write lock (``BEGIN IMMEDIATE``) for the whole phase,
  longer than the busy timeout: catalog writes fail with ``StoreBusy``, reads answer from their
  snapshot, the capture retries with backoff and drops what it cannot store in time;
- recovering: the lock is released when the phase starts.

The workload cycles through four statements on a small partitioned table: INSERT INTO one partition,
SELECT count(*) (a catalog read), ALTER TABLE SET TBLPROPERTIES (a catalog write), SHOW PARTITIONS.
Each is timed from call to return, failed or not. After each phase the listener is drained
(``flush_spark``, at most 30 s) and the runs the store holds for the phase's time window are counted;
they are counted again at the end, after a last drain (at most 120 s): the capture keeps retrying
what the locked store refused, with backoff, and stores it once the lock is gone.

Prints per phase: statements that succeeded, p50 / p95 statement latency, lineage runs stored per
statement run (the capture ratio), and the ratios failing / healthy and recovering / healthy of the
p50 latency and of the capture ratio, all measured in this run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


@dataclass
class Phase:
    name: str
    latencies: list[float] = field(default_factory=list)
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    statements: int = 0
    since: int = 0
    until: int = 0
    #: runs of the phase's window stored by the end of the benchmark (the capture retries with backoff)
    runs_eventually: int = 0

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies)

    @property
    def p95(self) -> float:
        return sorted(self.latencies)[max(0, int(len(self.latencies) * 0.95) - 1)]

    @property
    def capture(self) -> float:
        return self.runs / max(1, self.statements)

    @property
    def capture_eventually(self) -> float:
        return self.runs_eventually / max(1, self.statements)


def _session(root: Path) -> Any:
    from pyspark.sql import SparkSession

    from ushas_catalog.spark import configure

    (root / "warehouse").mkdir()
    builder = (SparkSession.builder.master("local[2]").appName("bench-store-faults")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2"))
    builder = configure(builder, name="ushas", uri=f"sqlite:///{root / 'ushas.db'}?busy_timeout_ms=200",
                        warehouse=str(root / "warehouse"), lineage=True)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


def _statement(i: int) -> str:
    return ("INSERT INTO ushas.b.t VALUES ({i}, 'p{p}')".format(i=i, p=i % 4),
            "SELECT count(*) FROM ushas.b.t",
            f"ALTER TABLE ushas.b.t SET TBLPROPERTIES ('round' = '{i}')",
            "SHOW PARTITIONS ushas.b.t")[i % 4]


def _run_phase(spark: Any, name: str, n: int, start: int, root: Path) -> Phase:
    from lineage.capture import flush_spark

    phase = Phase(name)
    since = int(time.time() * 1000)
    for i in range(start, start + n):
        t0 = time.perf_counter()
        try:
            spark.sql(_statement(i)).collect()
            phase.ok += 1
        except Exception as exc:  # noqa: BLE001 - the failures are what is measured
            kind = type(exc).__name__
            phase.errors[kind] = phase.errors.get(kind, 0) + 1
        phase.latencies.append(time.perf_counter() - t0)
        phase.statements += 1
    flush_spark(spark, timeout=30.0)
    phase.since, phase.until = since, int(time.time() * 1000)
    phase.runs = _runs(root, phase)
    return phase


def _runs(root: Path, phase: Phase) -> int:
    from lineage.tables import open_lineage_store

    store = open_lineage_store(f"sqlite:///{root / 'ushas.db'}", create=False)
    try:
        return len(store.runs_between(phase.since, phase.until))
    finally:
        store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--statements", type=int)
    args = ap.parse_args()
    n = args.statements or (30 if args.quick else 120)
    from store_lock import LockHolder

    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        root = Path(tmp)
        spark = _session(root)
        spark.sql("CREATE NAMESPACE ushas.b")
        spark.sql("CREATE TABLE ushas.b.t (id INT, p STRING) USING parquet PARTITIONED BY (p)")
        _run_phase(spark, "warm-up", 8, 0, root)
        healthy = _run_phase(spark, "healthy", n, 100, root)
        holder = LockHolder(root / "ushas.db")
        try:
            failing = _run_phase(spark, "failing", n, 100 + n, root)
        finally:
            holder.release()
        recovering = _run_phase(spark, "recovering", n, 100 + 2 * n, root)
        from lineage.capture import flush_spark

        flush_spark(spark, timeout=120.0)
        for p in (healthy, failing, recovering):
            p.runs_eventually = _runs(root, p)
        spark.stop()
    print(f"store faults: {n} statements per phase (INSERT / SELECT / ALTER / SHOW PARTITIONS), "
          f"write lock held by another process during 'failing'")
    for p in (healthy, failing, recovering):
        errors = ", ".join(f"{k} {v}" for k, v in sorted(p.errors.items())) or "none"
        print(f"  {p.name:<11} ok {p.ok:>4}/{p.statements}  p50 {p.p50 * 1000:7.1f} ms  p95 {p.p95 * 1000:7.1f} ms  "
              f"lineage runs stored per statement {p.capture:.2f} (by the end: {p.capture_eventually:.2f})  "
              f"errors: {errors}")
    for p in (failing, recovering):
        print(f"  ratio {p.name}/healthy: p50 latency {p.p50 / healthy.p50:.2f}, "
              f"capture {p.capture / max(healthy.capture, 1e-9):.2f} "
              f"(by the end: {p.capture_eventually / max(healthy.capture_eventually, 1e-9):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
