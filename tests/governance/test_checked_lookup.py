"""A Spark table lookup under authorization costs the policy's one point read and nothing else: the
privilege check resolves the table's names and the lookup, the first thing the call does in the same
transaction, takes them from the check instead of reading them again (catalog.authorization.checked_relation)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.errors import NoSuchTable, PermissionDenied, TableAlreadyExists
from ushas_catalog.kv.read_count import KeyReads
from ushas_catalog.metastore import Metastore
from ushas_catalog.spark import ops
from ushas_catalog.spark.authorization import run_op


def lookup_reads(ms: Metastore, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    with KeyReads.on(ms.db) as reads:
        answer = run_op(ops.load_table, "load_table", ms, request)
    return reads.keys, answer


def test_an_authorized_lookup_reads_only_the_policy_state_more(store_uri: str, tmp_path: Path) -> None:
    admin = Metastore.open(store_uri, project="p")
    admin.create_catalog("c")
    admin.create_database(("c", "db"))
    admin.create_table(("c", "db", "t"), schema="a INT")
    admin.grant("SELECT", ("c", "db"), "user:bob")
    admin.close()
    ctx = {"uri": store_uri, "project": "p", "catalog": "c", "warehouse": str(tmp_path), "user": "bob"}
    off_ms = Metastore.open(store_uri, project="p", user="bob")
    on_ms = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    off = {"ctx": ctx, "namespace": ["db"], "name": "t"}
    on = {"ctx": {**ctx, "authorization": True}, "namespace": ["db"], "name": "t"}
    for ms, request in ((off_ms, off), (on_ms, on)):  # warm: the policy snapshot, the key paths
        run_op(ops.load_table, "load_table", ms, request)
    keys_off, answer_off = lookup_reads(off_ms, off)
    keys_on, answer_on = lookup_reads(on_ms, on)
    assert answer_on == answer_off and answer_on["kind"] == "table"
    assert keys_on == keys_off + 1  # the access state record
    # another name than the checked one reads its own names: a missing table is still missing
    missing = {**on, "name": "nope"}
    with pytest.raises(NoSuchTable):
        run_op(ops.load_table, "load_table", on_ms, missing)


#: (case, op, the request's own fields): the Spark calls of one ``CREATE TABLE … LOCATION`` / ``DROP TABLE`` whose
#: privilege check resolves the names their own lookup then takes (catalog.resolver.CheckedNames)
LOOKUPS: list[tuple[str, str, dict[str, Any]]] = [
    ("load_namespace (USE on the database)", "load_namespace", {"namespace": ["db"]}),
    ("relation_exists of a table", "relation_exists", {"namespace": ["db"], "name": "t", "kind": "table"}),
    ("relation_exists of a missing table", "relation_exists", {"namespace": ["db"], "name": "nope", "kind": "table"}),
    ("load_table", "load_table", {"namespace": ["db"], "name": "t"}),
]


@pytest.mark.parametrize("case, op, fields", LOOKUPS, ids=[c[0] for c in LOOKUPS])
def test_a_checked_call_reads_only_the_policy_state_more(store_uri: str, tmp_path: Path, case: str, op: str,
                                                         fields: dict[str, Any]) -> None:
    """The same answer with authorization on as off, for one key read more (the access state): the check's
    name reads are the call's; and a REVOKE between two calls refuses the second (nothing is kept across calls)."""
    admin = Metastore.open(store_uri, project="p")
    admin.create_catalog("c")
    admin.create_database(("c", "db"))
    admin.create_table(("c", "db", "t"), schema="a INT")
    admin.grant("SELECT", ("c", "db"), "user:bob")
    ctx = {"uri": store_uri, "project": "p", "catalog": "c", "warehouse": str(tmp_path), "user": "bob"}
    off_ms = Metastore.open(store_uri, project="p", user="bob")
    on_ms = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    handler = ops.OPS[op]
    off, on = {"ctx": ctx, **fields}, {"ctx": {**ctx, "authorization": True}, **fields}
    for ms, request in ((off_ms, off), (on_ms, on)):  # warm: the policy snapshot, the key paths
        run_op(handler, op, ms, request)
    counted = []
    for ms, request in ((off_ms, off), (on_ms, on)):
        with KeyReads.on(ms.db) as reads:
            counted.append((reads, run_op(handler, op, ms, request)))
    (reads_off, answer_off), (reads_on, answer_on) = counted
    assert answer_on == answer_off
    assert reads_on.keys == reads_off.keys + 1 and reads_on.transactions == reads_off.transactions
    admin.revoke("SELECT", ("c", "db"), "user:bob")
    with pytest.raises(PermissionDenied, match="bob does not have USE"):
        run_op(handler, op, on_ms, on)
    admin.close()


def test_a_create_takes_the_checked_names_and_its_own_lookups_stay_right(store_uri: str) -> None:
    """A create reads its database's names once (in the check) and its new name's entry once; a call that looks
    up another database or table than the one checked reads its own names; a create of an existing name is refused
    as before."""
    admin = Metastore.open(store_uri, project="p")
    admin.create_catalog("c")
    for db in ("db", "other"):
        admin.create_database(("c", db))
    admin.grant("CREATE", ("c", "db"), "user:bob")
    admin.grant("USE", ("c", "other"), "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    bob.create_table(("c", "db", "warm"), schema="a INT")
    with KeyReads.on(bob.db) as on:
        bob.create_table(("c", "db", "t"), schema="a INT")
    with KeyReads.on(admin.db) as off:
        admin.create_table(("c", "db", "t2"), schema="a INT")
    # the check's catalog, database and new-name reads are the create's own (before: 11 more keys); the access
    # state and the creator's OWN grant (the new table's names, the state the grant replaces) are governance's
    assert on.transactions == off.transactions == 1
    assert on.keys <= off.keys + 5, (on.keys, off.keys)
    assert [g.principal for g in admin.grants(("c", "db", "t")) if g.privilege == "OWN"] == ["user:bob"]
    assert bob.get_table(("c", "db", "t")).name == "t"
    assert bob.get_database(("c", "other")).name == "other"
    with pytest.raises(TableAlreadyExists):
        bob.create_table(("c", "db", "t"), schema="a INT")
    with pytest.raises(PermissionDenied, match="bob does not have CREATE on database c.other"):
        bob.create_table(("c", "other", "t"), schema="a INT")
    with pytest.raises(NoSuchTable):
        bob.get_table(("c", "other", "t"))
    bob.close()
    admin.close()
