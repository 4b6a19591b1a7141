"""Removal is removal (docs/governance.md, "Writes"): every metastore operation that removes rows —
restore, DROP PARTITION (also repair's drop), an overwrite or TRUNCATE of partitions or of an unpartitioned
table, a partition moved to another location — is refused to a governed user whose reads go through the
table's row filter, whatever surface reaches it (Spark's procedures, the CLI with ``--user``, the REST API
all call these), and writes nothing; the exempt principal's members do it, and the filtered user still
appends."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from ushas_catalog.errors import RowPolicyRefused
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.data_files import DataFile
from ushas_catalog.model.partitions import Partition

P = ("c", "db", "parts")
U = ("c", "db", "flat")


@pytest.fixture
def stores(store_uri: str, tmp_path: Any) -> Any:
    admin = Metastore.open(store_uri, project="p")
    admin.create_catalog("c")
    admin.create_database(("c", "db"))
    admin.create_table(P, schema="id INT, region STRING", partition_by=["region"],
                       location=str(tmp_path / "parts"))
    admin.add_partitions(P, [{"region": "EU"}, {"region": "US"}])
    admin.create_table(U, schema="id INT, region STRING", location=str(tmp_path / "flat"))
    admin.write_table_files(U, [DataFile(f"file:{tmp_path}/flat/a.parquet", 10, 1)], "APPEND")
    for t in (P, U):
        admin.set_row_filter(t, "region = 'EU'", "role:auditors")
    admin.create_role("auditors")
    admin.grant_role("auditors", "user:carol")
    for user in ("bob", "carol"):
        for privilege in ("SELECT", "MODIFY"):
            admin.grant(privilege, ("c", "db"), f"user:{user}")
    users = {u: Metastore.open(store_uri, project="p", user=u, authorization=True) for u in ("bob", "carol")}
    yield admin, users
    for m in users.values():
        m.close()
    admin.close()


def _keys(ms: Metastore) -> dict[bytes, bytes]:
    begin, end = ms.layout.project(ms.project).range()
    return {bytes(kv.key): bytes(kv.value) for kv in ms.db.run(lambda tr: list(tr.get_range(begin, end)))
            if "ChangeFeed" not in ms.layout.keyspace.parse(bytes(kv.key)).directory_names}


def _moved(m: Metastore) -> Any:
    moved = f"{m.get_table(P).location}/moved"  # a governed partition stays in its table (or a declared location)
    return m.replace_partitions(P, [{"region": "US"}], [Partition(values={"region": "US"}, location=moved)])


#: (case, the call, the operation the refusal names)
REMOVALS: list[tuple[str, Callable[[Metastore], Any], str]] = [
    ("restore", lambda m: m.restore_table(P, 1), "RESTORE"),
    ("restore unpartitioned", lambda m: m.restore_table(U, 1), "RESTORE"),
    ("drop partition", lambda m: m.drop_partitions(P, [{"region": "US"}]), "DROP PARTITION"),
    ("overwrite partitions", lambda m: m.replace_partitions(P, [{"region": "US"}], [], operation="OVERWRITE"),
     "OVERWRITE"),
    ("truncate partitions", lambda m: m.replace_partitions(
        P, [{"region": "US"}], [Partition(values={"region": "US"}, files=0, bytes=0, rows=0)], operation="TRUNCATE"),
     "TRUNCATE"),
    ("partition moved", _moved, "REPLACE PARTITIONS"),
    ("overwrite unpartitioned", lambda m: m.write_table_files(U, [], "OVERWRITE"), "OVERWRITE"),
    ("append that drops files", lambda m: m.write_table_files(U, [], "APPEND"), "APPEND"),
]


@pytest.mark.parametrize("case, call, operation", REMOVALS, ids=[c[0] for c in REMOVALS])
def test_a_filtered_user_cannot_remove_rows(stores: Any, case: str, call: Callable[[Metastore], Any],
                                            operation: str) -> None:
    admin, users = stores
    before = _keys(admin)
    with pytest.raises(RowPolicyRefused, match=f"{operation} of table c.db.\\w+ is refused: its row filter hides "
                                               f"rows from user bob"):
        call(users["bob"])
    assert _keys(admin) == before, case
    call(users["carol"])  # the exempt role's member removes as anyone


def test_a_filtered_user_still_appends(stores: Any, tmp_path: Any) -> None:
    _, users = stores
    bob = users["bob"]
    bob.replace_partitions(P, [], [Partition(values={"region": "APAC"})], operation="APPEND")
    old = bob.table_data_files(U) or []
    bob.write_table_files(U, [*old, DataFile(f"file:{tmp_path}/flat/b.parquet", 10, 2)], "APPEND")
    assert {p.values["region"] for p in bob.list_partitions(P)} >= {"APAC"}


def test_the_rule_holds_without_a_filter_and_for_ungoverned_callers(stores: Any) -> None:
    admin, users = stores
    admin.drop_partitions(P, [{"region": "US"}])  # the store's administrator: not governed
    admin.drop_row_filter(P)
    users["bob"].drop_partitions(P, [{"region": "EU"}])  # no filter: MODIFY is enough


def test_an_append_without_a_file_list_rewrite_is_checked_as_any_write(stores: Any, store_uri: str,
                                                                       tmp_path: Any) -> None:
    """``replace_partitions(append=True)`` (a streaming batch's append) is the same MODIFY as any write: a
    user with SELECT only is refused and nothing is written; the filtered user appends (it removes nothing),
    and an append cannot carry drops (which the row rule would have to judge)."""
    from ushas_catalog.errors import InvalidArgument, PermissionDenied

    admin, users = stores
    admin.grant("SELECT", ("c", "db"), "user:dave")
    dave = Metastore.open(store_uri, project="p", user="dave", authorization=True)
    new = [DataFile(f"file:{tmp_path}/parts/region=EU/n.parquet", 10, 3)]
    try:
        before = _keys(admin)
        with pytest.raises(PermissionDenied, match="MODIFY"):
            dave.replace_partitions(P, [], [Partition(values={"region": "EU"}, files=1, bytes=10, data_files=new)],
                                    operation="APPEND", append=True)
        assert _keys(admin) == before
    finally:
        dave.close()
    bob = users["bob"]
    with pytest.raises(InvalidArgument, match="drops nothing"):
        bob.replace_partitions(P, [{"region": "US"}], [Partition(values={"region": "EU"}, data_files=new)],
                               operation="APPEND", append=True)
    assert _keys(admin) == before
    bob.replace_partitions(P, [], [Partition(values={"region": "APAC"}, files=1, bytes=10, data_files=new)],
                           operation="APPEND", append=True)
    assert "APAC" in {p.values["region"] for p in bob.list_partitions(P)}
