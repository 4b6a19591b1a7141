"""What ``ushas`` says to a newcomer (issue 36): ``--version``, the top-level help in groups, and "did you
mean" for a mistyped command or option, in one line with exit 2."""
from __future__ import annotations

import pytest

from ushas_catalog import __version__
from ushas_catalog.cli import build_parser, main
from ushas_catalog.cli.help import GROUPS


def _exit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(capsys, "--version") == (0, f"ushas {__version__}\n", "")


def test_help_lists_every_command_once_in_groups(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _exit(capsys, "--help")
    assert rc == 0
    titles = [line for line in out.splitlines() if line.startswith("commands: ")]
    assert titles[:len(GROUPS)] == [f"commands: {t}:" for t, _ in GROUPS]
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and not line.startswith("   ")
              and not line.lstrip().startswith("-")]
    assert sorted(listed) == sorted(a.dest for a in sub._get_subactions())  # each once, none left out
    assert "--version" in out and "--uri URI" in out


@pytest.mark.parametrize("argv, expected", [
    (["tabels"], "unknown command 'tabels' (did you mean tables?); 'ushas --help' lists them"),
    (["lineage", "upstrem", "a.b.c"], "unknown command 'upstrem' (did you mean upstream?)"),
    (["tables", "--jsn", "a.b"], "unrecognized arguments: --jsn (did you mean --json?)"),
    (["--projct", "x", "catalogs"], "unrecognized option --projct (did you mean --project?)"),
    (["lineage", "upstream", "--flta", "a.b.c"], "unrecognized arguments: --flta (did you mean --flat?)"),
    (["branch", "merg", "c", "dev"], "(did you mean merge?)"),
    (["zzzz"], "unknown command 'zzzz'; 'ushas --help' lists them"),
])
def test_did_you_mean(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    rc, out, err = _exit(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.startswith("ushas: error: ") and err.count("\n") == 1, err
    assert expected in err, err
