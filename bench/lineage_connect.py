"""``df.lineage()`` over Spark Connect vs in a classic session, on the 22 TPC-H queries (information, no goal).

    python bench/lineage_connect.py [--rounds N] [--warmup N]

Sides, each timed per query (all output columns of one query), every side in every round, in a seeded
shuffled order so all see the same machine load:

- classic: ``lineage_of_dataframe(df)`` on ``df = spark.sql(q)`` of a classic local session - one Py4J
  round trip (the JVM walks the analyzed plan), parse, resolve;
- connect-df: ``df.lineage()`` (``lineage.connect``) on ``df = spark.sql(q)`` of a Spark Connect client -
  the DataFrame's relation travels to the server in a relation extension; the server's
  ``LineageRelationPlugin`` analyses it in the client's session, walks it and answers one row with the
  plan JSON (a small Spark execution: gRPC, Arrow), then the same parse and resolution here;
- connect-sql: ``lineage_of_connect_sql(spark, q)``: the same with the SQL text as payload (parsed and
  analysed on the server, not executed);
- connect-floor: ``spark.range(1).collect()`` over the same connection, once per query: what any Connect
  call that returns one row costs here, for scale.

``spark.sql(q)`` itself is done before timing for classic and connect-df (over Connect it is a round trip
of its own). The Connect server is a separate local JVM started here (``SparkConnectServer`` from
pyspark's jars, on a free port, with the shim jar and the plugin), stopped at the end. Per query the
median over ``--rounds``; totals are sums of medians; ratios are connect over classic.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
TPCH = ROOT / "tests" / "lineage" / "tpch"
DATABASE = "tpch"
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PLUGIN = "io.ushas.spark.connect.LineageRelationPlugin"


def load() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    tables = json.loads((TPCH / "schema.json").read_text())
    queries = {p.stem: p.read_text() for p in sorted((TPCH / "queries").glob("q*.sql"))}
    return tables, queries


def create_tables(spark: Any, tables: dict[str, dict[str, str]]) -> None:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    for table, columns in tables.items():
        cols = ", ".join(f"{c} {t}" for c, t in columns.items())
        spark.sql(f"CREATE TABLE IF NOT EXISTS {DATABASE}.{table} ({cols}) USING parquet")
    spark.sql(f"USE {DATABASE}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_connect_server(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    import pyspark

    from ushas_catalog.spark.jar import jar_path

    conf = {"spark.jars": str(jar_path()), "spark.connect.extensions.relation.classes": PLUGIN,
            "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port),
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": str(workdir / "server-warehouse")}
    cmd = [str(Path(pyspark.__file__).parent / "bin" / "spark-submit"), "--master", "local[2]",
           "--class", CONNECT_CLASS, *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]]
    log = open(workdir / "connect-server.log", "wb")  # noqa: SIM115 - the server's lifetime
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the Connect server exited: see {workdir / 'connect-server.log'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.5)
    stop(proc)
    raise SystemExit("the Connect server did not start within 180 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def classic_session(workdir: Path) -> Any:
    from pyspark.sql import SparkSession

    from ushas_catalog.spark.jar import jar_path

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("ushas-bench-lineage-connect")
             .config("spark.jars", str(jar_path())).config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", str(workdir / "classic-warehouse")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def measure(sides: dict[str, Callable[[str], None]], queries: list[str], rounds: int,
            warmup: int) -> dict[str, dict[str, float]]:
    rng = random.Random(7)
    samples: dict[str, dict[str, list[float]]] = {s: {q: [] for q in queries} for s in sides}
    for r in range(warmup + rounds):
        for side in rng.sample(list(sides), len(sides)):
            for q in queries:
                start = time.perf_counter()
                sides[side](q)
                if r >= warmup:
                    samples[side][q].append(time.perf_counter() - start)
    return {s: {q: statistics.median(v) for q, v in by_q.items()} for s, by_q in samples.items()}


def report(median: dict[str, dict[str, float]], base: str) -> None:
    names = list(next(iter(median.values())))
    others = [s for s in median if s != base]
    header = ["query"] + [f"{s} ms" for s in median] + [f"{s}/{base}" for s in others]
    rows = []
    for name in names + ["total"]:
        values = {s: (sum(t.values()) if name == "total" else t[name]) for s, t in median.items()}
        rows.append([name] + [f"{v * 1000:.1f}" for v in values.values()]
                    + [f"{values[s] / values[base]:.1f}x" for s in others])
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (median), default 5")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured rounds first, default 2")
    args = parser.parse_args(argv)

    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from lineage.connect import lineage_of_connect_dataframe, lineage_of_connect_sql
    from lineage.dataframe import lineage_of_dataframe

    tables, queries = load()
    with tempfile.TemporaryDirectory(prefix="ushas-bench-connect-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        server = start_connect_server(workdir, port)
        try:
            classic = classic_session(workdir)
            create_tables(classic, tables)
            remote = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").create()
            create_tables(remote, tables)
            classic_frames = {q: classic.sql(sql) for q, sql in queries.items()}
            remote_frames = {q: remote.sql(sql) for q, sql in queries.items()}
            remote_one = remote.range(1)
            for q in queries:  # the same lineage on both sides before anything is timed
                a, b = lineage_of_dataframe(classic_frames[q]), lineage_of_connect_dataframe(remote_frames[q])
                assert len(a.edges) == len(b.edges) and [c.name for c in a.outputs] == [c.name for c in b.outputs], q
            sides: dict[str, Callable[[str], None]] = {
                "classic": lambda q: lineage_of_dataframe(classic_frames[q]) and None,
                "connect-df": lambda q: lineage_of_connect_dataframe(remote_frames[q]) and None,
                "connect-sql": lambda q: lineage_of_connect_sql(remote, queries[q]) and None,
                "connect-floor": lambda q: remote_one.collect() and None,
            }
            print(f"22 TPC-H queries, all output columns; median of {args.rounds} rounds after {args.warmup} "
                  f"unmeasured (load {os.getloadavg()[0]:.1f})")
            report(measure(sides, list(queries), args.rounds, args.warmup), "classic")
            remote.stop()
            classic.stop()
        finally:
            stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
