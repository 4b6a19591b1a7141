"""What automatic lineage capture costs the user's queries, and how fast the store absorbs runs.

    python bench/lineage_capture.py [--quick] [--queries N] [--block B] [--openlineage] [--peer]

``--openlineage``: the OpenLineage HTTP transport on as well (``spark.ushas.lineage.openlineage.url``
pointing at a local receiver started by the benchmark in its own process): the "on" side then also
builds and POSTs every run's START and COMPLETE events.

``--writes``: the workload is writes only (the issue's "100 small writes": ``--peer --writes --queries
100``), four kinds in turn: INSERT OVERWRITE into an ushas table and into a Hive table, a parquet path
and a DataFrame ``saveAsTable``.

``--peer``: OpenLineage's own Spark listener (``io.openlineage:openlineage-spark_2.13:1.53.0`` from
Maven Central, fetched with ``mvn dependency:get`` into ``~/.m2`` when missing; bench only, on the
driver's class path) as a third configuration, sending its events over HTTP to a local receiver
started by the benchmark: each block then runs three times, none / ours / OpenLineage's, the order
rotating from block to block, and the added time of ours is printed as a ratio of OpenLineage's
(goal <= 0.5).

One local[2] session with Hive support (embedded Derby), the ``ushas`` catalog (embedded sqlite store,
this Python process as the backend: the PySpark bridge mode) and ONE ``UshasLineageListener`` instance
that the benchmark attaches and detaches at runtime:

- on:  ``spark._jsparkSession.listenerManager().register(l)`` + ``sc.addSparkListener(l)``
- off: ``listenerManager().unregister(l)`` + ``sc.removeSparkListener(l)``

so both sides run in the same JVM, the same session, the same warm caches and the same Python
process; the only difference is whether the listener gets Spark's events. (Building two sessions, or
two processes, would compare JIT / cache warm-up states, not the listener.)

The workload: 200 queries (50 with --quick) over small tables, five kinds in turn: a filtered
aggregate read of an ushas table, a join of the ushas table with a Hive table, and INSERT OVERWRITE
into an ushas table, into a Hive table and into a parquet path (``df.write.parquet``). It is cut into
blocks of B queries (5); each block runs once with the listener and once without, the order alternating
from block to block (on/off, off/on, ...). Between the two sides, untimed, Spark's listener bus and
the capture are drained (``lineage.capture.flush_spark``) so one side's capture work never spills
into the other side's time; the drain after an "on" side (capture work still queued when the block's
last query returned) is reported separately.

Prints:
- the wall-time ratio on / off of the user's queries over all blocks (goal <= 1.02), the median of
  the per-block ratios (a noise indicator: on a shared machine single blocks swing by +-30 %), and
  the ratio counting the drain tail as well;
- the capture's own work (the JVM plan walk, from the events, plus the Python resolve + store time
  per run, from the burst) as a share of the "off" wall time: a noise-free bound of the overhead;
- p50 / p99 latency from query end (Spark's execution-end time) to the run stored;
- the store's absorption throughput: every event the listener handed over during the "on" blocks is
  recorded (raw message; plan temp files hard-linked), then replayed as one burst into a fresh
  capture of the same store under a new application id (so every run is really written), timed
  from the first submit until all are stored: runs / s for resolve + one store transaction each.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

if not any((Path(p) / "ushas_catalog").is_dir() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))  # else: the tree PYTHONPATH names

from _spark import ushas_session  # noqa: E402  (bench/ is the script's directory)

GOAL = 1.02
PEER_GOAL = 0.5  # our added time over OpenLineage's listener's
PEER = ("io.openlineage", "openlineage-spark_2.13", "1.53.0")


def peer_jar() -> Path:
    """OpenLineage's Spark listener jar (Maven Central), fetched into ~/.m2 with mvn when missing."""
    import subprocess

    group, artifact, version = PEER
    jar = (Path.home() / ".m2" / "repository" / Path(*group.split(".")) / artifact / version
           / f"{artifact}-{version}.jar")
    if not jar.exists():
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={group}:{artifact}:{version}",
                        "-Dtransitive=false"], check=True, timeout=900)
    return jar


def session(root: Path, openlineage_url: str | None = None, peer_url: str | None = None) -> Any:
    (root / "paths").mkdir()
    # no listener from the configuration: the benchmark attaches its own instance
    conf = {"spark.default.parallelism": "2"}
    if openlineage_url:
        conf["spark.ushas.lineage.openlineage.url"] = openlineage_url
    if peer_url:
        conf.update({"spark.driver.extraClassPath": str(peer_jar()),
                     "spark.openlineage.transport.type": "http", "spark.openlineage.transport.url": peer_url,
                     "spark.openlineage.namespace": "bench"})
    return ushas_session("ushas-bench-capture", root, hive=True, conf=conf)


RECEIVER = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Marquez / DataHub
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def start_receiver() -> tuple[Any, str]:
    """A local OpenLineage receiver in its own process (answers 201 to every POST): (process, url)."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


@dataclass
class Listener:
    """One UshasLineageListener, attached to / detached from the running session."""

    spark: Any
    jl: Any = None
    attached: bool = False

    def __post_init__(self) -> None:
        sc = self.spark._jsc.sc()
        self.jl = self.spark._jvm.io.ushas.spark.UshasLineageListener(sc.getConf())  # adds itself to sc
        sc.removeSparkListener(self.jl)

    def on(self) -> None:
        self.spark._jsparkSession.listenerManager().register(self.jl)
        self.spark._jsc.sc().addSparkListener(self.jl)
        self.attached = True

    def off(self) -> None:
        self.spark._jsparkSession.listenerManager().unregister(self.jl)
        self.spark._jsc.sc().removeSparkListener(self.jl)
        self.attached = False


@dataclass
class PeerListener:
    """OpenLineage's ``OpenLineageSparkListener`` (a SparkListener), attached to / detached from the
    running session like ours."""

    spark: Any
    jl: Any = None

    def __post_init__(self) -> None:
        self.jl = self.spark._jvm.io.openlineage.spark.agent.OpenLineageSparkListener(self.spark._jsc.sc().getConf())

    def on(self) -> None:
        self.spark._jsc.sc().addSparkListener(self.jl)

    def off(self) -> None:
        self.spark._jsc.sc().removeSparkListener(self.jl)


def setup(spark: Any, root: Path) -> None:
    spark.sql("CREATE NAMESPACE ushas.bench")
    spark.sql("CREATE TABLE ushas.bench.orders (id BIGINT, customer_id BIGINT, amount DOUBLE, dt STRING) "
              "USING parquet PARTITIONED BY (dt)")
    spark.sql("INSERT INTO ushas.bench.orders SELECT id, id % 100, (id % 37) * 1.5, "
              "concat('d', CAST(id % 5 AS STRING)) FROM range(2000)")
    spark.sql("CREATE TABLE default.customers (id BIGINT, name STRING, country STRING) STORED AS PARQUET")
    spark.sql("INSERT INTO default.customers SELECT id, concat('c', CAST(id AS STRING)), "
              "element_at(array('fr', 'in', 'us', 'br'), CAST(id % 4 + 1 AS INT)) FROM range(100)")
    spark.sql("CREATE TABLE ushas.bench.by_country (country STRING, n BIGINT, total DOUBLE) USING parquet")
    spark.sql("CREATE TABLE default.daily (dt STRING, orders BIGINT, avg_amount DOUBLE) STORED AS PARQUET")


#: --writes: the write kinds only, in turn (INSERT OVERWRITE into ushas and Hive, a path, saveAsTable)
WRITE_KINDS = (2, 3, 4, 5)


def workload(spark: Any, root: Path, n: int, writes: bool = False) -> list[Callable[[], Any]]:
    """n small queries, five kinds in turn (reads, joins, aggregates, INSERTs into three kinds of target);
    ``writes``: n writes, four kinds in turn (those three and a DataFrame ``saveAsTable``)."""
    path = str(root / "paths" / "top_customers")

    def q(i: int) -> Callable[[], Any]:
        day = f"d{i % 5}"
        kind = WRITE_KINDS[i % len(WRITE_KINDS)] if writes else i % 5
        if kind == 5:
            return lambda: (spark.table("ushas.bench.orders").where(f"amount > {i % 7}").groupBy("dt")
                            .agg({"amount": "sum"}).write.mode("overwrite").saveAsTable("default.by_day"))
        if kind == 0:
            return lambda: spark.sql(f"SELECT count(*), sum(amount) FROM ushas.bench.orders "
                                     f"WHERE dt = '{day}' AND amount > {i % 7}").collect()
        if kind == 1:
            return lambda: spark.sql(
                "SELECT c.country, count(*) AS n, sum(o.amount) AS total FROM ushas.bench.orders o "
                f"JOIN default.customers c ON o.customer_id = c.id WHERE o.dt <= '{day}' "
                "GROUP BY c.country ORDER BY total DESC").collect()
        if kind == 2:
            return lambda: spark.sql(
                "INSERT OVERWRITE ushas.bench.by_country SELECT c.country, count(*), sum(o.amount) "
                f"FROM ushas.bench.orders o JOIN default.customers c ON o.customer_id = c.id "
                f"WHERE o.amount > {i % 11} GROUP BY c.country")
        if kind == 3:
            return lambda: spark.sql(
                "INSERT OVERWRITE default.daily SELECT dt, count(*), avg(amount) FROM ushas.bench.orders "
                f"WHERE customer_id % {2 + i % 3} = 0 GROUP BY dt")
        return lambda: (spark.sql(
            "SELECT c.name, sum(o.amount) AS spent FROM ushas.bench.orders o JOIN default.customers c "
            f"ON o.customer_id = c.id WHERE c.country <> 'xx{i}' GROUP BY c.name ORDER BY spent DESC LIMIT 10")
            .write.mode("overwrite").parquet(path))

    return [q(i) for i in range(n)]


@dataclass
class Recorder:
    """Keeps every event the listener hands to this process's capture hub (for the burst replay):
    a copy of the message, and a hard link of each plan temp file (the capture deletes the original)."""

    root: Path
    messages: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)
    _n: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, hub: Any) -> None:
        original = hub.event

        def event(request: Any) -> Any:
            # cheap on the listener's path: keep a reference to the parsed message (the capture does
            # not change it) and hard-link plan files; the copy for the replay is made afterwards
            d = json.loads(request) if isinstance(request, (str, bytes)) else request
            if isinstance(d, dict) and isinstance(d.get("event"), dict):
                links: dict[str, str] = {}
                with self._lock:
                    for x in d["event"].get("executions", ()):
                        if x.get("plan_file"):
                            self._n += 1
                            links[x["plan_file"]] = str(self.root / f"plan-{self._n}.json")
                            os.link(x["plan_file"], links[x["plan_file"]])
                    self.messages.append((d, links))
            return original(request)

        hub.event = event


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def burst(uri: str, messages: list[tuple[dict[str, Any], dict[str, str]]]) -> tuple[int, float]:
    """Replay the recorded events as one burst into a fresh capture of the same store."""
    from lineage.capture import CaptureSettings, LineageCapture, open_store

    events = []
    for message, links in messages:
        ev = json.loads(json.dumps(message["event"]))
        ev["application_id"] = "burst-" + ev["application_id"]
        for x in ev.get("executions", ()):
            if x.get("plan_file"):
                x["plan_file"] = links[x["plan_file"]]
        events.append(ev)
    capture = LineageCapture(lambda: open_store(uri, "default", {"ushas": "ushas"}),
                             CaptureSettings(max_pending=len(events) + 1), source="bench-burst")
    try:
        t0 = time.perf_counter()
        for ev in events:
            capture.submit(ev)
        if not capture.flush(600):
            raise RuntimeError("burst not stored within 600 s")
        elapsed = time.perf_counter() - t0
        stats = capture.stats()
    finally:
        capture.close()
    if stats.dropped:
        raise RuntimeError(f"burst: {stats.dropped} runs dropped")
    return stats.captured, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 queries instead of 200")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--block", type=int, default=5, help="queries per block (each side)")
    parser.add_argument("--openlineage", action="store_true",
                        help="also send every run to a local OpenLineage HTTP receiver")
    parser.add_argument("--peer", action="store_true",
                        help="OpenLineage's Spark listener (Maven Central) as a third configuration")
    parser.add_argument("--writes", action="store_true",
                        help="writes only: INSERT OVERWRITE (ushas, Hive), a parquet path, saveAsTable, in turn")
    args = parser.parse_args()
    n = args.queries or (50 if args.quick else 200)

    from lineage.capture import flush_spark
    from ushas_catalog.spark.bridge import REGISTRY

    with tempfile.TemporaryDirectory(prefix="ushas-bench-capture-") as tmp:
        root = Path(tmp)
        (root / "plans").mkdir()
        receiver, url = start_receiver() if args.openlineage or args.peer else (None, None)
        spark = session(root, url if args.openlineage else None, url if args.peer else None)
        uri = f"sqlite:///{root / 'ushas.db'}"
        try:
            setup(spark, root)
            listener = Listener(spark)
            peer = PeerListener(spark) if args.peer else None
            recorder = Recorder(root / "plans")
            recorder.install(REGISTRY.lineage())
            queries = workload(spark, root, n, args.writes)
            # warm-up, both sides: the first use of each kind pays class loading, codegen, the first
            # Py4J callback connection of the listener thread, the store's first open
            for side in ("on", "off", *(("peer",) if peer else ())):
                on_side(listener, peer, side)
                for fn in queries[:5]:
                    fn()
                flush_spark(spark, 300)
                off_sides(listener, peer)
            capture = REGISTRY.lineage().capture(uri, "default")
            recorder.messages.clear()
            warm_captured = capture.stats().captured

            times: dict[str, list[float]] = {"on": [], "off": [], "peer": []}
            sides = ("on", "off", "peer") if peer else ("on", "off")
            tails: list[float] = []
            latencies: list[float] = []
            for b, start in enumerate(range(0, n, args.block)):
                block = queries[start:start + args.block]
                turn = b % len(sides)  # every side in every position in turn
                for side in (sides[turn:] + sides[:turn]) if peer else sides[::1 if b % 2 == 0 else -1]:
                    on_side(listener, peer, side)
                    before = capture.stats().captured
                    t0 = time.perf_counter()
                    for fn in block:
                        fn()
                    times[side].append(time.perf_counter() - t0)
                    t1 = time.perf_counter()
                    done = flush_spark(spark, 300)  # untimed for the queries; the "on" tail is reported
                    if side == "on":
                        tails.append(time.perf_counter() - t1)
                        stats = capture.stats()
                        fresh = stats.captured - before
                        latencies.extend(stats.latencies_ms[len(stats.latencies_ms) - fresh:] if fresh else ())
                    if not done.flushed:
                        raise RuntimeError(f"capture not drained: {done}")
                    off_sides(listener, peer)
                print(f"  block {b + 1}: on {times['on'][-1]:.2f} s  off {times['off'][-1]:.2f} s  "
                      f"ratio {times['on'][-1] / times['off'][-1]:.3f}"
                      + (f"  openlineage {times['peer'][-1]:.2f} s" if peer else ""), flush=True)
            stats = capture.stats()
            captured = stats.captured - warm_captured
            messages = list(recorder.messages)
            walk_ms = sum(float(x.get("walk_ms", 0.0)) for m, _ in messages for x in m["event"]["executions"])
            runs, elapsed = burst(uri, messages)
        finally:
            spark.stop()
            if receiver is not None:
                receiver.terminate()
                receiver.wait(10)

    on, off, tail = sum(times["on"]), sum(times["off"]), sum(tails)
    ratio = on / off
    block_ratio = statistics.median(a / b for a, b in zip(times["on"], times["off"]))
    # the capture's own work, measured without the other side's noise: the JVM walk on Spark's
    # listener thread (from the events) and the Python resolve + store per run (from the burst)
    work = walk_ms / 1000 + (elapsed / runs) * len(messages) if runs else float("nan")
    print(f"Lineage capture: {n} queries, blocks of {args.block}, listener on / off alternating in one session")
    print(f"  user wall time     on {on:8.2f} s   off {off:8.2f} s   ratio {ratio:.3f}  "
          f"(median block ratio {block_ratio:.3f})  goal <= {GOAL}"
          f"{'' if ratio <= GOAL else '  MISSED'}")
    print(f"  with drain tail    on {on + tail:8.2f} s   ratio {(on + tail) / off:.3f}  "
          f"(capture work left when a block's last query returned: {tail:.2f} s in all)")
    print(f"  capture work       {work:.2f} s for {len(messages)} actions = {100 * work / off:.2f} % of the off "
          f"side's wall time (plan walk {walk_ms / max(1, len(messages)):.1f} ms + resolve/store "
          f"{1000 * elapsed / max(1, runs):.1f} ms per action)")
    print(f"  runs stored        {captured} of {n} queries (dropped {stats.dropped}, "
          f"not runs: {stats.skipped})")
    if args.openlineage:
        print(f"  OpenLineage HTTP   {stats.openlineage_sent} events sent, {stats.openlineage_dropped} dropped")
    if args.peer:
        theirs = sum(times["peer"])
        added, peer_added = on - off, theirs - off
        share = added / peer_added if peer_added > 0 else float("nan")
        print(f"  OpenLineage's listener {theirs:8.2f} s   ratio to off {theirs / off:.3f}  "
              f"(openlineage-spark {PEER[2]}, events over HTTP to a local receiver)")
        print(f"  added time         ours {added:+.2f} s   OpenLineage's {peer_added:+.2f} s   "
              f"ours / theirs {share:.3f}  goal <= {PEER_GOAL}"
              f"{'' if share <= PEER_GOAL or added <= 0 else '  MISSED'}")
    print(f"  query end -> stored  p50 {percentile(latencies, 50):.0f} ms   p99 {percentile(latencies, 99):.0f} ms"
          f"   ({len(latencies)} runs)")
    print(f"  store absorption   {runs} runs in {elapsed:.2f} s = {runs / elapsed:.1f} runs/s "
          f"(burst replay of the captured events: resolve + one transaction per run, one worker)")
    return 0 if ratio <= GOAL else 1


def on_side(listener: Listener, peer: PeerListener | None, side: str) -> None:
    """Attach the listener of ``side``: ours ("on"), none ("off"), OpenLineage's ("peer")."""
    if side == "on":
        listener.on()
    elif side == "peer" and peer is not None:
        peer.on()


def off_sides(listener: Listener, peer: PeerListener | None) -> None:
    if listener.attached:
        listener.off()
    if peer is not None:
        peer.off()


if __name__ == "__main__":
    sys.exit(main())
