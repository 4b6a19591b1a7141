"""``ushas --uri http(s)://… --token …``: the CLI's metastore commands through a live ``ushas serve``, as the
token's user with authorization on (docs/service.md, "Remote mode")."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore

from remote_service import make_token

from .live import Live, running


@pytest.fixture
def svc(store_uri: str) -> Iterator[Any]:
    ms = Metastore.open(store_uri)
    ms.grant("OWN", "project", "user:admin")
    ms.create_catalog("main")
    ms.create_database("main.sales")
    ms.create_table("main.sales.orders", "id INT, dt STRING", partition_by=["dt"])
    ms.add_partitions("main.sales.orders", [{"dt": "2024-01-01"}])
    ms.close()
    tokens = {name: make_token(store_uri, "write", name)[1] for name in ("admin", "bob")}
    for live in running(store_uri):
        live.tokens = tokens  # type: ignore[attr-defined]
        yield live


def ushas(svc: Live, who: str | None, *argv: str) -> int:
    token = ["--token", svc.tokens[who]] if who else []  # type: ignore[attr-defined]
    return main(["--uri", svc.base, *token, *argv])


def test_cli_commands_run_as_the_tokens_user(svc: Live, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert ushas(svc, "admin", "partitions", "main.sales.orders") == 0
    assert "2024-01-01" in capsys.readouterr().out
    assert ushas(svc, "admin", "whoami") == 0
    assert capsys.readouterr().out.startswith("admin (authorization on)")
    assert ushas(svc, "bob", "tables", "main.sales") == 2
    assert "User bob does not have USE on database main.sales" in capsys.readouterr().err
    assert ushas(svc, "admin", "grant", "SELECT", "ON", "main.sales", "TO", "user:bob") == 0
    assert ushas(svc, "bob", "tables", "main.sales") == 0
    assert "orders" in capsys.readouterr().out
    assert ushas(svc, "bob", "drop", "main.sales.orders") == 2  # SELECT is not MANAGE
    assert "does not have MANAGE" in capsys.readouterr().err
    monkeypatch.setenv("USHAS_TOKEN", svc.tokens["bob"])  # type: ignore[attr-defined]
    assert ushas(svc, None, "whoami") == 0
    assert capsys.readouterr().out.startswith("bob ")


@pytest.mark.parametrize("argv, error", [
    (["--user", "admin", "catalogs"], "takes no user"),  # the token decides who calls
    (["--token", "ushas_x_notatoken!", "catalogs"], "does not hold an ushas token"),
    (["--token", "ushas_abcdef_0123456789abcdef", "catalogs"], "Unauthorized: the token is not valid"),
    (["catalogs"], "a catalog service needs a token"),
])
def test_cli_refusals_are_one_line(svc: Live, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                   argv: list[str], error: str) -> None:
    monkeypatch.delenv("USHAS_TOKEN", raising=False)
    token = [] if "--token" in argv or argv == ["catalogs"] else ["--token", svc.tokens["admin"]]  # type: ignore[attr-defined]
    assert main(["--uri", svc.base, *token, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("argv", [["check"], ["changes"], ["tokens", "list"], ["lineage", "runs", "main.sales.orders"],
                                  ["meta", "show", "main"]])
def test_store_commands_say_so_in_one_line(svc: Live, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert ushas(svc, "admin", *argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"ushas: NotServed: 'ushas {argv[0]}'") and len(err.splitlines()) == 1, err
