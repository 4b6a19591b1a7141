"""Branches of a catalog (docs/branches.md): a branch reads main as of its branch point plus its own
changes, writes only its overlay, merges in one transaction or names every conflict and writes nothing."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.errors import (BranchAlreadyExists, BranchConflict, BranchUnsupported, InvalidArgument,
                                  NoSuchBranch, NoSuchTable, NoSuchVersion)
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty

from .conftest import raw_keys


@pytest.fixture
def cat(ms: Metastore) -> Metastore:
    ms.create_catalog("c")
    ms.create_database("c.db", location="/wh/db")
    ms.create_table("c.db.t", "id BIGINT, p STRING", partition_by=["p"])
    ms.add_partitions("c.db.t", [{"p": "a"}, {"p": "b"}])
    ms.create_table("c.db.u", "id BIGINT")
    return ms


def parts(ms: Metastore, name: str = "c.db.t") -> list[str]:
    return [p.values["p"] for p in ms.list_partitions(name)]


def test_branch_reads_main_as_of_its_branch_point(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    # main moves on: a partition, a property, a new table, a dropped table
    cat.add_partitions("c.db.t", [{"p": "c"}])
    cat.alter_table("c.db.t", [SetProperty("k", "main")])
    cat.create_table("c.db.later", "x INT")
    cat.drop_table("c.db.u")
    assert parts(cat) == ["a", "b", "c"]
    assert parts(dev) == ["a", "b"]
    assert "k" not in dev.get_table("c.db.t").properties
    assert dev.get_table("c.db.t").version < cat.get_table("c.db.t").version
    assert sorted(t.name for t in dev.list_tables("c.db")) == ["t", "u"]
    assert sorted(t.name for t in cat.list_tables("c.db")) == ["later", "t"]
    with pytest.raises(NoSuchTable):
        dev.get_table("c.db.later")


def test_writes_in_a_branch_stay_in_it(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    dev.add_partitions("c.db.t", [{"p": "z"}])
    dev.drop_partitions("c.db.t", [{"p": "a"}])
    dev.alter_table("c.db.t", [SetProperty("k", "dev")])
    dev.create_table("c.db.new", "x INT")
    dev.create_database("c.devdb")
    dev.drop_table("c.db.u")
    assert parts(dev) == ["b", "z"]
    assert dev.get_table("c.db.t").properties["k"] == "dev"
    assert [h.operation for h in dev.history("c.db.t")][:3] == ["ALTER TABLE", "DROP PARTITIONS", "ADD PARTITIONS"]
    assert [h.operation for h in cat.history("c.db.t")][0] == "ADD PARTITIONS"
    # main does not see any of it
    assert parts(cat) == ["a", "b"]
    assert "k" not in cat.get_table("c.db.t").properties
    assert sorted(t.name for t in cat.list_tables("c.db")) == ["t", "u"]
    assert [d.name for d in cat.list_databases("c")] == ["db"]
    with pytest.raises(NoSuchTable):
        cat.get_table("c.db.new")
    # time travel in the branch: the table as at a version from before the branch's changes
    assert "k" not in dev.get_table("c.db.t", as_of=cat.get_table("c.db.t").version).properties


def test_merge_applies_the_branch_as_ordinary_commits(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    dev.add_partitions("c.db.t", [{"p": "z"}])
    dev.create_table("c.db.new", "x INT")
    cat.create_table("c.db.mainonly", "x INT")  # a change of main elsewhere: no conflict
    before = sum(1 for _ in cat.changes())
    out = cat.merge_branch("c", "dev", into="main")
    assert out["objects"] == ["c.db.new", "c.db.t"]
    assert parts(cat) == ["a", "b", "z"]
    assert cat.get_table("c.db.new").name == "new"
    assert cat.history("c.db.t")[0].operation == "MERGE BRANCH"
    assert sum(1 for _ in cat.changes()) > before
    assert sorted(t.name for t in cat.list_tables("c.db")) == ["mainonly", "new", "t", "u"]
    # the branch starts again from the merged catalog
    assert sorted(t.name for t in dev.list_tables("c.db")) == ["mainonly", "new", "t", "u"]
    assert cat.list_branches("c")[0].changed_keys == 0


def test_merge_conflict_names_every_object_and_writes_nothing(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    dev.add_partitions("c.db.t", [{"p": "z"}])
    dev.alter_table("c.db.u", [SetProperty("k", "dev")])
    dev.create_table("c.db.same", "x INT")
    dev.create_table("c.db.fine", "x INT")
    cat.add_partitions("c.db.t", [{"p": "m"}])
    cat.alter_table("c.db.u", [SetProperty("k", "main")])
    cat.create_table("c.db.same", "y INT")
    keys = raw_keys(cat)
    with pytest.raises(BranchConflict) as e:
        cat.merge_branch("c", "dev")
    objects = e.value.detail["objects"]
    assert "table c.db.t" in objects and "table c.db.u" in objects
    assert "relation name c.db.same" in objects
    assert not any("fine" in o for o in objects)
    assert "table c.db.t" in str(e.value) and "table c.db.u" in str(e.value)
    assert raw_keys(cat) == keys  # nothing written
    assert parts(cat) == ["a", "b", "m"]
    with pytest.raises(NoSuchTable):
        cat.get_table("c.db.fine")


def test_drop_branch_and_errors(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    with pytest.raises(BranchAlreadyExists):
        cat.create_branch("c", "dev")
    with pytest.raises(BranchAlreadyExists):
        cat.create_branch("c", "main")
    with pytest.raises(InvalidArgument):
        cat.create_branch("c", "no/slash")
    dev = cat.branch("dev")
    dev.add_partitions("c.db.t", [{"p": "z"}])
    assert [b.name for b in cat.list_branches("c")] == ["dev"]
    cat.drop_branch("c", "dev")
    assert cat.list_branches("c") == []
    with pytest.raises(NoSuchBranch):
        dev.get_table("c.db.t")
    with pytest.raises(NoSuchBranch):
        cat.drop_branch("c", "dev")
    with pytest.raises(NoSuchBranch):
        cat.merge_branch("c", "dev")
    # nothing of the branch is left: no overlay, no kept values of main
    assert not [k for k in raw_keys(cat) if b"Cbo" in k or b"Cbu" in k]
    assert parts(cat) == ["a", "b"]


def test_branch_refuses_what_it_cannot_do(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    keys = raw_keys(cat)
    with pytest.raises(BranchUnsupported):
        dev.create_catalog("other")
    with pytest.raises(InvalidArgument):
        dev.create_branch("c", "x")
    assert raw_keys(cat) == keys


def test_from_version_is_a_held_branch_point(cat: Metastore) -> None:
    first = cat.create_branch("c", "dev")
    cat.add_partitions("c.db.t", [{"p": "c"}])
    cat.create_branch("c", "later")
    same = cat.create_branch("c", "again", from_version=first.from_version)
    assert same.from_version == first.from_version
    assert parts(cat.branch("again")) == ["a", "b"]
    assert parts(cat.branch("later")) == ["a", "b", "c"]
    with pytest.raises(NoSuchVersion):
        cat.create_branch("c", "bad", from_version=99)


def test_create_branch_writes_o1_keys(cat: Metastore) -> None:
    for i in range(30):
        cat.add_partitions("c.db.t", [{"p": f"x{i}"}])
    before = set(raw_keys(cat))
    cat.create_branch("c", "dev")
    assert len(set(raw_keys(cat)) - before) == 2  # the branch record and the branch points
    # a branch of a branch-less catalog in another store reads the same: open(branch=)
    dev = Metastore.open(cat.db.uri, project="acme", branch="dev")
    try:
        assert len(parts(dev)) == 32
    finally:
        dev.close()


def test_each_branch_reads_main_as_of_its_own_point(cat: Metastore) -> None:
    cat.create_branch("c", "one")
    cat.alter_table("c.db.t", [SetProperty("k", "v1")])
    cat.add_partitions("c.db.t", [{"p": "c"}])
    cat.create_branch("c", "two")
    cat.alter_table("c.db.t", [SetProperty("k", "v2")])
    cat.drop_partitions("c.db.t", [{"p": "a"}])
    one, two = cat.branch("one"), cat.branch("two")
    assert "k" not in one.get_table("c.db.t").properties and parts(one) == ["a", "b"]
    assert two.get_table("c.db.t").properties["k"] == "v1" and parts(two) == ["a", "b", "c"]
    assert cat.get_table("c.db.t").properties["k"] == "v2" and parts(cat) == ["b", "c"]
    # limits and reverse order read the merged view too
    assert [p.values["p"] for p in two.list_partitions("c.db.t", limit=2)] == ["a", "b"]
    assert [h.operation for h in two.history("c.db.t", limit=2)] == ["ADD PARTITIONS", "ALTER TABLE"]
    # dropping one branch keeps what the other still reads
    cat.drop_branch("c", "one")
    assert two.get_table("c.db.t").properties["k"] == "v1" and parts(two) == ["a", "b", "c"]


def test_branch_of_a_catalog_without_it_and_open_errors(cat: Metastore) -> None:
    cat.create_catalog("other")
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    with pytest.raises(NoSuchBranch, match="catalog other has no branch 'dev'"):
        dev.list_databases("other")
    with pytest.raises(InvalidArgument):
        Metastore.open(cat.db.uri, project="acme", branch="Not A Name")
    assert cat.branch("main") is cat


def test_branch_privileges(cat: Metastore) -> None:
    from ushas_catalog.errors import PermissionDenied

    uri = cat.db.uri
    cat.create_branch("c", "dev")
    bob = Metastore.open(uri, project="acme", user="bob", authorization=True)
    try:
        for call in (lambda: bob.create_branch("c", "x"), lambda: bob.drop_branch("c", "dev"),
                     lambda: bob.merge_branch("c", "dev")):
            with pytest.raises(PermissionDenied, match="MANAGE on catalog c"):
                call()
        with pytest.raises(PermissionDenied, match="USE on catalog c"):
            bob.list_branches("c")
        dev = bob.branch("dev")
        with pytest.raises(PermissionDenied):  # a branch checks what main checks
            dev.add_partitions("c.db.t", [{"p": "z"}])
        assert [c.user for c in cat.changes() if c.change == "ACCESS_DENIED"][-1] == "bob"
        cat.grant("MANAGE", "c", "user:bob")
        bob.merge_branch("c", "dev")
        assert [b.merges for b in bob.list_branches("c")] == [1]
    finally:
        bob.close()


def test_data_files_of_a_branch_and_its_garbage_wait_for_the_merge(cat: Metastore, tmp_path: Path) -> None:
    from ushas_catalog.data.garbage import Garbage
    from ushas_catalog.model.data_files import DataFile

    cat.create_table("c.db.f", "id INT", location=f"file:{tmp_path}/f")
    old = [DataFile(f"file:{tmp_path}/f/a.parquet", 3, 1)]
    cat.write_table_files("c.db.f", old, "WRITE")
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    new = [DataFile(f"file:{tmp_path}/f/b.parquet", 4, 1)]
    v = dev.get_table("c.db.f").version
    dev.write_table_files("c.db.f", new, "OVERWRITE", unchanged_since=v, garbage=Garbage(files=old))
    assert dev.table_data_files("c.db.f") == new
    assert cat.table_data_files("c.db.f") == old  # main still reads its own files
    assert cat.garbage("c.db.f") == []  # and they are not garbage on main
    cat.merge_branch("c", "dev")
    assert cat.table_data_files("c.db.f") == new
    assert [e.files for e in cat.garbage("c.db.f")] == [old]  # let go on main by the merge


def test_views_and_drops_in_a_branch(cat: Metastore) -> None:
    cat.create_branch("c", "dev")
    dev = cat.branch("dev")
    dev.create_view("c.db.v", "SELECT id FROM t", "id BIGINT")
    assert dev.get_view("c.db.v").sql == "SELECT id FROM t"
    assert not cat.view_exists("c.db.v")
    dev.drop_table("c.db.t")
    assert cat.table_exists("c.db.t") and not dev.table_exists("c.db.t")
    out = cat.merge_branch("c", "dev")
    assert out["objects"] == ["c.db.v"]  # the dropped table merges as dropped: no commit of its own
    assert cat.get_view("c.db.v").sql == "SELECT id FROM t" and not cat.table_exists("c.db.t")
    assert cat.history("c.db.v")[0].operation == "MERGE BRANCH"


# ---- a merge keeps every system property true (issue 36) -----------------------------------------------
def _add_in_branch(dev: Metastore) -> None:
    dev.add_partitions("c.db.t", [{"p": "z"}])


def _drop_in_branch(dev: Metastore) -> None:
    dev.drop_partitions("c.db.t", [{"p": "a"}, {"p": "b"}])


def _add_and_drop_in_branch(dev: Metastore) -> None:
    dev.add_partitions("c.db.t", [{"p": "y"}, {"p": "z"}])
    dev.drop_partitions("c.db.t", [{"p": "a"}])


def _new_table_in_branch(dev: Metastore) -> None:
    dev.create_table("c.db.fresh", "id BIGINT, q STRING", partition_by=["q"])
    dev.add_partitions("c.db.fresh", [{"q": "1"}, {"q": "2"}, {"q": "3"}])


def _readd_in_branch(dev: Metastore) -> None:  # dropped and added back: no change in count
    dev.drop_partitions("c.db.t", [{"p": "a"}])
    dev.add_partitions("c.db.t", [{"p": "a"}])


@pytest.mark.parametrize("change", [_add_in_branch, _drop_in_branch, _add_and_drop_in_branch, _new_table_in_branch,
                                    _readd_in_branch])
def test_merge_keeps_partition_count_and_check_green(cat: Metastore, change: Any) -> None:
    from ushas_catalog.check import run_checks

    cat.add_partitions("c.db.t", [{"p": "m"}])  # main moves on, elsewhere in the same table: no conflict
    cat.create_branch("c", "dev")
    change(cat.branch("dev"))
    cat.merge_branch("c", "dev")
    for table in ("c.db.t", "c.db.fresh"):
        if not cat.table_exists(table):
            continue
        system = cat.metadata.get(table).system.properties
        assert system["partition_count"] == str(len(list(cat.list_partitions(table)))), table
        assert "created_by" in system, table
    report = run_checks(cat)
    assert report.ok, report.lines()


def test_a_user_with_create_creates_tables_in_a_branch_under_authorization(cat: Metastore) -> None:
    """CREATE on the database is enough to create (and then write, as its owner) a table in a branch: the
    creator's OWN grant is project-wide state, written to main's grants for the new table's id (which the
    merge keeps); a user without CREATE is refused and nothing is written."""
    from ushas_catalog.errors import PermissionDenied

    uri = cat.db.uri
    cat.create_branch("c", "dev")
    cat.grant("CREATE", "c.db", "user:bob")
    cat.grant("USE", "c", "user:mallory")
    users = {u: Metastore.open(uri, project="acme", user=u, authorization=True) for u in ("bob", "mallory")}
    try:
        dev = users["bob"].branch("dev")
        dev.create_table("c.db.mine", "id BIGINT, p STRING", partition_by=["p"])
        dev.add_partitions("c.db.mine", [{"p": "x"}])  # its owner writes it
        assert [p.values["p"] for p in dev.list_partitions("c.db.mine")] == ["x"]
        assert not cat.table_exists("c.db.mine") and not users["bob"].table_exists("c.db.mine")
        with pytest.raises(PermissionDenied, match="CREATE on database c.db"):
            users["mallory"].branch("dev").create_table("c.db.theirs", "id BIGINT")
        with pytest.raises(PermissionDenied):  # bob owns his table, not the others of the branch
            dev.add_partitions("c.db.t", [{"p": "z"}])
        assert not cat.branch("dev").table_exists("c.db.theirs")
        cat.merge_branch("c", "dev")
        users["bob"].add_partitions("c.db.mine", [{"p": "y"}])  # merged: bob owns it on main too
        assert parts(cat, "c.db.mine") == ["x", "y"]
    finally:
        for m in users.values():
            m.close()
