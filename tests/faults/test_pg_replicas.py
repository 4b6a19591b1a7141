"""Three ``ushas serve`` replicas on one PostgreSQL store, clients spread across them.

- What one replica commits is visible through the others at once (the service keeps no cache that
  could be stale: every call reads the store in its own transaction).
- Concurrent writers through different replicas serialize: no update is lost.
- 8 writer processes -- 4 REST clients round-robin over the 3 replicas, 4 direct store clients (the
  CLI's path: tests/changes/worker.py) -- while one replica and one direct client are SIGKILLed:
  the change feed replayed from the start rebuilds exactly the tables, versions and partitions in the
  store, every acknowledged REST write is there, nothing is half-written.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from ushas_catalog.metastore import Metastore

from changes.replay import assert_feed_matches_store
from pg_server import PgServer, free_port

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]

PROJECT = "stress"
DATABASE = "main.db"
REST_TABLES = 3
HERE = Path(__file__).parent
REST_WRITER = str(HERE / "replica_writer.py")
STORE_WRITER = str(HERE.parent / "changes" / "worker.py")
WAIT_S = 60


@dataclass
class Replica:
    uri: str
    port: int = 0
    proc: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, same_port: bool = False) -> "Replica":
        if not same_port:
            self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", self.uri, "--project", PROJECT,
                                      "serve", "--port", str(self.port), "--no-hooks"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/api/v1/info", timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"replica on port {self.port} did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(WAIT_S)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + "/api/v1" + path, timeout=30) as r:
            return json.loads(r.read())

    def send(self, method: str, path: str, body: dict, token: str) -> Any:
        req = urllib.request.Request(self.base + "/api/v1" + path, data=json.dumps(body).encode(), method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


@dataclass
class Cluster:
    uri: str
    token: str
    replicas: list[Replica]


@pytest.fixture(scope="module")
def cluster(postgres: PgServer) -> Iterator[Cluster]:
    from ushas_catalog.service.tokens import TokenStore

    uri = postgres.fresh_uri()
    with Metastore.open(uri, project=PROJECT, user="setup") as ms:
        ms.create_catalog("main")
        ms.create_database(DATABASE, location="/wh/db")
        for t in range(REST_TABLES):
            ms.create_table(f"{DATABASE}.r{t}", "x INT")
        token = TokenStore(ms).create("write", "replicas")[1]
    replicas = [Replica(uri) for _ in range(3)]
    try:
        for r in replicas:
            r.start()
        yield Cluster(uri, token, replicas)
    finally:
        for r in replicas:
            r.stop()
        postgres.drop_schema(uri)


def table_path(t: str) -> str:
    return f"/catalogs/main/databases/db/tables/{t}"


def test_every_write_is_visible_through_every_replica_at_once(cluster: Cluster) -> None:
    rs = cluster.replicas
    first = rs[0].get(table_path("r0"))["version"]
    for i in range(9):
        writer, readers = rs[i % 3], [r for r in rs if r is not rs[i % 3]]
        where = "?catalog=main&database=db&table=r0"
        writer.send("PUT", "/metadata/owner" + where, {"owner": f"owner{i}"}, cluster.token)
        writer.send("POST", "/metadata/tags" + where, {"tags": [f"tag{i}"]}, cluster.token)
        seen = [r.get(table_path("r0")) for r in rs]
        assert {(t["owner"], t["version"]) for t in seen} == {(f"owner{i}", first + i + 1)}, seen
        for r in readers:
            assert f"tag{i}" in r.get("/metadata" + where)["USER"]["tags"]


def test_concurrent_writers_through_different_replicas_lose_no_update(cluster: Cluster) -> None:
    per_thread, threads = 6, 6
    errors: list[BaseException] = []
    before = cluster.replicas[0].get(table_path("r1"))["version"]

    def write(n: int) -> None:
        try:
            for i in range(per_thread):
                r = cluster.replicas[(n + i) % 3]
                r.send("PUT", "/metadata/owner?catalog=main&database=db&table=r1", {"owner": f"t{n}_{i}"},
                       cluster.token)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=write, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(WAIT_S)
    assert not errors, errors
    table = cluster.replicas[0].get(table_path("r1"))
    assert table["version"] == before + per_thread * threads
    with Metastore.open(cluster.uri, project=PROJECT, create=False) as ms:
        assert [h.version for h in ms.history(f"{DATABASE}.r1")] == list(range(table["version"], 0, -1))


def test_eight_writers_three_replicas_and_sigkills_match_the_change_feed(cluster: Cluster, tmp_path: Path) -> None:
    bases = ",".join(r.base for r in cluster.replicas)
    seconds = 14
    met = [tmp_path / f"met-{seed}" for seed in range(4)]  # a writer's call met the dead replica
    with Metastore.open(cluster.uri, project=PROJECT, create=False) as ms:
        before = {f"r{t}": ms.get_table(f"{DATABASE}.r{t}").version for t in range(REST_TABLES)}
    rest = [subprocess.Popen([sys.executable, REST_WRITER, bases, cluster.token, str(seed), str(seconds),
                              str(met[seed])],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
            for seed in range(4)]
    direct = [subprocess.Popen([sys.executable, STORE_WRITER, cluster.uri, str(seed), "0"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
              for seed in range(100, 104)]
    try:
        time.sleep(3)
        cluster.replicas[1].kill()                 # a replica dies mid-load ...
        direct[0].send_signal(signal.SIGKILL)      # ... and a direct writer
        time.sleep(2)
        dead_until = time.monotonic() + 8  # on a loaded machine a call can take seconds: dead until one met it
        while not any(m.exists() for m in met) and time.monotonic() < dead_until:
            time.sleep(0.1)
        cluster.replicas[1].start(same_port=True)  # back on its port: its clients' calls work again
        direct.append(subprocess.Popen([sys.executable, STORE_WRITER, cluster.uri, "200", "0"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env()))
        answers = []
        for p in rest:
            out, err = p.communicate(timeout=seconds + 120)
            assert p.returncode == 0, err
            answers.append(json.loads(out))
    finally:
        for p in direct + rest:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(WAIT_S)
    for p in direct[1:]:
        assert p.returncode == -signal.SIGKILL, p.stderr.read() if p.stderr else ""
    assert sum(a["calls"] - a["unknown"] - a["refused"] for a in answers) > 20
    assert sum(a["unknown"] for a in answers) > 0, "no call met the killed replica"
    print("REST writers:", answers and [{k: v for k, v in a.items() if k != "tags"} for a in answers])
    with Metastore.open(cluster.uri, project=PROJECT, create=False) as ms:
        stored = assert_feed_matches_store(ms, DATABASE)
        for r in ms.list_tables(DATABASE):
            name = f"{DATABASE}.{r.name}"
            info = ms.get_table(name)
            assert [h.version for h in ms.history(name)] == list(range(info.version, 0, -1)), name
            if info.partition_columns:
                list(ms.list_partitions(name))
        tags: dict[str, set[str]] = {}
        for t in range(REST_TABLES):
            tags[f"r{t}"] = set(ms.metadata.get(["main", "db", f"r{t}"]).user.tags)
            version = ms.get_table(f"{DATABASE}.r{t}").version
            acked = sum(a["owners"][f"r{t}"] for a in answers)
            unknown = sum(a["unknown"] for a in answers)
            assert acked <= version - before[f"r{t}"] <= acked + unknown, (t, version, acked, unknown)
    for a in answers:
        for table, tag in a["tags"]:
            assert tag in tags[table], (table, tag)
    assert any(s.partitions for s in stored.values())
