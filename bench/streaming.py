"""Structured Streaming into a catalog table against Spark's own file sink, in one run.

    python bench/streaming.py [--quick] [--batches N] [--rows R] [--flat-batches M] [--trigger-ms T]

One local[2] session. The same stream — ``rate-micro-batch`` (R rows per batch), ``value`` and a
partition column ``dt = value % 4`` — written N batches by:

- ``file``   Spark's file sink into a path (``writeStream.format("parquet").partitionBy("dt")``: its
             manifest log ``_spark_metadata`` is its commit), the peer;
- ``ushas``  ``writeStream.toTable`` into a partitioned parquet table of the catalog (each batch one
             fenced metadata commit keyed by query id and batch id).

Measured from each query's own progress events (a Python StreamingQueryListener; the time of the batches
only, not the query's start): rows per second of batch time (throughput ratio ushas / file, goal >= 0.9)
and, for ushas, the catalog commit's share of each batch — the time of the ``commit_write`` bridge call's
Python side (the commit transaction, as the catalog runs it: this process is the bridge) over the batch's
duration (goal <= 10% at 1-second triggers: with ``--trigger-ms 1000`` the batch time includes the wait).
Then M micro-batches (1,000; 200 with --quick) of a small stream into one table: the mean batch duration
and commit time of the first and the last hundred batches, and their ratio (goal: flat within 1.2x).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)


class Progress:
    """Batch durations (ms) per query id, from StreamingQueryListener progress events."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batches: dict[str, list[tuple[int, float, int]]] = {}

    def listener(self) -> Any:
        from pyspark.sql.streaming import StreamingQueryListener

        outer = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                p = event.progress
                if p.numInputRows == 0:
                    return
                with outer.lock:
                    outer.batches.setdefault(str(p.id), []).append(
                        (p.batchId, float(p.durationMs.get("triggerExecution", 0)), p.numInputRows))

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        return Listener()

    def of(self, query_id: str) -> list[tuple[int, float, int]]:
        with self.lock:
            return sorted(self.batches.get(query_id, []))


class CommitTimer:
    """Wraps the bridge's ``commit_write`` op (this process answers the catalog's calls) to time it."""

    def __init__(self) -> None:
        from ushas_catalog.spark import ops

        self.times: dict[int, float] = {}
        self.lock = threading.Lock()
        inner = ops.OPS["commit_write"]

        def timed(ms: Any, r: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(ms, r)
            finally:
                if r.get("batch_id") is not None:
                    with self.lock:
                        self.times[int(r["batch_id"])] = (time.perf_counter() - t0) * 1000

        ops.OPS["commit_write"] = timed

    def take(self) -> dict[int, float]:
        with self.lock:
            out, self.times = self.times, {}
            return out


def run_stream(spark: Any, progress: Progress, writer: Any, start: Any, batches: int, timeout_s: float) -> str:
    """Start the query, wait until ``batches`` batches with data completed, stop it; its id."""
    q = start(writer)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if q.exception() is not None:
                raise RuntimeError(str(q.exception()))
            if len(progress.of(str(q.id))) >= batches:
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{batches} batches not done in {timeout_s:.0f} s")
    finally:
        q.stop()
    return str(q.id)


def source(spark: Any, rows: int) -> Any:
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).option("numPartitions", 2)
            .load().selectExpr("value", "timestamp AS ts", "CAST(value % 4 AS STRING) AS dt"))


def throughput(spark: Any, root: Path, progress: Progress, timer: CommitTimer, batches: int, rows: int,
               trigger_ms: int) -> dict[str, Any]:
    spark.sql("CREATE TABLE IF NOT EXISTS ushas.bench.ev (value BIGINT, ts TIMESTAMP, dt STRING) USING parquet "
              "PARTITIONED BY (dt)")
    trigger = f"{trigger_ms} milliseconds"
    out: dict[str, Any] = {}
    for round_ in range(2):  # alternate, twice: the first round warms the JVM for both
        for sink in ("file", "ushas"):
            ck = root / f"ck_{sink}_{round_}"
            w = source(spark, rows).writeStream.option("checkpointLocation", str(ck)).trigger(processingTime=trigger)
            if sink == "file":
                qid = run_stream(spark, progress, w, lambda w: w.format("parquet").partitionBy("dt")
                                 .start(str(root / "files")), batches, 600)
            else:
                timer.take()
                qid = run_stream(spark, progress, w, lambda w: w.toTable("ushas.bench.ev"), batches, 600)
            done = progress.of(qid)[:batches]
            if round_ == 1:
                total_ms = sum(d for _, d, _ in done)
                out[sink] = {"batches": len(done), "rows": sum(n for _, _, n in done),
                             "rows_per_s": sum(n for _, _, n in done) / (total_ms / 1000),
                             "batch_ms_median": statistics.median(d for _, d, _ in done)}
                if sink == "ushas":
                    commits = timer.take()
                    shares = [commits[b] / d for b, d, _ in done if b in commits and d > 0]
                    out[sink]["commit_ms_median"] = statistics.median(commits.values())
                    out[sink]["commit_share_median"] = statistics.median(shares)
    return out


def flatness(spark: Any, root: Path, progress: Progress, timer: CommitTimer, batches: int) -> dict[str, Any]:
    spark.sql("CREATE TABLE ushas.bench.flat (value BIGINT, ts TIMESTAMP, dt STRING) USING parquet "
              "PARTITIONED BY (dt)")
    timer.take()
    w = source(spark, 100).writeStream.option("checkpointLocation", str(root / "ck_flat"))
    qid = run_stream(spark, progress, w, lambda w: w.trigger(processingTime="0 seconds").toTable("ushas.bench.flat"),
                     batches, 3600)
    done = progress.of(qid)[:batches]
    commits = timer.take()
    k = min(100, len(done) // 2)
    first = [d for _, d, _ in done[:k]]
    last = [d for _, d, _ in done[-k:]]
    cfirst = [commits[b] for b, _, _ in done[:k] if b in commits]
    clast = [commits[b] for b, _, _ in done[-k:] if b in commits]
    return {"batches": len(done), "window": k,
            "batch_ms_first": statistics.mean(first), "batch_ms_last": statistics.mean(last),
            "batch_ratio_last_first": statistics.mean(last) / statistics.mean(first),
            "commit_ms_first": statistics.mean(cfirst), "commit_ms_last": statistics.mean(clast),
            "commit_ratio_last_first": statistics.mean(clast) / statistics.mean(cfirst)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batches", type=int)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--flat-batches", type=int)
    ap.add_argument("--trigger-ms", type=int, default=0)
    args = ap.parse_args()
    batches = args.batches or (10 if args.quick else 30)
    flat = args.flat_batches or (200 if args.quick else 1000)
    root = Path(tempfile.mkdtemp(prefix="ushas-bench-stream-"))
    try:
        spark = ushas_session("bench-streaming", root, conf={"spark.sql.streaming.noDataMicroBatches.enabled": "false"})
        progress = Progress()
        spark.streams.addListener(progress.listener())
        timer = CommitTimer()
        spark.sql("CREATE NAMESPACE ushas.bench")
        t = throughput(spark, root, progress, timer, batches, args.rows, args.trigger_ms)
        print(f"sink throughput, {batches} batches of {args.rows} rows (trigger {args.trigger_ms} ms):")
        for sink in ("file", "ushas"):
            print(f"  {sink:6s} {t[sink]['rows_per_s']:10.0f} rows/s   median batch {t[sink]['batch_ms_median']:.0f} ms")
        print(f"  ratio ushas / file throughput: {t['ushas']['rows_per_s'] / t['file']['rows_per_s']:.2f}x "
              f"(goal >= 0.9)")
        print(f"  ushas commit: median {t['ushas']['commit_ms_median']:.1f} ms = "
              f"{100 * t['ushas']['commit_share_median']:.1f}% of the batch (goal <= 10%)")
        f = flatness(spark, root, progress, timer, flat)
        print(f"{f['batches']} micro-batches of 100 rows into one table, first vs last {f['window']}:")
        print(f"  batch  {f['batch_ms_first']:.0f} ms -> {f['batch_ms_last']:.0f} ms: "
              f"{f['batch_ratio_last_first']:.2f}x (goal <= 1.2x)")
        print(f"  commit {f['commit_ms_first']:.1f} ms -> {f['commit_ms_last']:.1f} ms: "
              f"{f['commit_ratio_last_first']:.2f}x")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
