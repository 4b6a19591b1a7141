"""A full disk and a store locked by another process past the busy timeout: the writer sees a clear
error (API: the error type and message; CLI: one line, exit 2), nothing is half-written, ``ushas
check`` passes, reads keep working, and writes work again once the fault is gone."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from ushas_catalog.check import check_store
from ushas_catalog.errors import StoreBusy, StoreUnavailable
from ushas_catalog.metastore import Metastore

from faults.store_fill import dump

#: bytes of the small filesystem the store lives on
DISK_BYTES = 4 * 1024 * 1024
#: a file taking part of it, removed to free space (half of it: after SQLITE_FULL the next write first
#: checkpoints the WAL into the database file, which grows by up to the WAL's size)
BALLAST_BYTES = 2 * 1024 * 1024


def _mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


class SmallDisk:
    """A directory on a filesystem of DISK_BYTES: a tmpfs when this runs as root and may mount, else the
    same limit injected at the engine (SQLite's ``max_page_count`` gives a real SQLITE_FULL). A ballast
    file (or, injected, part of the page budget) is freed by :meth:`free`."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = path
        self.mounted = _mount_tmpfs(path)
        self.how = "tmpfs" if self.mounted else "max_page_count"
        self.pages = (DISK_BYTES - BALLAST_BYTES) // 4096
        if not self.mounted:
            from ushas_catalog.kv import sqlite as engine

            connect = engine.SqliteDatabase._connect
            disk = self

            def limited(db: engine.SqliteDatabase) -> object:
                conn = connect(db)
                if not db.read_only:
                    conn.execute(f"PRAGMA max_page_count = {disk.pages}")
                return conn

            monkeypatch.setattr(engine.SqliteDatabase, "_connect", limited)
        (path / "ballast").write_bytes(b"\0" * BALLAST_BYTES)

    def free(self) -> None:
        (self.path / "ballast").unlink()
        self.pages += BALLAST_BYTES // 4096

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    disk = tmp_path / "disk"
    disk.mkdir()
    d = SmallDisk(disk, monkeypatch)
    try:
        yield d
    finally:
        d.close()


def _fill_until_full(ms: Metastore) -> tuple[list[str], StoreUnavailable]:
    made: list[str] = []
    for i in range(10_000):
        name = f"main.s.t{i}"
        try:
            ms.create_table(name, "id INT, v STRING, dt STRING", partition_by=["dt"],
                            properties={"pad": "p" * 20_000})
            ms.add_partitions(name, [{"dt": f"2024-01-{k:02d}-{'x' * 200}"} for k in range(40)])
        except StoreUnavailable as exc:
            return made, exc
        made.append(name)
    raise AssertionError("the disk never filled up")


def test_a_full_disk_fails_the_write_clearly_and_costs_nothing(small_disk: SmallDisk) -> None:
    uri = f"sqlite:///{small_disk.path / 'ushas.db'}"
    ms = Metastore.open(uri, project="acme")
    try:
        ms.create_catalog("main")
        ms.create_database("main.s")
        made, exc = _fill_until_full(ms)
        assert made, "nothing fitted"
        assert "full" in exc.message and "SQLITE_FULL" in exc.message, exc.message
        assert len(exc.message) < 400
        before = dump(ms, project_only=False)
        # every table is whole: the ones made have all their partitions, the one that failed is absent or whole
        for name in [t.name for t in ms.list_tables("main.s")]:
            n = sum(1 for _ in ms.list_partitions(f"main.s.{name}"))
            assert n in (0, 40), (name, n)
            assert n == 40 or f"main.s.{name}" not in made
        if small_disk.how == "tmpfs":  # full for every process: the CLI says so in one line, exit 2
            for j in range(10_000):  # fill what is left with small writes, until one of 4 kB fails
                try:
                    ms.metadata.set(made[0], {f"k{j}": "v" * 4000})
                except StoreUnavailable:
                    break
            before = dump(ms, project_only=False)
            done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, "--project", "acme",
                                   "meta", "set", made[0], "x=" + "v" * 4000, "y=" + "w" * 4000],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert done.stderr.startswith("ushas: StoreUnavailable: ") and "full" in done.stderr, done.stderr
            assert dump(ms, project_only=False) == before
        report = check_store(uri, "acme")
        assert report.ok, report.lines()
        assert len(ms.list_tables("main.s")) >= len(made)  # reads keep working
        small_disk.free()  # space comes back: writes work again
        ms.close()
        ms = Metastore.open(uri, project="acme")
        ms.create_table("main.s.after", "id INT")
        assert ms.table_exists("main.s.after")
        assert check_store(uri, "acme").ok
    finally:
        ms.close()


def test_a_store_locked_past_the_busy_timeout(store_uri: str, tmp_path: Path) -> None:
    from store_lock import LockHolder

    uri = store_uri + "?busy_timeout_ms=200"
    with Metastore.open(uri, project="acme") as ms:
        ms.create_catalog("main")
        ms.create_database("main.s")
        ms.create_table("main.s.t", "id INT, dt STRING", partition_by=["dt"])
        before = dump(ms, project_only=False)
        holder = LockHolder(tmp_path / "ushas.db")
        try:
            with pytest.raises(StoreBusy) as info:
                ms.add_partitions("main.s.t", [{"dt": "a"}, {"dt": "b"}])
            assert "stayed locked by another process's write" in info.value.message
            assert "try again later" in info.value.message
            done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, "--project", "acme",
                                   "meta", "set", "main.s.t", "k=v"], capture_output=True, text=True, timeout=120)
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert done.stderr.startswith("ushas: StoreBusy: ") and "try again later" in done.stderr
            # readers never wait: reads and the check answer while the lock is held
            assert [t.name for t in ms.list_tables("main.s")] == ["t"]
            report = check_store(store_uri, "acme")
            assert report.ok, report.lines()
            done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, "--project", "acme",
                                   "check"], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
        finally:
            holder.release()
        assert dump(ms, project_only=False) == before
        ms.add_partitions("main.s.t", [{"dt": "a"}, {"dt": "b"}])
        assert [p.values["dt"] for p in ms.list_partitions("main.s.t")] == ["a", "b"]
    assert check_store(store_uri, "acme").ok
