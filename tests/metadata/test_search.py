"""Search: query forms, filters, ranking by recent use, cursors, and the index against a
full scan on randomized catalogs (hypothesis)."""
from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.schema import parse_type
from ushas_catalog.metadata.search import DAY_MS, Query, check_index, scan_search
from ushas_catalog.model.table_changes import AddColumn, DeleteColumn, RenameColumn, UpdateColumnComment

NOW = 1_750_000_000_000


@pytest.fixture
def shop(sales: Metastore) -> Metastore:
    sales.create_table("main.sales.customers", "customer BIGINT, customer_name STRING, tier STRING",
                       properties={"ushas.meta.owner": "alice", "ushas.tag.gold": "1"})
    sales.metadata.tag("main.sales.customers.customer_name", ["PII"])
    sales.metadata.set("main.sales.orders", {"owner": "bob", "domain": "customer"})
    return sales


QUERIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("customer", {}, ["main.sales.customers", "main.sales.orders"]),  # a field; a value
    ("customer*", {}, ["main.sales.customers", "main.sales.orders"]),
    ("customer*", {"types": "column"}, ["main.sales.customers.customer", "main.sales.customers.customer_name",
                                        "main.sales.orders.customer_id"]),
    ("field:customer_*", {}, ["main.sales.customers", "main.sales.orders"]),
    ("field:city", {}, ["main.sales.orders"]),  # a nested field by its own name
    ("field:address.c*", {}, ["main.sales.orders"]),
    ("pii", {}, ["main.sales.customers.customer_name"]),
    ("tag:PI*", {"types": ["column", "table"]}, ["main.sales.customers.customer_name"]),
    ("gold", {"types": "table"}, ["main.sales.customers"]),
    ("owner=alice", {}, ["main.sales.customers"]),
    ("OWNER=B*", {}, ["main.sales.orders"]),
    ("owner=*", {}, ["main.sales.customers", "main.sales.orders"]),
    ("key:owner", {"scope": "USER"}, ["main.sales.customers", "main.sales.orders"]),
    ("key:owner", {"scope": "SYSTEM"}, []),
    ("value:bob", {}, ["main.sales.orders"]),
    ("the buy*", {}, ["main.sales.orders.customer_id"]),
    ("created_by=tester", {"types": "view"}, ["main.sales.big_orders"]),
    ("format=parquet", {"scope": "SYSTEM", "types": "table"}, ["main.sales.customers", "main.sales.orders"]),
    ("nothing_like_this", {}, []),
]


@pytest.mark.parametrize("query,options,names", QUERIES, ids=[f"{q} {o}" for q, o, _ in QUERIES])
def test_queries(shop: Metastore, query: str, options: dict[str, Any], names: list[str]) -> None:
    page = shop.search(query, limit=100, **options)
    assert sorted(h.name for h in page.hits) == names
    assert page.to_json() == scan_search(shop, query, limit=100, **options).to_json()


def test_exact_before_prefix(shop: Metastore) -> None:
    hits = shop.search("customer*", types="column").hits
    assert [(h.name, h.to_json()["match"]) for h in hits] == [
        ("main.sales.customers.customer", "exact"), ("main.sales.customers.customer_name", "prefix"),
        ("main.sales.orders.customer_id", "prefix")]


def _use(ms: Metastore, name: str, day: int, reads: int) -> None:
    tid = uuid.UUID(ms.get_table(name).id)
    key = ms.project_path.add("UsageProfile").add("DatasetUsage").add("tableId", tid).pack((day, "reads"))
    ms.db.run(lambda tr: tr.add(key, reads))


def test_recent_use_ranks_within_a_match_class(shop: Metastore) -> None:
    today = NOW // DAY_MS
    assert [h.name for h in shop.search("customer*", now_ms=NOW).hits] == ["main.sales.customers",
                                                                           "main.sales.orders"]
    _use(shop, "main.sales.orders", today - 1, 5)
    _use(shop, "main.sales.customers", today - 60, 50)  # more, but long ago: weighs less
    hits = shop.search("customer*", now_ms=NOW).hits
    assert [h.name for h in hits] == ["main.sales.orders", "main.sales.customers"]
    assert hits[0].score > hits[1].score > 0
    _use(shop, "main.sales.customers", today - 200, 10_000)  # beyond the horizon: no weight
    assert [h.name for h in shop.search("customer*", now_ms=NOW).hits][0] == "main.sales.orders"
    # exact still beats any use
    assert [h.name for h in shop.search("field:customer*", types="column", now_ms=NOW).hits][0] == \
        "main.sales.customers.customer"


def test_paging_with_cursor(shop: Metastore) -> None:
    full = shop.search("c*", limit=1000)
    assert full.next_cursor is None and full.total == len(full.hits) > 3
    seen: list[str] = []
    cursor = None
    for _ in range(full.total + 1):
        page = shop.search("c*", limit=2, cursor=cursor)
        assert page.total == full.total
        seen.extend(h.name for h in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [h.name for h in full.hits]
    with pytest.raises(InvalidArgument, match="another search"):
        shop.search("d*", cursor=shop.search("c*", limit=1).next_cursor)
    with pytest.raises(InvalidArgument, match="invalid search cursor"):
        shop.search("c*", cursor="not-a-cursor")


@pytest.mark.parametrize("query,message", [("", "must not be empty"), ("  ", "must not be empty"),
                                           ("*", "at least one character"), ("a*b", "may only end"),
                                           ("key:a=b", "cannot contain '='"), ("=v", "needs a key"),
                                           ("tag:", "must not be empty|nothing to match")])
def test_bad_queries(shop: Metastore, query: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        shop.search(query)


@pytest.mark.parametrize("options,message", [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                                             ({"types": "index"}, "unknown object type"),
                                             ({"scope": "ADMIN"}, "unknown metadata scope")])
def test_bad_options(shop: Metastore, options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        shop.search("x", **options)


# ---- SYSTEM created_by / updated_by / format: no kv entries, found through the value index ------
@pytest.fixture
def shared_values(shop: Metastore) -> Metastore:
    """Keys sharing values with the SYSTEM ones (the user is ``tester``, the format ``parquet``):
    a USER ``created_by`` and ``format``, other keys with the same values, a value equal to a key."""
    shop.metadata.set("main.sales.customers", {"created_by": "tester", "reviewer": "tester"})
    shop.metadata.set("main.sales.orders", {"format": "Parquet", "created_by": "TESTER2", "note": "created_by"})
    shop.metadata.set("main.sales.orders.customer_id", {"updated_by": "tester", "origin": "parquet"})
    shop.metadata.tag("main.sales", ["created_by"])
    return shop


def test_value_only_system_keys_have_no_key_value_entries(shared_values: Metastore) -> None:
    import fdb.tuple as fdbtuple

    from ushas_catalog.metadata.store import INDEX_SCOPES, VALUE_ONLY_SYSTEM_KEYS, MetadataKeys, Scope

    shared_values.merge_index()
    keys = MetadataKeys(shared_values.project_path)
    rows = shared_values.db.run(lambda tr: [fdbtuple.unpack(kv.key[len(keys.index_prefix):])
                                            for kv in tr.get_range(*keys.index.range())])
    kv_keys = {(INDEX_SCOPES[scope], key) for fld, _, _, scope, _, _, key in rows if fld == "kv"}
    values = {(INDEX_SCOPES[scope], key) for fld, _, _, scope, _, _, key in rows if fld == "v"}
    for key in VALUE_ONLY_SYSTEM_KEYS:
        assert (Scope.SYSTEM, key) in values and (Scope.SYSTEM, key) not in kv_keys
    assert {(Scope.USER, "created_by"), (Scope.USER, "format"), (Scope.USER, "updated_by")} <= kv_keys
    assert check_index(shared_values).ok


SHARED_VALUE_QUERIES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("created_by=tester", {"scope": "USER"}, ["main.sales.customers"]),
    ("created_by=tester", {"types": "column"}, []),
    ("updated_by=tester", {"types": "column"}, ["main.sales.orders.customer_id"]),
    ("created_by=TESTER*", {"scope": "USER"}, ["main.sales.customers", "main.sales.orders"]),
    ("created_by=tester2", {}, ["main.sales.orders"]),
    ("created_by=*", {"types": "catalog"}, ["main"]),
    ("created_by=", {}, []),
    ("format=parquet", {}, ["main.sales.customers", "main.sales.orders"]),
    ("format=parquet", {"scope": "USER"}, ["main.sales.orders"]),
    ("format=p*", {"types": "view"}, []),
    ("reviewer=tester", {}, ["main.sales.customers"]),
    ("origin=parquet", {}, ["main.sales.orders.customer_id"]),
    ("key:created_by", {"types": ["table", "view"]}, ["main.sales.big_orders", "main.sales.customers",
                                                      "main.sales.orders"]),
    ("key:created*", {"scope": "USER"}, ["main.sales.customers", "main.sales.orders"]),
    ("key:updated_by", {"types": "column"}, ["main.sales.orders.customer_id"]),
    ("key:form*", {}, ["main.sales.customers", "main.sales.orders"]),
    ("created_by", {"types": "database"}, ["main.sales"]),  # the key, and the tag
    ("created_by", {"scope": "USER", "types": "table"}, ["main.sales.customers", "main.sales.orders"]),
    ("value:tester", {"types": "table"}, ["main.sales.customers", "main.sales.orders"]),
    ("value:created_by", {}, ["main.sales.orders"]),
    ("parquet", {"types": "column"}, ["main.sales.orders.customer_id"]),
    ("c*", {}, []),  # every object: compared with the scan below
    ("up*", {"types": "column"}, ["main.sales.orders.customer_id"]),
]


@pytest.mark.parametrize("query,options,names", SHARED_VALUE_QUERIES,
                         ids=[f"{q} {o}" for q, o, _ in SHARED_VALUE_QUERIES])
def test_value_only_system_keys_answer_like_a_full_scan(shared_values: Metastore, query: str,
                                                        options: dict[str, Any], names: list[str]) -> None:
    page = shared_values.search(query, limit=1000, **options)
    if query != "c*":
        assert sorted(h.name for h in page.hits) == names
    assert page.to_json() == scan_search(shared_values, query, limit=1000, **options).to_json()


def test_key_value_match_of_a_value_only_key_shows_the_property(shared_values: Metastore) -> None:
    hit, = shared_values.search("created_by=tester", types="view").hits
    assert [m.to_json() for m in hit.matches] == [
        {"field": "property", "scope": "SYSTEM", "column": None, "matched": "created_by=tester"}]


@pytest.mark.parametrize("text,scans", [
    ("owner=a*", [("kv", "owner=a", True, False)]),
    ("Created_By=A*", [("kv", "created_by=a", True, False), ("v", "a", True, True)]),
    ("format=", [("kv", "format=", False, False), ("v", "", False, True)]),
    ("key:owner", [("kv", "owner=", True, False)]),
    ("key:cr*", [("kv", "cr", True, False), ("v", "", True, True)]),
    ("tag:created_by", [("t", "created_by", False, False)]),
])
def test_query_scans(text: str, scans: list[tuple[str, str, bool, bool]]) -> None:
    assert [tuple(s) for s in Query.parse(text).scans()] == scans


@pytest.mark.parametrize("text,targets,term,prefix", [
    ("PII", ("t", "key", "v", "f"), "pii", False),
    ("tag:pii*", ("t",), "pii", True),
    ("a=B", ("kv",), "a=b", False),
    ("value:a=b", ("v",), "a=b", False),
    ("unknown:x", ("t", "key", "v", "f"), "unknown:x", False),
])
def test_query_parsing(text: str, targets: tuple[str, ...], term: str, prefix: bool) -> None:
    q = Query.parse(text)
    assert (q.targets, q.term, q.prefix) == (targets, term, prefix)


# ---- randomized catalogs: the index answers like a full scan -----------------------------------
WORDS = ["cust", "customer", "customer_id", "Cust_Name", "amount", "amt", "pii", "gold", "go", "ab", "a",
         "created_by", "Format", "tester", "parquet", "c", "f"]  # the SYSTEM keys kept by value only, their values
word = st.sampled_from(WORDS)
_projects = itertools.count()


@st.composite
def catalogs(draw: Any) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    for t in range(draw(st.integers(1, 4))):
        cols = draw(st.lists(word, min_size=1, max_size=4, unique_by=str.lower))
        ops.append(("table", (f"t{t}", cols, draw(st.sampled_from([None, "gold note", "Amount due"])))))
        for _ in range(draw(st.integers(0, 3))):
            target = draw(st.sampled_from([f"t{t}", f"t{t}.{cols[0]}", "db", "main"]))
            ops.append((draw(st.sampled_from(["tag", "set"])), (target, draw(word), draw(word))))
        for _ in range(draw(st.integers(0, 2))):  # schema changes: the index follows the fields
            ops.append(("alter", (f"t{t}", draw(st.sampled_from(["add_struct", "rename", "drop", "comment"])),
                                  draw(word), draw(word))))
    for _ in range(draw(st.integers(0, 2))):
        ops.append((draw(st.sampled_from(["drop", "rename", "untag"])), draw(st.integers(0, 3))))
    return ops


def _alter(ms: Metastore, table: str, columns: list[str], kind: str, a: str, b: str) -> None:
    """One valid schema change of ``table`` (top-level ``columns``, kept in step)."""
    taken = {c.lower() for c in columns}
    if kind == "add_struct" and f"n_{a}".lower() not in taken:  # a nested field: its path and its own name
        ms.alter_table(table, [AddColumn((f"n_{a}",), parse_type(f"STRUCT<{b}: STRING>"), comment=f"about {b}")])
        columns.append(f"n_{a}")
    elif kind == "rename" and f"r_{a}".lower() not in taken:
        ms.alter_table(table, [RenameColumn((columns[0],), f"r_{a}")])
        columns[0] = f"r_{a}"
    elif kind == "drop" and len(columns) > 1:
        ms.alter_table(table, [DeleteColumn((columns.pop(),))])
    elif kind == "comment":
        ms.alter_table(table, [UpdateColumnComment((columns[0],), None if a == b else f"{a} {b}")])


def _apply(ms: Metastore, ops: list[tuple[str, Any]]) -> None:
    ms.create_catalog("main")
    ms.create_database("main.db")
    tables: list[str] = []
    columns: dict[str, list[str]] = {}  # by the table's name at creation (ops name tables so)
    current: dict[str, str] = {}  # that name -> the table's name now
    for op, arg in ops:
        if op == "table":
            name, cols, comment = arg
            ms.create_table(f"main.db.{name}", ", ".join(f"{c} STRING" for c in cols), comment=comment)
            tables.append(name)
            columns[name], current[name] = list(cols), name
        elif op == "alter":
            first, kind, a, b = arg
            if current.get(first) in tables:
                _alter(ms, f"main.db.{current[first]}", columns[first], kind, a, b)
        elif op in ("tag", "set"):
            target, a, b = arg
            if target.split(".")[0] not in tables and target not in ("db", "main"):
                continue
            name = "main" if target == "main" else "main.db" if target == "db" else f"main.db.{target}"
            if op == "tag":
                ms.metadata.tag(name, [a])
            else:
                ms.metadata.set(name, {a: b})
        elif tables:
            name = tables[arg % len(tables)]
            if op == "drop":
                ms.drop_table(f"main.db.{name}")
                tables.remove(name)
            elif op == "rename":
                ms.rename_table(f"main.db.{name}", f"main.db.{name}_r")
                tables[tables.index(name)] = f"{name}_r"
                current.update({k: f"{name}_r" for k, v in current.items() if v == name})
            else:
                ms.metadata.untag(f"main.db.{name}", WORDS)


queries = st.tuples(st.sampled_from(["", "tag:", "key:", "value:", "field:"]), word,
                    st.booleans()).map(lambda t: f"{t[0]}{t[1]}{'*' if t[2] else ''}") | \
    st.tuples(word, word, st.booleans()).map(lambda t: f"{t[0]}={t[1]}{'*' if t[2] else ''}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=catalogs(), qs=st.lists(queries, min_size=1, max_size=4),
       types=st.sampled_from([None, "table", "column", ["catalog", "database"]]),
       scope=st.sampled_from([None, "USER", "SYSTEM"]), merge_at=st.sampled_from([0, 1, 2, 3, 256]))
def test_index_answers_like_a_full_scan(store_uri: str, ops: list[tuple[str, Any]], qs: list[str], types: Any,
                                        scope: Any, merge_at: int) -> None:
    """Every index write path: straight into the index (0), pending and merged every 1 / 2 / 3
    creates, pending until touched (256)."""
    ms = Metastore.open(store_uri, project=f"p{next(_projects)}", user="tester")  # a fresh project per example
    ms.index_merge_at = merge_at
    try:
        _apply(ms, ops)
        check = check_index(ms)
        assert check.ok, check.to_json()
        for q in qs:
            expected = scan_search(ms, q, types=types, scope=scope, limit=1000, now_ms=NOW)
            assert ms.search(q, types=types, scope=scope, limit=1000, now_ms=NOW).to_json() == expected.to_json()
            paged, cursor = [], None
            while True:
                page = ms.search(q, types=types, scope=scope, limit=2, cursor=cursor, now_ms=NOW)
                paged.extend(h.to_json() for h in page.hits)
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert paged == [h.to_json() for h in expected.hits]
    finally:
        ms.close()


def test_usage_scan_and_per_table_reads_agree(shop: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
    import ushas_catalog.metadata.search as search_module

    today = NOW // DAY_MS
    _use(shop, "main.sales.orders", today - 3, 7)
    _use(shop, "main.sales.customers", today, 2)
    one = shop.search("customer*", now_ms=NOW).to_json()
    monkeypatch.setattr(search_module, "USAGE_SCAN_THRESHOLD", 0)
    assert shop.search("customer*", now_ms=NOW).to_json() == one
