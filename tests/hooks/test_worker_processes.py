"""Two ``ushas hooks run`` processes on one hook: one is killed (-9) mid-stream, the other takes the
hook over when its lease runs out; every event reaches the flaky endpoint, in order, once in its
deduplicated log, and the cursor moved once per event. SIGTERM stops a worker with exit 0."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ushas_catalog.hooks import HookStore
from ushas_catalog.metastore import Metastore

from .conftest import T
from .http_receiver import HttpReceiver

WAIT_S = 90


def _until(what: Callable[[], bool], seconds: float = WAIT_S) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def _worker(store_uri: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with open(log, "ab") as err:
        return subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", store_uri, "--project", "acme",
                                 "hooks", "run", "--poll", "0.05", "--lease", "1"],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)


def test_a_killed_worker_is_taken_over_with_nothing_lost_or_repeated(store_uri: str, ms: Metastore,
                                                                      tmp_path: Path) -> None:
    endpoint = HttpReceiver(fail_share=0.3, seed=7)
    hooks = HookStore(ms)
    start = ms.change_feed.latest_cursor()
    hooks.add("proc", url=endpoint.url, on="partitions", max_attempts=30, backoff_s=0.005, max_backoff_s=0.05)
    workers = [_worker(store_uri, tmp_path / f"w{i}.log") for i in range(2)]
    try:
        for i in range(40):
            ms.add_partitions(T, [{"day": f"p{i:02d}"}])
        _until(lambda: len(endpoint.deduplicated()) >= 10)
        owner = hooks.status("proc")[0].lease_owner
        victim = next(w for w in workers if owner.split(":")[1] == str(w.pid))
        victim.kill()  # mid-stream, maybe between a delivery and its record
        victim.wait(30)
        for i in range(40, 60):
            ms.add_partitions(T, [{"day": f"p{i:02d}"}])
        expected = [c.cursor for c in ms.changes(since=start)]
        _until(lambda: len(endpoint.deduplicated()) >= len(expected))
        _until(lambda: hooks.status("proc")[0].behind == 0)
        survivor = next(w for w in workers if w is not victim)
        survivor.send_signal(signal.SIGTERM)
        assert survivor.wait(30) == 0
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait(30)
        endpoint.close()
    assert [e["cursor"] for e in endpoint.deduplicated()] == expected
    assert [d.cursor for d in hooks.all_deliveries("proc")] == expected
    status = hooks.status("proc")[0]
    assert (status.delivered, status.dead_letters, status.lease_owner) == (len(expected), 0, "")
