"""Without Spark: bucket specs (parsing Spark's transforms, checks, storage, ALTER TABLE), what a table
LIKE another takes, and what ``ushas purge`` does with a staged (atomic CTAS) write's leftovers."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.bucketing import Bucketing, from_transform


@pytest.mark.parametrize("name, text, expected", [
    ("bucket", "bucket(4, a)", Bucketing(4, ["a"], [])),
    ("bucket", "bucket(16, a, `b, c`)", Bucketing(16, ["a", "b, c"], [])),
    ("sorted_bucket", "sorted_bucket(a, b, 8, s, t)", Bucketing(8, ["a", "b"], ["s", "t"])),
    ("sorted_bucket", "sorted_bucket(`x``y`, 2, `1`)", Bucketing(2, ["x`y"], ["1"])),
])
def test_spark_transforms(name: str, text: str, expected: Bucketing) -> None:
    assert from_transform(name, text) == expected


def test_checks_storage_and_alter(store_uri: str) -> None:
    from ushas_catalog.model.table_changes import AddColumn, DeleteColumn

    ms = Metastore.open(store_uri)
    ms.create_catalog("c")
    ms.create_database("c.d")
    t = ms.create_table("c.d.t", "A INT, b STRING, dt STRING", partition_by=["dt"],
                        bucketing=Bucketing(4, ["a"], ["B"]))
    assert t.bucketing == Bucketing(4, ["A"], ["b"])  # the columns' own spelling
    assert ms.get_table("c.d.t").to_json()["bucketing"] == {"num_buckets": 4, "columns": ["A"], "sort_columns": ["b"]}
    for bad, message in [(Bucketing(0, ["a"]), "greater than 0"), (Bucketing(2, []), "at least one"),
                         (Bucketing(2, ["zz"]), "not a column"), (Bucketing(2, ["dt"]), "partition column")]:
        with pytest.raises(InvalidArgument, match=message):
            ms.create_table("c.d.bad", "a INT, dt STRING", partition_by=["dt"], bucketing=bad)
    from ushas_catalog.model.schema import parse_type

    ms.alter_table("c.d.t", [AddColumn(("x",), parse_type("INT"))])
    assert ms.get_table("c.d.t").bucketing == Bucketing(4, ["A"], ["b"])
    with pytest.raises(InvalidArgument, match="bucketed by it"):
        ms.alter_table("c.d.t", [DeleteColumn(("b",))])
    assert ms.get_table("c.d.t", as_of=1).bucketing == Bucketing(4, ["A"], ["b"])
    assert ms.create_table("c.d.plain", "a INT").bucketing is None


def test_like_takes_what_the_session_catalog_takes() -> None:
    from ushas_catalog.spark.like import like_request

    src = {"name": "s", "properties": {"provider": "orc", "option.compression": "zlib", "p": "1", "comment": "c"}}
    out = like_request({"properties": {"q": "2"}, "like": src, "schema": "{}"})
    assert out["properties"] == {"q": "2", "provider": "orc", "option.compression": "zlib"}
    assert "like" not in out
    assert like_request({"properties": {"provider": "json"}, "like": src})["properties"]["provider"] == "json"
    view = {"name": "v", "type": "VIEW", "properties": {"option.x": "1"}}
    assert like_request({"properties": {}, "like": view})["properties"] == {"provider": "parquet"}
    hive = {"name": "h", "provider": "hive", "serde": "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
            "properties": {"option.serialization.format": "1"}}
    assert like_request({"properties": {}, "like": hive})["properties"] == {"provider": "orc"}
    text = {"name": "h", "provider": "hive", "serde": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"}
    with pytest.raises(InvalidArgument, match="add USING"):
        like_request({"properties": {}, "like": text})


def _staged(ms: Any, tmp_path: Path, write_id: str, owner_pid: int) -> tuple[Path, Path]:
    """A staged write's entry as stage_table / stage_files record it, its staging directory (owned by
    ``owner_pid``) and one placed file."""
    from ushas_catalog.catalog.values import now_micros
    from ushas_catalog.data.garbage import Garbage, record_garbage
    from ushas_catalog.data.staged import add_staged_files, staged_id, staged_operation
    from ushas_catalog.model.data_files import DataFile

    staging = tmp_path / "t" / "_ushas_staging" / write_id
    staging.mkdir(parents=True)
    (staging / "_owner").write_text(f"host=x\npid={owner_pid}\nstart=\n")
    placed = tmp_path / "t" / f"part-0-{write_id}.parquet"
    placed.write_bytes(b"x")
    ms.db.run(lambda tr: record_garbage(tr, ms.project_path, staged_id(write_id), "c.d.t",
                                       staged_operation("CREATE TABLE AS SELECT", write_id),
                                       Garbage(files=[DataFile(f"file:{staging}", 0, 0)]), now_micros()))
    add_staged_files(ms, write_id, [DataFile(f"file:{placed}", 1, 0)])
    return staging, placed


def test_purge_removes_a_dead_staged_write_and_keeps_a_live_one(store_uri: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from ushas_catalog.data import purge as purge_module
    from ushas_catalog.data.staged import staged_write
    from ushas_catalog.data.write_fence import get_outcome

    monkeypatch.setattr(socket, "gethostname", lambda: "x")
    monkeypatch.setattr(purge_module, "_boot_id", lambda: None)
    ms = Metastore.open(store_uri)
    live_staging, live_file = _staged(ms, tmp_path / "live", "w-live", os.getpid())
    dead_staging, dead_file = _staged(ms, tmp_path / "dead", "w-dead", 2 ** 22 + 12345)  # no such process
    summary = purge_module.purge(ms)
    assert summary.garbage == 1
    assert not dead_staging.exists() and not dead_file.exists()
    assert live_staging.exists() and live_file.exists()  # its writer runs: nothing of it is touched
    assert [staged_write(e) for e in ms.garbage()] == ["w-live"]
    assert get_outcome(ms, "w-dead").state == "ABORTED"  # it can never commit now
    assert get_outcome(ms, "w-live").state == "UNKNOWN"


def test_check_reports_a_dead_staged_write_until_purge(store_uri: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from ushas_catalog.check import run_checks
    from ushas_catalog.data import purge as purge_module

    monkeypatch.setattr(socket, "gethostname", lambda: "x")
    monkeypatch.setattr(purge_module, "_boot_id", lambda: None)
    ms = Metastore.open(store_uri)
    _staged(ms, tmp_path / "live", "w-live", os.getpid())
    assert run_checks(ms, ["staged-writes"]).ok  # running: not a problem
    _staged(ms, tmp_path / "dead", "w-dead", 2 ** 22 + 12345)
    found = run_checks(ms, ["staged-writes"]).findings
    assert [(f.where, "ushas purge" in f.problem) for f in found] == [("c.d.t", True)]
    purge_module.purge(ms)
    assert run_checks(ms, ["staged-writes"]).ok


def test_a_staged_write_of_many_files_records_them_in_entries_purge_and_check_read_alone(
        store_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A staged write placing more files than one entry takes (a CTAS of 100,000 partitions would write
    over 10 MB into one transaction) records them in several entries, each starting with the staging
    directory: ``check`` reports the write once, ``purge`` deletes every file and forgets every entry,
    and a commit's ``forget_staged`` removes them all."""
    import socket

    from ushas_catalog.check import run_checks
    from ushas_catalog.data import purge as purge_module
    from ushas_catalog.data import staged as staged_module
    from ushas_catalog.data.staged import add_staged_files, forget_staged, staged_write
    from ushas_catalog.model.data_files import DataFile

    monkeypatch.setattr(socket, "gethostname", lambda: "x")
    monkeypatch.setattr(purge_module, "_boot_id", lambda: None)
    monkeypatch.setattr(staged_module, "FILES_PER_ENTRY", 3)
    ms = Metastore.open(store_uri)
    staging, first = _staged(ms, tmp_path / "dead", "w-dead", 2 ** 22 + 12345)  # no such process
    more = []
    for i in range(7):
        f = tmp_path / "dead" / "t" / f"dt={i}" / "part-0.parquet"
        f.parent.mkdir(parents=True)
        f.write_bytes(b"x")
        more.append(f)
    add_staged_files(ms, "w-dead", [DataFile(f"file:{f}", 1, 0) for f in more])
    entries = [e for e in ms.garbage() if staged_write(e) == "w-dead"]
    # the first entry: its staging directory, the first file and 3 more; then two new entries
    assert sorted(len(e.files) for e in entries) == [2, 4, 5]
    assert all(e.files[0].path == f"file:{staging}" for e in entries)
    found = run_checks(ms, ["staged-writes"]).findings
    assert len(found) == 1 and "left 9 path(s)" in found[0].problem
    purge_module.purge(ms)
    assert not staging.exists() and not first.exists() and not any(f.exists() for f in more)
    assert [e for e in ms.garbage() if staged_write(e) == "w-dead"] == []
    assert run_checks(ms, ["staged-writes"]).ok

    _staged(ms, tmp_path / "live", "w-live", os.getpid())
    add_staged_files(ms, "w-live", [DataFile(f"file:/x/{i}", 1, 0) for i in range(7)])
    assert len([e for e in ms.garbage() if staged_write(e) == "w-live"]) == 3
    forget_staged(ms, "w-live")
    assert [e for e in ms.garbage() if staged_write(e) == "w-live"] == []
