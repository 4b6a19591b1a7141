"""The documented tours run as written, then ``ushas check`` is green (issue 36): every ``bash`` block after
a ``<!-- tour -->`` line of docs/quickstart.md and README.md, in order, in a fresh user data directory
(the default store), with ``ushas`` and ``python3`` being this interpreter."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
#: the pages whose tours run, in order (the README's tour reads what the quickstart's demo made)
PAGES = ("docs/quickstart.md", "README.md")
_TOUR = re.compile(r"^<!-- tour -->\n```bash\n(.*?)^```", re.S | re.M)


def tours(page: str) -> list[str]:
    return _TOUR.findall((ROOT / page).read_text())


def test_the_quickstart_has_a_tour_and_the_readme_stays_short() -> None:
    blocks = tours("docs/quickstart.md")
    assert blocks[0].strip() == "ushas demo" and any("ushas branch merge" in b for b in blocks)
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 150 and len(tours("README.md")) == 1
    links = re.findall(r"\]\(((?:docs|conf)/[^)#]+)", readme)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def _shims(bin_dir: Path) -> None:
    bin_dir.mkdir()
    for name, argv in (("ushas", f'"{sys.executable}" -m ushas_catalog'), ("python3", f'"{sys.executable}"')):
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_documented_tours_then_check_is_green(tmp_path: Path) -> None:
    _shims(tmp_path / "bin")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("USHAS_URI", None)
    outputs = []
    for page in PAGES:
        for block in tours(page):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, f"{page}:\n{block}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            outputs.append(done.stdout)
    assert (tmp_path / "data" / "ushas" / "ushas.db").is_file()  # the demo wrote into the default store
    text = "\n".join(outputs)
    assert "dt=2024-05-05" in text and "ushas.shop.orders.amount" in text
    assert not re.search(r"#\d+", text)  # no expression ids in anything the tours printed
    check = subprocess.run(["ushas", "check"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
