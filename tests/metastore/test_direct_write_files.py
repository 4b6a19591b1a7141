"""The Python side of direct writes' files (issue 38, review of the direct-write change): what a manifest may
make the cleanup delete, what an abort's cleanup removes, and the order in which a listing and the set of
running writes are read. No Spark: tests/spark/test_direct_writes.py drives the real writes."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.data.direct_writes import CREATED_DIR, manifest_files, remove_created_dirs, running_writes
from ushas_catalog.model.partitions import Partition
from ushas_catalog.spark.writes import list_local_files, plan_write


def _table(tmp_path: Path) -> tuple[Path, str, Path]:
    """A table root with a partition directory holding one data file, and a write's staging directory."""
    root = tmp_path / "tbl"
    (root / "dt=a").mkdir(parents=True)
    (root / "dt=a" / "part-00000-older.parquet").write_bytes(b"old")
    write_id = str(uuid.uuid4())
    staging = root / "_ushas_staging" / write_id
    staging.mkdir(parents=True)
    return root, write_id, staging


def test_manifest_lines_name_only_the_writes_own_regular_files(tmp_path: Path) -> None:
    """A torn or forged manifest line never makes the cleanup delete a directory, the table's root, another
    file of the table or anything outside it: only regular files under the root named by the write id."""
    root, write_id, staging = _table(tmp_path)
    mine = root / "dt=a" / f"part-00000-{write_id}-1.c000.parquet"
    mine.write_bytes(b"x")
    (root / f"dt=b-{write_id}").mkdir()  # a directory whose name carries the id
    outside = tmp_path / f"part-00000-{write_id}-1.parquet"  # the id, but not under the table's root
    outside.write_bytes(b"y")
    link = root / "dt=a" / f"part-00001-{write_id}-1.c000.parquet"
    link.symlink_to(outside)
    lines = [f"file:{mine}", f"file:{root / 'dt=a'}", f"file:{root}", "file:" + str(root)[:-2],
             f"file:{root / 'dt=a' / 'part-00000-older.parquet'}", f"file:{root / f'dt=b-{write_id}'}",
             f"file:{outside}", f"file:{root / 'dt=a' / '..' / '..' / outside.name}", f"file:{link}",
             f"{CREATED_DIR}file:{root / 'dt=a'}", "not a path", "file:/"]
    (staging / "files-3").write_text("\n".join(lines) + "\n")
    assert manifest_files(f"file:{staging}") == [f"file:{mine}"]


def test_remove_created_dirs_only_empty_ones_under_the_root(tmp_path: Path) -> None:
    """An abort's cleanup removes the partition directories the write created (manifest ``dir`` lines) when
    empty, deepest first; a directory with a file in it, or outside the table's root, stays."""
    root, write_id, staging = _table(tmp_path)
    (root / "dt=n" / "h=1").mkdir(parents=True)  # a new two-level partition the write created, empty
    (root / "dt=m").mkdir()
    (root / "dt=m" / "part-00000-other.parquet").write_bytes(b"z")  # another write's file landed there
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (staging / "files-1").write_text(
        f"{CREATED_DIR}file:{root / 'dt=n' / 'h=1'}\n{CREATED_DIR}file:{root / 'dt=n'}\n"
        f"{CREATED_DIR}file:{root / 'dt=m'}\n{CREATED_DIR}file:{elsewhere}\n{CREATED_DIR}file:{root}\n")
    assert remove_created_dirs(f"file:{staging}") == 2
    assert not (root / "dt=n").exists()
    assert (root / "dt=m").is_dir() and elsewhere.is_dir() and root.is_dir()


def test_running_writes_are_read_after_the_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that starts while a partition is listed (its staging directory, then its first file, appear
    just before the directory is read) is still known running: its file is not taken for data. Read
    before the listing, the set of running writes would miss it (review defect 2)."""
    root = tmp_path / "tbl"
    custom = tmp_path / "custom-c"  # a partition at its own location, files not recorded: listed
    custom.mkdir(parents=True)
    (custom / "part-00000-older.parquet").write_bytes(b"old")
    racing = str(uuid.uuid4())
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if str(path) == str(custom) and not (root / "_ushas_staging" / racing).exists():
            (root / "_ushas_staging" / racing).mkdir(parents=True)
            # a task writes its manifest before its first file (a staging directory without one is a staged write's)
            (root / "_ushas_staging" / racing / "files-0").write_text(f"file:{custom}/part-00000-{racing}-0.c000.parquet\n")
            (custom / f"part-00000-{racing}-0.c000.parquet").write_bytes(b"new")
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    existing = [Partition(values={"dt": "c"}, spec={"dt": "c"}, location=f"file:{custom}", data_files=None)]
    new = {"path": f"file:{root}/dt=c/part-00000-{uuid.uuid4()}-0.c000.parquet", "size": 3, "mtime": 1}
    plan = plan_write(f"file:{root}", ["dt"], existing, None, {}, "append", [],
                      [{"path": "dt=c", "files": [new], "existing": []}], 1)
    (put,) = plan.put
    assert put.data_files is not None
    assert sorted(os.path.basename(f.path) for f in put.data_files) == sorted(
        ["part-00000-older.parquet", os.path.basename(new["path"])])
    listed = list_local_files(f"file:{custom}", f"file:{root}")
    assert [os.path.basename(f.path) for f in listed or []] == ["part-00000-older.parquet"]


@pytest.mark.parametrize("there", [[], [{"path": "file:/t/dt=a/part-00000-older.parquet", "size": 5, "mtime": 1}]])
def test_direct_append_into_a_listed_partition_records_it(there: list[dict[str, Any]]) -> None:
    """A direct write's append into a partition (or unpartitioned table) read by listing records what the
    directory held plus its files: its committed files never depend on a listing (review defect 1). The
    staged path keeps listing a directory that held files."""
    new = {"path": "file:/t/dt=a/part-00000-w-0.c000.parquet", "size": 3, "mtime": 2}
    listed_part = [Partition(values={"dt": "a"}, spec={"dt": "a"}, location="file:/t/dt=a", data_files=None)]
    for record in (True, False):
        plan = plan_write("file:/t", ["dt"], listed_part, None, {}, "append", [],
                          [{"path": "dt=a", "files": [new], "existing": there}], 1, record_listed=record)
        files = plan.put[0].data_files
        if record or not there:
            assert [f.path for f in files or []] == [f["path"] for f in there] + [new["path"]]
        else:
            assert files is None
        table = plan_write("file:/t", [], [], None, {"rows": None}, "append", [],
                           [{"path": "", "files": [new], "existing": there}], 1, record_listed=record)
        if record or not there:
            assert [f.path for f in table.table_files or []] == [f["path"] for f in there] + [new["path"]]
        else:
            assert table.table_files is None


def test_only_a_direct_writes_staging_directory_hides_files(tmp_path: Path) -> None:
    """A staged write's staging directory (no manifest: its files move into place just before it registers
    them) hides nothing, so its committed files are never skipped by a listing while the directory is still
    there; a direct write's (a manifest, written before its first file) hides its files."""
    root = tmp_path / "tbl"
    staged, direct = str(uuid.uuid4()), str(uuid.uuid4())
    (root / "_ushas_staging" / staged / "_temporary").mkdir(parents=True)
    (root / "_ushas_staging" / staged / "_owner").write_text("host=x\n")
    (root / "_ushas_staging" / direct).mkdir(parents=True)
    (root / "_ushas_staging" / direct / "files-3").write_text("")
    assert running_writes(str(root)) == {direct}
    assert running_writes(f"file:{root}") == {direct}
