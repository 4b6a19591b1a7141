"""The lineage queues' drop warnings (lineage.drop_warnings): one WARNING per interval with the running
total, the drops in between at DEBUG and counted into the next WARNING or the final report."""
from __future__ import annotations

import logging

import pytest

from lineage.drop_warnings import DROP_LOG_INTERVAL_S, DropWarnings


def test_one_warning_per_interval_then_the_quiet_drops_are_counted(caplog: pytest.LogCaptureFixture) -> None:
    w = DropWarnings("run(s)")
    log = logging.getLogger("test.drops")
    assert w.note(1) == (True, 0)
    assert w.note(2) == (False, 0)
    assert w.note(3) == (False, 2)
    assert w.logged_at is not None
    w.logged_at -= DROP_LOG_INTERVAL_S  # the interval is over
    loud, earlier = w.note(1)
    assert (loud, earlier) == (True, 5)
    with caplog.at_level(logging.DEBUG, logger="test.drops"):
        w.log(log, 1, "queue full", 7, loud, earlier)
        w.log(log, 4, "queue full", 11, False, 0)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "lineage: dropped 1 run(s): queue full; 7 dropped in all (5 more logged at DEBUG since the "
                    "last warning)"),
        ("DEBUG", "lineage: dropped 4 run(s): queue full; 11 dropped in all")]
    assert w.note(4) == (False, 0)
    assert w.take_unlogged() == 4
    assert w.take_unlogged() == 0
