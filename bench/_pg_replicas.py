"""``python bench/postgres.py --replicas``: three ``ushas serve`` replicas on one PostgreSQL store against one,
with the CPU each class of process spends per call, so that the output says what bounds the throughput.

For reads (``GET`` a table) and writes (``PUT`` the owner of the client's own table), with the same client
processes (``--clients``), first through one replica, then round robin through three (``--rounds`` times,
alternating, medians), it prints:

- calls/s through 1 and 3 replicas and the ratio;
- CPU milliseconds per call of each class of process, over the same interval: the replicas (``/proc/<pid>/stat``
  of the ``ushas serve`` processes), PostgreSQL (the postmaster and every backend and helper process under it,
  reaped ones included: its ``cutime``/``cstime``), the client processes (``os.times`` in each), and what the
  rest of the machine used meanwhile (``/proc/stat`` minus the above: other users' work);
- the bounds these imply: the machine's ``cores / CPU-s per call`` (what the cores allow for this call mix),
  and one replica's ``1 / its CPU-s per call`` (its GIL: one core at most), with which of the two binds;
- the store's work per call from PostgreSQL's own counters (``pg_stat_database``): transactions committed and
  rolled back (a write whose snapshot another commit overtook is rolled back, then re-checked under the
  commit lock or retried: docs/engines.md), and the connections each replica holds (``pg_stat_activity`` by
  ``application_name``).

Before the runs, one replica's work per call in process (the service app on the same store): ``Database.run``
calls (transactions), statements sent (round trips) and CPU per call.
"""
from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from multiprocessing import Queue
from pathlib import Path
from typing import Any, Callable, Iterator

TICKS = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1
READ_PATH = "/api/v1/catalogs/main/databases/b/tables/t"


# --- CPU accounting --------------------------------------------------------------------------------
def proc_cpu(pid: int, children: bool = False) -> float:
    """CPU seconds (user + system) of process ``pid``; with ``children``, also of its reaped children."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / TICKS


def children_of(ppid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == ppid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def machine_busy() -> float:
    """CPU seconds every core of the machine spent not idle since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / TICKS


@dataclass
class CpuSample:
    replicas: float
    postgres: float
    machine: float
    at: float

    @classmethod
    def take(cls, replica_pids: list[int], postmaster: int | None) -> "CpuSample":
        pg = 0.0
        if postmaster is not None:
            pg = proc_cpu(postmaster, children=True) + sum(proc_cpu(p) for p in children_of(postmaster))
        return cls(sum(proc_cpu(p) for p in replica_pids), pg, machine_busy(), time.monotonic())


# --- the store's counters ------------------------------------------------------------------------
def pg_counters(conninfo: str) -> tuple[int, int]:
    """(transactions committed, rolled back) of the store's database (this query's own included)."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT xact_commit, xact_rollback FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def replica_connections(conninfo: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute("SELECT application_name, count(*) FROM pg_stat_activity "
                            "WHERE application_name LIKE 'ushas-replica-%' GROUP BY 1 ORDER BY 1").fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


# --- one replica's work per call, in process -------------------------------------------------------
@dataclass
class Work:
    transactions: float
    statements: float
    cpu_ms: float


@contextlib.contextmanager
def counting() -> Iterator[dict[str, int]]:
    """Counts ``Database.run`` calls and statements sent by psycopg (one per ``execute``, one per pipeline)."""
    import psycopg

    from ushas_catalog.kv import base

    counts = {"transactions": 0, "statements": 0}
    run, execute, pipeline = base.Database.run, psycopg.Connection.execute, psycopg.Connection.pipeline

    def counted_run(self: Any, fn: Any) -> Any:
        counts["transactions"] += 1
        return run(self, fn)

    def counted_execute(self: Any, *a: Any, **k: Any) -> Any:
        if getattr(self, "_pipeline", None) is None:
            counts["statements"] += 1
        return execute(self, *a, **k)

    def counted_pipeline(self: Any) -> Any:
        counts["statements"] += 1
        return pipeline(self)

    base.Database.run, psycopg.Connection.execute = counted_run, counted_execute  # type: ignore[method-assign]
    psycopg.Connection.pipeline = counted_pipeline  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        base.Database.run, psycopg.Connection.execute = run, execute  # type: ignore[method-assign]
        psycopg.Connection.pipeline = pipeline  # type: ignore[method-assign]


@contextlib.contextmanager
def counting_commits() -> Iterator[dict[str, int]]:
    """Counts the engine's commits of writes that succeeded, that were re-checked after being overtaken
    (and committed), and that failed as conflicts (retried by ``Database.run``)."""
    from ushas_catalog.kv import base, postgres

    counts = {"committed": 0, "re-checked": 0, "conflicts": 0}
    commit, recommit = postgres.PostgresTransaction.commit, postgres.PostgresTransaction._recommit

    def counted_commit(self: Any) -> None:
        try:
            commit(self)
        except base.RetryableError:
            counts["conflicts"] += 1
            raise
        counts["committed"] += 1

    def counted_recommit(self: Any, conn: Any) -> Any:
        unchanged, row = recommit(self, conn)
        counts["re-checked"] += unchanged
        return unchanged, row

    postgres.PostgresTransaction.commit = counted_commit  # type: ignore[method-assign]
    postgres.PostgresTransaction._recommit = counted_recommit  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        postgres.PostgresTransaction.commit = commit  # type: ignore[method-assign]
        postgres.PostgresTransaction._recommit = recommit  # type: ignore[method-assign]


def concurrent_writes(uri: str, token: str, replicas: int = 3, n: int = 60) -> dict[str, int]:
    """``replicas`` service apps in this process (each with its own store handles and lock, as separate
    replicas have), one thread each ``PUT``-ting the owner of its own table ``n`` times at once: how many
    commits were overtaken and re-checked, and how many conflicted (and were retried)."""
    import threading

    from ushas_catalog.ui.server import Service

    services = [Service(uri, "default", port=0, hooks=False) for _ in range(replicas)]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    failed: list[str] = []

    def writer(i: int) -> None:
        client = services[i].app.test_client()
        for k in range(n):
            answer = client.put(f"/api/v1/metadata/owner?catalog=main&database=b&table=w{i}",
                                data=json.dumps({"owner": f"r{k}"}), headers=headers)
            if answer.status_code != 200:
                failed.append(answer.get_data(as_text=True)[:200])

    try:
        with counting_commits() as counts:
            threads = [threading.Thread(target=writer, args=(i,)) for i in range(replicas)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
    finally:
        for service in services:
            service.close()
    assert not failed, failed[:3]
    return counts


def work_per_call(uri: str, token: str, n: int = 100) -> dict[str, Work]:
    """Transactions, round trips and CPU of one replica per ``GET`` and per ``PUT``, in this process."""
    from ushas_catalog.ui.server import Service

    service = Service(uri, "default", port=0, hooks=False)
    client = service.app.test_client()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    calls: dict[str, Callable[[int], Any]] = {
        "read": lambda i: client.get(READ_PATH),
        "write": lambda i: client.put("/api/v1/metadata/owner?catalog=main&database=b&table=w0",
                                      data=json.dumps({"owner": f"p{i}"}), headers=headers)}
    out = {}
    try:
        for kind, call in calls.items():
            for i in range(5):   # warm: connections pooled, statements prepared
                call(i)
            with counting() as counts:
                cpu = time.process_time()
                for i in range(n):
                    answer = call(i)
                    assert answer.status_code == 200, answer.data
                cpu = time.process_time() - cpu
            out[kind] = Work(counts["transactions"] / n, counts["statements"] / n, cpu / n * 1000)
    finally:
        service.close()
    return out


# --- the replicas ---------------------------------------------------------------------------------------
def start_serve(uri: str, name: str) -> tuple[subprocess.Popen[bytes], str]:
    """``ushas serve`` (hooks off) on the store ``uri`` on a free port, its connections named ``name``."""
    from ushas_catalog.pg_local import free_port

    port = free_port()
    named = uri + ("&" if "?" in uri else "?") + f"application_name={name}"
    proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", named, "serve", "--port", str(port),
                             "--no-hooks"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def wait_serving(base: str, timeout: float = 60.0) -> None:
    """Returns once the service at ``base`` answers ``/api/v1/info``; raises its last error after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(base + "/api/v1/info", timeout=5).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def client(bases: list[str], token: str, write: bool, seconds: float, n: int, out: "Queue[tuple[int, float]]",
           go: Any) -> None:
    """One client process: once ``go`` is set, calls for ``seconds``, round robin over ``bases``; puts (-1, 0)
    when ready, then (calls, its CPU seconds)."""
    out.put((-1, 0.0))
    go.wait(300)
    calls = 0
    start = os.times()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        base = bases[(n + calls) % len(bases)]
        if write:
            req = urllib.request.Request(base + f"/api/v1/metadata/owner?catalog=main&database=b&table=w{n}",
                                         data=json.dumps({"owner": f"c{n}_{calls}"}).encode(), method="PUT",
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
        else:
            req = urllib.request.Request(base + READ_PATH)
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
        calls += 1
    done = os.times()
    out.put((calls, done.user + done.system - start.user - start.system))


@dataclass
class Phase:
    """One measured interval: calls through ``replicas`` replicas and what it cost."""

    replicas: int
    calls: int
    seconds: float
    #: the interval the processes' CPU was sampled over (the clients' seconds, plus the time they took to report)
    sampled: float
    replica_cpu: float
    postgres_cpu: float
    client_cpu: float
    machine_cpu: float
    committed: int
    rolled_back: int
    connections: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def per_call_ms(self, cpu: float) -> float:
        return cpu / max(self.calls, 1) * 1000

    @property
    def ours(self) -> float:
        return self.replica_cpu + self.postgres_cpu + self.client_cpu

    @property
    def others(self) -> float:
        return max(self.machine_cpu - self.ours, 0.0)


def measure(bases: list[str], pids: list[int], postmaster: int | None, conninfo: str, token: str, write: bool,
            clients: int, seconds: float) -> Phase:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    out: Queue[tuple[int, float]] = ctx.Queue()
    go = ctx.Event()
    procs = [ctx.Process(target=client, args=(bases, token, write, seconds, n, out, go)) for n in range(clients)]
    for p in procs:
        p.start()
    for _ in procs:   # the spawned interpreters start (their start-up is not a call's cost)
        out.get(timeout=300)
    before_db = pg_counters(conninfo)
    before = CpuSample.take(pids, postmaster)
    go.set()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    after = CpuSample.take(pids, postmaster)
    conns = replica_connections(conninfo)
    after_db = pg_counters(conninfo)
    for p in procs:
        p.join(60)
    # the clients' interval is their own (seconds each); the processes' sample brackets it closely
    return Phase(len(bases), sum(c for c, _ in results), seconds, after.at - before.at, after.replicas - before.replicas,
                 after.postgres - before.postgres, sum(cpu for _, cpu in results), after.machine - before.machine,
                 after_db[0] - before_db[0] - 2, after_db[1] - before_db[1], conns)


def report(kind: str, one: list[Phase], three: list[Phase]) -> None:
    def med(phases: list[Phase], f: Callable[[Phase], float]) -> float:
        return statistics.median(f(p) for p in phases)

    r1, r3 = med(one, lambda p: p.rate), med(three, lambda p: p.rate)
    print(f"\n{kind}: {r1:.0f} calls/s through 1 replica, {r3:.0f} through 3: 3 ÷ 1 = {r3 / r1:.2f}x "
          f"(medians of {len(one)} alternating rounds)")
    print(f"  {'per call':<34} {'1 replica':>10} {'3 replicas':>11}")
    rows: list[tuple[str, Callable[[Phase], float], str]] = [
        ("CPU ms, replicas", lambda p: p.per_call_ms(p.replica_cpu), ".2f"),
        ("CPU ms, PostgreSQL processes", lambda p: p.per_call_ms(p.postgres_cpu), ".2f"),
        ("CPU ms, client processes", lambda p: p.per_call_ms(p.client_cpu), ".2f"),
        ("CPU ms, all of these", lambda p: p.per_call_ms(p.ours), ".2f"),
        ("CPU ms, the rest of the machine", lambda p: p.per_call_ms(p.others), ".2f"),
        ("transactions committed", lambda p: p.committed / max(p.calls, 1), ".2f"),
        ("transactions rolled back (overtaken)", lambda p: p.rolled_back / max(p.calls, 1), ".3f"),
    ]
    for label, f, fmt in rows:
        print(f"  {label:<34} {med(one, f):>10{fmt}} {med(three, f):>11{fmt}}")
    for label, phases in (("1 replica", one), ("3 replicas", three)):
        busy = med(phases, lambda p: p.machine_cpu / p.sampled)
        replica_cores = med(phases, lambda p: p.replica_cpu / p.sampled / p.replicas)
        print(f"  {label}: the machine busy {busy:.2f} of {CORES} cores (ours "
              f"{med(phases, lambda p: p.ours / p.sampled):.2f}), each replica {replica_cores:.2f} core; "
              f"PostgreSQL connections {phases[-1].connections}")
    total = med(one + three, lambda p: p.ours / max(p.calls, 1))
    replica = med(one, lambda p: p.replica_cpu / max(p.calls, 1))
    machine_bound = CORES / total
    gil_bound = 1 / replica
    used = med(one, lambda p: p.replica_cpu / p.sampled)
    busy = med(one, lambda p: p.machine_cpu / p.sampled)
    if used >= 0.85:
        binds = f"its own GIL (it used {used:.2f} core)"
    elif busy >= 0.9 * CORES:
        binds = (f"the machine (busy {busy:.2f} of {CORES} cores, {med(one, lambda p: p.others / p.sampled):.2f} "
                 f"of them other users' work), not its GIL (it used {used:.2f} core)")
    else:
        binds = (f"neither: it used {used:.2f} core and the machine had room; it waits for PostgreSQL's answers "
                 f"(one request at a time under the service's store lock)")
    print(f"  bounds: {CORES} cores ÷ {total * 1000:.2f} CPU ms per call = {machine_bound:.0f} calls/s for any number "
          f"of replicas; one replica's GIL: 1 core ÷ {replica * 1000:.2f} ms = {gil_bound:.0f} calls/s; "
          f"1 replica here was bound by {binds}")
    print(f"  so on {CORES} cores running nothing else, 3 ÷ 1 can reach at most "
          f"{min(machine_bound, 3 * gil_bound) / min(machine_bound, gil_bound):.2f}x: 1.8x needs the replica's share "
          f"of a call's CPU ≥ 1.8 ÷ {CORES} cores = {1.8 / CORES:.2f}, it is {replica / total:.2f}")
    ours1, ours3 = med(one, lambda p: p.ours / p.sampled), med(three, lambda p: p.ours / p.sampled)
    if busy >= 0.9 * CORES:
        print(f"  (on this busy machine our processes got {ours1:.2f} core(s) with 1 replica, {ours3:.2f} with 3: more "
              f"processes take a larger share of cores others are using, which is not capacity)")


def replicas(uri: str, conninfo: str, postmaster: int | None, clients: int, seconds: float, rounds: int,
             kinds: tuple[str, ...] = ("reads", "writes")) -> None:
    import multiprocessing  # noqa: F401 - the clients are spawned processes

    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.tokens import TokenStore

    with Metastore.open(uri, project="default", user="bench") as ms:
        ms.create_catalog("main")
        ms.create_database("main.b", location="/wh/b")
        ms.create_table("main.b.t", "x INT")
        for n in range(max(clients, 1)):
            ms.create_table(f"main.b.w{n}", "x INT")   # each writer its own table: throughput, not one hot row
        token = TokenStore(ms).create("write", "bench")[1]
    for kind, w in work_per_call(uri, token).items():
        print(f"one replica in process, per {kind} call: {w.transactions:.1f} transactions (Database.run), "
              f"{w.statements:.1f} statements sent to PostgreSQL (round trips), {w.cpu_ms:.2f} CPU ms", flush=True)
    c = concurrent_writes(uri, token)
    print(f"3 replicas in process writing at once, 180 PUTs: {c['committed']} commits of writes, "
          f"{c['re-checked']} of them overtaken and re-checked, {c['conflicts']} conflicts retried", flush=True)
    procs: list[subprocess.Popen[bytes]] = []
    bases: list[str] = []
    try:
        for i in range(3):
            proc, base = start_serve(uri, f"ushas-replica-{i + 1}")
            procs.append(proc)
            bases.append(base)
        for base in bases:
            wait_serving(base)
        pids = [p.pid for p in procs]
        print(f"{clients} client processes, {seconds:g} s per measurement, {CORES} cores; load before: "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        for write in [k == "writes" for k in kinds]:
            one: list[Phase] = []
            three: list[Phase] = []
            for _ in range(rounds):
                one.append(measure(bases[:1], pids[:1], postmaster, conninfo, token, write, clients, seconds))
                three.append(measure(bases, pids, postmaster, conninfo, token, write, clients, seconds))
            report("writes" if write else "reads", one, three)
        print(f"\nload after: {os.getloadavg()[0]:.1f}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)
