"""The metastore CLI commands through ``main([...])`` and once through the installed ``ushas`` script."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore


@pytest.fixture
def filled(store_uri: str) -> str:
    ms = Metastore.open(store_uri, project="acme", user="cli")
    ms.create_catalog("main")
    ms.create_database("main.sales", location="/wh/sales")
    ms.create_table("main.sales.orders", "id BIGINT, dt DATE, h INT", partition_by=["dt", "h"])
    ms.add_partitions("main.sales.orders", [{"dt": "2024-01-0%d" % d, "h": h} for d in (1, 2) for h in (1, 2)])
    ms.create_view("main.sales.v", "SELECT id FROM orders", "id BIGINT")
    ms.close()
    return store_uri


def run(capsys: pytest.CaptureFixture[str], uri: str, *argv: str) -> tuple[int, str, str]:
    rc = main(["--uri", uri, "--project", "acme", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_reads_text_and_json(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, filled, "keyspace")
    assert rc == 0 and 'TableSchema "Ts"' in out and "tableId (UUID)" in out
    rc, out, _ = run(capsys, filled, "--json", "keyspace")
    assert json.loads(out)["children"][0]["name"] == "project"
    rc, out, _ = run(capsys, filled, "catalogs")
    assert rc == 0 and out.splitlines()[1].startswith("main")
    rc, out, _ = run(capsys, filled, "databases", "--json")
    assert [d["name"] for d in json.loads(out)] == ["sales"]
    rc, out, _ = run(capsys, filled, "databases", "main")
    assert "/wh/sales" in out
    rc, out, _ = run(capsys, filled, "tables", "main.sales")
    assert "orders" in out and "VIEW" in out
    rc, out, _ = run(capsys, filled, "describe", "main.sales.orders")
    assert "Partitioned by: dt, h" in out and "BIGINT" in out
    rc, out, _ = run(capsys, filled, "describe", "main.sales.v")
    assert "SELECT id FROM orders" in out
    rc, out, _ = run(capsys, filled, "--json", "describe", "main.sales.orders", "--as-of", "1")
    assert json.loads(out)["version"] == 1
    rc, out, _ = run(capsys, filled, "partitions", "main.sales.orders", "--prefix", "dt=2024-01-02")
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [["2024-01-02", "1"], ["2024-01-02", "2"]]
    rc, out, _ = run(capsys, filled, "partitions", "main.sales.orders", "--json", "--limit", "1")
    assert json.loads(out)[0]["spec"] == {"dt": "2024-01-01", "h": "1"}
    rc, out, _ = run(capsys, filled, "history", "main.sales.orders", "--json")
    assert [h["operation"] for h in json.loads(out)] == ["ADD PARTITIONS", "CREATE TABLE"]
    rc, out, _ = run(capsys, filled, "stats", "--json")
    assert {"project": "acme", "subspace": "TablePartition"}.items() <= \
        next(s for s in json.loads(out) if s["subspace"] == "TablePartition").items()


def test_drop_undrop_purge(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, filled, "drop", "main.sales.orders")[0] == 0
    rc, out, _ = run(capsys, filled, "dropped", "main.sales", "--json")
    assert [d["name"] for d in json.loads(out)] == ["main.sales.orders"]
    assert run(capsys, filled, "undrop", "main.sales.orders")[0] == 0
    assert run(capsys, filled, "drop", "main.sales.orders")[0] == 0
    rc, out, _ = run(capsys, filled, "purge", "main.sales.orders")
    assert rc == 0 and "purged 1" in out
    assert run(capsys, filled, "drop", "main.sales.v")[0] == 0
    assert run(capsys, filled, "drop", "main.sales")[0] == 0
    assert run(capsys, filled, "undrop", "main.sales")[0] == 0
    assert run(capsys, filled, "drop", "main", "--cascade", "--purge")[0] == 0
    rc, out, _ = run(capsys, filled, "--json", "catalogs")
    assert json.loads(out) == []


@pytest.mark.parametrize("argv, code, message", [
    (["describe", "main.sales.nope"], 1, "NoSuchTable"),
    (["describe", "main.nope.t"], 1, "NoSuchNamespace"),
    (["history", "nope"], 1, "NoSuchCatalog"),
    (["undrop", "main.sales.orders"], 1, "no dropped table"),
    (["describe", "a.b"], 2, "InvalidName"),
    (["describe", "main.sales.orders", "--as-of", "yesterday"], 2, "neither a version"),
    (["describe", "main.sales.orders", "--as-of", "99"], 1, "NoSuchVersion"),
    (["partitions", "main.sales.orders", "--prefix", "dt"], 2, "COLUMN=VALUE"),
    (["partitions", "main.sales.orders", "--prefix", "dt=notadate"], 2, "partition column 'dt'"),
    (["drop", "main.sales"], 2, "NamespaceNotEmpty"),
    (["drop", "a.b.c.d"], 2, "1 to 3 parts"),
])
def test_errors_one_line_and_exit_code(filled: str, capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                                       message: str) -> None:
    rc, _, err = run(capsys, filled, *argv)
    assert rc == code
    assert message in err and len(err.strip().splitlines()) == 1


def test_usage_error_exits_2(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run(capsys, filled, "tables")
    assert caught.value.code == 2
    assert "the following arguments are required" in capsys.readouterr().err


def test_installed_script_on_a_fresh_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "USHAS_URI": f"sqlite:///{tmp_path / 'fresh.db'}", "USHAS_PROJECT": "p"}
    script = os.path.join(os.path.dirname(sys.executable), "ushas")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "ushas_catalog"]
    done = subprocess.run(cmd + ["--json", "catalogs"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("ushas: StoreNotFound: store not found")
    assert not (tmp_path / "fresh.db").exists()  # a read never creates a store
    done = subprocess.run(cmd + ["init"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "created a new store" in done.stdout, done.stderr
    done = subprocess.run(cmd + ["--json", "catalogs"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    done = subprocess.run(cmd + ["describe", "a.b.c"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("ushas: NoSuchCatalog")
