"""Batch writes whose tasks write straight to their final names (issue 38; the shim's
``DirectCommitProtocol``, docs/data-path.md): no attempt directory, no rename, no move at the driver;
only the fenced commit makes the files part of the table, and nothing of a write that did not commit is
ever seen or left behind:

- a committed write's files sit at ``<partition dir>/part-<split>-<write id>-<attempt>…`` and are exactly
  the files the catalog records; no staging directory is left;
- a file of a write that has not committed (its staging directory is there) is skipped by every listing
  of a partition whose files are not recorded (Spark reads, the catalog's own listing);
- ``ushas purge`` ends a dead write: its manifests' files go unless the write COMMITTED (then they are
  the table's and stay);
- a task that fails deletes its own files; the failed job leaves no file and no staging directory.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.data.direct_writes import running_writes
from ushas_catalog.data.purge import purge
from ushas_catalog.data.write_fence import get_outcome
from ushas_catalog.model.names import TableName
from ushas_catalog.spark.writes import list_local_files

pytestmark = pytest.mark.spark

#: a direct write's file name: part-<split>-<write id>-<task attempt>.c000…
NAME = re.compile(r"^part-\d{5}-([0-9a-f-]{36})-\d+\.c\d{3}(\.[a-z0-9]+)*\.parquet$")


def _files(root: Path) -> dict[str, list[str]]:
    """Data files under a table root by partition directory (hidden names and staging skipped)."""
    out: dict[str, list[str]] = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        rel = os.path.relpath(d, root)
        for n in names:
            if not n.startswith(("_", ".")):
                out.setdefault(rel, []).append(n)
    return out


def _dead_pid() -> int:
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                       check=True)
    return int(p.stdout)


def _staging(root: Path, write_id: str, pid: int, listed: list[Path]) -> Path:
    """A staging directory as the shim makes it (``_owner``), with one manifest listing ``listed``."""
    d = root / "_ushas_staging" / write_id
    d.mkdir(parents=True)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    (d / "_owner").write_text(f"host={socket.gethostname()}\nboot={boot}\npid={pid}\nstart=\n")
    (d / "files-7").write_text("".join(f"file:{p}\n" for p in listed))
    return d


def test_direct_write_visible_only_once_committed(spark: Any, db: str, ms: Any) -> None:
    t = f"ushas.{db}.d"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    name = ("ushas", db, "d")
    root = Path(ms.get_table(name).location.removeprefix("file:"))

    # final names carrying the write id and the attempt; exactly what the catalog records; no staging left
    on_disk = _files(root)
    assert sorted(on_disk) == ["dt=a", "dt=b"], on_disk
    ids = {NAME.match(n).group(1) for names in on_disk.values() for n in names}  # type: ignore[union-attr]
    assert len(ids) == 1, on_disk
    write_id = ids.pop()
    assert get_outcome(ms, write_id).state == "COMMITTED"
    recorded = sorted(f.path.removeprefix("file:") for p in ms.list_partitions(name) for f in p.data_files or [])
    assert recorded == sorted(str(root / d / n) for d, names in on_disk.items() for n in names)
    assert not (root / "_ushas_staging").exists()

    # a partition whose files are not recorded (ADD PARTITION: read by listing), holding a file of a
    # write that is still running: neither Spark nor the catalog's listing sees it
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt = 'c')")
    (root / "dt=c").mkdir(exist_ok=True)
    running = str(uuid.uuid4())
    stray = root / "dt=c" / f"part-00000-{running}-9.c000.snappy.parquet"
    shutil.copy(root / "dt=a" / on_disk["dt=a"][0], stray)
    live = _staging(root, running, os.getpid(), [stray])
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'c'").first()[0] == 0
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 3
    assert running in running_writes(str(root))
    (root / "_ushas_staging" / "a").mkdir()  # a directory not named by a write id hides nothing
    assert running_writes(str(root)) == {running}
    (root / "_ushas_staging" / "a").rmdir()
    assert list_local_files(f"file:{root / 'dt=c'}", str(root)) == []
    # purge leaves a running write alone
    purge(ms, TableName.parse(f"ushas.{db}.d"))
    assert stray.exists() and live.exists()
    # without its staging directory the same file is data: the listing above skipped it for that reason
    shutil.rmtree(live)
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'c'").first()[0] == 1

    # a dead write (its driver gone): purge records it ABORTED and deletes its manifests' files
    dead = _staging(root, running, _dead_pid(), [stray])
    purge(ms, TableName.parse(f"ushas.{db}.d"))
    assert not stray.exists() and not dead.exists()
    assert get_outcome(ms, running).state == "ABORTED"
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'c'").first()[0] == 0

    # a dead write that COMMITTED (its driver died after the commit): its files are the table's, kept
    committed = [root / d / n for d, names in on_disk.items() for n in names]
    left = _staging(root, write_id, _dead_pid(), committed)
    purge(ms, TableName.parse(f"ushas.{db}.d"))
    assert not left.exists() and all(p.exists() for p in committed)
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 3

    # the next write ends a dead write the same way (Staging.removeStale, through abort_write)
    other = str(uuid.uuid4())
    orphan = root / "dt=a" / f"part-00001-{other}-3.c000.snappy.parquet"
    shutil.copy(root / "dt=a" / on_disk["dt=a"][0], orphan)
    _staging(root, other, _dead_pid(), [orphan])
    spark.sql(f"INSERT INTO {t} VALUES (4, 'a')")
    assert not orphan.exists() and not (root / "_ushas_staging").exists()
    assert get_outcome(ms, other).state == "ABORTED"
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 4


def test_failed_direct_write_leaves_no_file(spark: Any, db: str, ms: Any) -> None:
    t = f"ushas.{db}.f"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (0, 'a')")
    name = ("ushas", db, "f")
    root = Path(ms.get_table(name).location.removeprefix("file:"))
    before = _files(root)
    version = ms.get_table(name).version
    # the task writes dt=a and dt=b first (rows arrive sorted by partition), then cannot create dt=zz/…
    # (a file is in the way): the task aborts (deletes its files), the job aborts
    (root / "dt=zz").write_text("in the way")
    try:
        with pytest.raises(Exception, match=r"(?i)dt=zz|not a directory|exists as a file|mkdirs"):
            spark.sql(f"INSERT INTO {t} SELECT id, dt FROM VALUES (1, 'a'), (2, 'b'), (3, 'zz') AS v(id, dt)")
    finally:
        (root / "dt=zz").unlink()
    assert _files(root) == before
    assert not (root / "_ushas_staging").exists()
    assert ms.get_table(name).version == version
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 1
    # the partition directory the failed write created is gone: repair finds no partition it never committed
    # (review defect 5)
    assert not (root / "dt=b").exists()
    spark.sql(f"MSCK REPAIR TABLE {t}")
    assert [r[0] for r in spark.sql(f"SHOW PARTITIONS {t}").collect()] == ["dt=a"]


def test_direct_append_records_a_listed_partition(spark: Any, db: str, ms: Any) -> None:
    """A direct append into a partition read by listing (ADD PARTITION) records what the directory held plus
    its own files; so when the committed write's staging directory is still there (between the commit and
    its removal; kept when the outcome was unknown; after a driver crash), a read and a DELETE of that
    partition still see its rows: nothing is lost (review defect 1)."""
    t = f"ushas.{db}.l"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    name = ("ushas", db, "l")
    root = Path(ms.get_table(name).location.removeprefix("file:"))
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt = 'c')")
    (root / "dt=c").mkdir(exist_ok=True)
    manual = root / "dt=c" / "part-00000-by-hand.parquet"  # a file put there by hand: data by listing
    shutil.copy(next((root / "dt=a").glob("part-*.parquet")), manual)
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'c'").first()[0] == 1

    spark.sql(f"INSERT INTO {t} VALUES (5, 'c'), (6, 'c')")
    (c,) = [p for p in ms.list_partitions(name) if p.spec == {"dt": "c"}]
    assert c.data_files is not None, "the listed partition is recorded by the direct write"
    recorded = sorted(os.path.basename(f.path) for f in c.data_files)
    mine = [n for n in recorded if n != manual.name]
    assert manual.name in recorded and mine, recorded
    (write_id,) = {NAME.match(n).group(1) for n in mine}  # type: ignore[union-attr]

    # the committed write's staging directory still there (a live owner: nobody removes it meanwhile)
    left = _staging(root, write_id, os.getpid(), [root / "dt=c" / n for n in mine])
    try:
        assert spark.sql(f"SELECT id FROM {t} WHERE dt = 'c' ORDER BY id").collect() == [(1,), (5,), (6,)]
        spark.sql(f"DELETE FROM {t} WHERE dt = 'c' AND id = 5")
        assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {t} WHERE dt = 'c'").collect()) == [1, 6]
        spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'c') SELECT 7")
        assert spark.sql(f"SELECT id FROM {t} WHERE dt = 'c'").collect() == [(7,)]
    finally:
        shutil.rmtree(left)
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 2



def test_committed_write_removes_files_of_attempts_that_died(spark: Any, db: str, ms: Any) -> None:
    """A task attempt whose executor died leaves files its manifest names and no task message lists: the
    committed write removes them before its staging directory (which hides them from listings) goes."""
    from pyspark.sql.types import IntegerType

    t = f"ushas.{db}.x"
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (0, 'a')")
    name = ("ushas", db, "x")
    root = Path(ms.get_table(name).location.removeprefix("file:"))
    sample = next((root / "dt=a").glob("part-*.parquet"))

    def plant(x: int) -> int:  # in the task, while the write runs: what a dead attempt would have left
        for staging in (root / "_ushas_staging").glob("*"):
            dead = root / "dt=a" / f"part-00009-{staging.name}-999.c000.snappy.parquet"
            if not dead.exists():
                shutil.copy(sample, dead)
                (staging / "files-999").write_text(f"file:{dead}\n")
        return x

    spark.udf.register(f"plant_{db}", plant, IntegerType())
    spark.sql(f"INSERT INTO {t} SELECT plant_{db}(id), dt FROM VALUES (1, 'a'), (2, 'b') AS v(id, dt)")
    on_disk = sorted(str(root / d / n) for d, names in _files(root).items() for n in names)
    recorded = sorted(f.path.removeprefix("file:") for p in ms.list_partitions(name) for f in p.data_files or [])
    assert on_disk == recorded and len(recorded) == 3, (on_disk, recorded)
    assert not any("-999." in p for p in on_disk)
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 3
