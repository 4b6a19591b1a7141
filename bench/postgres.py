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
clients) and the bounds they imply (``bench/_pg_replicas.py``).

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

``--hms --sql-fill``: HMS's big table is filled with SQL instead of its API (which takes about an hour for
100,000 partitions here; the fill is not what is compared): HmsBench adds the first ``--seed`` partitions
(default 1,000: ten days of 100 shards) through ``add_partitions``, then one ``INSERT … SELECT`` per table
copies their rows (``PARTITIONS``, ``SDS``, ``SERDES`` and every table with a foreign key to them:
``PARTITION_KEY_VALS``, ``PARTITION_PARAMS``, …) with new ids and the days shifted, DataNucleus's
``SEQUENCE_TABLE`` is moved past the new ids and the partitions' directories are created as HMS creates
them. HmsBench then checks through the Thrift API that the table has exactly N partitions and that the
filtered day's 100 and the last day's (made by the SQL) are the right ones (values, locations) before
timing ``getPartitionsByFilter`` and ``dropTable`` (cut at ``--drop-timeout`` seconds: then its time is
a lower bound; ``--until HH:MM`` UTC cuts it then too). Only those two and the ushas side's own operations
are compared; ushas runs first, on the same server.
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
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from ushas_catalog.metastore import Metastore  # noqa: E402

import _pg_replicas as pg_replicas  # noqa: E402 - bench/ is this script's directory

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


def start_hms_on(server: "object", root: Path) -> Any:
    """The Hive metastore 2.3 Thrift service on ``server`` (a PgServer), in its database ``hms`` (created
    here; HMS creates its schema), started in ``root`` (its hive-site.xml, log and warehouse)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "app"))
    from hive_service import start_metastore

    server.sql("CREATE DATABASE hms", db="postgres")  # type: ignore[attr-defined]
    return start_metastore(root, database={
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://127.0.0.1:{server.port}/hms",  # type: ignore[attr-defined]
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": server.user,  # type: ignore[attr-defined]
        "javax.jdo.option.ConnectionPassword": "",
    }, classpath=(maven_jar(*PG_JDBC),), heap="1g")


def hms_side(server: "object", root: Path, n: int) -> dict[str, float]:
    """The Hive metastore on ``server`` (a PgServer): its times, measured by HmsBench in a JVM."""
    hms = start_hms_on(server, root / "hms")
    try:
        done = subprocess.run([*hms_bench(root, hms), str(n), FILTER_DAY], capture_output=True, text=True,
                              timeout=7200)
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


HMS_MODEL = "org.apache.hadoop.hive.metastore.model."


def day_shift(seed: int) -> Callable[[str], str]:
    """The SQL of a value (key value, name or location) whose date is moved ``k * seed / SHARDS`` days on."""
    if seed % SHARDS:
        raise ValueError(f"--seed ({seed}) must be a multiple of {SHARDS}")
    days = seed // SHARDS

    def shift(expr: str) -> str:
        day = f"substring({expr} from '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}')"
        return f"replace({expr}, {day}, to_char(({day})::date + k * {days}, 'YYYY-MM-DD'))"

    return shift


def hms_sql_fill(server: "object", n: int, seed: int, *, db: str = "b", table: str = "big",
                 shift: Callable[[str], str] | None = None, key_idx: int = 0) -> int:
    """Copy the ``seed`` partitions of HMS's ``db.table`` (made through its API) into ``n`` with SQL.

    Partition ``i`` of the copy ``k`` (1 ≤ k < n / seed) is partition ``i`` of the seed with its value of
    the partition key number ``key_idx`` moved by ``shift`` (the SQL of a value in terms of ``k``; default
    :func:`day_shift`: ``k * seed / SHARDS`` days later, as HmsBench's ``partitions(big, n, 0)`` would
    have made it), in the name, the key value and the location; new ids (the seed's plus ``k`` times a
    stride past every id in use or allocated). One transaction. Returns the rows inserted."""
    copies = n // seed
    if n % seed:
        raise ValueError(f"--partitions ({n}) must be a multiple of --seed ({seed})")
    shift = shift or day_shift(seed)
    with server.connect("hms") as conn, conn.transaction():  # type: ignore[attr-defined]
        names = {r[0].upper(): r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")}

        def q(name: str) -> str:
            return '"' + names[name] + '"'

        def cols(table: str) -> list[str]:
            return [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
                "AND table_name = %s ORDER BY ordinal_position", (names[table],))]

        tbl = conn.execute(f'SELECT t."TBL_ID" FROM {q("TBLS")} t JOIN {q("DBS")} d ON t."DB_ID" = d."DB_ID" '
                           "WHERE d.\"NAME\" = %s AND t.\"TBL_NAME\" = %s", (db, table)).fetchone()
        if tbl is None:
            have = conn.execute(f'SELECT d."NAME", t."TBL_NAME" FROM {q("TBLS")} t JOIN {q("DBS")} d '
                                'ON t."DB_ID" = d."DB_ID"').fetchall()
            raise RuntimeError(f"HMS has no table {db}.{table} (its tables: {have})")
        tbl = tbl[0]
        conn.execute(f'CREATE TEMP TABLE seed_parts AS SELECT "PART_ID" AS id, "SD_ID" AS sd FROM {q("PARTITIONS")} '
                     'WHERE "TBL_ID" = %s', (tbl,))
        conn.execute(f'CREATE TEMP TABLE seed_sds AS SELECT "SD_ID" AS id, "SERDE_ID" AS serde FROM {q("SDS")} '
                     'WHERE "SD_ID" IN (SELECT sd FROM seed_parts)')
        conn.execute("CREATE TEMP TABLE seed_serdes AS SELECT DISTINCT serde AS id FROM seed_sds")
        got = conn.execute("SELECT count(*) FROM seed_parts").fetchone()[0]
        if got != seed:
            raise RuntimeError(f"HMS's seed table has {got} partitions, expected {seed}")
        if conn.execute("SELECT count(*) FROM seed_serdes").fetchone()[0] != seed:
            raise RuntimeError("the seed partitions share serdes: cannot copy them one for one")
        seqs = dict(conn.execute(f'SELECT "SEQUENCE_NAME", "NEXT_VAL" FROM {q("SEQUENCE_TABLE")}').fetchall())
        stride = {}
        for table, col, model in (("PARTITIONS", "PART_ID", "MPartition"), ("SDS", "SD_ID", "MStorageDescriptor"),
                                  ("SERDES", "SERDE_ID", "MSerDeInfo")):
            top = conn.execute(f'SELECT max("{col}") FROM {q(table)}').fetchone()[0]
            stride[col] = max(top, seqs.get(HMS_MODEL + model, 0)) + 1    # past ids HMS may hold in memory
        # the tables that hang off a partition, a storage descriptor or a serde (their foreign keys)
        children = conn.execute("""
            SELECT upper(cl.relname), a.attname, upper(pcl.relname),
                   (SELECT array_agg(ia.attname::text) FROM pg_index i JOIN pg_attribute ia
                      ON ia.attrelid = i.indrelid AND ia.attnum = ANY(i.indkey)
                    WHERE i.indrelid = c.conrelid AND i.indisprimary)
            FROM pg_constraint c JOIN pg_class cl ON c.conrelid = cl.oid JOIN pg_class pcl ON c.confrelid = pcl.oid
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.contype = 'f' AND upper(pcl.relname) IN ('PARTITIONS', 'SDS', 'SERDES')
              AND upper(cl.relname) NOT IN ('PARTITIONS', 'SDS', 'TBLS')""").fetchall()
        if not any(c[0] == "PARTITION_KEY_VALS" for c in children):
            raise RuntimeError(f"HMS's schema has no foreign key from PARTITION_KEY_VALS: {children}")
        seed_of = {"PARTITIONS": "seed_parts", "SDS": "seed_sds", "SERDES": "seed_serdes"}
        key_of = {"PARTITIONS": "PART_ID", "SDS": "SD_ID", "SERDES": "SERDE_ID"}

        def copy(table: str, where: str, over: dict[str, str]) -> int:
            columns = cols(table)
            select = ", ".join(over.get(c, f't."{c}"') for c in columns)
            into = ", ".join(f'"{c}"' for c in columns)
            cur = conn.execute(f"INSERT INTO {q(table)} ({into}) SELECT {select} FROM {q(table)} t "
                               f"CROSS JOIN generate_series(1, {copies - 1}) k WHERE {where}")
            return cur.rowcount

        def moved(col: str) -> str:
            return f't."{col}" + k * {stride[col]}'

        rows = copy("SERDES", 't."SERDE_ID" IN (SELECT id FROM seed_serdes)', {"SERDE_ID": moved("SERDE_ID")})
        rows += copy("SDS", 't."SD_ID" IN (SELECT id FROM seed_sds)',
                     {"SD_ID": moved("SD_ID"), "SERDE_ID": moved("SERDE_ID"), "LOCATION": shift('t."LOCATION"')})
        rows += copy("PARTITIONS", 't."PART_ID" IN (SELECT id FROM seed_parts)',
                     {"PART_ID": moved("PART_ID"), "SD_ID": moved("SD_ID"), "PART_NAME": shift('t."PART_NAME"')})
        for child, col, parent, pk in children:
            where = f't."{col}" IN (SELECT id FROM {seed_of[parent]})'
            if not conn.execute(f"SELECT count(*) FROM {q(child)} t WHERE {where}").fetchone()[0]:
                continue
            if not pk or col not in pk:
                raise RuntimeError(f"{child} has rows for the seed but its own ids ({pk}): not copied")
            over = {col: f't."{col}" + k * {stride[key_of[parent]]}'}
            if child == "PARTITION_KEY_VALS":
                over["PART_KEY_VAL"] = (f'CASE WHEN t."INTEGER_IDX" = {key_idx} THEN ' + shift('t."PART_KEY_VAL"')
                                        + ' ELSE t."PART_KEY_VAL" END')
            rows += copy(child, where, over)
        for col, table, model in (("PART_ID", "PARTITIONS", "MPartition"), ("SD_ID", "SDS", "MStorageDescriptor"),
                                  ("SERDE_ID", "SERDES", "MSerDeInfo")):
            conn.execute(f'UPDATE {q("SEQUENCE_TABLE")} SET "NEXT_VAL" = (SELECT max("{col}") + 1 FROM {q(table)}) '
                         'WHERE "SEQUENCE_NAME" = %s', (HMS_MODEL + model,))
        return rows


def hms_partition_dirs(server: "object") -> int:
    """Create the directory of every partition of HMS's ``b.big`` (HMS creates one per added partition)."""
    from urllib.parse import urlparse

    locations = server.sql('SELECT s."LOCATION" FROM "PARTITIONS" p JOIN "SDS" s ON p."SD_ID" = s."SD_ID"',  # type: ignore[attr-defined]
                           db="hms")
    for (location,) in locations:
        Path(urlparse(location).path).mkdir(parents=True, exist_ok=True)
    return len(locations)


def hms_bench(root: Path, hms: Any) -> list[str]:
    """HmsBench compiled into ``root / "classes"``: the command that runs it against ``hms`` (its arguments
    follow: partitions, the filtered day, the mode)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "app"))
    from hive_service import java_binary, pyspark_jars

    classes = root / "classes"
    classes.mkdir()
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", str(pyspark_jars() / "*"),
                    str(Path(__file__).resolve().parent / "java" / "HmsBench.java")], check=True, timeout=300)
    return [str(java_binary()), "-Xmx1g", "-cp", f"{classes}:{pyspark_jars() / '*'}", "HmsBench",
            hms.uri, hms.warehouse.as_uri()]


def hms_side_sql(server: "object", root: Path, n: int, seed: int, drop_timeout: float,
                 until: float | None = None) -> dict[str, float]:
    """HMS with its big table filled with SQL (``--sql-fill``): getPartitionsByFilter and dropTable at ``n``.

    The result's ``drop table`` is negative when dropTable was cut at ``drop_timeout``: minus its lower bound."""
    hms = start_hms_on(server, root / "hms")
    out: dict[str, float] = {}
    try:
        bench = hms_bench(root, hms)
        done = subprocess.run([*bench, str(seed), FILTER_DAY, "seed"], capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"HmsBench seed failed ({done.returncode}): {done.stderr[-3000:]}\n{hms.log_tail()}")
        print(f"HMS: {done.stdout.strip()}", flush=True)
        t = time.perf_counter()
        rows = hms_sql_fill(server, n, seed)
        print(f"HMS: filled to {n:,} partitions with SQL ({rows:,} rows) in {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        dirs = hms_partition_dirs(server)
        print(f"HMS: {dirs:,} partition directories in {time.perf_counter() - t:.1f} s", flush=True)
        log = root / "measure.out"
        with open(log, "w") as f:
            proc = subprocess.Popen([*bench, str(n), FILTER_DAY, "measure"], stdout=f, stderr=subprocess.STDOUT,
                                    text=True)
        dropping = None
        end = min(time.monotonic() + 1800 + drop_timeout, until or float("inf"))
        while proc.poll() is None:
            time.sleep(1)
            if dropping is None and "DROPPING" in log.read_text():
                dropping = time.monotonic()
                end = min(end, dropping + drop_timeout, until or end)
            if time.monotonic() > end:
                proc.kill()
                proc.wait()
                break
        text = log.read_text()
        for line in text.splitlines():
            if line.startswith("RESULT "):
                name, seconds = line[len("RESULT "):].rsplit(" ", 1)
                out[name] = float(seconds)
            elif line.startswith(("FOUND ", "TOTAL ", "CHECKED ")):
                print(f"HMS: {line}", flush=True)
        if "partitions by filter" not in out:
            raise RuntimeError(f"HmsBench measure failed ({proc.returncode}): {text[-3000:]}\n{hms.log_tail()}")
        if "drop table" not in out:
            if dropping is None:
                raise RuntimeError(f"HmsBench measure failed ({proc.returncode}): {text[-3000:]}")
            out["drop table"] = -(time.monotonic() - dropping)
            print(f"HMS: dropTable cut after {-out['drop table']:.0f} s (--drop-timeout)", flush=True)
        else:   # what dropTable left: b.big was the only table, so every partition row should be gone
            left = {t: server.sql(f'SELECT count(*) FROM "{t}"', db="hms")[0][0]  # type: ignore[attr-defined]
                    for t in ("PARTITIONS", "PARTITION_KEY_VALS", "PARTITION_PARAMS", "SDS", "SERDES")}
            table_dir = hms.warehouse / "b.db" / "big"
            print(f"HMS: after dropTable, rows left: {left}; the table's directory "
                  f"{'still exists' if table_dir.exists() else 'is gone'}", flush=True)
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


def hms_sql(n: int, seed: int, drop_timeout: float, until: float | None = None) -> int:
    """``--hms --sql-fill``: ushas first, then HMS filled with SQL; getPartitionsByFilter and dropTable."""
    from ushas_catalog.pg_local import PgServer

    with tempfile.TemporaryDirectory(prefix="ushas-bench-hms-") as tmp:
        server = PgServer(durable=True).init().start().watch().setup()
        try:
            print(f"PostgreSQL on 127.0.0.1:{server.port} (fsync=on): HMS in database hms, ushas in "
                  f"{server.dbname} schema hms_peer; {n:,} partitions (HMS filled with SQL from {seed:,})",
                  flush=True)
            ours = ushas_side(server.uri(schema="hms_peer", synchronous_commit="on"), n)
            print("ushas: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in ours.items()), flush=True)
            theirs = hms_side_sql(server, Path(tmp), n, seed, drop_timeout, until)
        finally:
            server.cleanup()
    print(f"{'operation':<34} {'HMS':>10} {'ushas':>10} {'ushas ÷ HMS':>12}")
    for op, label in (("partitions by filter", f"getPartitionsByFilter ({n:,})"),
                      ("drop table", f"dropTable ({n:,})")):
        h, u = theirs[op], ours[op]
        cut = "≥" if h < 0 else " "
        print(f"{label:<34} {cut}{abs(h) * 1000:>8.1f}ms {u * 1000:>8.1f}ms {'≤' if h < 0 else ' '}{u / abs(h):>10.4f}x")
    return 0


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
    ap.add_argument("--sql-fill", action="store_true",
                    help="--hms: fill HMS's big table with SQL from an API-made seed; compare filter and drop only")
    ap.add_argument("--seed", type=int, default=1000, help="--sql-fill: partitions HMS adds through its API")
    ap.add_argument("--drop-timeout", type=float, default=3600.0,
                    help="--sql-fill: seconds after which HMS's dropTable is cut (its time is then a lower bound)")
    ap.add_argument("--until", help="--sql-fill: HH:MM (UTC) at which HMS's dropTable is cut at the latest")
    ap.add_argument("--clients", type=int, default=6, help="client processes of --replicas")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per --replicas measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (1 then 3 replicas) of --replicas")
    ap.add_argument("--calls", default="reads,writes", choices=("reads,writes", "reads", "writes"),
                    help="which calls --replicas measures")
    args = ap.parse_args(argv)
    n_list = args.list or (10_000 if args.quick else 100_000)
    n_drop = args.drop or (10_000 if args.quick else 100_000)
    if args.hms and args.sql_fill:
        until = None
        if args.until:
            now = dt.datetime.now(dt.timezone.utc)
            hh, mm = map(int, args.until.split(":"))
            until = time.monotonic() + (now.replace(hour=hh, minute=mm, second=0) - now).total_seconds()
        return hms_sql(args.partitions or n_list, args.seed, args.drop_timeout, until)
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
