"""Fenced writes: a write (a Spark job, an API writer) commits at most once, and never after it ended.

A fenced write carries its identity (``write_id``: Spark's job UUID) and, optionally, its caller's
deadline (epoch ms: the moment the caller stops waiting for the answer). Its outcome is recorded
per project in ``WriteOutcome`` (writeId) -> :class:`~ushas_catalog.records.WriteOutcome`:

- the commit's own transaction first reads that record (:func:`run_fenced`, so every retry of the
  transaction checks again): ABORTED -> :class:`~ushas_catalog.errors.WriteAborted`; COMMITTED -> the
  recorded answer, nothing applied again (a commit retried after an unknown result, FoundationDB's
  ``commit_unknown_result``, is applied once); past the deadline -> nothing applied, the write
  recorded ABORTED ("deadline passed") in that transaction, then
  :class:`~ushas_catalog.errors.WriteExpired`; else the write is applied and recorded COMMITTED in
  the same transaction;
- :func:`abort_write` (Spark's ``abort``, a bridge call whose outcome the JVM does not know) records
  ABORTED in one transaction unless the write COMMITTED, and answers what the write became.

Both read and write the same key, so a commit and an abort of one write serialize: whichever
commits first decides, the other sees it.

A write id is bound to its table and its writer (:func:`check_owner`): the record names the table and the user
who recorded it. An id presented for another table is refused (:class:`~ushas_catalog.errors.WriteIdTaken`,
without naming that table), and so, under governance, is another user's COMMITTED write: its answer is not
handed back and nothing is applied or recorded. An ABORTED write stays aborted for whoever presents its id
on its table (ending another user's write needs MODIFY on the table, or is ``ushas purge``'s).

``ushas write WRITE_ID`` / ``ushas writes`` show outcomes; :func:`trim_outcomes` removes old ones.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from .. import records as rec
from ..errors import InvalidArgument, WriteAborted, WriteExpired, WriteIdTaken
from ..keyspace.tree import KeySpacePath
from ..keyspace.layout import WRITE_OUTCOME
from ..kv import Transaction
from ..records.store import RecordStore

T = TypeVar("T")

COMMITTED = "COMMITTED"
ABORTED = "ABORTED"
UNKNOWN = "UNKNOWN"
#: the longest write id accepted (Spark's are 36-character UUIDs)
MAX_WRITE_ID = 200


def _now_micros() -> int:
    return time.time_ns() // 1000


def check_write_id(write_id: Any) -> str:
    """A write id as given by a caller: a non-empty printable string of at most 200 characters."""
    if not isinstance(write_id, str) or not write_id or len(write_id) > MAX_WRITE_ID \
            or not write_id.isprintable() or write_id != write_id.strip():
        raise InvalidArgument(f"invalid write id {write_id!r}: expected a non-empty printable string of at most "
                              f"{MAX_WRITE_ID} characters (a Spark job id is a UUID)")
    return write_id


@dataclass(frozen=True)
class WriteFence:
    """A write's identity and its caller's deadline (epoch milliseconds; None: no deadline)."""

    write_id: str
    deadline_ms: int | None = None

    @classmethod
    def of(cls, write_id: str | None, deadline_ms: Any = None) -> "WriteFence | None":
        """The fence of a call (None when no write id is given: an unfenced write)."""
        if write_id is None:
            if deadline_ms is not None:
                raise InvalidArgument("a write deadline needs a write id")
            return None
        if deadline_ms is not None and (isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int)
                                        or not 0 < deadline_ms < 2 ** 62):
            raise InvalidArgument(f"invalid write deadline {deadline_ms!r}: expected epoch milliseconds")
        return cls(check_write_id(write_id), deadline_ms)

    def expired(self) -> bool:
        return self.deadline_ms is not None and time.time_ns() // 1_000_000 >= self.deadline_ms


@dataclass(frozen=True)
class Writer:
    """Who presents a write id: a user, and whether users are told apart (governed: authorization on)."""

    user: str
    governed: bool

    @classmethod
    def of(cls, ms: Any) -> "Writer":
        """The caller of metastore ``ms`` (the service's authenticated user when it serves the call)."""
        caller = ms.caller()
        return cls(str(caller.user or ""), bool(caller.authorization))

    def other_than(self, found: "WriteOutcome") -> bool:
        """Whether ``found`` is another user's write, users being told apart (governed) and the record naming its
        user (one recorded before users were stored names none)."""
        return self.governed and bool(found.user) and found.user != self.user


@dataclass(frozen=True)
class WriteOutcome:
    """What became of a write: COMMITTED (its answer, the version it made), ABORTED (why) or
    UNKNOWN (no record: nothing of it is committed; with a deadline, nothing ever will be)."""

    write_id: str
    state: str
    table: str = ""
    time_micros: int = 0
    reason: str = ""
    answer: dict[str, Any] | None = None
    version: int | None = None
    deadline_ms: int | None = None
    user: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"write_id": self.write_id, "state": self.state, "table": self.table or None,
                "time": _iso(self.time_micros) if self.time_micros else None, "reason": self.reason or None,
                "version": self.version, "answer": self.answer,
                "deadline": _iso(self.deadline_ms * 1000) if self.deadline_ms else None, "user": self.user or None}

    def summary(self) -> str:
        if self.state == UNKNOWN:
            return (f"{self.write_id}: UNKNOWN (no outcome recorded: nothing of this write is committed; "
                    f"a write whose deadline passed can no longer commit)")
        what = f"{self.write_id}: {self.state}"
        if self.table:
            what += f" {self.table}"
        if self.version is not None:
            what += f" version {self.version}"
        what += f" at {_iso(self.time_micros)}"
        if self.reason:
            what += f" ({self.reason})"
        return what


def _iso(micros: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(micros / 1e6, dt.timezone.utc).isoformat(timespec="milliseconds")


def outcome_store(project: KeySpacePath) -> RecordStore[rec.WriteOutcome]:
    return RecordStore.of(project, WRITE_OUTCOME)


def _outcome(write_id: str, r: rec.WriteOutcome | None) -> WriteOutcome:
    if r is None:
        return WriteOutcome(write_id, UNKNOWN)
    state = COMMITTED if r.state == rec.WriteOutcome.COMMITTED else ABORTED
    return WriteOutcome(write_id, state, r.table, r.time_micros, r.reason,
                        json.loads(r.answer_json) if r.answer_json else None,
                        r.version if r.HasField("version") else None, r.deadline_ms or None, r.user)


def load_outcome(tr: Transaction, project: KeySpacePath, write_id: str) -> WriteOutcome:
    return _outcome(write_id, outcome_store(project).load(tr, (check_write_id(write_id),)))


def same_table(recorded: str, presented: str) -> bool:
    """Whether two spellings of a table name (``a.b.c``, ```a`.b.c``) name one table; "" (not known) matches any."""
    from ..model.names import TableName

    if not recorded or not presented or recorded == presented:
        return True
    try:
        return TableName.parse(recorded) == TableName.parse(presented)
    except Exception:  # noqa: BLE001 - an unparsable recorded name: only the same text is the same table
        return False


def check_owner(found: WriteOutcome, table: str, writer: Writer | None) -> None:
    """Refuses a recorded write presented for another table, or (governed) another user's COMMITTED write:
    :class:`WriteIdTaken` naming the write id and why, never the other table (its caller may not see it)."""
    if found.state == UNKNOWN:
        return
    if not same_table(found.table, table):
        raise WriteIdTaken(f"write id {found.write_id} is already the id of a write into another table: refused, "
                           f"nothing was recorded or committed (each write needs an id of its own)",
                           write_id=found.write_id)
    if writer is not None and found.state == COMMITTED and writer.other_than(found):
        raise WriteIdTaken(f"write id {found.write_id} is the id of another user's write: refused, nothing was "
                           f"recorded or committed (each write needs an id of its own)", write_id=found.write_id)


def _aborted(tr: Transaction, project: KeySpacePath, write_id: str, table: str, reason: str,
             deadline_ms: int | None, user: str) -> WriteOutcome:
    r = rec.WriteOutcome(state=rec.WriteOutcome.ABORTED, table=table, time_micros=_now_micros(), reason=reason,
                         deadline_ms=deadline_ms or 0, user=user)
    outcome_store(project).save(tr, (write_id,), r)
    return _outcome(write_id, r)


class _Expired:
    """What a fenced transaction returns when the deadline had passed (it recorded ABORTED)."""


_EXPIRED = _Expired()


def run_fenced(run: Callable[[Callable[[Transaction], Any]], Any], project: KeySpacePath,
               fence: WriteFence | None, table: str, fn: Callable[[Transaction], T],
               encode: Callable[[T], tuple[dict[str, Any], int | None]],
               decode: Callable[[dict[str, Any]], T], writer: Writer) -> T:
    """``run(fn)`` (a retried transaction), fenced: see the module docstring. ``encode`` turns
    ``fn``'s result into (the answer to record, the version it made); ``decode`` turns a recorded
    answer back into the result a retry returns; ``writer``: who commits (recorded, checked)."""
    if fence is None:
        return run(fn)
    write_id = fence.write_id
    store = outcome_store(project)

    def fenced(tr: Transaction) -> Any:
        found = _gate(tr, project, fence, table, writer)
        if isinstance(found, _Expired):
            return _EXPIRED
        if found is not None:
            return decode(found.answer or {})
        result = fn(tr)
        answer, version = encode(result)
        r = rec.WriteOutcome(state=rec.WriteOutcome.COMMITTED, table=table, time_micros=_now_micros(),
                             answer_json=json.dumps(answer, separators=(",", ":"), default=str),
                             deadline_ms=fence.deadline_ms or 0, user=writer.user)
        if version is not None:
            r.version = version
        store.save(tr, (write_id,), r)
        return result

    result = run(fenced)
    if result is _EXPIRED:
        raise _expired_error(fence, table)
    return result


def _gate(tr: Transaction, project: KeySpacePath, fence: WriteFence, table: str,
          writer: Writer) -> "WriteOutcome | _Expired | None":
    """In a fenced write's transaction, before it does anything: its COMMITTED outcome (answer it,
    apply nothing), ``_EXPIRED`` (the deadline passed: recorded ABORTED in ``tr``), None (go on);
    :class:`WriteAborted` if it was aborted; :class:`WriteIdTaken` if the id is another table's or
    (governed) another user's committed write (:func:`check_owner`)."""
    found = load_outcome(tr, project, fence.write_id)
    check_owner(found, table, writer)
    if found.state == COMMITTED:
        return found
    if found.state == ABORTED:
        raise WriteAborted(f"write {fence.write_id} was aborted ({found.reason or 'no reason given'}) before its "
                           f"commit arrived: nothing of it was committed", write_id=fence.write_id, table=table)
    if fence.expired():
        _aborted(tr, project, fence.write_id, table, "its caller's deadline passed before the commit started",
                 fence.deadline_ms, writer.user)
        return _EXPIRED
    return None


def _expired_error(fence: WriteFence, table: str) -> WriteExpired:
    when = _iso(fence.deadline_ms * 1000) if fence.deadline_ms else "-"
    return WriteExpired(f"write {fence.write_id} into {table} reached the catalog after its caller's deadline "
                        f"({when}): not committed, recorded ABORTED", write_id=fence.write_id, table=table)


def check_fence(ms: Any, fence: WriteFence | None, table: str) -> WriteOutcome | None:
    """Before a fenced write plans anything (one transaction): its COMMITTED outcome (answer that
    again) or None (go on); :class:`WriteAborted` / :class:`WriteExpired` (then recorded ABORTED)
    if it is over. The commit's own transaction checks again (:func:`run_fenced`)."""
    if fence is None:
        return None
    writer = Writer.of(ms)
    found = ms.db.run(lambda tr: _gate(tr, ms.project_path, fence, table, writer))
    if found is _EXPIRED:
        raise _expired_error(fence, table)
    return found


# ---- what callers use ------------------------------------------------------------------------------
def abort_write(ms: Any, write_id: str, reason: str, table: str = "", checked: bool = False) -> WriteOutcome:
    """Ends write ``write_id`` in one transaction: records it ABORTED (with ``reason``) unless it
    COMMITTED or was aborted already. Answers what the write is now (COMMITTED: keep its files).
    ``checked``: a client presents the id (a Spark abort, over the service): the id must be ``table``'s
    (a governed caller must name it) and another user's COMMITTED write answers its state only
    (:func:`check_owner`); the catalog's own callers (purge, rollbacks) end any write they find."""
    check_write_id(write_id)
    project = ms.project_path
    writer = Writer.of(ms)
    if checked and writer.governed and not table:
        raise InvalidArgument(f"ending write {write_id} needs the table it writes into")

    def fn(tr: Transaction) -> WriteOutcome:
        found = load_outcome(tr, project, write_id)
        if found.state == UNKNOWN:
            return _aborted(tr, project, write_id, table, reason or "aborted", None, writer.user)
        if checked:
            check_owner(found, table, None)
            if writer.other_than(found):
                return WriteOutcome(write_id, found.state)  # what it became, nothing of its answer
        return found

    return ms.db.run(fn)


def release_files(ms: Any, table: Any, write_id: str, files: list[Any]) -> None:
    """The files a write placed that will never be registered (it was aborted or expired) are handed
    to the table's data garbage, deleted by ``ushas purge`` (the writer may have removed them already).
    ``table``: the table's name; ``files``: :class:`~ushas_catalog.model.data_files.DataFile` values."""
    import uuid

    from .garbage import Garbage, record_garbage

    if not files:
        return
    info = ms.get_table(table)
    from .locations import outside

    far = set(outside([f.path for f in files], [info.location or ""]))  # only the table's go at purge
    files = [f for f in files if f.path not in far]
    if not files:
        return

    def fn(tr: Transaction) -> None:
        record_garbage(tr, ms.project_path, uuid.UUID(str(info.id)), ".".join(table) if isinstance(table, tuple)
                       else str(table), f"ABORTED WRITE {write_id}", Garbage(files=list(files)), _now_micros())

    ms.db.run(fn)


#: how long a write whose caller gave up keeps trying to record its end while the store stays busy
ABANDONED_RETRY_S = 600.0


def end_abandoned(ms: Any, write_id: str, table: Any, files: list[Any]) -> threading.Thread:
    """A commit whose caller stopped waiting before the store could be had (a bridge timeout while
    another process held the store): nothing of it was applied. In the background, as soon as the
    store can be had, the write is recorded ABORTED (unless it committed) and its placed files are
    handed to purge, so a late retry is refused and ``ushas write ID`` tells what became of it."""
    from ..errors import StoreBusy

    def end() -> None:
        give_up = time.monotonic() + ABANDONED_RETRY_S
        while True:
            try:
                outcome = abort_write(ms, write_id, "the caller stopped waiting (bridge timeout) before the "
                                                    "commit could run", ".".join(table) if isinstance(table, tuple)
                                      else str(table))
                if outcome.state == ABORTED:
                    release_files(ms, table, write_id, files)
                return
            except StoreBusy:
                if time.monotonic() > give_up:
                    return  # left UNKNOWN: nothing of it was applied, nothing refers to its files
                time.sleep(1.0)
            except Exception:  # noqa: BLE001 - a closed store at shutdown, anything else: nothing to do
                return

    thread = threading.Thread(target=end, name=f"ushas-end-write-{write_id}", daemon=True)
    thread.start()
    return thread


def get_outcome(ms: Any, write_id: str, checked: bool = False) -> WriteOutcome:
    """What became of write ``write_id`` of ``ms``'s project (a :class:`~ushas_catalog.metastore.Metastore`).
    ``checked``: a client asks; under governance another user's write is refused (:class:`WriteIdTaken`)."""
    check_write_id(write_id)
    found: WriteOutcome = ms.db.run(lambda tr: load_outcome(tr, ms.project_path, write_id))
    writer = Writer.of(ms)
    if checked and writer.other_than(found):
        raise WriteIdTaken(f"write id {write_id} is the id of another user's write: what became of it is theirs "
                           f"to ask", write_id=write_id)
    return found


def list_outcomes(ms: Any, limit: int = 50) -> list[WriteOutcome]:
    """The most recent recorded outcomes, newest first."""
    store = outcome_store(ms.project_path)

    def fn(tr: Transaction) -> list[WriteOutcome]:
        begin, end = store.range()
        return [_outcome(r.key[0], r.record) for r in store.scan(tr, begin, end)]

    found = ms.db.run(fn)
    found.sort(key=lambda o: o.time_micros, reverse=True)
    return found[:limit] if limit else found


#: a COMMITTED outcome younger than this (the shim's ``Staging.GRACE_MS``) is never trimmed: a direct write's
#: staging directory may outlive its commit, and whoever ends it (the next write, ``ushas purge``) asks the
#: outcome: without the record the write would be taken for ABORTED and its committed files deleted
STAGING_GRACE_MICROS = 24 * 3600 * 1_000_000


def still_staged(ms: Any, outcome: WriteOutcome) -> bool:
    """Whether the write's staging directory (``<table location>/_ushas_staging/<write id>``) may still
    exist: it does, or the table's location cannot be looked at (not found: a dropped table has none)."""
    import os

    from ..errors import NotFound
    from .direct_writes import STAGING_DIR
    from .locations import local_path

    if not outcome.table:
        return False
    try:
        location = ms.get_table(outcome.table).location
    except NotFound:
        return False
    except Exception:  # noqa: BLE001 - an unreadable name or table: kept, to be safe
        return True
    local = local_path(location) if location else None
    if local is None:
        return False  # only file: tables write directly (no manifests elsewhere: nothing asks the outcome)
    return os.path.lexists(os.path.join(local, STAGING_DIR, outcome.write_id))


def trim_outcomes(ms: Any, older_than_micros: int, batch: int = 1000) -> int:
    """Removes the outcomes recorded before ``older_than_micros`` (bounded transactions); returns how many.
    A COMMITTED outcome is kept while its write's staging directory may still exist: recorded less than
    :data:`STAGING_GRACE_MICROS` ago, or its staging directory still there (:func:`still_staged`)."""
    store = outcome_store(ms.project_path)

    def scan(tr: Transaction) -> list[WriteOutcome]:
        begin, end = store.range()
        return [_outcome(r.key[0], r.record) for r in store.scan(tr, begin, end)
                if r.record.time_micros < older_than_micros]

    grace = _now_micros() - STAGING_GRACE_MICROS
    doomed = [o.write_id for o in ms.db.run(scan)
              if o.state != COMMITTED or (o.time_micros < grace and not still_staged(ms, o))]
    total = 0
    for i in range(0, len(doomed), batch):
        chunk = doomed[i:i + batch]

        def fn(tr: Transaction) -> int:
            n = 0
            for write_id in chunk:
                r = store.load(tr, (write_id,))
                if r is not None and r.time_micros < older_than_micros:  # still the record scanned
                    store.delete(tr, (write_id,))
                    n += 1
            return n

        total += ms.db.run(fn)
    return total
