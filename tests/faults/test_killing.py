"""The kill tests' harness (:func:`faults.killing.run_and_kill`): what the killed process reported is all of
what it printed before the kill, however far ahead of the test it ran (a loaded machine: the test reads late);
:func:`faults.killing.in_lanes` runs every kill, its lanes at once, and fails as its first failure."""
from __future__ import annotations

import sys
import threading

import pytest

from faults.killing import in_lanes, run_and_kill

#: a process that is ahead of its reader: the ready line and three more operations in one write, then it waits
AHEAD = ("import sys, time; sys.stdout.write('READY\\nDONE 1\\nDONE 2\\nDONE 3\\n'); sys.stdout.flush(); "
         "time.sleep(60)")


def test_lines_printed_past_the_ready_line_count() -> None:
    k = run_and_kill([sys.executable, "-c", AHEAD], 0.0, ready="READY", timeout_s=60)
    assert k.done == 3, k.stdout  # its last reported operation, not the one at the ready line
    assert k.stdout.splitlines() == ["READY", "DONE 1", "DONE 2", "DONE 3"]
    assert not k.finished


def test_a_process_that_finished_before_its_kill_is_seen_finished() -> None:
    k = run_and_kill([sys.executable, "-c", "print('READY'); print('DONE 1'); print('FINISHED')"], 0.5,
                     ready="READY", timeout_s=60)
    assert (k.done, k.finished) == (1, True), k.stdout


def test_lanes_run_every_run_at_once_and_in_order() -> None:
    both = threading.Barrier(2, timeout=60)  # passes only when the two lanes' first runs are running together
    seen: list[int] = []

    def run(i: int) -> int:
        if i < 2:
            both.wait()
        seen.append(i)
        return i * 10

    assert in_lanes(7, run, lanes=2) == [0, 10, 20, 30, 40, 50, 60]
    assert sorted(seen) == list(range(7))
    assert [i for i in seen if i % 2 == 0] == [0, 2, 4, 6]  # each lane in order


def test_a_failing_run_fails_the_lanes_and_stops_its_lane() -> None:
    ran: list[int] = []

    def run(i: int) -> int:
        ran.append(i)
        assert i != 1, "run 1 failed"
        return i

    with pytest.raises(AssertionError, match="run 1 failed"):
        in_lanes(40, run, lanes=2)
    assert 1 in ran and not [i for i in ran if i % 2 and i > 1]  # its lane ran nothing after it
