"""The commit version counter of a store: checked, and rebuilt from the commit log.

Versionstamps (the engine's commit versions) are the order of the change feed and of the
metadata history, and change-feed cursors name them: they must increase for the life of a
store. On the embedded engine and on PostgreSQL the counter is one record (``meta.commit_version``); when it
is missing or damaged the store refuses to open (:class:`~ushas_catalog.errors.StoreDamaged`)
instead of restarting at 0, and :func:`rebuild_counter` (``ushas repair --counter``) sets it
again from the log: the largest versionstamp found in any key of the store (change events,
metadata history: every ``fdb.tuple`` key is unpacked, in batches of read transactions) and
in the change feed's ``trimmed`` record (the last version removed by retention). The
counter is only ever raised, so the next commit's version is above every one recorded.

A commit that wrote no versionstamped key left no version anywhere: reusing its number is
invisible (nothing can name it). On FoundationDB the cluster owns its versions; there is
nothing to rebuild.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import fdb.tuple as fdbtuple

from ..errors import InvalidArgument, LimitExceeded
from .base import Database, KeyValue

#: keys read per transaction while scanning
SCAN_BATCH = 5_000
#: the fewest keys a scan's read transaction takes when a bigger batch outlasted the transaction time limit
MIN_SCAN_BATCH = 50
#: the change feed's record of the last trimmed versionstamp ends its key with this element
TRIMMED = "trimmed"


@dataclass(frozen=True)
class CounterReport:
    """What :func:`rebuild_counter` found (and did)."""

    uri: str
    #: the counter before (None: missing or damaged)
    counter: int | None
    #: what is wrong with it (None: readable)
    problem: str | None
    #: the largest commit version recorded in the store (0: none)
    max_recorded: int
    keys_scanned: int
    #: the counter after (None on a dry run)
    repaired_to: int | None

    @property
    def healthy(self) -> bool:
        return self.problem is None and self.counter is not None and self.counter >= self.max_recorded

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "healthy": self.healthy}


def _versions(element: Any) -> list[int]:
    if isinstance(element, fdbtuple.Versionstamp):
        if element.tr_version is None or not element.is_complete():
            return []
        return [int.from_bytes(element.tr_version[:8], "big")]
    if isinstance(element, tuple):
        return [v for e in element for v in _versions(e)]
    return []


def versions_in(kv: KeyValue) -> list[int]:
    """Commit versions one key-value records: versionstamps in its key, or the value of a
    change feed ``trimmed`` record (a 12-byte versionstamp)."""
    try:
        items = fdbtuple.unpack(kv.key)
    except Exception:  # noqa: BLE001 - not a tuple key (a foreign prefix): it records no version
        return []
    found = _versions(items)
    if items and items[-1] == TRIMMED and len(kv.value) == 12:
        found.append(int.from_bytes(kv.value[:8], "big"))
    return found


def max_recorded_version(db: Database, batch: int = SCAN_BATCH) -> tuple[int, int]:
    """(largest commit version recorded in ``db``'s keys, keys scanned), one read transaction
    per ``batch`` keys (each well within the 5 s limit). A batch whose read transaction outlasts the
    transaction time limit anyway (a starved process on a loaded machine) is read again in batches a
    quarter as big (down to :data:`MIN_SCAN_BATCH`): the scan's answer does not depend on the machine's load."""
    best, scanned, begin = 0, 0, b""
    while True:
        try:
            rows = db.run(lambda tr: list(tr.get_range(begin, b"\xff", limit=batch)))
        except LimitExceeded as exc:
            if exc.limit != "transaction_seconds" or batch <= MIN_SCAN_BATCH:
                raise
            batch = max(MIN_SCAN_BATCH, batch // 4)
            continue
        for kv in rows:
            for v in versions_in(kv):
                best = max(best, v)
        scanned += len(rows)
        if len(rows) < batch:
            return best, scanned
        begin = rows[-1].key + b"\x00"


def rebuild_counter(uri: str, *, dry_run: bool = False) -> CounterReport:
    """Check the counter of the store at ``uri`` and (unless ``dry_run``) raise it to the largest
    recorded commit version. Opens the store even when its counter is damaged."""
    scheme = uri.partition("://")[0]
    db: Any
    if scheme == "sqlite":
        from .sqlite import SqliteDatabase

        db = SqliteDatabase.open(uri, create=False, check_counter=False)
    elif scheme in ("postgresql", "postgres"):
        from .postgres import PostgresDatabase

        db = PostgresDatabase.open(uri, create=False, check_counter=False)
    else:
        raise InvalidArgument(f"{uri}: only sqlite:// and postgresql:// stores keep their own commit version "
                              f"counter (FoundationDB's versions are the cluster's)")
    try:
        state = db.state()
        best, scanned = max_recorded_version(db)
        repaired = None
        if not dry_run:
            repaired = db.set_commit_version_floor(best)[1]
        return CounterReport(uri, state.commit_version, state.problem, best, scanned, repaired)
    finally:
        db.close()
