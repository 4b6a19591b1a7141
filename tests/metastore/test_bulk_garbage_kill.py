"""A write bigger than one transaction whose garbage (the files its overwrite lets go) is bigger than its publish
transaction takes (``bulk.GARBAGE_IN_PUBLISH``, lowered): the garbage is recorded before the publish, bound to
the write id. Its process killed (SIGKILL) right after the publish, every replaced file is known to purge
(which deletes it); killed right before, purge keeps them while the write may commit, and once ``ushas repair
--pending`` rolled it back (ABORTED) the entries go and the files, still the table's, stay."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from ushas_catalog.bulk import pending_work
from ushas_catalog.check import run_checks
from ushas_catalog.cli import main as cli_main
from ushas_catalog.data.purge import purge
from ushas_catalog.data.write_fence import get_outcome
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition

T = "main.sales.g"
PARTS = 60


def _files(root: Path, tag: str) -> list[DataFile]:
    return [DataFile(f"file:{root}/d={i:03d}/{tag}.parquet", 1, 1) for i in range(PARTS)]


def _child(uri: str, root: Path, write_id: str, kill: str) -> subprocess.Popen[bytes]:
    """An overwrite of every partition (new files ``b``, garbage: the old files ``a``), its process killing
    itself ``after`` or ``before`` the publish."""
    code = textwrap.dedent(f"""
        import os, signal
        from ushas_catalog import bulk
        from ushas_catalog.data import write_fence
        from ushas_catalog.data.garbage import Garbage
        from ushas_catalog.metastore import Metastore
        from ushas_catalog.model.data_files import DataFile
        from ushas_catalog.model.partitions import Partition

        bulk.WRITE_BULK_AT, bulk.WRITE_CHUNK, bulk.GARBAGE_IN_PUBLISH = 50, 17, 10
        real = write_fence.run_fenced
        def run_fenced(*a, **k):
            if {kill!r} == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            out = real(*a, **k)
            os.kill(os.getpid(), signal.SIGKILL)
        write_fence.run_fenced = run_fenced
        ms = Metastore.open({uri!r}, project="acme", user="child")
        old = [DataFile(f"file:{root}/d={{i:03d}}/a.parquet", 1, 1) for i in range({PARTS})]
        new = [Partition(values={{"d": f"{{i:03d}}"}}, data_files=[DataFile(f"file:{root}/d={{i:03d}}/b.parquet", 1, 1)])
               for i in range({PARTS})]
        ms.replace_partitions({T!r}, [], new, operation="OVERWRITE PARTITIONS", garbage=Garbage(files=old),
                              write_id={write_id!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("kill", ["after", "before"])
def test_a_big_overwrites_garbage_survives_a_kill_around_its_publish(sales: Metastore, store_uri: str,
                                                                     tmp_path: Path, kill: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "g"
    sales.create_table(T, "id long, d string", partition_by=["d"], location=f"file:{root}")
    for tag in ("a", "b"):
        for f in _files(root, tag):
            Path(f.path.removeprefix("file:")).parent.mkdir(parents=True, exist_ok=True)
            Path(f.path.removeprefix("file:")).write_bytes(b"x")
    sales.replace_partitions(T, [], [Partition(values={"d": f"{i:03d}"}, data_files=[f])
                                     for i, f in enumerate(_files(root, "a"))], operation="APPEND")
    version = sales.get_table(T).version
    write_id = str(uuid.uuid4())
    child = _child(store_uri, root, write_id, kill)
    _, err = child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL, err.decode()
    old = {f.path for f in _files(root, "a")}
    recorded = {f.path for e in sales.garbage(T) for f in e.files}
    assert recorded == old  # every replaced file is known, bound to the write
    if kill == "after":
        assert get_outcome(sales, write_id).state == "COMMITTED" and sales.get_table(T).version == version + 1
    else:
        assert get_outcome(sales, write_id).state == "UNKNOWN" and sales.get_table(T).version == version
        purge(sales, None)  # the write may still commit: nothing deleted, the entries kept
        assert all(Path(p.removeprefix("file:")).exists() for p in old)
        assert {f.path for e in sales.garbage(T) for f in e.files} == old
    capsys.readouterr()
    assert cli_main(["--uri", store_uri, "--project", "acme", "--json", "repair", "--pending"]) == 0
    assert json.loads(capsys.readouterr().out)["left"] == []
    assert pending_work(sales) == []
    purge(sales, None)
    exists = {p: Path(p.removeprefix("file:")).exists() for p in old}
    if kill == "after":  # committed: the old files were let go, purge deleted them
        assert get_outcome(sales, write_id).state == "COMMITTED" and not any(exists.values())
    else:  # rolled back (ABORTED): the old files are the table's still, the entries went
        assert get_outcome(sales, write_id).state == "ABORTED" and all(exists.values())
        assert sales.garbage(T) == [] and sales.get_table(T).version == version
        assert {f.path for p in sales.list_partitions(T) for f in p.data_files or []} == old
    report = run_checks(sales)
    assert report.ok, report.lines()
