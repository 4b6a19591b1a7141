"""Remote mode vs embedded, in one run: the Spark shim's own requests, answered by the bridge in this
process (embedded) and forwarded to a ``ushas serve`` process on loopback (remote).

    python bench/remote.py [--quick] [--rounds R] [--spark] [--hms [--sql-fill [--seed N]]] [--only OPS]

One sqlite store; a table with P partitions (100,000; 10,000 with --quick) and one with 10,000 (2,000).
Each operation is the request the shim sends for it (``ushas_catalog.spark.bridge.handle``, the entry
point of both modes), so the difference is the transport and the service, not Spark's planning, which
is the same in both modes:

- ``loadTable``: ``load_table`` (a fresh answer: no ``known`` version);
- ``SHOW PARTITIONS`` of 10,000: ``list_partitions``;
- planning a one-partition query at P partitions: ``list_files`` with ``dt = <one value>``;
- a 1,000-partition INSERT commit: ``commit_write`` of 1,000 new partitions, one file each (appends to a
  fresh table per round, so every round commits the same amount).

Embedded runs twice: as the store's administrator (no checks: the default) and as ``admin`` with
authorization on (what remote mode always does), so the printed ratios separate the cost of the
transport from the cost of the checks. With ``--spark``, the same operations through one Spark session
with an embedded and a remote catalog over the same metastore catalog (the JVM's ``loadTable``, ``SHOW
PARTITIONS``, a one-partition query, an ``INSERT`` of 1,000 partitions). With ``--hms`` (implies
``--spark``), the peer is also **the Hive metastore as a Thrift service** (``HiveMetaStore`` of pyspark's
``hive-metastore-2.3.10.jar`` on Derby, started as tests/app/hive_service.py does, a process on loopback
as ``ushas serve`` is): the session's ``spark_catalog`` uses it (``spark.hadoop.hive.metastore.uris``),
with the same tables (``USING parquet``, partitions in the metastore), and the same four operations print
remote / HMS. ``--hms --sql-fill``: the Hive metastore on PostgreSQL instead of Derby (a server started for the
run, as ``bench/postgres.py --hms`` does), its two tables' partitions added through its API up to ``--seed``
(default 1,000) and copied from those with SQL up to the full count (``postgres.hms_sql_fill``: filling
110,000 partitions through the API takes about an hour), their directories made as HMS makes them, and
checked through Thrift (the partition names' count, the last one's location) before anything is timed.
Through Spark, ``via Python`` is a second remote catalog with ``direct=false``: every call
through the driver's Python (the transport before the shim sent its reads to the service itself). Every
table's modes are measured round by round, alternately (:func:`medians_ms`). Then 8 threads call ``load_table`` on the service at once for a
few seconds: catalog calls per second. Prints medians and the ratios remote / embedded.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def medians_ms(fn: Callable[[str], Any], modes: tuple[str, ...], rounds: int, warm: int = 1) -> dict[str, float]:
    """Median ms of ``fn(mode)`` per mode: ``warm`` calls of each first (connections, caches, the JIT), then
    ``rounds`` rounds that call each mode once in turn, so a change of the machine's load during the run
    weighs on every mode alike (a shared 2-core machine's load swings by 10x within minutes)."""
    for _ in range(warm):
        for m in modes:
            fn(m)
    times: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(rounds):
        for m in modes:
            t0 = time.perf_counter()
            fn(m)
            times[m].append(time.perf_counter() - t0)
    return {m: statistics.median(t) * 1000 for m, t in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--spark", action="store_true", help="also through Spark: one session, an embedded and a "
                                                           "remote catalog over the same store")
    ap.add_argument("--hms", action="store_true", help="through Spark, also against the Hive metastore as a "
                                                         "Thrift service (implies --spark)")
    ap.add_argument("--sql-fill", action="store_true", help="--hms: the metastore on PostgreSQL, its partitions "
                                                               "copied with SQL from --seed made through its API")
    ap.add_argument("--seed", type=int, default=1_000, help="--sql-fill: partitions per table added through HMS's API")
    ap.add_argument("--only", default="", help="through Spark, only these cases (comma-separated: load, show, plan, "
                                               "insert); default all")
    args = ap.parse_args()
    args.spark = args.spark or args.hms
    big = 10_000 if args.quick else 100_000
    show = 2_000 if args.quick else 10_000
    rounds = args.rounds or (5 if args.quick else 9)

    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.tokens import TokenStore
    from ushas_catalog.spark.bridge import handle

    root = Path(tempfile.mkdtemp(prefix="ushas-bench-remote-"))
    uri = f"sqlite:///{root / 'ushas.db'}"
    warehouse = f"file:{root / 'warehouse'}"
    proc = None
    try:
        ms = Metastore.open(uri)
        ms.grant("OWN", "project", "user:admin")
        ms.create_catalog("main")
        ms.create_database("main.db")
        for name, n in (("big", big), ("show", show)):
            ms.create_table(f"main.db.{name}", "id INT, dt STRING", partition_by=["dt"])
            for start in range(0, n, 10_000):
                ms.add_partitions(f"main.db.{name}", [{"dt": f"d{i:07d}"} for i in range(start, min(n, start + 10_000))])
        token = TokenStore(ms).create("write", "admin")[1]
        ms.close()
        print(f"store: {big:,} and {show:,} partitions ready", flush=True)

        port = free_port()
        log = open(root / "serve.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", uri, "serve", "--port", str(port),
                                 "--no-hooks"], stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "python")})
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/api/v1/info", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)

        def ctx(mode: str) -> dict[str, Any]:
            base = {"project": "default", "catalog": "main", "spark_catalog": "bench", "branch": "main",
                    "warehouse": warehouse}
            if mode == "remote":
                return {**base, "uri": url, "remote": {"token": token, "set": []}}
            if mode == "checked":
                return {**base, "uri": uri, "user": "admin", "authorization": True}
            return {**base, "uri": uri}

        def call(how: str, op: str, **fields: Any) -> dict[str, Any]:
            request = {"ctx": ctx(how), "deadline_ms": int(time.time() * 1000) + 600_000, **fields}
            answer = handle(op, json.dumps(request))
            if answer.startswith("@"):
                with open(answer[1:], encoding="utf-8") as f:
                    text = f.read()
                os.unlink(answer[1:])
                answer = text
            out = json.loads(answer)
            if "error" in out:
                raise RuntimeError(f"{how} {op}: {out['error']}")
            return dict(out)

        one = {"op": "eq", "column": "dt", "value": f"d{big // 2:07d}"}

        def commit(mode: str) -> None:
            name = f"w_{uuid.uuid4().hex[:8]}"
            call(mode, "create_table", namespace=["db"], name=name, schema=json.dumps(
                {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True, "metadata": {}},
                                              {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]}),
                 partitioning=[{"transform": "identity", "columns": ["dt"]}], properties={"provider": "parquet"})
            location = f"{warehouse}/db.db/{name}"
            written = [{"path": f"dt=p{i:04d}", "files": [{"path": f"{location}/dt=p{i:04d}/part-0.parquet", "size": 100,
                                                          "mtime": 1}],
                        "existing": []} for i in range(1_000)]
            call(mode, "commit_write", namespace=["db"], name=name, location=location, mode="append", filters=[],
                 written=written, rows=1_000, write_id=str(uuid.uuid4()), base_version=1)

        # (label, the call, rounds): the sub-millisecond calls get more rounds, the commits the given ones
        cases: list[tuple[str, Callable[[str], Any], int]] = [
            ("loadTable", lambda m: call(m, "load_table", namespace=["db"], name="big"), 20 * rounds),
            (f"SHOW PARTITIONS ({show:,})", lambda m: call(m, "list_partitions", namespace=["db"], name="show"),
             4 * rounds),
            (f"plan 1 of {big:,} partitions", lambda m: call(m, "list_files", namespace=["db"], name="big", filter=one),
             20 * rounds),
            ("INSERT commit, 1,000 partitions", commit, rounds),
        ]
        print(f"\n{'operation':<34}{'embedded':>11}{'checked':>11}{'remote':>11}{'remote/emb':>12}{'remote/chk':>12}")
        for label, fn, n in cases:
            ms_ = medians_ms(fn, ("embedded", "checked", "remote"), n)
            print(f"{label:<34}{ms_['embedded']:>9.2f}ms{ms_['checked']:>9.2f}ms{ms_['remote']:>9.2f}ms"
                  f"{ms_['remote'] / ms_['embedded']:>11.2f}x{ms_['remote'] / ms_['checked']:>11.2f}x", flush=True)

        if args.spark:
            spark_cases(url, token, root, big, show, max(3, rounds // 2), hms=args.hms,
                        sql_fill=args.seed if args.sql_fill else 0,
                        only=tuple(filter(None, args.only.split(","))))

        # throughput: 8 clients at once, each its own keep-alive connection
        stop = time.monotonic() + (3 if args.quick else 6)
        counts = [0] * 8
        errors: list[str] = []

        def client(i: int) -> None:
            try:
                while time.monotonic() < stop:
                    call("remote", "load_table", namespace=["db"], name="show")
                    counts[i] += 1
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(str(exc))

        t0 = time.monotonic()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rate = sum(counts) / (time.monotonic() - t0)
        print(f"\n8 concurrent clients (loadTable, remote): {rate:,.0f} catalog calls/s"
              f"{'; errors: ' + errors[0] if errors else ''}")
        return 0
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(root, ignore_errors=True)


def start_hms(root: Path) -> Any:
    """The Hive metastore Thrift service (tests/app/hive_service.py: pyspark's jars, Derby), started."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "app"))
    from hive_service import start_metastore

    return start_metastore(root / "hms")


def index_shift(seed: int) -> Callable[[str], str]:
    """For ``postgres.hms_sql_fill``: the SQL of a value ending in a partition's 7-digit number (``d0000123``,
    ``dt=d0000123``, ``…/dt=d0000123``) with that number moved ``k * seed`` on."""
    return lambda e: f"left({e}, length({e}) - 7) || lpad((right({e}, 7)::int + k * {seed})::text, 7, '0')"


def hms_tables(spark: Any, big: int, show: int, pg: Any = None, seed: int = 0) -> None:
    """The peer's tables in the Hive metastore: ``hdb.big`` and ``hdb.show`` with ``big`` and ``show``
    partitions (``USING parquet``: partitions managed by the metastore), added 1,000 per statement. With
    ``pg`` (the PgServer of HMS's database), only the first ``seed`` through the API, the rest copied from
    them with SQL, their directories made, then checked through Thrift."""
    import postgres

    if pg is not None:
        # DataNucleus makes HMS's tables on PostgreSQL as they are first needed, on a connection of its
        # own: made during Spark's first CREATE TABLE (whose owner grant is HMS's first table privilege),
        # its ``ALTER TABLE "TBL_PRIVS" ADD CONSTRAINT … REFERENCES "TBLS"`` waits forever on the call's
        # own transaction, idle in transaction with a row of TBLS. So the privilege tables are made first,
        # by reading them (HMS's list_privileges), with no write pending
        jvm = spark._jvm
        hive = jvm.org.apache.hadoop.hive.metastore
        conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
        conf.set("hive.metastore.uris", spark.conf.get("spark.hadoop.hive.metastore.uris"))
        client = hive.HiveMetaStoreClient(conf)
        for kind, column in (("TABLE", None), ("COLUMN", "id")):
            ref = hive.api.HiveObjectRef(getattr(hive.api.HiveObjectType, kind), "default", "none", None, column)
            client.list_privileges("nobody", hive.api.PrincipalType.USER, ref)
        client.close()
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_catalog.hdb")
    for name, n in (("big", big), ("show", show)):
        spark.sql(f"CREATE TABLE spark_catalog.hdb.{name} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
        t0 = time.perf_counter()
        for start in range(0, seed or n, 1_000):
            specs = " ".join(f"PARTITION (dt='d{i:07d}')" for i in range(start, min(seed or n, start + 1_000)))
            spark.sql(f"ALTER TABLE spark_catalog.hdb.{name} ADD {specs}")
        print(f"HMS: {seed or n:,} partitions of hdb.{name} added through its API in {time.perf_counter() - t0:.1f} s",
              flush=True)
        if pg is not None and n > seed:
            t0 = time.perf_counter()
            rows = postgres.hms_sql_fill(pg, n, seed, db="hdb", table=name, shift=index_shift(seed))
            print(f"HMS: hdb.{name} filled to {n:,} partitions with SQL ({rows:,} rows) in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    if pg is not None:
        t0 = time.perf_counter()
        dirs = postgres.hms_partition_dirs(pg)
        print(f"HMS: {dirs:,} partition directories in {time.perf_counter() - t0:.1f} s", flush=True)
        external = spark._jsparkSession.sharedState().externalCatalog()
        for name, n in (("big", big), ("show", show)):
            spark.sql(f"REFRESH TABLE spark_catalog.hdb.{name}")
            count = external.listPartitionNames("hdb", name, spark._jvm.scala.Option.empty()).size()
            last = external.getPartition("hdb", name, spark._jvm.PythonUtils.toScalaMap({"dt": f"d{n - 1:07d}"}))
            location = str(last.location())
            if count != n or not location.endswith(f"/dt=d{n - 1:07d}") or not Path(last.location().getPath()).is_dir():
                raise RuntimeError(f"HMS's hdb.{name}: {count} partitions (expected {n}), last at {location}")
            print(f"HMS: hdb.{name} checked through Thrift: {count:,} partitions, the last at {location}", flush=True)


def spark_cases(url: str, token: str, root: Path, big: int, show: int, rounds: int, hms: bool = False,
                sql_fill: int = 0, only: tuple[str, ...] = ()) -> None:
    """The same operations as Spark runs them, one local[2] session: ``emb`` (embedded, the default: no
    checks) and ``rem`` (remote: the service, checked) over the same metastore catalog; with ``hms`` also
    ``spark_catalog`` on the Hive metastore Thrift service (the peer)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _spark import ushas_session

    conf = {"spark.sql.catalog.ushas.catalog": "main"}
    # the remote catalog is the deployer's configuration (a catalog a session defines is refused by default)
    # ``rem`` sends its reads from the JVM to the service itself; ``rpy`` (direct=false) sends every call through
    # the driver's Python, as remote mode did before the shim's direct transport
    for cat, direct in (("rem", "true"), ("rpy", "false")):
        conf.update({f"spark.sql.catalog.{cat}{key}": value for key, value in {
            "": "io.ushas.spark.UshasCatalog", ".uri": url, ".token": token, ".catalog": "main",
            ".warehouse": str(root / "warehouse"), ".direct": direct}.items()})
    service = pg = None
    if hms and sql_fill:
        import postgres
        from ushas_catalog.pg_local import PgServer

        pg = PgServer(durable=True).init().start().watch().setup()
        service = postgres.start_hms_on(pg, root / "hms")
        print(f"HMS on PostgreSQL (127.0.0.1:{pg.port}, fsync=on)", flush=True)
    elif hms:
        service = start_hms(root)
    if service is not None:
        conf.update({"spark.sql.catalogImplementation": "hive", "spark.hadoop.hive.metastore.uris": service.uri,
                     "spark.sql.warehouse.dir": str(service.warehouse)})
    spark = ushas_session("bench-remote", root, conf=conf)
    try:
        names = {"embedded": "ushas", "remote": "rem", "via Python": "rpy", "HMS": "spark_catalog"}
        modes = ("embedded", "remote", "via Python", "HMS") if hms else ("embedded", "remote", "via Python")
        jcat = {m: spark._jsparkSession.sessionState().catalogManager().catalog(names[m]) for m in modes}
        dbs = {"embedded": "db", "remote": "db", "via Python": "db", "HMS": "hdb"}
        if hms:
            hms_tables(spark, big, show, pg, sql_fill)
            external = spark._jsparkSession.sharedState().externalCatalog()

        def ident(m: str) -> Any:
            namespace = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, 1)
            namespace[0] = dbs[m]
            return spark._jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, "big")

        idents = {m: ident(m) for m in modes}

        def load(m: str) -> Any:
            if m == "HMS":  # the metastore's table, asked of the service (the session catalog caches nothing here)
                return external.getTable("hdb", "big")
            return jcat[m].loadTable(idents[m])

        def insert(m: str) -> None:
            t = f"{names[m]}.{dbs[m]}.i_{uuid.uuid4().hex[:8]}"
            spark.sql(f"CREATE TABLE {t} (id BIGINT, dt STRING) USING parquet PARTITIONED BY (dt)")
            spark.sql(f"INSERT INTO {t} SELECT id, concat('p', CAST(id AS STRING)) FROM range(1000)")

        def table(m: str, name: str) -> str:
            return f"{names[m]}.{dbs[m]}.{name}"

        # (label, the statement, rounds, warm-up calls): the JIT needs a few hundred catalog calls
        cases: list[tuple[str, Callable[[str], Any], int, int]] = [
            ("loadTable (JVM catalog call)", load, 40 * rounds, 300),
            (f"SHOW PARTITIONS ({show:,})", lambda m: spark.sql(f"SHOW PARTITIONS {table(m, 'show')}").collect(),
             4 * rounds, 3),
            (f"1-partition query of {big:,}",
             lambda m: spark.sql(f"SELECT * FROM {table(m, 'big')} WHERE dt = 'd{big // 2:07d}'").collect(),
             2 * rounds, 2),
            ("INSERT of 1,000 partitions", insert, 1, 0),
        ]
        keys = ("load", "show", "plan", "insert")
        cases = [c for key, c in zip(keys, cases) if not only or key in only]
        head = f"{'HMS':>11}{'remote/HMS':>12}{'py/HMS':>9}" if hms else ""
        print(f"\nthrough Spark{'':<21}{'embedded':>11}{'remote':>11}{'via Python':>11}{'remote/emb':>12}{head}")
        for label, fn, n, warm in cases:
            ms_ = medians_ms(fn, modes, n, warm)
            line = (f"{label:<34}{ms_['embedded']:>9.2f}ms{ms_['remote']:>9.2f}ms{ms_['via Python']:>9.2f}ms"
                    f"{ms_['remote'] / ms_['embedded']:>11.2f}x")
            if hms:
                line += (f"{ms_['HMS']:>9.2f}ms{ms_['remote'] / ms_['HMS']:>11.2f}x"
                         f"{ms_['via Python'] / ms_['HMS']:>8.2f}x")
            print(line, flush=True)
    finally:
        spark.stop()
        if service is not None:
            service.stop()
        if pg is not None:
            pg.cleanup()


if __name__ == "__main__":
    sys.exit(main())
