"""Cursors: resuming never misses nor repeats an event, also while other processes write;
retention trims with one range clear and refuses cursors it made stale."""
from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ushas_catalog.changes.feed import decode_cursor, encode_cursor, parse_duration
from ushas_catalog.errors import CursorExpired, InvalidArgument
from ushas_catalog.kv.sqlite import SqliteTransaction
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty

T = "main.sales.orders"
WRITER = """
import sys
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty
uri, table, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Metastore.open(uri, project="acme", user=table) as ms:
    for i in range(n):
        ms.alter_table(table, [SetProperty("i", str(i))])
"""


def _alters(ms: Metastore, n: int, table: str = T) -> None:
    for i in range(n):
        ms.alter_table(table, [SetProperty("i", str(i))])


def test_resuming_from_each_cursor_gives_exactly_the_rest(ms: Metastore) -> None:
    ms.create_table(T, "id INT")
    _alters(ms, 12)
    everything = list(ms.changes())
    assert len(everything) == 2 + 1 + 12
    cursors = [e.cursor for e in everything]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
    for i, e in enumerate(everything):
        assert [x.cursor for x in ms.changes(since=e.cursor)] == cursors[i + 1:]
    # a consumer reading 4 at a time, stopping and resuming
    seen: list[str] = []
    cursor = None
    while True:
        batch = ms.change_feed.read(cursor, limit=4)
        if not batch:
            break
        seen += [e.cursor for e in batch]
        cursor = batch[-1].cursor
    assert seen == cursors
    assert ms.change_feed.latest_cursor() == cursors[-1]
    assert list(ms.changes(since=cursors[-1])) == []


@pytest.mark.slow
def test_a_consumer_following_concurrent_writers_misses_and_repeats_nothing(ms: Metastore, store_uri: str,
                                                                             tmp_path: Path) -> None:
    tables = [f"main.sales.t{i}" for i in range(3)]
    for t in tables:
        ms.create_table(t, "id INT")
    start = ms.change_feed.latest_cursor()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    per_writer = 40
    procs = [subprocess.Popen([sys.executable, str(script), store_uri, t, str(per_writer)]) for t in tables]
    seen = []
    cursor = start
    deadline = time.monotonic() + 240
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for e in ms.changes(since=cursor, batch=3):  # small batches: many resumes mid-stream
            seen.append(e)
            cursor = e.cursor
        time.sleep(0.01)
    assert [p.wait(timeout=60) for p in procs] == [0] * len(procs)
    seen += list(ms.changes(since=cursor))
    assert [e.cursor for e in seen] == [e.cursor for e in ms.changes(since=start)]
    assert len(seen) == len(tables) * per_writer
    for t in tables:
        versions = [e.version for e in seen if e.name == t]
        assert versions == list(range(2, 2 + per_writer)), t  # in commit order, none missing or twice


def test_bad_cursors_are_refused_clearly(ms: Metastore) -> None:
    for bad in ("", "abc", "fc1-", "fc1-zz0000000000000000000000", "fc1-00", "fc2-000000000000000100000000",
                "fc1-0000000000000001000000000000"):
        with pytest.raises(InvalidArgument, match="invalid change feed cursor"):
            list(ms.changes(since=bad))
    with pytest.raises(InvalidArgument, match="limit"):
        ms.change_feed.read(None, limit=0)
    stamp = bytes(range(12))
    assert decode_cursor(encode_cursor(stamp)) == stamp


def test_trim_removes_old_events_with_one_range_clear(ms: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    ms.create_table(T, "id INT")
    _alters(ms, 3)
    old = list(ms.changes())
    time.sleep(0.01)
    boundary = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.01)
    _alters(ms, 2)
    new = list(ms.changes(since=old[-1].cursor))
    clears: list[tuple[bytes, bytes]] = []
    original = SqliteTransaction.clear_range

    def spy(self: SqliteTransaction, begin: bytes, end: bytes) -> None:
        clears.append((begin, end))
        original(self, begin, end)

    monkeypatch.setattr(SqliteTransaction, "clear_range", spy)
    result = ms.change_feed.trim(before=boundary, batch=2)
    monkeypatch.undo()
    assert (result.removed, result.last_removed) == (len(old), old[-1].cursor)
    assert len(clears) == 1 and clears[0][0] == ms.change_feed.events_prefix
    assert [e.cursor for e in ms.changes()] == [e.cursor for e in new]
    assert ms.change_feed.trimmed_cursor() == old[-1].cursor
    # a cursor at the last trimmed event still resumes; an older one is refused, naming why
    assert [e.cursor for e in ms.changes(since=old[-1].cursor)] == [e.cursor for e in new]
    with pytest.raises(CursorExpired, match="retention"):
        list(ms.changes(since=old[1].cursor))
    # nothing older than the horizon: nothing removed
    assert ms.change_feed.trim(dt.timedelta(days=7)).removed == 0
    # everything, then the feed goes on
    assert ms.change_feed.trim(dt.timedelta(0)).removed == len(new)
    assert list(ms.changes()) == []
    ms.alter_table(T, [SetProperty("after", "trim")])
    assert [e.version for e in ms.changes(since=new[-1].cursor)] == [7]
    with pytest.raises(InvalidArgument):
        ms.change_feed.trim()


def test_durations() -> None:
    assert parse_duration("7d") == dt.timedelta(days=7)
    assert parse_duration("90s") == dt.timedelta(seconds=90)
    assert parse_duration("2w") == dt.timedelta(weeks=2)
    for bad in ("", "7", "d", "7y", "-1d", "1.5h"):
        with pytest.raises(InvalidArgument, match="invalid duration"):
            parse_duration(bad)
