"""progress.py: drawn on a terminal, silent in --json mode and when not a terminal."""
from __future__ import annotations

import io

from ushas_catalog.progress import BAR_WIDTH, Progress, Steps, progress_for


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
