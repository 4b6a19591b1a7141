"""Many processes mutating shared tables: the change feed replayed from the start rebuilds
exactly the tables, versions and partitions in the store; SIGKILL mid-operation leaves no
partial object."""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ushas_catalog.metastore import Metastore

from .replay import assert_feed_matches_store

WORKER = str(Path(__file__).with_name("worker.py"))
DATABASE = "main.db"
PROCESSES = 8
OPS = 500


def _store(tmp_path: Path) -> str:
    # synchronous=normal: a killed process never loses a commit (WAL); only power loss could
    uri = f"sqlite:///{tmp_path / 'stress.db'}?synchronous=normal"
    with Metastore.open(uri, project="stress") as ms:
        ms.create_catalog("main")
        ms.create_database(DATABASE, location="/wh/db")
    return uri


def _start(uri: str, seed: int, ops: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, WORKER, uri, str(seed), str(ops)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _check_objects_whole(ms: Metastore) -> None:
    """Every table loads, with one commit per version: nothing half-written."""
    for r in ms.list_tables(DATABASE):
        name = f"{DATABASE}.{r.name}"
        info = ms.get_table(name)
        assert [h.version for h in ms.history(name)] == list(range(info.version, 0, -1)), name
        list(ms.list_partitions(name))


@pytest.mark.slow
def test_eight_processes_then_the_feed_replays_to_the_store(tmp_path: Path) -> None:
    uri = _store(tmp_path)
    procs = [_start(uri, seed, OPS) for seed in range(PROCESSES)]
    changed = 0
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        done, n_changed, n_unchanged, n_refused = out.split()
        assert done == "done" and int(n_changed) + int(n_unchanged) + int(n_refused) == OPS
        changed += int(n_changed)
    with Metastore.open(uri, project="stress") as ms:
        events = [e for e in ms.changes() if e.kind == "table"]
        # one event per committed change: none lost, none twice
        assert len(events) == changed
        assert len({e.cursor for e in events}) == len(events)
        assert {e.change for e in events} >= {"CREATED", "ALTERED", "DROPPED", "UNDROPPED", "PARTITIONS_ADDED",
                                              "PARTITIONS_DROPPED", "PARTITIONS_REPLACED"}
        stored = assert_feed_matches_store(ms, DATABASE)
        assert any(t.partitions for t in stored.values())
        _check_objects_whole(ms)


@pytest.mark.slow
def test_sigkill_mid_operation_leaves_no_partial_object(tmp_path: Path) -> None:
    uri = _store(tmp_path)
    rnd = random.Random(7)
    workers = [_start(uri, seed, 0) for seed in range(4)]
    seed = 100
    try:
        time.sleep(2.0)  # let them import and start writing
        for _ in range(10):
            time.sleep(rnd.uniform(0.2, 0.8))
            i = rnd.randrange(len(workers))
            workers[i].send_signal(signal.SIGKILL)
            workers[i].wait(timeout=60)
            assert workers[i].returncode == -signal.SIGKILL
            workers[i] = _start(uri, seed, 0)
            seed += 1
    finally:
        for w in workers:
            w.send_signal(signal.SIGKILL)
        for w in workers:
            _, err = w.communicate(timeout=60)
            assert w.returncode == -signal.SIGKILL, err
    with Metastore.open(uri, project="stress") as ms:
        assert sum(1 for e in ms.changes() if e.kind == "table") > 20  # the workers did work
        _check_objects_whole(ms)
        assert_feed_matches_store(ms, DATABASE)
