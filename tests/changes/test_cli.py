"""``ushas changes``: text and JSON Lines, --since, head, trim, --follow until Ctrl-C,
and one-line errors for bad input."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty

T = "main.sales.orders"


@pytest.fixture
def filled(store_uri: str) -> str:
    with Metastore.open(store_uri, project="acme", user="cli") as ms:
        ms.create_catalog("main")
        ms.create_database("main.sales")
        ms.create_table(T, "id INT, d STRING", partition_by=["d"])
        ms.add_partitions(T, [{"d": "x"}])
    return store_uri


def run(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_lines_and_since(capsys: pytest.CaptureFixture[str], filled: str) -> None:
    rc, out, err = run(capsys, filled, "changes", "--json")
    assert rc == 0 and err == ""
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["change"], e["name"], e["version"]) for e in events] == [
        ("CREATED", "main", 1), ("CREATED", "main.sales", 1), ("CREATED", T, 1), ("PARTITIONS_ADDED", T, 2)]
    assert events[3]["added"] == [{"spec": {"d": "x"}, "location": None}] and events[3]["user"] == "cli"
    rc, out, _ = run(capsys, filled, "--json", "changes", "--since", events[1]["cursor"])
    assert rc == 0 and [json.loads(line)["cursor"] for line in out.splitlines()] == [e["cursor"] for e in events[2:]]
    rc, out, _ = run(capsys, filled, "changes", "--since", events[1]["cursor"], "--limit", "1")
    assert rc == 0 and len(out.splitlines()) == 1
    assert "CREATED" in out and T in out and events[2]["cursor"] in out
    rc, out, _ = run(capsys, filled, "changes", "head", "--json")
    assert rc == 0 and json.loads(out) == {"cursor": events[-1]["cursor"]}


def test_trim_and_expired_cursor(capsys: pytest.CaptureFixture[str], filled: str) -> None:
    rc, out, _ = run(capsys, filled, "changes", "--json")
    first = json.loads(out.splitlines()[0])["cursor"]
    rc, out, _ = run(capsys, filled, "changes", "trim", "--older-than", "7d", "--json")
    assert rc == 0 and json.loads(out) == {"removed": 0, "last_removed": None}
    rc, out, _ = run(capsys, filled, "changes", "trim", "--older-than", "0s")
    assert rc == 0 and out.startswith("removed 4 events")
    rc, out, err = run(capsys, filled, "changes", "--since", first)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("ushas: CursorExpired: cursor " + first) and "retention" in err


@pytest.mark.parametrize("argv,message", [
    (("changes", "--since", "nope"), "InvalidArgument: invalid change feed cursor 'nope'"),
    (("changes", "trim", "--older-than", "soon"), "InvalidArgument: invalid duration 'soon'"),
    (("changes", "--poll", "0", "--follow"), "InvalidArgument: --poll must be > 0"),
])
def test_bad_input_is_one_line_and_nonzero(capsys: pytest.CaptureFixture[str], filled: str,
                                          argv: tuple[str, ...], message: str) -> None:
    rc, out, err = run(capsys, filled, *argv)
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_follow_prints_new_events_and_stops_cleanly_on_ctrl_c(filled: str) -> None:
    with Metastore.open(filled, project="acme", user="cli") as ms:
        head = ms.change_feed.latest_cursor()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", filled, "--project", "acme",
                                 "changes", "--follow", "--poll", "0.1", "--json", "--since", head],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            ms.alter_table(T, [SetProperty("k", "1")])
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert json.loads(line)["version"] == 3
            ms.alter_table(T, [SetProperty("k", "2")])
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert json.loads(line)["version"] == 4
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == "" and err == ""
