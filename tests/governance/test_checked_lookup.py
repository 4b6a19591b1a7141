"""A Spark table lookup under authorization costs the policy's one point read and nothing else: the
privilege check resolves the table's names and the lookup, the first thing the call does in the same
transaction, takes them from the check instead of reading them again (catalog.authorization.checked_relation)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.errors import NoSuchTable
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
