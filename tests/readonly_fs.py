"""Making a file or directory unwritable in tests, also as root (``tests/`` is on ``sys.path``)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest


def make_read_only(path: Path) -> Callable[[], None]:
    """Make ``path`` unwritable (chmod; as root, whom chmod does not stop: chattr +i); returns the undo."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        return lambda: path.chmod(mode)
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"running as root and chattr +i is not available: {done.stderr!r}")
    return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)
