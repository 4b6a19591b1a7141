"""The kill tests' harness (:func:`faults.killing.run_and_kill`): what the killed process reported is all of
what it printed before the kill, however far ahead of the test it ran (a loaded machine: the test reads late)."""
from __future__ import annotations

import sys

from faults.killing import run_and_kill

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
