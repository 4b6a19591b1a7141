"""SIGKILL of a Python API writer and of CLI writers at random points, 20 runs each (seed printed:
``USHAS_FAULT_SEED`` replays it; the API writers two at a time, each lane of kills on its own store). After each: ``ushas check`` passes and every object is as the writer's
last reported operation or the one in flight left it, never in between."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ushas_catalog.check import check_store
from ushas_catalog.metastore import Metastore

from faults.killing import LANES, WRITER, in_lanes, model, observed, run_and_kill, runs, seeded

pytestmark = pytest.mark.slow


def test_killed_api_writer_leaves_whole_objects(store_uri: str, engine: str, tmp_path: Path,
                                                request: pytest.FixtureRequest) -> None:
    rng = seeded("api writer")
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    # kill at a random point of the program, whatever the machine's speed: a few ms after its n-th operation
    # (n random; 0: right after it is ready); drawn up front, so that the seed replays the run
    plan = [(rng.randrange(0, 130), rng.uniform(0.0, 0.02)) for _ in range(runs())]
    # a store per lane of kills (two writers at a time, each checked alone on its store)
    stores = [store_uri] + [_another_store(engine, tmp_path / f"lane{lane}.db", request) for lane in range(1, LANES)]

    def kill_one(run: int) -> int:
        uri = stores[run % LANES]
        target, delay = plan[run]
        k = run_and_kill([sys.executable, str(script), uri, str(run)], delay,
                         ready=f"DONE {target}" if target else "READY")
        report = check_store(uri, "acme")
        assert report.ok, (run, delay, report.lines())
        with Metastore.open(uri, project="acme", create=False) as ms:
            actual = observed(ms, run)
        allowed = (model(run, k.done), model(run, k.done + 1))
        assert actual in allowed, (run, delay, k.done, actual, allowed[0])
        return k.done

    outcomes = in_lanes(runs(), kill_one)
    # the kills landed at different points, most of them mid-program
    assert len(set(outcomes)) > runs() // 4, outcomes
    for uri in stores:
        with Metastore.open(uri, project="acme") as ms:  # and the stores take writes after all that
            ms.create_table("main.w.after", "id INT")


def _another_store(engine: str, path: Path, request: pytest.FixtureRequest) -> str:
    """A second fresh store on ``engine``: a SQLite file, or a fresh schema on the session's PostgreSQL
    (dropped after the test)."""
    if engine == "sqlite":
        return f"sqlite:///{path}"
    server = request.getfixturevalue("postgres")
    uri: str = server.fresh_uri()
    request.addfinalizer(lambda: server.drop_schema(uri))
    return uri


def _ushas(uri: str, *argv: str) -> list[str]:
    return [sys.executable, "-m", "ushas_catalog", "--uri", uri, "--project", "acme", *argv]


def test_killed_cli_writers_leave_whole_objects(store_uri: str) -> None:
    rng = seeded("cli writer")
    with Metastore.open(store_uri, project="acme") as ms:
        ms.create_catalog("main")
        ms.create_database("main.w")
        for i in range(runs()):
            ms.create_table(f"main.w.c{i}", "id INT, dt STRING", partition_by=["dt"])
            ms.add_partitions(f"main.w.c{i}", [{"dt": f"d{k}"} for k in range(5)])
        ms.create_table("main.w.timing", "id INT")
    # the kills' delays derive from how long one such CLI command takes here and now (a measured baseline,
    # not a fixed window: on a loaded machine a CLI's start alone can outlast any fixed bound), so that some
    # writers die before their commit and some after it whatever the machine's load
    started = time.monotonic()
    subprocess.run(_ushas(store_uri, "meta", "set", "main.w.timing", "a=1"), check=True, capture_output=True, timeout=120)
    baseline = time.monotonic() - started
    finished = 0
    for i in range(runs()):
        t = f"main.w.c{i}"
        kind = ("meta", "drop", "tag")[i % 3]
        argv = {"meta": ("meta", "set", t, "a=1", "b=2", "c=3"), "drop": ("drop", t), "tag": ("meta", "tag", t, "x", "y")}[kind]
        delay = baseline * rng.uniform(0.2, 1.6)
        run_and_kill(_ushas(store_uri, *argv), delay)
        report = check_store(store_uri, "acme")
        assert report.ok, (i, delay, report.lines())
        with Metastore.open(store_uri, project="acme", create=False) as ms:
            if kind == "drop":
                present = ms.table_exists(t)
                assert sum(1 for _ in ms.list_partitions(t)) == 5 if present else True
                if not present:
                    assert [d.name for d in ms.list_dropped_tables("main.w")].count(t) == 1
                applied = not present
            else:
                user = ms.metadata.get(t).to_json().get("USER", {})
                if kind == "meta":
                    props = user.get("properties", {})
                    assert props in ({}, {"a": "1", "b": "2", "c": "3"}), props
                    applied = bool(props)
                else:
                    tags = sorted(user.get("tags", []))
                    assert tags in ([], ["x", "y"]), tags
                    applied = bool(tags)
        finished += applied
    # the next CLI command on the store works and says nothing about damage
    done = subprocess.run(_ushas(store_uri, "tables", "main.w"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert 0 < finished < runs(), finished  # some killed before their commit, some after
