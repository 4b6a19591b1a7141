"""Another process holding a store's write lock (``BEGIN IMMEDIATE`` on the sqlite file), for the
reader, busy and abandoned-call tests (``tests/`` is on ``sys.path``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: holds a write transaction on the file named by argv[1] until its stdin closes
HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT OR REPLACE INTO kv (k, v) VALUES (x'00', x'00')")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


class LockHolder:
    """Another process in a write transaction on ``path`` (until :meth:`release`)."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if line.strip() != "locked":
            self.release()
            raise AssertionError(f"the lock holder did not start: {line!r}")

    def release(self) -> None:
        if self.proc.poll() is None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
