"""``ushas meta ...`` and ``ushas search`` through the CLI entry point."""
from __future__ import annotations

import json

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore


@pytest.fixture
def cli(store_uri: str, capsys: pytest.CaptureFixture[str]):
    ms = Metastore.open(store_uri, project="acme", user="tester")
    ms.create_catalog("main")
    ms.create_database("main.sales")
    ms.create_table("main.sales.orders", "id BIGINT, customer_id BIGINT COMMENT 'the buyer'")
    ms.close()

    def run(*argv: str) -> tuple[int, str, str]:
        rc = main(["--uri", store_uri, "--project", "acme", *argv])
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


def test_meta_commands(cli) -> None:
    assert cli("meta", "set", "main.sales.orders", "owner=alice", "tier=gold")[0] == 0
    assert cli("meta", "tag", "main.sales.orders.customer_id", "pii")[0] == 0
    rc, out, _ = cli("meta", "show", "main.sales.orders", "--json")
    data = json.loads(out)
    assert data["USER"]["properties"] == {"owner": "alice", "tier": "gold"}
    assert data["columns"]["customer_id"]["USER"] == {"properties": {"comment": "the buyer"}, "tags": ["pii"]}
    assert data["SYSTEM"]["properties"]["created_by"] == "tester"
    rc, out, _ = cli("meta", "show", "main.sales.orders", "--scope", "system")
    assert "USER" not in out and "created_by = tester" in out
    assert cli("meta", "unset", "main.sales.orders", "tier")[0] == 0
    assert cli("meta", "untag", "main.sales.orders.customer_id", "pii")[0] == 0
    rc, out, _ = cli("--json", "meta", "history", "main.sales.orders")
    assert [(c["action"], c["key"]) for c in json.loads(out)] == [("set", "owner"), ("set", "tier"), ("tag", "pii"),
                                                                  ("unset", "tier"), ("untag", "pii")]
    rc, out, _ = cli("meta", "history", "main.sales.orders", "--limit", "1")
    assert "untag" in out and "owner" not in out


@pytest.mark.parametrize("argv,rc,message", [
    (["meta", "set", "main.sales.orders", "created_by=x", "--scope", "SYSTEM"], 2, "ReadOnlyMetadata"),
    (["meta", "set", "main.sales.orders", "novalue"], 2, "expected KEY=VALUE"),
    (["meta", "set", "main.sales.orders", "ushas.k=v"], 2, "reserved prefix"),
    (["meta", "tag", "main.sales.nope", "x"], 1, "NoSuchTable"),
    (["search", "*"], 2, "at least one character"),
    (["search", "\udcff"], 2, "'\\xff' is not valid UTF-8"),  # ushas search $'\xff' (surrogateescape'd argv)
    (["search", "x", "--limit", "9" * 30], 2, "--limit '999"),
    (["meta", "set", "main.sales.orders", "k=\ud83d"], 2, "lone surrogate"),
    (["meta", "history", "main.sales.orders", "--limit", "-" + "9" * 20], 2, "out of range"),
])
def test_meta_errors(cli, capsys: pytest.CaptureFixture[str], argv: list[str], rc: int, message: str) -> None:
    try:
        code, _, err = cli(*argv)
    except SystemExit as exc:  # argparse's usage errors (bad argument bytes and numbers among them)
        code, err = exc.code, capsys.readouterr().err
    assert code == rc and message in err and len(err.strip().splitlines()) == 1


def test_search_command(cli) -> None:
    cli("meta", "tag", "main.sales.orders", "gold")
    rc, out, _ = cli("search", "customer*", "--json")
    page = json.loads(out)
    assert rc == 0 and [h["name"] for h in page["hits"]] == ["main.sales.orders"]
    assert page["hits"][0]["matches"][0]["field"] == "field"
    rc, out, _ = cli("search", "customer*", "--type", "column")
    assert "main.sales.orders.customer_id" in out and "1 of 1" in out
    rc, out, _ = cli("search", "created_by=tester", "--scope", "SYSTEM", "--limit", "1")
    assert "next page: --cursor" in out
    cursor = out.rsplit("--cursor ", 1)[1].strip()
    rc, out2, _ = cli("search", "created_by=tester", "--scope", "SYSTEM", "--limit", "1", "--cursor", cursor)
    assert rc == 0 and out2.splitlines()[1] != out.splitlines()[1]
