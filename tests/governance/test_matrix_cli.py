"""The privilege matrix (tests/governance/matrix.py) through the CLI: ``ushas --user NAME ...`` succeeds
(exit 0) when the user's privilege suffices, else prints one line naming the privilege and the object
and exits 2, writing nothing but the refusal's audit event."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from ushas_catalog.cli import main
from ushas_catalog.metastore import Metastore

from governance.matrix import OPERATIONS, PRINCIPALS, Principal, Probe, fill, setup_store


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    root = tmp_path_factory.mktemp("matrix-cli")
    ms = Metastore.open(f"sqlite:///{root / 'ushas.db'}", project="p")
    setup_store(ms, str(root / "warehouse"))
    yield Probe(ms)
    ms.close()


@pytest.mark.parametrize("who", PRINCIPALS, ids=lambda w: w.key)
def test_cli_privilege_matrix(probe: Probe, who: Principal, capsys: Any) -> None:
    uri = probe.ms.db.uri
    for op in OPERATIONS:
        if op.cli is None:
            continue
        argv = ["--uri", uri, "--project", "p", "--user", who.user, *(fill(a, who) for a in op.cli)]

        def call() -> tuple[int, str]:
            capsys.readouterr()
            rc = main(argv)
            return rc, capsys.readouterr().err

        def refusal(error: BaseException | None, answer: Any) -> str:
            assert error is None, error
            rc, err = answer
            if rc == 0:
                return ""
            assert rc == 2 and err.startswith("ushas: PermissionDenied: ") and err.count("\n") == 1, (op.name, rc, err)
            return err

        probe.run(op, who, call, refusal)
