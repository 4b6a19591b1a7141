"""The PostgreSQL engine against the embedded SQLite engine on the metastore benchmark's operations.

    python bench/postgres.py [--quick] [--list N] [--drop N] [--uri postgresql://...]

Both engines durable (SQLite ``synchronous=full``; PostgreSQL ``fsync=on``, ``synchronous_commit=on``,
a server started for the run in a temporary directory unless ``--uri`` names one), same process, same
operations, in this order on each engine:

- create a partitioned table (median of 20);
- ``get_table`` (median of 200);
- add 1,000 partitions in one ``add_partitions`` call (median of 5, each on a fresh table);
- list N partitions (default 100,000; 10,000 with ``--quick``) after adding them in batches of 5,000;
- drop a table of M partitions (default 100,000; 1,000,000 is ``--drop 1000000``) with the bulk path:
  ``drop_table`` (one transaction) then ``purge_table`` (chunks of keys).

Prints each time and the ratio PostgreSQL ÷ SQLite (above 1: PostgreSQL slower).

``--replicas``: instead, the aggregate throughput of ``ushas serve`` on one PostgreSQL store, three
replicas against one, with the same client processes (``--clients``, default 6) for ``--seconds``
each (default 10): reads (``GET`` a table) and writes (``PUT`` the owner of the client's own table:
a new table version), in ``--rounds`` alternating rounds (default 3).
Prints calls/s, the ratio three ÷ one, the CPU per call of each class of process (replicas, PostgreSQL,
clients) and the bounds they imply (``bench/pg_replicas.py``).

``--hms``: instead, the Hive metastore 2.3 Thrift service (``HiveMetaStore`` from pyspark's jars) on the
same PostgreSQL server as the peer of ``ushas serve`` on it (each in its own database of the server):
HMS creates its schema itself (``datanucleus.schema.autoCreateAll=true``), with the PostgreSQL JDBC driver
from Maven Central (``org.postgresql:postgresql``, fetched into ``~/.m2`` with ``mvn dependency:get``
when missing; bench only). Both are driven through their own client over the network (HMS: Hive's
``HiveMetaStoreClient`` in a JVM, timed there, ``bench/java/HmsBench.java``; ushas: the remote metastore,
``Metastore.open("http://…", token=…)``), one after the other, the same operations in the same order:
create a partitioned table, ``get_table``, ``add_partitions`` of 1,000, fill a table with N partitions
(``--partitions``, default 100,000; 10,000 with ``--quick``) in batches of 5,000, the partitions of one
day by filter (100 of them), drop that table (ushas: ``drop_table`` then ``purge_table``, which deletes
every key; HMS's ``dropTable`` deletes its rows). Prints each time and the ratio ushas ÷ HMS (goal ≤ 0.5).
"""
from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from ushas_catalog.metastore import Metastore  # noqa: E402

import pg_replicas  # noqa: E402 - bench/ is this script's directory

SHARDS = 100
BATCH = 5_000


def specs(n: int, offset: int = 0) -> list[dict[str, object]]:
    d0 = dt.date(2020, 1, 1)
    return [{"dt": d0 + dt.timedelta(days=(i + offset) // SHARDS), "shard": (i + offset) % SHARDS} for i in range(n)]


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def create(ms: Metastore, name: str) -> None:
    ms.create_table(name, "id BIGINT, payload STRING, dt DATE, shard INT", partition_by=["dt", "shard"])


def fill(ms: Metastore, name: str, n: int) -> None:
    create(ms, name)
    for i in range(0, n, BATCH):
        ms.add_partitions(name, specs(min(BATCH, n - i), i))


def measure(uri: str, n_list: int, n_drop: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with Metastore.open(uri, project="bench", user="bench") as ms:
        ms.create_catalog("main")
        ms.create_database("main.b", location="/wh/b")
        out["create table"] = statistics.median(timed(lambda i=i: create(ms, f"main.b.c{i}")) for i in range(20))
        out["get_table"] = statistics.median(timed(lambda: ms.get_table("main.b.c0")) for _ in range(200))
        adds = []
        for i in range(5):
            create(ms, f"main.b.a{i}")
            adds.append(timed(lambda i=i: ms.add_partitions(f"main.b.a{i}", specs(1000))))
        out["add 1,000 partitions"] = statistics.median(adds)
        fill(ms, "main.b.listed", n_list)
        out[f"list {n_list:,} partitions"] = timed(lambda: sum(1 for _ in ms.list_partitions("main.b.listed")))
        fill(ms, "main.b.big", n_drop)
        out[f"drop table of {n_drop:,}"] = timed(lambda: ms.drop_table("main.b.big"))
        out[f"purge table of {n_drop:,}"] = timed(lambda: ms.purge_table("main.b.big"))
    return out


def start_serve(uri: str) -> tuple[subprocess.Popen[bytes], str]:
    """``ushas serve`` (hooks off) on the store ``uri`` on a free port: the process and its base URL."""
    return pg_replicas.start_serve(uri, "ushas-bench")


wait_serving = pg_replicas.wait_serving


PG_JDBC = ("org.postgresql", "postgresql", "42.7.14")
FILTER_DAY = "2020-01-05"


def maven_jar(group: str, artifact: str, version: str) -> Path:
    """A jar from Maven Central in ~/.m2, fetched with mvn when missing."""
    jar = (Path.home() / ".m2" / "repository" / Path(*group.split(".")) / artifact / version
           / f"{artifact}-{version}.jar")
    if not jar.exists():
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={group}:{artifact}:{version}",
                        "-Dtransitive=false"], check=True, timeout=600)
    return jar


def hms_side(server: "object", root: Path, n: int) -> dict[str, float]:
    """The Hive metastore on ``server`` (a PgServer): its times, measured by HmsBench in a JVM."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "app"))
    from hive_service import java_binary, pyspark_jars, start_metastore

    port = server.port  # type: ignore[attr-defined]
    server.sql("CREATE DATABASE hms", db="postgres")  # type: ignore[attr-defined]
    jdbc = maven_jar(*PG_JDBC)
    classes = root / "classes"
    classes.mkdir()
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", str(pyspark_jars() / "*"),
                    str(Path(__file__).resolve().parent / "java" / "HmsBench.java")], check=True, timeout=300)
    hms = start_metastore(root / "hms", database={
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://127.0.0.1:{port}/hms",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": server.user,  # type: ignore[attr-defined]
        "javax.jdo.option.ConnectionPassword": "",
    }, classpath=(jdbc,), heap="1g")
    try:
        done = subprocess.run([str(java_binary()), "-Xmx1g", "-cp", f"{classes}:{pyspark_jars() / '*'}", "HmsBench",
                               hms.uri, hms.warehouse.as_uri(), str(n), FILTER_DAY],
                              capture_output=True, text=True, timeout=7200)
        out = {}
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                name, seconds = line[len("RESULT "):].rsplit(" ", 1)
                out[name] = float(seconds)
            elif line.startswith("FOUND "):
                print(f"HMS: {line[6:]} partitions by filter", flush=True)
        if done.returncode != 0 or not out:
            raise RuntimeError(f"HmsBench failed ({done.returncode}): {done.stderr[-3000:]}\n{hms.log_tail()}")
        tables = server.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",  # type: ignore[attr-defined]
                            db="hms")[0][0]
        print(f"HMS: its schema on PostgreSQL has {tables} tables (datanucleus.schema.autoCreateAll)", flush=True)
        return out
    finally:
        hms.stop()


def ushas_side(uri: str, n: int) -> dict[str, float]:
    """``ushas serve`` on the store ``uri``, driven through the remote metastore (HTTP), as HmsBench drives HMS."""
    from ushas_catalog.service.tokens import TokenStore

    with Metastore.open(uri, project="default", user="bench") as ms:
        ms.grant("OWN", "project", "user:bench")   # the service checks every call as the token's user
        ms.create_catalog("main")
        token = TokenStore(ms).create("write", "bench")[1]
    proc, base = start_serve(uri)
    try:
        wait_serving(base)
        rm = Metastore.open(base, token=token)
        schema = "id BIGINT, payload STRING, dt STRING, shard INT"

        def parts(k: int, offset: int = 0) -> list[dict[str, object]]:
            d0 = dt.date(2020, 1, 1)
            return [{"dt": str(d0 + dt.timedelta(days=(i + offset) // SHARDS)), "shard": (i + offset) % SHARDS}
                    for i in range(k)]

        out: dict[str, float] = {}
        rm.create_database("main.b", location="/wh/b")
        out["create table"] = statistics.median(
            timed(lambda i=i: rm.create_table(f"main.b.c{i}", schema, partition_by=["dt", "shard"])) for i in range(20))
        out["get_table"] = statistics.median(timed(lambda: rm.get_table("main.b.c0")) for _ in range(200))
        adds = []
        for i in range(5):
            rm.create_table(f"main.b.a{i}", schema, partition_by=["dt", "shard"])
            batch = parts(1000)
            adds.append(timed(lambda i=i, batch=batch: rm.add_partitions(f"main.b.a{i}", batch)))
        out["add 1,000 partitions"] = statistics.median(adds)
        rm.create_table("main.b.big", schema, partition_by=["dt", "shard"])
        out[f"fill {n}"] = timed(lambda: [rm.add_partitions("main.b.big", parts(min(BATCH, n - i), i))
                                          for i in range(0, n, BATCH)])
        found = [0]

        def by_filter() -> None:
            found[0] = len(list(rm.list_partitions("main.b.big", {"dt": FILTER_DAY})))

        out["partitions by filter"] = statistics.median(timed(by_filter) for _ in range(20))
        print(f"ushas: {found[0]} partitions by filter", flush=True)
        out["drop table"] = timed(lambda: (rm.drop_table("main.b.big"), rm.purge_table("main.b.big")))
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def hms(n: int) -> int:
    from ushas_catalog.pg_local import PgServer

    with tempfile.TemporaryDirectory(prefix="ushas-bench-hms-") as tmp:
        server = PgServer(durable=True).init().start().watch().setup()   # its own directory, owned by postgres
        try:
            print(f"PostgreSQL on 127.0.0.1:{server.port} (fsync=on): HMS in database hms, ushas in "
                  f"{server.dbname} schema hms_peer; {n:,} partitions", flush=True)
            theirs = hms_side(server, Path(tmp), n)
            print("HMS: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in theirs.items()), flush=True)
            ours = ushas_side(server.uri(schema="hms_peer", synchronous_commit="on"), n)
        finally:
            server.cleanup()
    print(f"{'operation':<34} {'HMS':>10} {'ushas':>10} {'ushas ÷ HMS':>12}")
    labels = {"create table": "create a partitioned table", "get_table": "getTable",
              "add 1,000 partitions": "addPartitions(1,000)", f"fill {n}": f"fill {n:,} (batches of 5,000)",
              "partitions by filter": f"getPartitionsByFilter ({n:,})", "drop table": f"dropTable ({n:,})"}
    for op, label in labels.items():
        h, u = theirs[op], ours[op]
        print(f"{label:<34} {h * 1000:>8.1f}ms {u * 1000:>8.1f}ms {u / h:>11.2f}x")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="list and drop 10,000 partitions")
    ap.add_argument("--list", type=int, help="partitions listed (default 100,000)")
    ap.add_argument("--drop", type=int, help="partitions of the dropped table (default 100,000)")
    ap.add_argument("--uri", help="a postgresql:// store to use (default: a server started for the run)")
    ap.add_argument("--replicas", action="store_true", help="three ushas serve replicas against one instead")
    ap.add_argument("--hms", action="store_true",
                    help="the Hive metastore 2.3 service on the same PostgreSQL against ushas serve instead")
    ap.add_argument("--partitions", type=int, help="partitions of --hms's filtered and dropped table")
    ap.add_argument("--clients", type=int, default=6, help="client processes of --replicas")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per --replicas measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (1 then 3 replicas) of --replicas")
    ap.add_argument("--calls", default="reads,writes", choices=("reads,writes", "reads", "writes"),
                    help="which calls --replicas measures")
    args = ap.parse_args(argv)
    n_list = args.list or (10_000 if args.quick else 100_000)
    n_drop = args.drop or (10_000 if args.quick else 100_000)
    if args.hms:
        return hms(args.partitions or n_list)
    server = None
    with tempfile.TemporaryDirectory(prefix="ushas-bench-pg-") as tmp:
        uri = args.uri
        if uri is None:
            from ushas_catalog.pg_local import PgServer

            server = PgServer(durable=True).init().start().watch().setup()
            uri = server.uri(schema="bench")
        try:
            if args.replicas:
                from ushas_catalog.kv.postgres import PostgresOptions

                postmaster = None if server is None else \
                    int((server.data / "postmaster.pid").read_text().split()[0])
                pg_replicas.replicas(uri if args.uri else uri.replace("schema=bench", "schema=replicas"),
                                     PostgresOptions.parse(uri).conninfo, postmaster, args.clients, args.seconds,
                                     args.rounds, tuple(args.calls.split(",")))
                return 0
            print(f"sqlite: {tmp}/bench.db (synchronous=full); postgresql: {uri}", flush=True)
            sqlite = measure(f"sqlite:///{tmp}/bench.db", n_list, n_drop)
            pg = measure(uri, n_list, n_drop)
        finally:
            if server is not None:
                server.cleanup()
    print(f"{'operation':<30} {'sqlite':>10} {'postgresql':>11} {'pg ÷ sqlite':>12}")
    for op, s in sqlite.items():
        p = pg[op]
        print(f"{op:<30} {s * 1000:>8.2f}ms {p * 1000:>9.2f}ms {p / s:>11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
