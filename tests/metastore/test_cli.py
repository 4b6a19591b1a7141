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
    # hostile bytes and numbers (issue 25): each a one-line error naming the argument, exit 2
    (["describe", "main.sales.orders", "--as-of", "9" * 5000], 2, "--as-of '99"),
    (["describe", "main.sales.orders", "--as-of", "9" * 20], 2, "out of range"),
    (["describe", "main.sales.orders", "--as-of", "\u00b2"], 2, "not an integer"),
    (["tables", "main.\udcff"], 2, "argument 6 'main.\\xff' is not valid UTF-8"),  # as argv decodes $'\xff'
    (["tables", "main.\ud800"], 2, "lone surrogate"),
    (["tables", "main.a\x00b"], 2, "NUL"),
    (["--project", "p\udcfe", "catalogs"], 2, "not valid UTF-8"),
    (["partitions", "main.sales.orders", "--limit", "9" * 25], 2, "argument --limit '9999"),
    (["partitions", "main.sales.orders", "--limit", "9" * 5000], 2, "invalid int value"),
    (["history", "main.sales.orders", "--limit", "-1"], 2, "--limit must be >= 0"),
    (["changes", "--poll", "nan"], 2, "--poll 'nan' is not a finite number"),
    (["changes", "--poll", "inf"], 2, "not a finite number"),
    (["changes", "trim", "--older-than", "9" * 30 + "d"], 2, "out of range"),
    (["changes", "trim", "--older-than", "\u0661d"], 2, "invalid duration"),  # an Arabic-Indic digit
    (["lineage", "runs", "main.sales.orders", "--since", "9" * 5000], 2, "out of range for epoch"),
])
def test_errors_one_line_and_exit_code(filled: str, capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                                       message: str) -> None:
    try:
        rc, _, err = run(capsys, filled, *argv)
    except SystemExit as exc:  # argparse's usage errors
        rc, err = exc.code, capsys.readouterr().err
    assert rc == code, err
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_undecodable_argv_from_a_real_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``ushas search $'\\xff'``: the bytes as the operating system passes them."""
    env = {**os.environ, "USHAS_URI": f"sqlite:///{tmp_path / 's.db'}"}
    done = subprocess.run([sys.executable, "-m", "ushas_catalog", "search", b"\xff"], env=env, capture_output=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == "ushas: error: argument 2 '\\xff' is not valid UTF-8 (undecodable bytes)\n"


def test_text_output_escapes_control_characters(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    red, title = "\x1b[31m", "\x1b]0;owned\x07"
    ms = Metastore.open(filled, project="acme")
    ms.create_table("main.sales.hostile", f"id INT COMMENT 'a{red}b'", comment=f"{red}two\nlines{title}",
                    properties={"k": f"v{title}\u202e"})
    ms.create_view("main.sales.hv", f"SELECT 1 AS id -- {red}", "id INT", comment=red)
    ms.close()
    rc, out, _ = run(capsys, filled, "describe", "main.sales.hostile")
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "Comment:     \\x1b[31mtwo\\x0alines\\x1b]0;owned\\x07" in out  # one line, every byte visible
    assert "-- a\\x1b[31mb" in out and "k = v\\x1b]0;owned\\x07\\u202e" in out
    rc, out, _ = run(capsys, filled, "describe", "main.sales.hv")
    assert rc == 0 and "\x1b" not in out and "-- \\x1b[31m" in out
    rc, out, _ = run(capsys, filled, "tables", "main.sales")
    assert rc == 0 and "\x1b" not in out
    rc, out, _ = run(capsys, filled, "--json", "describe", "main.sales.hostile")  # JSON escapes itself
    assert rc == 0 and json.loads(out)["comment"] == f"{red}two\nlines{title}"
    assert run(capsys, filled, "meta", "set", "main.sales.orders", f"note=x{red}\ny")[0] == 0
    rc, out, _ = run(capsys, filled, "meta", "show", "main.sales.orders")
    assert rc == 0 and "note = x\\x1b[31m\\x0ay" in out and "\x1b" not in out
    rc, out, _ = run(capsys, filled, "changes")
    assert rc == 0 and "hostile" in out and "\x1b" not in out


def test_stats_lists_only_its_own_project(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    other = Metastore.open(filled, project="someone_else")
    other.create_catalog("their_secret_catalog")
    other.close()
    for argv in (["stats"], ["stats", "--this-project"]):
        rc, out, _ = run(capsys, filled, "--json", *argv)
        assert rc == 0 and {s["project"] for s in json.loads(out)} == {"acme"}
        rc, out, _ = run(capsys, filled, *argv)
        assert rc == 0 and "acme" in out and "someone_else" not in out


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
