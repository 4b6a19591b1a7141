"""``--json`` is accepted before the command, after it, and after a group's subcommand, on every
command that reads; each position gives the same JSON."""
from __future__ import annotations

import json

import pytest
from small_store import fill

from ushas_catalog.cli import main, split_json_flag

READS: list[list[str]] = [
    ["keyspace"], ["catalogs"], ["databases"], ["databases", "main"], ["tables", "main.sales"],
    ["describe", "main.sales.orders"], ["partitions", "main.sales.orders"], ["history", "main.sales.orders"],
    ["dropped"], ["stats", "--this-project"],
    ["meta", "show", "main.sales.orders"], ["meta", "history", "main.sales.orders"], ["search", "orders"],
    ["changes"], ["changes", "head"],
    ["lineage", "status"], ["lineage", "runs", "main.sales.orders"], ["lineage", "upstream", "main.sales.orders"],
    ["lineage", "downstream", "main.sales.orders"], ["lineage", "sql", "SELECT 1 AS x"],
    ["repair", "--counter", "--dry-run"],
]


@pytest.fixture
def filled(store_uri: str) -> str:
    return fill(store_uri, user="cli")


def run(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def positions(argv: list[str]) -> list[list[str]]:
    """``--json`` first, last, and right after a group's subcommand."""
    out = [["--json", *argv], [*argv, "--json"]]
    if argv[0] in ("meta", "lineage", "changes") and len(argv) > 1:
        out.append([argv[0], argv[1], "--json", *argv[2:]])
    return out


@pytest.mark.parametrize("argv", READS, ids=lambda a: " ".join(a))
def test_json_anywhere_gives_the_same_answer(filled: str, argv: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    answers = []
    for form in positions(argv):
        rc, out, err = run(capsys, filled, *form)
        answers.append((rc, out, err))
    rc, out, err = answers[0]
    if rc == 0 and argv == ["changes"]:
        assert [json.loads(line) for line in out.splitlines()]  # JSON lines, one per event
    elif rc == 0:
        json.loads(out)  # it is JSON
    else:  # a read with nothing to show (no captured lineage): the same one-line error each time
        assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert all(a == answers[0] for a in answers), answers


def test_json_after_the_end_of_options_is_an_argument() -> None:
    assert split_json_flag(["lineage", "sql", "--json", "--", "--json"]) == (["lineage", "sql", "--", "--json"], True)
    assert split_json_flag(["tables", "a.b"]) == (["tables", "a.b"], False)
