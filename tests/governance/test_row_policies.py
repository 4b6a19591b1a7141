"""Row filters and column masks as stored policy (docs/governance.md): set / drop through the Python API and
the CLI, each one commit of the table (history, change feed, ``as_of``), MANAGE required, bad input refused
with nothing written, what a reader's Spark is told to apply (``for_reader``). Reads through Spark:
tests/spark/test_row_filters_*.py."""
from __future__ import annotations

from typing import Any

import pytest

from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidPolicy, PermissionDenied
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.row_policies import ColumnMask, RowFilter, for_reader, without_masked_statistics
from ushas_catalog.model.table_changes import DeleteColumn, RenameColumn, SetProperty

T = ("c", "db", "t")


@pytest.fixture
def ms(store_uri: str) -> Any:
    m = Metastore.open(store_uri, project="p")
    m.create_catalog("c")
    m.create_database(("c", "db"))
    m.create_table(T, schema="id INT, name STRING, ssn STRING")
    yield m
    m.close()


def test_set_and_drop_are_commits_of_the_table(ms: Metastore) -> None:
    info = ms.set_row_filter(T, "id > 1", "role:hr")
    assert info.row_filter == RowFilter("id > 1", "role:hr") and info.version == 2
    info = ms.set_column_mask(T, "SSN", "'***'")  # the column as the table names it
    assert info.column_masks == [ColumnMask("ssn", "'***'", "")]
    info = ms.set_column_mask(T, "ssn", "upper(ssn)", "group:audit")  # replaces the column's mask
    assert info.column_masks == [ColumnMask("ssn", "upper(ssn)", "group:audit")] and info.version == 4
    assert ms.get_table(T).to_json()["row_filter"] == {"expression": "id > 1", "exempt": "role:hr"}
    ms.drop_row_filter(T)
    ms.drop_column_mask(T, "ssn")
    now = ms.get_table(T)
    assert now.row_filter is None and now.column_masks == [] and now.version == 6
    assert ms.get_table(T, as_of=3).column_masks == [ColumnMask("ssn", "'***'", "")]  # versioned with the table
    ops = [h.operation for h in ms.history(T)]
    assert ops[:5] == ["DROP COLUMN MASK", "DROP ROW FILTER", "SET COLUMN MASK", "SET COLUMN MASK", "SET ROW FILTER"]
    events = [c for c in ms.changes() if c.operation.endswith(("ROW FILTER", "COLUMN MASK"))]
    assert len(events) == 5


@pytest.mark.parametrize("call, message", [
    (lambda m: m.set_row_filter(T, "  "), "non-empty SQL expression"),
    (lambda m: m.set_row_filter(T, "id > 1", "admins"), "is not role:NAME"),
    (lambda m: m.set_row_filter(T, "x" * 20000), "at most"),
    (lambda m: m.set_column_mask(T, "nope", "1"), "column 'nope' does not exist"),
    (lambda m: m.drop_row_filter(T), "has no row filter"),
    (lambda m: m.drop_column_mask(T, "name"), "has no mask"),
], ids=["empty", "principal", "long", "column", "no_filter", "no_mask"])
def test_bad_input_writes_nothing(ms: Metastore, call: Any, message: str) -> None:
    with pytest.raises(InvalidPolicy, match=message):
        call(ms)
    assert ms.get_table(T).version == 1


def test_a_masked_column_stays_while_its_mask_does(ms: Metastore) -> None:
    ms.set_column_mask(T, "ssn", "'***'")
    for change in (DeleteColumn(("ssn",)), RenameColumn(("ssn",), "tax_id")):
        with pytest.raises(InvalidPolicy, match="drop the mask first"):
            ms.alter_table(T, [change])
    ms.alter_table(T, [DeleteColumn(("name",))])  # other columns change as ever
    ms.drop_column_mask(T, "ssn")
    ms.alter_table(T, [DeleteColumn(("ssn",))])


def test_managing_them_needs_manage(store_uri: str, ms: Metastore) -> None:
    ms.grant("SELECT", T, "user:bob")
    ms.grant("MODIFY", T, "user:bob")
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    try:
        for call in (lambda: bob.set_row_filter(T, "id > 1"), lambda: bob.set_column_mask(T, "ssn", "'x'")):
            with pytest.raises(PermissionDenied, match="does not have MANAGE on table c.db.t"):
                call()
        ms.grant("MANAGE", T, "user:bob")
        bob.set_row_filter(T, "id > 1")
        bob.drop_row_filter(T)
    finally:
        bob.close()


def test_what_a_reader_applies() -> None:
    f, masks = RowFilter("id > 1", "role:hr"), [ColumnMask("ssn", "'***'", "group:audit"), ColumnMask("name", "'x'")]
    assert for_reader(f, masks, "bob", frozenset({"user:bob"})) == {
        "row_filter": "id > 1", "masks": [{"column": "ssn", "expression": "'***'"}, {"column": "name", "expression": "'x'"}],
        "user": "bob", "principals": ["user:bob"]}
    hr = for_reader(f, masks, "ann", frozenset({"user:ann", "role:hr", "group:audit"}))
    assert hr is not None and hr["row_filter"] is None and [m["column"] for m in hr["masks"]] == ["name"]
    assert for_reader(None, [], "bob", frozenset({"user:bob"})) is None
    assert for_reader(f, [], "ann", frozenset({"role:hr"})) is None  # exempt from everything: nothing to apply


def test_cli(store_uri: str, ms: Metastore, capsys: Any) -> None:
    def ushas(*argv: str, user: str | None = None) -> int:
        return main(["--uri", store_uri, "--project", "p", *(["--user", user] if user else []), *argv])

    assert ushas("row-filter", "set", "c.db.t", "id > 1", "--exempt", "role:hr") == 0
    assert ushas("column-mask", "set", "c.db.t", "ssn", "'***'") == 0
    assert ushas("describe", "c.db.t") == 0
    out = capsys.readouterr().out
    assert "Row filter:  id > 1  (exempt: role:hr)" in out and "ssn: '***'" in out
    assert ushas("column-mask", "set", "c.db.t", "nope", "1") == 2
    assert "InvalidPolicy: column 'nope' does not exist" in capsys.readouterr().err
    assert ushas("row-filter", "drop", "c.db.t", user="bob") == 2
    assert "does not have MANAGE" in capsys.readouterr().err
    assert ushas("column-mask", "drop", "c.db.t", "ssn") == 0
    assert ushas("row-filter", "drop", "c.db.t") == 0
    assert ms.get_table(T).row_filter is None


def test_statistics_of_a_masked_column_are_not_shown_to_its_readers() -> None:
    props = {"spark.sql.statistics.colStats.SSN.max": "999", "spark.sql.statistics.colStats.id.max": "4",
             "spark.sql.statistics.numRows": "4", "k": "v"}
    policy = for_reader(None, [ColumnMask("ssn", "'***'")], "bob", frozenset({"user:bob"}))
    assert without_masked_statistics(props, policy) == {"spark.sql.statistics.colStats.id.max": "4",
                                                        "spark.sql.statistics.numRows": "4", "k": "v"}
    assert without_masked_statistics(props, None) == props


def test_statistics_over_rows_a_reader_cannot_see_are_withheld() -> None:
    """Under a row filter every column's statistics and the row counts describe hidden rows too."""
    props = {"spark.sql.statistics.colStats.id.max": "4", "spark.sql.statistics.colStats.id.version": "2",
             "spark.sql.statistics.numRows": "4", "numRows": "4", "totalSize": "10", "k": "v"}
    policy = for_reader(RowFilter("id < 3", "role:auditors"), [], "bob", frozenset({"user:bob"}))
    assert without_masked_statistics(props, policy) == {"totalSize": "10", "k": "v"}
    exempt = for_reader(RowFilter("id < 3", "role:auditors"), [], "carol", frozenset({"user:carol", "role:auditors"}))
    assert without_masked_statistics(props, exempt) == props


def test_a_restore_keeps_the_current_policy(ms: Metastore) -> None:
    """restore_table needs MODIFY only: it brings back data and schema, never an older (or no) policy."""
    ms.alter_table(T, [SetProperty("k", "v")])
    ms.set_row_filter(T, "id > 1")
    ms.set_column_mask(T, "ssn", "'***'")
    ms.restore_table(T, 1)
    now = ms.get_table(T)
    assert now.row_filter == RowFilter("id > 1") and now.column_masks == [ColumnMask("ssn", "'***'")]
    assert "k" not in now.properties  # the rest of the properties was restored
    ms.drop_row_filter(T)
    ms.restore_table(T, 3)  # the version with the filter: not brought back either
    assert ms.get_table(T).row_filter is None


def test_a_replace_keeps_the_policy(ms: Metastore) -> None:
    ms.set_row_filter(T, "id > 1")
    ms.set_column_mask(T, "ssn", "'***'")
    info = ms.replace_table(T, schema="id INT, ssn STRING, extra INT")
    assert info.row_filter == RowFilter("id > 1") and info.column_masks == [ColumnMask("ssn", "'***'")]


def test_the_cli_and_rest_withhold_statistics_of_hidden_rows(ms: Metastore, store_uri: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``ushas --user bob describe`` and ``GET …/tables/t`` show bob (under the row filter) no statistics
    computed over every row; the exempt member sees them."""
    import json

    from ushas_catalog.service.tokens import TokenStore

    from service.live import running

    ms.set_statistics(T, {"spark.sql.statistics.numRows": "4", "spark.sql.statistics.colStats.id.max": "4",
                          "spark.sql.statistics.colStats.id.version": "2"})
    ms.set_row_filter(T, "id < 3", "role:hr")
    ms.create_role("hr")
    ms.grant_role("hr", "user:carol")
    for user in ("bob", "carol"):
        ms.grant("SELECT", ("c", "db", "t"), f"user:{user}")
    tokens = {u: TokenStore(ms).create("read", u)[1] for u in ("bob", "carol")}
    stats = "spark.sql.statistics."
    for user, shown in (("bob", False), ("carol", True)):
        assert main(["--uri", store_uri, "--project", "p", "--user", user, "--json", "describe", "c.db.t"]) == 0
        props = json.loads(capsys.readouterr().out)["properties"]
        assert any(k.startswith(stats) for k in props) == shown, (user, props)
    for live in running(store_uri, authorization=True, project="p"):
        for user, shown in (("bob", False), ("carol", True)):
            answer = live.get("/api/v1/catalogs/c/databases/db/tables/t",
                              headers={"Authorization": f"Bearer {tokens[user]}"})
            assert answer.status == 200, answer.body
            assert any(k.startswith(stats) for k in answer.json["properties"]) == shown, (user, answer.json)


def test_partitions_are_not_listed_to_a_filtered_reader(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Partition values, counts and paths are row data: the CLI with ``--user`` and the REST API refuse them
    to a reader under the row filter and show them to the exempt member; nothing is written."""
    from ushas_catalog.service.tokens import TokenStore

    from service.live import running

    m = Metastore.open(store_uri, project="p")
    m.create_catalog("c")
    m.create_database(("c", "db"))
    m.create_table(("c", "db", "pt"), schema="id INT, region STRING", partition_by=["region"])
    m.add_partitions(("c", "db", "pt"), [{"region": "EU"}, {"region": "US"}])
    m.set_row_filter(("c", "db", "pt"), "region = 'EU'", "role:hr")
    m.create_role("hr")
    m.grant_role("hr", "user:carol")
    for user in ("bob", "carol"):
        m.grant("SELECT", ("c", "db", "pt"), f"user:{user}")
    tokens = {u: TokenStore(m).create("read", u)[1] for u in ("bob", "carol")}
    version = m.get_table(("c", "db", "pt")).version
    for user, code in (("bob", 2), ("carol", 0)):
        assert main(["--uri", store_uri, "--project", "p", "--user", user, "partitions", "c.db.pt"]) == code
        out = capsys.readouterr()
        assert ("US" in out.out) == (user == "carol"), out
        if code:
            assert "the partition listing of table c.db.pt is refused" in out.err and "US" not in out.err, out.err
    for live in running(store_uri, authorization=True, project="p"):
        for user, status in (("bob", 400), ("carol", 200)):
            answer = live.get("/api/v1/catalogs/c/databases/db/tables/pt/partitions",
                              headers={"Authorization": f"Bearer {tokens[user]}"})
            assert answer.status == status, answer.body
            assert (b"US" in answer.body) == (user == "carol"), answer.body
    assert m.get_table(("c", "db", "pt")).version == version
    m.close()


def test_row_counts_in_metadata_follow_the_row_filter(ms: Metastore, store_uri: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The lineage-written SYSTEM ``row_count`` counts rows a filtered reader cannot see: bob (under the row
    filter) gets it from none of ``metadata.get``, ``meta show``, ``meta history``, ``GET /metadata`` or a search
    for its value (which would tell it digit by digit); the file count stays (as in the table's statistics); the
    exempt member gets both; an unfiltered table's count stays visible to bob."""
    import uuid

    from ushas_catalog.metadata.sync import record_lineage_write
    from ushas_catalog.service.tokens import TokenStore

    from service.live import running

    ms.create_table(("c", "db", "open"), schema="id INT")
    for name, rows in ((T, 987_654), (("c", "db", "open"), 123_456)):
        tid = uuid.UUID(ms.get_table(name).id)
        ms.db.run(lambda tr, tid=tid, rows=rows: record_lineage_write(tr, ms.project_path, tid, run_id=uuid.uuid4(),
                                                                      at_ms=1_700_000_000_000, user="etl", rows=rows,
                                                                      files=7))
    ms.set_row_filter(T, "id < 3", "role:hr")
    ms.create_role("hr")
    ms.grant_role("hr", "user:carol")
    for user in ("bob", "carol"):
        ms.grant("SELECT", ("c", "db", "t"), f"user:{user}")
        ms.grant("SELECT", ("c", "db", "open"), f"user:{user}")
    for user, shown in (("bob", False), ("carol", True)):
        reader = Metastore.open(store_uri, project="p", user=user, authorization=True)
        system = reader.metadata.get("c.db.t").system.properties
        assert ("row_count" in system, system["file_count"]) == (shown, "7"), (user, system)
        assert reader.metadata.get("c.db.open").system.properties["row_count"] == "123456"
        history = reader.metadata.history("c.db.t")
        assert any(c.key == "row_count" for c in history) == shown, (user, history)
        assert [h.name for h in reader.search("987654").hits] == (["c.db.t"] if shown else []), user
        assert [h.name for h in reader.search("row_count=987*", scope="SYSTEM").hits] == (["c.db.t"] if shown else [])
        assert [h.name for h in reader.search("123456").hits] == ["c.db.open"]
        reader.close()
        for command in (["meta", "show", "c.db.t"], ["meta", "history", "c.db.t"]):
            assert main(["--uri", store_uri, "--project", "p", "--user", user, "--json", *command]) == 0
            assert ("987654" in capsys.readouterr().out) == shown, (user, command)
    tokens = {u: TokenStore(ms).create("read", u)[1] for u in ("bob", "carol")}
    for live in running(store_uri, authorization=True, project="p"):
        for user, shown in (("bob", False), ("carol", True)):
            for path in ("/api/v1/metadata?catalog=c&database=db&table=t",
                         "/api/v1/metadata/history?catalog=c&database=db&table=t",
                         "/api/v1/catalogs/c/databases/db/tables/t", "/api/v1/search?q=987654"):
                answer = live.get(path, headers={"Authorization": f"Bearer {tokens[user]}"})
                assert answer.status == 200, (path, answer.body)
                assert (b"987654" in answer.body) == shown, (user, path, answer.body)
    # a property of the same value as the row count: bob finds the table by it, the match shown as the property's
    ms.metadata.set("c.db.t", {"batch": "987654"})
    bob = Metastore.open(store_uri, project="p", user="bob", authorization=True)
    hit, = bob.search("987654").hits
    assert hit.name == "c.db.t" and [m.to_json()["scope"] for m in hit.matches] == ["USER"], hit
    bob.close()
