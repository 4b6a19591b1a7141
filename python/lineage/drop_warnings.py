"""How the lineage queues tell users they dropped something (runs, OpenLineage events): at most one
WARNING per interval with the running total; the drops in between at DEBUG, counted into the next
WARNING. One value per queue, used under that queue's lock."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

#: at most one WARNING about drops per this many seconds (the others at DEBUG, counted in the next one)
DROP_LOG_INTERVAL_S = 60.0


@dataclass
class DropWarnings:
    """When drops were last logged at WARNING, and how many were logged at DEBUG only since then."""

    what: str  # the dropped items, as the log line names them ("run(s)")
    logged_at: float | None = None
    unlogged: int = 0

    def note(self, count: int) -> tuple[bool, int]:
        """``count`` items dropped now: (log at WARNING?, the DEBUG-only drops since the last WARNING)."""
        now, earlier = time.monotonic(), self.unlogged
        if self.logged_at is None or now - self.logged_at >= DROP_LOG_INTERVAL_S:
            self.logged_at, self.unlogged = now, 0
            return True, earlier
        self.unlogged += count
        return False, earlier

    def log(self, log: logging.Logger, count: int, why: str, total: int, loud: bool, earlier: int) -> None:
        """The line for a :meth:`note` (called outside the queue's lock)."""
        if loud:
            log.warning("lineage: dropped %d %s: %s; %d dropped in all%s", count, self.what, why, total,
                        f" ({earlier} more logged at DEBUG since the last warning)" if earlier else "")
        else:
            log.debug("lineage: dropped %d %s: %s; %d dropped in all", count, self.what, why, total)

    def take_unlogged(self) -> int:
        """The DEBUG-only drops not yet counted in a WARNING (the final report takes them)."""
        n, self.unlogged = self.unlogged, 0
        return n
