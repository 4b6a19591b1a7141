"""One default store for the CLI, the demo, ``configure()`` and ``spark-conf``: ``USHAS_URI``, else
``sqlite:///$XDG_DATA_HOME/ushas/ushas.db`` (``~/.local/share/ushas`` without it); a missing store names
``--uri``, ``USHAS_URI`` and ``ushas init`` (issue 36)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ushas_catalog.cli import main
from ushas_catalog.store_location import default_store_path, default_uri


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from ushas_catalog.spark.jar import cache_dir

    monkeypatch.setenv("USHAS_JAR_CACHE", str(cache_dir()))  # the built jar, whatever HOME says
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("USHAS_URI", raising=False)
    return tmp_path / "data"


@pytest.mark.parametrize("xdg, expected", [
    ("{tmp}/data", "{tmp}/data/ushas/ushas.db"),
    ("", "{tmp}/home/.local/share/ushas/ushas.db"),
    ("relative/dir", "{tmp}/home/.local/share/ushas/ushas.db"),  # a relative XDG_DATA_HOME is ignored
])
def test_default_store_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: str, expected: str) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", xdg.format(tmp=tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("USHAS_URI", raising=False)
    assert default_store_path() == Path(expected.format(tmp=tmp_path))
    assert default_uri() == f"sqlite:///{expected.format(tmp=tmp_path)}"
    monkeypatch.setenv("USHAS_URI", "sqlite:///elsewhere/u.db")
    assert default_uri() == "sqlite:///elsewhere/u.db"


@pytest.mark.parametrize("argv", [["catalogs"], ["tables", "c.db"], ["check"], ["lineage", "upstream", "c.db.t"]])
def test_store_not_found_names_uri_env_and_init(data_home: Path, capsys: pytest.CaptureFixture[str],
                                                argv: list[str]) -> None:
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert str(data_home / "ushas" / "ushas.db") in err
    for hint in ("--uri", "USHAS_URI", "ushas init"):
        assert hint in err, (hint, err)
    assert not (data_home / "ushas" / "ushas.db").exists()


def test_init_then_every_command_uses_the_default_store(data_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 0
    assert (data_home / "ushas" / "ushas.db").is_file()  # its directory made too: writable without root
    capsys.readouterr()
    assert main(["--json", "catalogs"]) == 0
    assert capsys.readouterr().out.strip() == "[]"


def test_spark_conf_prints_the_default_store_and_the_branch(data_home: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spark-conf", "--branch", "Dev"]) == 0
    out = capsys.readouterr().out
    assert f"sqlite:///{data_home / 'ushas' / 'ushas.db'}" in out
    assert any(line.split() == ["spark.sql.catalog.ushas.branch", "dev"] for line in out.splitlines())
    assert main(["--branch", "dev", "spark-conf"]) == 0  # the global --branch too
    assert "spark.sql.catalog.ushas.branch" in capsys.readouterr().out
    assert main(["spark-conf"]) == 0
    assert "spark.sql.catalog.ushas.branch" not in capsys.readouterr().out  # main: the default, left out
    assert main(["spark-conf", "--branch", "no/such"]) == 2
    assert "invalid branch name" in capsys.readouterr().err


class _Builder:
    def __init__(self) -> None:
        self._options: dict[str, Any] = {}

    def config(self, key: str, value: Any) -> "_Builder":
        self._options[key] = value
        return self

    def getOrCreate(self) -> None:  # noqa: N802 - pyspark's name
        raise AssertionError("not started in this test")


@pytest.mark.parametrize("kwargs, uri, create", [
    ({}, "default", "true"),
    ({"uri": "sqlite:///x/u.db", "create": False}, "sqlite:///x/u.db", "false"),
])
def test_configure_defaults_to_the_same_store(data_home: Path, kwargs: dict[str, Any], uri: str, create: str) -> None:
    from ushas_catalog.spark import configure

    options = configure(_Builder(), **kwargs)._options
    expected = f"sqlite:///{data_home / 'ushas' / 'ushas.db'}" if uri == "default" else uri
    assert options["spark.sql.catalog.ushas.uri"] == expected
    assert options["spark.sql.catalog.ushas.create"] == create


def test_serve_on_a_port_in_use_suggests_port(data_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    assert main(["init"]) == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        capsys.readouterr()
        assert main(["serve", "--port", str(port), "--no-hooks"]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use" in err and "--port N, or --port 0" in err


def test_the_demo_refuses_to_run_twice_into_the_default_store(data_home: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Before Spark starts: the default store already holds ushas.shop, so the demo says what to do, and
    leaves nothing behind."""
    from ushas_catalog.metastore import Metastore

    assert main(["init"]) == 0
    with Metastore.open(default_uri()) as ms:
        ms.create_catalog("ushas")
        ms.create_database("ushas.shop")
    capsys.readouterr()
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert "holds the demo's database ushas.shop already" in err and "ushas demo --dir NEW_DIR" in err
    assert sorted(p.name for p in (data_home / "ushas").iterdir()) == ["ushas.db"]  # no demo-* directory left
