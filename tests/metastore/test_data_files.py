"""Recorded data files (partitions, unpartitioned tables), the data kept until purge, overwrite
conflicts and ``ushas purge``, without Spark."""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ushas_catalog.model.data_files import DataFile
from ushas_catalog.data.garbage import Garbage
from ushas_catalog.data.purge import parse_age, purge, stale_staging
from ushas_catalog.errors import InvalidArgument, WriteConflict
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import Partition

SCHEMA = "id INT, dt STRING"


def files(root: Path, d: str, n: int, tag: str = "f") -> list[DataFile]:
    out = []
    (root / f"dt={d}").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        p = root / f"dt={d}" / f"{tag}-{i}.parquet"
        p.write_bytes(b"x" * (i + 1))
        out.append(DataFile(f"file:{p}", i + 1, int(p.stat().st_mtime * 1000)))
    return out


@pytest.fixture
def table(sales: Metastore, tmp_path: Path) -> tuple[Metastore, Path]:
    root = tmp_path / "t"
    sales.create_table("main.sales.t", SCHEMA, partition_by=["dt"], location=f"file:{root}")
    return sales, root


def test_partitions_keep_their_file_lists(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    fa = files(root, "a", 2)
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=fa),
                                                Partition({"dt": "b"}, data_files=[])])
    ms.add_partitions("main.sales.t", [{"dt": "c"}])
    got = {p.spec["dt"]: p.data_files for p in ms.list_partitions("main.sales.t")}
    assert got == {"a": fa, "b": [], "c": None}  # [] (recorded, empty) is not None (list the location)
    assert ms.get_partition("main.sales.t", {"dt": "a"}).data_files == fa
    assert ms.get_partition("main.sales.t", {"dt": "a"}).to_json()["data_files"][0] == fa[0].to_json()
    assert ms.get_partition("main.sales.t", {"dt": "c"}).to_json()["data_files"] is None


def test_file_lists_above_the_value_limit_are_split_and_read_back(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    many = [DataFile(f"file:{root}/dt=a/part-{i:05d}-{'x' * 60}.parquet", i, i) for i in range(3000)]
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=many), Partition({"dt": "b"})])
    [a, b] = list(ms.list_partitions("main.sales.t"))
    assert a.data_files == many and b.data_files is None
    assert ms.get_partition("main.sales.t", {"dt": "a"}).data_files == many
    scheme, keys = ms.list_partition_keys("main.sales.t")
    assert keys == [("a",), ("b",)]


def test_unpartitioned_table_files(sales: Metastore, tmp_path: Path) -> None:
    sales.create_table("main.sales.u", "id INT", location=f"file:{tmp_path}/u")
    assert sales.table_data_files("main.sales.u") == []  # a new managed table has no files (whatever is there)
    sales.create_table("main.sales.x", "id INT", location=f"file:{tmp_path}/x", external=True)
    assert sales.table_data_files("main.sales.x") is None  # an external table's location is listed
    f = [DataFile(f"file:{tmp_path}/u/a.parquet", 3, 1)]
    v = sales.write_table_files("main.sales.u", f, "WRITE", set_properties={"numFiles": "1"})
    assert sales.table_data_files("main.sales.u") == f and sales.get_table("main.sales.u").version == v
    assert sales.get_table("main.sales.u").properties["numFiles"] == "1"
    # an overwrite planned before that write conflicts; one planned after it does not
    with pytest.raises(WriteConflict, match="main.sales.u"):
        sales.write_table_files("main.sales.u", [], "OVERWRITE", unchanged_since=v - 1)
    sales.write_table_files("main.sales.u", [], "OVERWRITE", unchanged_since=v, garbage=Garbage(files=f))
    assert sales.table_data_files("main.sales.u") == []
    assert [e.files for e in sales.garbage("main.sales.u")] == [f]


def test_overwrite_of_a_partition_changed_since_it_started_conflicts(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=files(root, "a", 1)),
                                                Partition({"dt": "b"}, data_files=files(root, "b", 1))])
    base = ms.get_table("main.sales.t").version
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "b"}, data_files=files(root, "b", 1, "w"))])
    # a: unchanged since base, fine; b: changed by another write since base, refused, naming it
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=[])], unchanged_since=base)
    with pytest.raises(WriteConflict, match="dt=b"):
        ms.replace_partitions("main.sales.t", [], [Partition({"dt": "b"}, data_files=[])], unchanged_since=base)
    assert ms.get_partition("main.sales.t", {"dt": "b"}).data_files[0].path.endswith("w-0.parquet")


def test_dropped_partitions_keep_files_until_purge(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    fa = files(root, "a", 2)
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=fa),
                                                Partition({"dt": "b"}, data_files=files(root, "b", 1))])
    ms.drop_partitions("main.sales.t", [{"dt": "a"}], release_data=True)
    [entry] = ms.garbage("main.sales.t")
    assert entry.files == fa and entry.operation == "DROP PARTITIONS"
    assert all(Path(f.path[5:]).exists() for f in fa)
    # retention: nothing is old enough yet
    assert purge(ms, None, dt.timedelta(days=7)).report.deleted == 0 and all(Path(f.path[5:]).exists() for f in fa)
    summary = purge(ms, None, None)
    assert summary.garbage == 1 and not any(Path(f.path[5:]).exists() for f in fa)
    assert ms.garbage("main.sales.t") == [] and (root / "dt=b" / "f-0.parquet").exists()


def test_purged_dropped_table_deletes_its_location(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=files(root, "a", 1))])
    ms.drop_table("main.sales.t")
    assert root.exists()
    restored = ms.undrop_table("main.sales.t")
    assert restored.name == "t" and ms.get_partition("main.sales.t", {"dt": "a"}).data_files
    ms.drop_table("main.sales.t")
    summary = purge(ms, ms_name("main.sales.t"), None)
    assert summary.objects == 1 and not root.exists()


def test_purge_keeps_files_of_a_live_table_at_the_same_location(sales: Metastore, tmp_path: Path) -> None:
    root = tmp_path / "t"
    sales.create_table("main.sales.t", SCHEMA, partition_by=["dt"], location=f"file:{root}")
    old = files(root, "a", 1, "old")
    sales.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=old)])
    sales.drop_table("main.sales.t")
    sales.create_table("main.sales.t", SCHEMA, partition_by=["dt"], location=f"file:{root}")
    new = files(root, "a", 1, "new")
    sales.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=new)])
    paths: list[str] = []
    assert sales.purge_table("main.sales.t", data_paths=paths) == 1
    assert paths == [old[0].path]  # only the dropped table's own files: the location is shared


def test_external_tables_data_is_never_purged(sales: Metastore, tmp_path: Path) -> None:
    root = tmp_path / "e"
    sales.create_table("main.sales.e", SCHEMA, partition_by=["dt"], location=f"file:{root}", external=True)
    sales.replace_partitions("main.sales.e", [], [Partition({"dt": "a"}, data_files=files(root, "a", 1))])
    sales.drop_table("main.sales.e")
    paths: list[str] = []
    sales.purge_table("main.sales.e", data_paths=paths)
    assert paths == [] and (root / "dt=a" / "f-0.parquet").exists()


def test_stale_staging_of_dead_writers(tmp_path: Path) -> None:
    staging = tmp_path / "_ushas_staging"
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    for job, pid in (("dead", dead.pid), ("live", os.getpid())):
        (staging / job).mkdir(parents=True)
        (staging / job / "_owner").write_text(f"host=x\nboot={boot}\npid={pid}\nstart=\n")
    (staging / "young").mkdir()  # no owner yet: a write being set up
    assert stale_staging(f"file:{tmp_path}") == [f"file:{staging}/dead"]
    later = time.time() + 2 * 86_400
    assert len(stale_staging(f"file:{tmp_path}", now=later)) == 3  # past the grace period


def test_parse_age() -> None:
    assert parse_age("7d") == dt.timedelta(days=7) and parse_age("30m") == dt.timedelta(minutes=30)
    with pytest.raises(InvalidArgument, match="invalid age"):
        parse_age("7 days")


def ms_name(text: str):  # noqa: ANN201 - the CLI's parsed name
    from ushas_catalog.model.names import parse_any

    return parse_any(text)


def test_replace_table_keeps_the_old_data_until_purge(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    fa = files(root, "a", 1)
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=fa)])
    ms.replace_table("main.sales.t", "id INT", location=f"file:{root}")
    assert ms.table_data_files("main.sales.t") == []
    [entry] = ms.garbage("main.sales.t")
    assert entry.files == fa and entry.operation == "REPLACE TABLE"


def test_dropped_database_keeps_its_tables_data_until_purged(table: tuple[Metastore, Path]) -> None:
    ms, root = table
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=files(root, "a", 1))])
    ms.drop_database("main.sales", cascade=True)
    assert root.exists()
    paths: list[str] = []
    assert ms.purge_database("main.sales", data_paths=paths) == 1
    assert paths == [f"file:{root}"]


def test_cli_purge_with_retention(table: tuple[Metastore, Path], store_uri: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    from ushas_catalog.cli import main

    ms, root = table
    fa = files(root, "a", 1)
    ms.replace_partitions("main.sales.t", [], [Partition({"dt": "a"}, data_files=fa)])
    ms.drop_partitions("main.sales.t", [{"dt": "a"}], release_data=True)
    assert main(["--uri", store_uri, "--project", "acme", "purge", "--older-than", "7d"]) == 0
    assert "deleted 0 path(s)" in capsys.readouterr().out and Path(fa[0].path[5:]).exists()
    assert main(["--uri", store_uri, "--project", "acme", "--json", "purge", "main.sales.t"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["garbage_entries"] == 1 and out["deleted"] == 1 and not Path(fa[0].path[5:]).exists()
    assert main(["--uri", store_uri, "--project", "acme", "purge", "--older-than", "7 days"]) == 2
    assert "invalid age" in capsys.readouterr().err
