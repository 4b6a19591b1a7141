"""Progress of long CLI work (import, export, purge of a large tree) on a terminal.

A :class:`Progress` draws one line on stderr — ``label  [#####-----]  12/40  item`` — rewritten
in place with ``\\r``, and a final line when the work ends. It draws nothing when it is not
enabled: :func:`progress_for` enables it only when the output is a terminal and the command is
not in ``--json`` mode, so scripts, pipes, CI logs and JSON consumers see no progress at all.

Usage::

    with progress_for(ctx.json, "importing tables", total=len(tables)) as bar:
        for t in tables:
            bar.advance(item=t.name)

A total of ``None`` draws a counter without a bar (work whose size is not known up front).
Redraws are limited to :data:`MIN_REDRAW_SECONDS` apart so a tight loop of 100 000 steps
does not spend its time writing to the terminal; the final state is always drawn.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Callable, TextIO

#: the shortest time between two redraws of the line (the last state is always drawn)
MIN_REDRAW_SECONDS = 0.05
#: characters of the bar itself
BAR_WIDTH = 24


def is_terminal(stream: TextIO) -> bool:
    """True when ``stream`` is an interactive terminal (and ``TERM`` is not ``dumb``)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False
    return bool(tty) and os.environ.get("TERM", "") != "dumb"


@dataclass
class Progress:
    """One progress line. ``enabled=False`` makes every method a no-op that still counts."""

    label: str
    total: int | None = None
    enabled: bool = True
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    item: str = ""
    _last_draw: float = field(default=-1.0, repr=False)
    _width: int = field(default=0, repr=False)
    _closed: bool = field(default=False, repr=False)

    def __enter__(self) -> Progress:
        self.draw(force=True)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(failed=exc_type is not None)

    # ---- counting ------------------------------------------------------------------------------
    def advance(self, n: int = 1, *, item: str | None = None) -> None:
        """``n`` more units done; ``item`` names what is being worked on now."""
        self.done += n
        if item is not None:
            self.item = item
        self.draw()

    def set_total(self, total: int | None) -> None:
        """The size of the work, once it is known."""
        self.total = total
        self.draw(force=True)

    def set_item(self, item: str) -> None:
        self.item = item
        self.draw()

    # ---- drawing -------------------------------------------------------------------------------
    def line(self) -> str:
        """The text of the progress line for the current state."""
        parts = [self.label]
        if self.total is not None and self.total > 0:
            filled = min(BAR_WIDTH, self.done * BAR_WIDTH // self.total)
            parts.append("[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "]")
            parts.append(f"{self.done}/{self.total}")
        else:
            parts.append(str(self.done))
        if self.item:
            parts.append(self.item)
        return "  ".join(parts)

    def draw(self, *, force: bool = False) -> None:
        if not self.enabled or self._closed:
            return
        now = self.clock()
        finished = self.total is not None and self.done >= self.total
        if not force and not finished and self._last_draw >= 0 and now - self._last_draw < MIN_REDRAW_SECONDS:
            return
        self._last_draw = now
        columns = shutil.get_terminal_size((100, 20)).columns
        text = self.line()
        if len(text) > columns - 1:
            text = text[: max(0, columns - 2)] + "…"
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def close(self, *, failed: bool = False) -> None:
        """Draw the final state and end the line."""
        if self._closed:
            return
        if self.enabled:
            self.item = "failed" if failed else ""
            self.draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True


def progress_for(json_mode: bool, label: str, total: int | None = None, *,
                 stream: TextIO | None = None, item: str = "") -> Progress:
    """A progress line on ``stream`` (stderr by default), enabled only on a terminal and
    outside ``--json`` mode. ``item``: what the first drawn line names (e.g. the one
    transaction a purge is)."""
    out = stream if stream is not None else sys.stderr
    return Progress(label, total, enabled=not json_mode and is_terminal(out), stream=out, item=item)


@dataclass
class Steps:
    """Named stages of a longer run (the demo): ``[2/6] writing orders`` lines, printed on
    ``stream`` when enabled. Unlike :class:`Progress` these are plain lines, so they also read
    well in a log; ``quiet`` (``--json``) silences them."""

    total: int
    quiet: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.monotonic
    current: int = 0
    _started: float = field(default=-1.0, repr=False)

    def step(self, text: str) -> None:
        if self._started < 0:
            self._started = self.clock()
        self.current += 1
        if self.quiet:
            return
        elapsed = self.clock() - self._started
        self.stream.write(f"[{self.current}/{self.total}] {text}  ({elapsed:.0f}s)\n")
        self.stream.flush()
