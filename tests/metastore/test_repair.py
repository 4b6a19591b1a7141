"""Registering existing partition directories (``ushas_catalog.data.repair``): parsing directory names like
Spark, ADD / DROP / SYNC decisions, batched transactions within FoundationDB's limits (100,000
directories in one pass), and the ``ushas repair`` command."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ushas_catalog.data import repair
from ushas_catalog.spark.repair import spark_op
from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument
from ushas_catalog.kv import FDB_LIMITS
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.partitions import NULL_PARTITION, Partition, PartitionScheme, escape_path_name
from ushas_catalog.data.repair import InvalidDir, PartitionDir, RepairMode
from ushas_catalog.model.schema import parse_schema

ROOT = "file:/data/events"


def scheme(ddl: str, *columns: str) -> PartitionScheme:
    return PartitionScheme.of(parse_schema(ddl), columns)


@pytest.fixture
def events(sales: Metastore) -> Metastore:
    sales.create_table("main.sales.events", "id BIGINT, dt DATE, h INT", partition_by=["dt", "h"], location=ROOT)
    return sales


class Commits:
    """Records the mutation bytes of every committed transaction of a store."""

    def __init__(self, ms: Metastore) -> None:
        self.sizes: list[int] = []
        create = ms.db.create_transaction

        def tracked() -> Any:
            tr = create()
            commit = tr.commit

            def counted() -> None:
                commit()
                self.sizes.append(tr._guard.mutation_bytes)

            tr.commit = counted
            return tr

        ms.db.create_transaction = tracked  # type: ignore[method-assign]


# ---- directory names ------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1))
def test_unescape_inverts_spark_escaping(text: str) -> None:
    assert repair.unescape_path_name(escape_path_name(text)) == text


def test_paths_parse_to_typed_keys() -> None:
    s = scheme("id BIGINT, dt DATE, h INT, k STRING", "dt", "h", "k")
    d = repair.parse_path(s, "dt=2024-01-31/H=07/k=a%2Fb%3Dc")  # column names case-insensitive, values unescaped
    assert isinstance(d, PartitionDir)
    assert d.spec == {"dt": "2024-01-31", "h": "07", "k": "a/b=c"}
    assert d.key == s.key({"dt": "2024-01-31", "h": 7, "k": "a/b=c"})
    null = repair.parse_path(s, f"dt={NULL_PARTITION}/h={NULL_PARTITION}/k={NULL_PARTITION}")
    assert isinstance(null, PartitionDir) and null.key == (None, None, None)


@pytest.mark.parametrize("path, reason", [
    ("dt=2024-13-01/h=1/k=a", "not a valid DATE"),
    ("dt=2024-01-01/h=x/k=a", "not a valid INT"),
    ("dt=2024-01-01/h=99999999999/k=a", "out of range"),
    ("dt=2024-01-01/hour=1/k=a", "not a directory of partition column 'h'"),
    ("dt=2024-01-01/h=1", "expected 3 level(s)"),
    ("dt=2024-01-01/h=1/k=", "empty value"),
])
def test_bad_directories_are_reported(path: str, reason: str) -> None:
    d = repair.parse_path(scheme("dt DATE, h INT, k STRING", "dt", "h", "k"), path)
    assert isinstance(d, InvalidDir) and reason in d.reason and d.path == path


def test_two_directories_of_one_partition_keep_the_first() -> None:
    dirs, invalid = repair.parse_paths(scheme("n INT", "n"), ["n=7", "n=3", "n=07", "n=zz"])
    assert [d.path for d in dirs] == ["n=3", "n=7"]  # in key order
    assert [(d.path, d.reason) for d in invalid][0] == ("n=07", "the same partition as n=7")
    assert invalid[1].path == "n=zz"


def test_local_listing_follows_the_partition_columns(tmp_path: Path) -> None:
    for d in ("dt=1/h=1", "dt=1/h=2", "dt=2/h=1", "dt=1/x=9", "dt=3", "_tmp/h=1", ".hidden", "dt=2/_SUCCESS_dir",
              "notapartition"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "dt=2" / "h=5").write_text("a file, not a directory")
    listing = repair.list_directories(str(tmp_path), ["dt", "h"])
    assert sorted(listing.paths) == ["dt=1/h=1", "dt=1/h=2", "dt=2/h=1"]
    assert listing.ignored == ["dt=1/x=9"]
    assert repair.list_directories(str(tmp_path / "missing"), ["dt"]).paths == []


# ---- ADD / DROP / SYNC ----------------------------------------------------------------------------
def test_add_registers_the_directories_not_registered(events: Metastore) -> None:
    events.add_partitions("main.sales.events", [{"dt": "2024-01-01", "h": 1}])
    before = events.get_table("main.sales.events").version
    paths = ["dt=2024-01-01/h=1", "dt=2024-01-01/h=2", "dt=2024-01-02/h=1", "dt=oops/h=1"]
    report = repair.repair_table(events, "main.sales.events", paths, root=ROOT)
    assert report.added == ["dt=2024-01-01/h=2", "dt=2024-01-02/h=1"]
    assert [d.path for d in report.invalid] == ["dt=oops/h=1"] and report.listed == 4
    assert report.transactions == 1 and report.version == before + 1
    parts = {(str(p.values["dt"]), p.values["h"]): p.location for p in events.list_partitions("main.sales.events")}
    assert parts[("2024-01-02", 1)] == f"{ROOT}/dt=2024-01-02/h=1"
    assert len(parts) == 3
    again = repair.repair_table(events, "main.sales.events", paths, root=ROOT)
    assert again.added == [] and again.transactions == 0
    assert events.get_table("main.sales.events").version == before + 1  # nothing to do: no commit


def test_drop_unregisters_partitions_whose_location_is_gone(events: Metastore) -> None:
    events.add_partitions("main.sales.events", [
        {"dt": "2024-01-01", "h": 1},                                         # listed: exists
        {"dt": "2024-01-01", "h": 2},                                         # under the root, gone
        Partition(values={"dt": "2024-01-03", "h": 1}, location="file:/elsewhere/a"),  # exists
        Partition(values={"dt": "2024-01-04", "h": 1}, location="file:/elsewhere/b"),  # gone
        Partition(values={"dt": "2024-01-05", "h": 1}, location="s3a://bucket/c"),     # unknown
    ])
    asked: list[str] = []

    def exists(location: str) -> bool | None:
        asked.append(location)
        return {"file:/elsewhere/a": True, "s3a://bucket/c": None}.get(location, False)

    listed = ["dt=2024-01-01/h=1", "dt=2024-01-09/h=1"]
    report = repair.repair_table(events, "main.sales.events", listed, root=ROOT, mode=RepairMode.DROP, exists=exists)
    assert report.dropped == ["dt=2024-01-01/h=2", "dt=2024-01-04/h=1"] and report.added == []
    assert report.unchecked == ["s3a://bucket/c"]
    assert f"{ROOT}/dt=2024-01-01/h=1" not in asked  # found by the listing: no existence check
    keys = [s for s in (p.spec for p in events.list_partitions("main.sales.events"))]
    assert {(k["dt"], k["h"]) for k in keys} == {("2024-01-01", "1"), ("2024-01-03", "1"), ("2024-01-05", "1")}
    with pytest.raises(InvalidArgument, match="exists"):
        repair.repair_table(events, "main.sales.events", listed, root=ROOT, mode=RepairMode.DROP)


def test_sync_moves_a_partition_whose_location_vanished_to_the_directory_found(events: Metastore) -> None:
    events.add_partitions("main.sales.events", [
        Partition(values={"dt": "2024-01-01", "h": 1}, location="file:/old/place"),
        {"dt": "2024-01-02", "h": 1},
    ])
    report = repair.repair_table(events, "main.sales.events", ["dt=2024-01-01/h=1", "dt=2024-01-03/h=1"], root=ROOT,
                                 mode=RepairMode.SYNC, exists=lambda loc: False)
    assert report.dropped == ["dt=2024-01-01/h=1", "dt=2024-01-02/h=1"]
    assert report.added == ["dt=2024-01-01/h=1", "dt=2024-01-03/h=1"]
    assert {p.spec["dt"]: p.location for p in events.list_partitions("main.sales.events")} == {
        "2024-01-01": f"{ROOT}/dt=2024-01-01/h=1", "2024-01-03": f"{ROOT}/dt=2024-01-03/h=1"}


def test_dry_run_changes_nothing(events: Metastore) -> None:
    events.add_partitions("main.sales.events", [{"dt": "2024-01-02", "h": 1}])
    version = events.get_table("main.sales.events").version
    report = repair.repair_table(events, "main.sales.events", ["dt=2024-01-01/h=1"], root=ROOT, mode=RepairMode.SYNC,
                                 exists=lambda loc: False, dry_run=True)
    assert (report.added, report.dropped, report.transactions) == (["dt=2024-01-01/h=1"], ["dt=2024-01-02/h=1"], 0)
    assert events.get_table("main.sales.events").version == version
    assert [p.spec["dt"] for p in events.list_partitions("main.sales.events")] == ["2024-01-02"]


def test_unpartitioned_table_is_refused(sales: Metastore) -> None:
    sales.create_table("main.sales.flat", "id BIGINT", location="file:/data/flat")
    with pytest.raises(InvalidArgument, match="not partitioned"):
        repair.repair_table(sales, "main.sales.flat", ["x=1"], root="file:/data/flat")


def test_bridge_steps(events: Metastore, store_uri: str) -> None:
    """The JVM's protocol: start, registered (relative under the root), drop, add."""
    base = {"ctx": {"uri": store_uri, "project": "acme", "catalog": "main", "warehouse": "/wh"},
            "namespace": ["sales"], "name": "events"}
    events.add_partitions("main.sales.events", [
        {"dt": "2024-01-01", "h": 1}, Partition(values={"dt": "2024-01-02", "h": 1}, location="s3a://b/x")])
    assert spark_op(events, {**base, "step": "start"})["columns"] == ["dt", "h"]
    rows = spark_op(events, {**base, "step": "registered"})
    assert rows["location"] == ROOT
    assert rows["partitions"] == [[["2024-01-01", "1"], "dt=2024-01-01/h=1", 1], [["2024-01-02", "1"], "s3a://b/x", 0]]
    assert spark_op(events, {**base, "step": "drop", "partitions": [["2024-01-02", "1"]]})["dropped"] == 1
    added = spark_op(events, {**base, "step": "add", "paths": ["dt=2024-01-01/h=1", "dt=2024-01-03/h=2",
                                                                      "dt=x/h=1"]})
    assert (added["added"], added["skipped"], added["transactions"]) == (1, 1, 1)
    assert added["invalid"] == [["dt=x/h=1", "invalid value 'x' for partition column 'dt' (DATE): not a valid DATE"]]
    assert [p.spec["dt"] for p in events.list_partitions("main.sales.events")] == ["2024-01-01", "2024-01-03"]
    with pytest.raises(InvalidArgument, match="unknown repair step"):
        spark_op(events, {**base, "step": "nope"})


# ---- batches within FoundationDB's limits ---------------------------------------------------------
def test_100k_directories_register_in_one_pass_over_several_transactions(sales: Metastore) -> None:
    sales.create_table("main.sales.big", "id BIGINT, dt STRING", partition_by=["dt"], location=ROOT)
    commits = Commits(sales)
    paths = [f"dt=day-{i:06d}" for i in range(100_000)]
    report = repair.repair_table(sales, "main.sales.big", paths, root=ROOT)
    assert len(report.added) == 100_000 and not report.invalid
    writes = [s for s in commits.sizes if s > 0]
    assert report.transactions == len(writes) > 5
    assert max(writes) <= FDB_LIMITS.transaction_bytes and sum(writes) > FDB_LIMITS.transaction_bytes
    _, keys = sales.list_partition_keys("main.sales.big")
    assert keys == [(p[3:],) for p in paths]
    # and dropping them all is batched the same way
    commits.sizes.clear()
    report = repair.repair_table(sales, "main.sales.big", [], root=ROOT, mode=RepairMode.DROP,
                                 exists=lambda loc: False)
    writes = [s for s in commits.sizes if s > 0]
    assert len(report.dropped) == 100_000 and report.transactions == len(writes) > 5
    assert max(writes) <= FDB_LIMITS.transaction_bytes
    assert sales.list_partition_keys("main.sales.big")[1] == []


def test_a_batch_over_the_store_limit_is_split(sales: Metastore) -> None:
    sales.create_table("main.sales.tight", "id BIGINT, dt STRING", partition_by=["dt"], location=ROOT)
    sales.db.limits = dataclasses.replace(FDB_LIMITS, transaction_bytes=150_000)  # far below the estimate
    commits = Commits(sales)
    report = repair.repair_table(sales, "main.sales.tight", [f"dt={i:05d}" for i in range(3_000)], root=ROOT)
    writes = [s for s in commits.sizes if s > 0]
    assert len(report.added) == 3_000 and report.transactions == len(writes) >= 6
    assert max(writes) <= 150_000
    assert len(sales.list_partition_keys("main.sales.tight")[1]) == 3_000


# ---- the CLI ----------------------------------------------------------------------------------------
@pytest.fixture
def on_disk(store_uri: str, tmp_path: Path) -> tuple[str, Path]:
    data = tmp_path / "data"
    for d in ("dt=2024-01-01", "dt=2024-01-02", "dt=notadate", "other=1", "_temporary"):
        (data / d).mkdir(parents=True)
    ms = Metastore.open(store_uri, project="acme")
    ms.create_catalog("main")
    ms.create_database("main.sales")
    ms.create_table("main.sales.t", "id BIGINT, dt DATE", partition_by=["dt"], location=f"file:{data}")
    ms.add_partitions("main.sales.t", [{"dt": "2023-12-31"}])  # its directory does not exist
    ms.create_table("main.sales.remote", "id BIGINT, dt DATE", partition_by=["dt"], location="s3a://bucket/t")
    ms.close()
    return store_uri, data


def run(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def registered(uri: str) -> list[str]:
    with Metastore.open(uri, project="acme") as ms:
        return [p.spec["dt"] for p in ms.list_partitions("main.sales.t")]


def test_cli_dry_run_then_repair(on_disk: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    uri, data = on_disk
    rc, out, err = run(capsys, uri, "repair", "main.sales.t", "--sync", "--dry-run")
    assert rc == 0, err
    lines = out.splitlines()
    assert "+ dt=2024-01-01" in lines and "+ dt=2024-01-02" in lines and "- dt=2023-12-31" in lines
    assert any(line.startswith("invalid: dt=notadate:") and "DATE" in line for line in lines)
    assert any(line.startswith("invalid: other=1:") for line in lines)
    assert "would add 2, would drop 1" in lines[-1]
    assert registered(uri) == ["2023-12-31"]  # the dry run changed nothing
    rc, out, _ = run(capsys, uri, "repair", "main.sales.t", "--json")  # ADD: the default
    report = json.loads(out)
    assert rc == 0 and report["added"] == ["dt=2024-01-01", "dt=2024-01-02"] and report["dropped"] == []
    assert report["transactions"] == 1 and {d["path"] for d in report["invalid"]} == {"dt=notadate", "other=1"}
    assert registered(uri) == ["2023-12-31", "2024-01-01", "2024-01-02"]
    rc, out, _ = run(capsys, uri, "repair", "main.sales.t", "--drop")
    assert rc == 0 and "dropped 1 partition(s)" in out
    assert registered(uri) == ["2024-01-01", "2024-01-02"]
    with Metastore.open(uri, project="acme") as ms:
        assert ms.get_partition("main.sales.t", {"dt": "2024-01-01"}).location == f"file:{data}/dt=2024-01-01"


def test_cli_refuses_what_it_cannot_list(on_disk: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    uri, _ = on_disk
    rc, out, err = run(capsys, uri, "repair", "main.sales.remote")
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "s3a://bucket/t" in err and "MSCK REPAIR TABLE" in err
    with pytest.raises(SystemExit) as exit_:
        run(capsys, uri, "repair", "main.sales.t", "--add", "--drop")
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    rc, _, err = run(capsys, uri, "repair", "main.sales.nope")
    assert rc == 1 and len(err.strip().splitlines()) == 1


def test_cli_progress_on_a_terminal(on_disk: tuple[str, Path], capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import ushas_catalog.progress as progress

    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)
    uri, _ = on_disk
    rc, out, err = run(capsys, uri, "repair", "main.sales.t")
    assert rc == 0 and "added 2" in out
    assert "listing main.sales.t" in err and "repairing main.sales.t" in err and "2/2" in err
    rc, out, err = run(capsys, uri, "--json", "repair", "main.sales.t")
    assert rc == 0 and json.loads(out)["added"] == [] and err == ""  # --json: no progress
