"""progress.py: drawn on a terminal, silent in --json mode and when not a terminal."""
from __future__ import annotations

import io

from ushas_catalog.progress import BAR_WIDTH, Progress, Steps, progress_for

from .cli_run import last_line, run_cli


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_bar_on_a_terminal_ends_with_the_final_state() -> None:
    out = Tty()
    clock = Clock()
    bar = progress_for(False, "importing", 4, stream=out)
    bar.clock = clock
    with bar:
        for name in ["a", "b", "c", "d"]:
            clock.now += 1
            bar.advance(item=name)
    text = out.getvalue()
    assert text.endswith("\n")
    last = text.rstrip("\n").split("\r")[-1].rstrip()
    assert last == "importing  [" + "#" * BAR_WIDTH + "]  4/4"
    assert "2/4  b" in text


def test_half_way_bar() -> None:
    bar = Progress("x", 10, enabled=False)
    bar.advance(5, item="t5")
    assert bar.line() == "x  [" + "#" * (BAR_WIDTH // 2) + "-" * (BAR_WIDTH // 2) + "]  5/10  t5"


def test_unknown_total_counts() -> None:
    bar = Progress("scanning", None, enabled=False)
    bar.advance(3)
    assert bar.line() == "scanning  3"


def test_json_mode_and_pipes_are_quiet() -> None:
    for json_mode, stream in [(True, Tty()), (False, io.StringIO())]:
        with progress_for(json_mode, "importing", 3, stream=stream) as bar:
            bar.advance(3)
        assert stream.getvalue() == ""
        assert bar.done == 3


def test_redraws_are_throttled_but_the_last_state_is_drawn() -> None:
    out = Tty()
    clock = Clock()
    bar = Progress("n", 1000, stream=out, clock=clock)
    for _ in range(999):
        bar.advance()  # clock never moves: only the first draw and the final one
    assert out.getvalue().count("\r") == 1
    bar.advance()
    assert out.getvalue().count("\r") == 2 and "1000/1000" in out.getvalue()


def test_failure_is_shown() -> None:
    out = Tty()
    try:
        with progress_for(False, "purging", 2, stream=out) as bar:
            bar.advance()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert out.getvalue().rstrip("\n").split("\r")[-1].strip().endswith("1/2  failed")


def test_steps() -> None:
    out = io.StringIO()
    clock = Clock()
    steps = Steps(2, stream=out, clock=clock)
    steps.step("starting Spark")
    clock.now = 12
    steps.step("writing")
    assert out.getvalue().splitlines() == ["[1/2] starting Spark  (0s)", "[2/2] writing  (12s)"]
    quiet = io.StringIO()
    Steps(1, quiet=True, stream=quiet).step("x")
    assert quiet.getvalue() == ""


# ---- the CLI's long commands, as a user sees them: stderr a terminal (pty) or not -----------------
def test_lineage_export_shows_progress_on_a_terminal_only(store_uri: str) -> None:
    import json

    from .uistore import build

    build(store_uri)
    rc, out, err = run_cli(["--uri", store_uri, "lineage", "export", "--openlineage"], tty=True)
    assert rc == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert len(events) == 4 and {e["eventType"] for e in events} == {"START", "COMPLETE"}
    assert "\r" in err and last_line(err) == "exporting runs  [" + "#" * BAR_WIDTH + "]  2/2"
    for argv, tty in [(["--uri", store_uri, "--json", "lineage", "export", "--openlineage"], True),
                      (["--uri", store_uri, "lineage", "export", "--openlineage"], False)]:
        rc, quiet_out, quiet_err = run_cli(argv, tty=tty)
        assert rc == 0 and quiet_err == "" and quiet_out.splitlines() == out.splitlines()


def test_purge_shows_progress_on_a_terminal_only(store_uri: str) -> None:
    import json

    from .uistore import build

    build(store_uri)
    assert run_cli(["--uri", store_uri, "drop", "shop", "--cascade"], tty=False)[0] == 0
    rc, out, err = run_cli(["--uri", store_uri, "purge", "shop"], tty=True)
    assert rc == 0 and out.strip() == ("purged 1 dropped object(s) named shop, 0 set(s) of replaced files, "
                                       "0 staging dir(s) of dead writes; deleted 0 path(s)")
    assert "purging dropped shop  [------------------------]  0/1  one transaction" in err
    assert last_line(err) == "purging dropped shop  [" + "#" * BAR_WIDTH + "]  1/1"

    build(store_uri.replace("ushas.db", "second.db"))
    second = store_uri.replace("ushas.db", "second.db")
    rc, out, err = run_cli(["--uri", second, "--json", "drop", "shop.sales", "--cascade", "--purge"], tty=True)
    assert rc == 0 and err == "" and json.loads(out) == {"dropped": "shop.sales", "purged": True}
    rc, out, err = run_cli(["--uri", second, "drop", "shop", "--cascade", "--purge"], tty=True)
    assert rc == 0 and last_line(err) == "purging shop  [" + "#" * BAR_WIDTH + "]  1/1"
    rc, out, err = run_cli(["--uri", second, "purge", "shop"], tty=True)  # nothing dropped of that name
    assert rc == 1 and err.rstrip().endswith("ushas: NoSuchCatalog: no dropped catalog named shop")
    assert "failed" in err
