"""End to end over HTTP: an endpoint that fails 30 % of calls and is down for a while, while
tables change: every event delivered, in commit order (per table and overall), exactly once in
the receiver's deduplicated log; the CLI; the worker inside ``ushas serve``."""
from __future__ import annotations

import datetime as dt
import json
import threading
import time
from typing import Callable, Iterator

import pytest

from ushas_catalog.cli import main
from ushas_catalog.hooks import HookStore, HookWorker
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition
from ushas_catalog.model.schema import parse_type
from ushas_catalog.model.table_changes import AddColumn

from .conftest import T
from .http_receiver import HttpReceiver

WAIT_S = 90


def _until(what: Callable[[], bool], seconds: float = WAIT_S) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


@pytest.fixture
def endpoint() -> Iterator[HttpReceiver]:
    r = HttpReceiver(fail_share=0.3)
    yield r
    r.close()


def _changes(ms: Metastore, round_: int) -> None:
    """Partition adds, replaces and drops, a schema change, over three tables (two matching)."""
    tables = [T, "main.sales.returns", "main.other.noise"]
    for i, table in enumerate(tables):
        ms.add_partitions(table, [{"day": f"r{round_}-a"}, {"day": f"r{round_}-b"}])
        ms.replace_partitions(table, [{"day": f"r{round_}-a"}],
                              [Partition({"day": f"r{round_}-a"}, location=f"/new/{round_}/{i}")])
        ms.drop_partitions(table, [{"day": f"r{round_}-b"}])
    ms.alter_table("main.sales.returns", [AddColumn((f"c{round_}",), parse_type("STRING"))])


def test_flaky_and_down_endpoint_gets_every_event_once_in_order(store_uri: str, ms: Metastore,
                                                                 endpoint: HttpReceiver) -> None:
    ms.create_database("main.other", location="/wh/other")
    ms.create_table("main.sales.returns", "id INT, day STRING", partition_by=["day"])
    ms.create_table("main.other.noise", "id INT, day STRING", partition_by=["day"])
    hooks = HookStore(ms)
    start = ms.change_feed.latest_cursor()
    hook = hooks.add("build", url=endpoint.url, on="partitions,schema,drop", table="main.sales.*",
                     max_attempts=20, backoff_s=0.005, max_backoff_s=0.1, timeout_s=5)
    stop = threading.Event()
    worker_ms = Metastore.open(store_uri, project="acme")
    worker = threading.Thread(target=lambda: HookWorker(worker_ms).run(stop=stop, poll_s=0.05), daemon=True)
    worker.start()
    try:
        for round_ in range(4):
            _changes(ms, round_)
        endpoint.down()
        for round_ in range(4, 8):
            _changes(ms, round_)
        _until(lambda: hooks.status("build")[0].state == "receiver unavailable", 30)
        behind = hooks.status("build")[0].behind
        assert behind > 0
        endpoint.up()
        for round_ in range(8, 10):
            _changes(ms, round_)
        ms.drop_table("main.sales.returns")
        expected = [c for c in ms.changes(since=start) if hook.subscription.matches(c)]
        assert len(expected) == 10 * 7 + 1
        _until(lambda: len(endpoint.deduplicated()) >= len(expected))
        _until(lambda: hooks.status("build")[0].behind == 0)
    finally:
        stop.set()
        worker.join(30)
        worker_ms.close()
    assert not worker.is_alive()
    log = endpoint.deduplicated()
    assert [e["cursor"] for e in log] == [c.cursor for c in expected]  # commit order, each once
    for table in (T, "main.sales.returns"):
        versions = [e["object"]["version"] for e in log if e["object"]["name"] == table]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert {e["object"]["name"] for e in log} == {T, "main.sales.returns"}
    assert endpoint.refusals > 10 and len(endpoint.log) > len(log)  # failures happened, redeliveries too
    assert all(h["Idempotency-Key"] == e["delivery_id"] for h, e in zip(endpoint.headers, endpoint.log))
    status = hooks.status("build")[0]
    assert (status.state, status.delivered, status.dead_letters) == ("up to date", len(expected), 0)
    assert [d.cursor for d in hooks.all_deliveries("build")] == [c.cursor for c in expected]


def test_cli_add_run_status_dead_letters_remove(store_uri: str, ms: Metastore, capsys: pytest.CaptureFixture[str],
                                                endpoint: HttpReceiver) -> None:
    endpoint.fail_share = 0.0
    base = ["--uri", store_uri, "--project", "acme"]
    assert main([*base, "hooks", "add", "cli", "--url", endpoint.url, "--on", "partitions",
                 "--table", "orders", "--backoff", "0.01"]) == 0
    assert "added hook cli" in capsys.readouterr().out
    ms.add_partitions(T, [{"day": "a"}])
    ms.add_partitions(T, [{"day": "b"}])
    assert main([*base, "hooks", "status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)[0]
    assert (status["behind"], status["state"], status["hook"]["table"]) == (2, "behind", "orders")
    assert main([*base, "hooks", "run", "cli", "--once"]) == 0
    assert "delivered 2" in capsys.readouterr().out
    assert [e["partitions"]["added"][0]["spec"]["day"] for e in endpoint.deduplicated()] == ["a", "b"]
    assert main([*base, "hooks", "list"]) == 0
    assert "cli" in capsys.readouterr().out and main([*base, "hooks", "status"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert main([*base, "hooks", "deliveries", "cli", "--json"]) == 0
    assert [d["status"] for d in json.loads(capsys.readouterr().out)] == ["DELIVERED", "DELIVERED"]
    assert main([*base, "hooks", "dead-letters", "cli"]) == 0
    capsys.readouterr()
    assert main([*base, "hooks", "run", "nope", "--once"]) == 1
    assert "NoSuchHook" in capsys.readouterr().err
    assert main([*base, "hooks", "add", "x", "--url", "ftp://h/"]) == 2
    assert "invalid --url" in capsys.readouterr().err
    # an expired cursor: status exits 1 and says so; the worker refuses; reset acknowledges
    endpoint.down()
    ms.add_partitions(T, [{"day": "c"}])
    ms.change_feed.trim(older_than=dt.timedelta(0))
    assert main([*base, "hooks", "status"]) == 1
    assert "CURSOR EXPIRED" in capsys.readouterr().err
    assert main([*base, "hooks", "run", "cli", "--once"]) == 2
    assert "HookCursorExpired" in capsys.readouterr().err
    assert main([*base, "hooks", "run", "cli"]) == 2  # the worker refuses it rather than skipping
    assert "reset cli" in capsys.readouterr().err
    assert main([*base, "hooks", "reset", "cli", "--to", "now"]) == 0 and main([*base, "hooks", "status"]) == 0
    assert main([*base, "hooks", "remove", "cli"]) == 0
    assert "removed hook cli" in capsys.readouterr().out


def test_serve_runs_the_worker_and_stops_it(store_uri: str, ms: Metastore, endpoint: HttpReceiver) -> None:
    from ushas_catalog.ui.server import Service

    endpoint.fail_share = 0.0
    HookStore(ms).add("svc", url=endpoint.url, on="partitions", backoff_s=0.01)
    service = Service(store_uri, "acme", port=0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        ms.add_partitions(T, [{"day": "s1"}])
        _until(lambda: len(endpoint.deduplicated()) == 1, 30)
        assert service.hooks is not None and service.hooks.thread.is_alive()
    finally:
        service.stop()
        thread.join(30)
    assert not thread.is_alive() and not service.hooks.thread.is_alive()
    assert HookStore(ms).status("svc")[0].lease_owner == ""  # the leases were given up
