"""Opening a store: read-only files and directories are read, never written; a read never creates
a store; a SQLite file that is not an ushas store is refused and left byte-identical; a missing or
damaged commit version counter is ``StoreDamaged`` (never restarted at 0) and ``ushas repair
--counter`` rebuilds it at or above every version the store records."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Iterator

import pytest
from small_store import fill
from readonly_fs import make_read_only

from ushas_catalog.cli import main
from ushas_catalog.errors import NotAStore, StoreDamaged, StoreNotFound, StoreReadOnly
from ushas_catalog.kv import open_database
from ushas_catalog.kv.counter import max_recorded_version, rebuild_counter
from ushas_catalog.metastore import Metastore


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


# ---- read-only files and directories ---------------------------------------------------------------
@pytest.fixture
def ro_dir(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A filled store in a directory that is not writable (no -wal / -shm files can be made)."""
    d = tmp_path / "ro"
    d.mkdir()
    db_path = d / "ushas.db"
    fill(f"sqlite://{db_path}")
    assert sorted(p.name for p in d.iterdir()) == ["ushas.db"]  # closed cleanly: no -wal / -shm
    undo = make_read_only(d)
    try:
        yield f"sqlite://{db_path}", db_path
    finally:
        undo()


def test_a_store_in_a_read_only_directory_is_read(ro_dir: tuple[str, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    uri, path = ro_dir
    before = digest(path)
    rc, out, err = cli(capsys, uri, "tables", "main.sales")
    assert rc == 0 and "orders" in out and err == ""
    rc, out, _ = cli(capsys, uri, "partitions", "main.sales.orders", "--json")
    assert rc == 0 and "2024-01-01" in out
    ms = Metastore.open(uri, project="acme", create=False)
    try:
        assert ms.get_table("main.sales.orders").name == "orders"
        with pytest.raises(StoreReadOnly, match="read-only"):
            ms.create_database("main.other")
    finally:
        ms.close()
    assert digest(path) == before


def test_a_read_only_store_file_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ushas.db"
    uri = f"sqlite://{path}"
    fill(uri)
    undo = make_read_only(path)
    try:
        before = digest(path)
        rc, out, err = cli(capsys, uri, "tables", "main.sales")
        assert rc == 0 and "orders" in out
        rc, out, err = cli(capsys, uri, "drop", "main.sales.orders")
        assert rc == 2 and "StoreReadOnly" in err and len(err.strip().splitlines()) == 1
        assert digest(path) == before
    finally:
        undo()


def test_mode_ro_opens_read_only(tmp_path: Path) -> None:
    uri = f"sqlite://{tmp_path / 'u.db'}"
    fill(uri)
    ms = Metastore.open(uri + "?mode=ro", project="acme", create=False)
    try:
        assert [c.name for c in ms.list_catalogs()] == ["main"]
        with pytest.raises(StoreReadOnly):
            ms.create_catalog("other")
    finally:
        ms.close()


# ---- a read never creates a store -------------------------------------------------------------------
def test_a_missing_store_is_an_error_on_read_and_nothing_is_created(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing2" / "u.db"
    uri = f"sqlite://{path}"
    for argv in (["tables", "ushas.sales"], ["catalogs", "--json"], ["lineage", "upstream", "a.b.c", "--json"],
                 ["changes", "head"], ["drop", "a.b"]):
        rc, out, err = cli(capsys, uri, *argv)
        assert rc == 2 and err.strip().startswith(f"ushas: StoreNotFound: store not found: {path}; "), argv
        assert "--uri" in err and "USHAS_URI" in err and "ushas init" in err and err.count("\n") == 1
    with pytest.raises(StoreNotFound, match="store not found"):
        Metastore.open(uri, create=False)
    assert not path.parent.exists()


def test_init_creates_the_store_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite://{tmp_path / 'new' / 'u.db'}"
    rc, out, _ = cli(capsys, uri, "init")
    assert rc == 0 and "created a new store" in out
    rc, out, _ = cli(capsys, uri, "init", "--json")
    assert rc == 0 and '"created": false' in out
    rc, out, err = cli(capsys, uri, "catalogs")
    assert rc == 0 and err == ""


# ---- a file that is not a store ---------------------------------------------------------------------
@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path: Path, journal: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users VALUES (1, 'ann')")
    conn.commit()
    conn.close()
    before = digest(path)
    uri = f"sqlite://{path}"
    for argv in (["catalogs"], ["init"], ["repair", "--counter"]):
        rc, _, err = cli(capsys, uri, *argv)
        assert rc == 2 and f"not an ushas store: {path}" in err, argv
    with pytest.raises(NotAStore, match="not an ushas store"):
        Metastore.open(uri)  # even where creating is allowed
    assert digest(path) == before
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["users"]
    conn.close()


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"my notes, not a database\n" * 200)
    before = digest(path)
    with pytest.raises(NotAStore, match="not an ushas store"):
        Metastore.open(f"sqlite://{path}")
    assert digest(path) == before


# ---- the commit version counter -----------------------------------------------------------------------
DAMAGES = {
    "meta table dropped": "DROP TABLE meta",
    "counter record deleted": "DELETE FROM meta WHERE name = 'commit_version'",
    "counter not a number": "UPDATE meta SET value = 'garbage' WHERE name = 'commit_version'",
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_counter_is_found_at_open_and_rebuilt(tmp_path: Path, damage: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "u.db"
    uri = f"sqlite://{path}"
    fill(uri)
    ms = Metastore.open(uri, project="acme")
    cursor = ms.change_feed.latest_cursor()
    events = [c.cursor for c in ms.changes()]
    ms.close()
    db = open_database(uri)
    recorded, _ = max_recorded_version(db)
    counter = db.commit_version()  # type: ignore[attr-defined]
    db.close()
    assert recorded > 0 and counter >= recorded

    conn = sqlite3.connect(path)
    conn.execute(DAMAGES[damage])
    conn.commit()
    conn.close()

    for create in (True, False):
        with pytest.raises(StoreDamaged, match=r"repair --counter"):
            Metastore.open(uri, project="acme", create=create)
    rc, _, err = cli(capsys, uri, "tables", "main.sales")
    assert rc == 2 and "StoreDamaged" in err and "ushas --uri URI repair --counter" in err

    rc, out, _ = cli(capsys, uri, "repair", "--counter", "--dry-run")
    assert rc == 0 and "would set it to" in out
    with pytest.raises(StoreDamaged):  # a dry run changed nothing
        Metastore.open(uri, project="acme")

    rc, out, _ = cli(capsys, uri, "repair", "--counter", "--json")
    assert rc == 0 and f'"repaired_to": {recorded}' in out

    # versions go on from there: a new commit's event comes after every earlier one
    ms = Metastore.open(uri, project="acme")
    try:
        ms.create_database("main.after")
        new = [c.cursor for c in ms.changes(since=cursor)]
        assert len(new) == 1 and new[0] not in events
        assert [c.cursor for c in ms.changes()] == events + new
    finally:
        ms.close()
    report = rebuild_counter(uri, dry_run=True)
    assert report.healthy and report.counter is not None and report.counter > recorded


def test_repair_counter_is_routed_past_the_global_options() -> None:
    from ushas_catalog.cli.store_cmds import route_counter

    assert route_counter(["--uri", "sqlite:///x", "--project", "repair", "repair", "--dry-run", "--counter"]) == \
        ["--uri", "sqlite:///x", "--project", "repair", "repair-counter", "--dry-run"]
    assert route_counter(["--uri=sqlite:///x", "repair", "main.db.t", "--dry-run"]) == \
        ["--uri=sqlite:///x", "repair", "main.db.t", "--dry-run"]  # the partition repair's own command
    assert route_counter(["tables", "repair", "--counter"]) == ["tables", "repair", "--counter"]


def test_the_counter_scan_reads_again_a_batch_that_outlasted_the_transaction_time(tmp_path: Path) -> None:
    """``ushas check``'s counter check and ``ushas repair --counter`` scan every key in read transactions of
    5,000 keys; on a starved process one such transaction can outlast the 5 s limit (seen at load 11: "transaction
    is 6.95 s old"). The scan reads that batch again in smaller ones and gives the same answer."""
    from ushas_catalog.errors import LimitExceeded

    uri = f"sqlite://{tmp_path / 'u.db'}"
    fill(uri)
    with Metastore.open(uri, project="acme") as ms:  # enough keys for several batches of 78
        ms.create_table("main.sales.many", "id INT, dt STRING", partition_by=["dt"])
        ms.add_partitions("main.sales.many", [{"dt": str(i)} for i in range(60)])
    db = open_database(uri)
    try:
        expected = max_recorded_version(db)
        assert expected[1] > 150 and expected[0] > 0
        real = db.run
        sizes: list[int] = []

        class Slow:  # a transaction whose read of more than 100 keys outlasts the time limit
            def __init__(self, tr: object) -> None:
                self.tr = tr

            def get_range(self, begin: bytes, end: bytes, limit: int) -> object:
                sizes.append(limit)
                if limit > 100:
                    raise LimitExceeded("transaction is 6.95 s old", limit="transaction_seconds")
                return self.tr.get_range(begin, end, limit=limit)  # type: ignore[attr-defined]

        db.run = lambda fn: real(lambda tr: fn(Slow(tr)))  # type: ignore[method-assign]
        assert max_recorded_version(db) == expected
        assert sizes[:3] == [5_000, 1_250, 312] and set(sizes[3:]) == {78}
    finally:
        db.close()
