"""``ushas branch create|list|drop|merge`` and the global ``--branch`` (docs/branches.md)."""
from __future__ import annotations

import json

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore


@pytest.fixture
def filled(store_uri: str) -> str:
    with Metastore.open(store_uri, project="acme") as ms:
        ms.create_catalog("c")
        ms.create_database("c.db")
        ms.create_table("c.db.t", "id BIGINT, p STRING", partition_by=["p"])
        ms.add_partitions("c.db.t", [{"p": "a"}])
    return store_uri


def run(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_branch_commands_and_global_branch_option(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, filled, "branch", "create", "c", "dev")
    assert rc == 0 and "created branch dev of catalog c" in out
    with Metastore.open(filled, project="acme", branch="dev") as dev:
        dev.add_partitions("c.db.t", [{"p": "z"}])
    rc, out, _ = run(capsys, filled, "--branch", "dev", "partitions", "c.db.t", "--json")
    assert rc == 0 and "z" in out
    rc, out, _ = run(capsys, filled, "partitions", "c.db.t", "--json")
    assert rc == 0 and "z" not in out
    rc, out, _ = run(capsys, filled, "branch", "list", "c", "--json")
    rows = json.loads(out)
    assert [r["branch"] for r in rows] == ["dev"] and rows[0]["changed_keys"] > 0
    rc, out, _ = run(capsys, filled, "--branch", "dev", "branch", "merge", "c", "dev")
    assert rc == 0 and "merged branch dev of catalog c into main: 1 object(s) (c.db.t)" in out
    rc, out, _ = run(capsys, filled, "partitions", "c.db.t", "--json")
    assert "z" in out
    rc, out, _ = run(capsys, filled, "branch", "drop", "c", "dev")
    assert rc == 0
    rc, out, err = run(capsys, filled, "branch", "drop", "c", "dev")
    assert rc == 1 and err.strip() == "ushas: NoSuchBranch: catalog c has no branch 'dev'"


def test_branch_cli_errors(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, filled, "--branch", "nope", "partitions", "c.db.t")
    assert rc == 1 and "NoSuchBranch: catalog c has no branch 'nope'" in err
    rc, _, err = run(capsys, filled, "branch", "create", "c", "Bad/Name")
    assert rc == 2 and "invalid branch name" in err
    run(capsys, filled, "branch", "create", "c", "dev")
    with Metastore.open(filled, project="acme", branch="dev") as dev:
        dev.add_partitions("c.db.t", [{"p": "z"}])
    with Metastore.open(filled, project="acme") as ms:
        ms.add_partitions("c.db.t", [{"p": "m"}])
    rc, _, err = run(capsys, filled, "branch", "merge", "c", "dev")
    assert rc != 0 and "BranchConflict" in err and "table c.db.t" in err and "nothing was merged" in err
    assert err.count("\n") == 1
