"""Running ``ushas`` in a subprocess as a user would: stderr a terminal (a pseudo-terminal) or not."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path


def run_cli(argv: list[str], *, tty: bool, cwd: Path | None = None, timeout: float = 120,
            env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``ushas argv``; stderr is a pseudo-terminal when ``tty``. Returns (exit code, stdout,
    stderr)."""
    env = dict(env if env is not None else os.environ, TERM="xterm", COLUMNS="120")
    env.pop("USHAS_URI", None)
    cmd = [sys.executable, "-m", "ushas_catalog", *argv]
    if not tty:
        done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=slave,
                                stdin=subprocess.DEVNULL)
        os.close(slave)
        err = b""
        while True:  # read the terminal while the command runs (its buffer is small)
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the pty is gone
                break
            if not chunk:
                break
            err += chunk
        out = proc.stdout.read() if proc.stdout else b""
        rc = proc.wait(timeout=timeout)
    finally:
        os.close(master)
    return rc, out.decode(), err.decode(errors="replace")


def last_line(err: str) -> str:
    """What a terminal shows last: the final ``\r``-rewritten state of the last line."""
    return err.replace("\r\n", "\n").rstrip("\n").split("\n")[-1].split("\r")[-1].rstrip()
