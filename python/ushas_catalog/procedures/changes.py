"""``expire_changes``: the change feed's retention (:meth:`ushas_catalog.changes.feed.ChangeFeed.trim`),
as ``ushas changes trim``."""
from __future__ import annotations

from ..errors import InvalidArgument
from .registry import Call, Column, Outcome, Param, procedure


@procedure("expire_changes", "Remove the change feed events committed before a time (consumers whose cursor is "
                             "older get CursorExpired and start again from the oldest event kept)",
           [Param("older_than", "TIMESTAMP", "events committed before this time go")],
           [Column("removed", "BIGINT", "events removed"),
            Column("last_removed", "STRING", "the cursor of the last event removed (NULL: none)")],
           one_transaction=False)
def expire_changes(call: Call) -> Outcome:
    """Finding the horizon reads the feed in batches (snapshots); the removal is ONE transaction
    (one clear_range)."""
    before = call.required("older_than")
    if call.ms.change_feed is None:
        raise InvalidArgument("this store has no change feed")
    r = call.ms.change_feed.trim(before=before)
    return Outcome([[r.removed, r.last_removed]])
