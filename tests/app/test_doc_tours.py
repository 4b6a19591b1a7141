"""Every command of the user docs runs as written, then ``ushas check`` is green (issue 36).

- The **tours** first: every ``bash`` block after a ``<!-- tour -->`` line of docs/quickstart.md and
  README.md, in order, in a fresh user data directory (the default store), with ``ushas`` and ``python3``
  being this interpreter.
- Then **every other shell block** (``bash``, ``sh``, ``shell``) of README.md and of every user doc
  (``docs/*.md``; not ``docs/internals``), one bash process per page, in the store the tours made.
- A block that cannot run here says so on the line before it: ``<!-- not run: REASON -->`` (a server that
  runs until stopped, a PostgreSQL or Spark cluster, a benchmark of minutes, a synopsis with placeholders).
- A block without a language or marked ``text`` that holds commands (lines starting ``ushas``, ``python``,
  ``curl``, ...) must be labelled as a shell block or marked: commands are never hidden from the test.
- Then **every** ``python`` **and** ``sql`` **block** of those pages, in page order, in one Python process
  (tests/app/doc_snippets.py): one Spark session, on the same store, for all of them (the README's first
  block makes it); each page's blocks share a namespace that starts with ``spark``, ``uri`` and ``ms``.
- Last, ``ushas check`` on the store all of this wrote: green.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from .cli_forks import serve
from .doc_snippets import statements

ROOT = Path(__file__).resolve().parents[2]
#: the pages whose tours run, in order (the README's tour reads what the quickstart's demo made)
PAGES = ("docs/quickstart.md", "README.md")
_TOUR = re.compile(r"^<!-- tour -->\n```bash\n(.*?)^```", re.S | re.M)
#: a fenced block, with the marker comment on the line before it if there is one
_BLOCK = re.compile(r"^(?:<!-- (?P<mark>[^\n]*?) -->\n)?```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.S | re.M)
SHELL = ("bash", "sh", "shell")
#: the languages of the blocks tests/app/doc_snippets.py runs
SNIPPETS = ("python", "sql")
#: a line of a block that is a command (in a block that is not a shell block, it must not hide there)
_COMMAND = re.compile(r"^\s*(?:\$ )?(?:ushas|python3?|pip|curl|spark-submit|spark-sql|pyspark|bench/run|\./test)\b")
NOT_RUN = "not run: "


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    mark: str
    body: str

    @property
    def runs(self) -> bool:
        """A shell block the test runs after the tours."""
        return self.lang in SHELL and not self.mark.startswith(NOT_RUN) and self.mark != "tour"

    @property
    def snippet(self) -> bool:
        """A Python or SQL block the test runs in the snippets' Spark session."""
        return self.lang in SNIPPETS and not self.mark.startswith(NOT_RUN)


def user_docs() -> list[str]:
    """README.md and every user doc (docs/*.md; docs/internals/ is for contributors)."""
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text()
    return [Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang"), (m.group("mark") or "").strip(),
                  m.group("body")) for m in _BLOCK.finditer(text)]


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
    """``python3`` is this interpreter (``ushas``: the warm CLI of tests/app/cli_forks.py)."""
    bin_dir.mkdir()
    path = bin_dir / "python3"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_every_command_block_runs_or_says_why_not() -> None:
    """The rules above, on every user doc: commands sit in shell blocks or say why they do not run."""
    hidden, unexplained, marked = [], [], []
    for page in user_docs():
        for b in blocks(page):
            commands = [line for line in b.body.splitlines() if _COMMAND.match(line)]
            if b.lang in ("", "text", "console") and commands and not b.mark.startswith(NOT_RUN):
                hidden.append(f"{page}:{b.line}: {commands[0].strip()}")
            if b.mark.startswith(NOT_RUN):
                marked.append(b)
                if len(b.mark) < len(NOT_RUN) + 10:
                    unexplained.append(f"{page}:{b.line}: {b.mark!r}")
    assert hidden == [], "label these blocks ```bash (they then run) or mark them <!-- not run: why -->"
    assert unexplained == [], "say why the block cannot run"
    runnable = [b for page in user_docs() for b in blocks(page) if b.runs]
    assert len(runnable) >= 10 and all(b.lang in SHELL for b in runnable)
    snippets = [b for page in user_docs() for b in blocks(page) if b.snippet]
    assert len(snippets) >= 30 and {b.lang for b in snippets} == set(SNIPPETS)
    assert len([b for b in marked if b.lang in SNIPPETS]) <= 6, "only what truly cannot run here is marked"


def test_sql_blocks_split_into_statements() -> None:
    cases = [("SELECT 1;", ["SELECT 1"]),
             ("CALL a('x;y'); -- c; d\nSELECT \"--\";", ["CALL a('x;y')", 'SELECT "--"']),
             ("-- only a comment\n", []),
             ("CALL a(1);  CALL b(2)", ["CALL a(1)", "CALL b(2)"])]
    for sql, expected in cases:
        assert statements(sql) == expected, sql


def test_the_warm_cli_answers_as_the_cli(tmp_path: Path) -> None:
    """tests/app/cli_forks.py: argv, the environment, stdout, stderr and the exit status reach each command
    and come back as with ``python -m ushas_catalog``."""
    (tmp_path / "bin").mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"),
           "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("USHAS_URI", None)
    server = serve(tmp_path / "bin", env)
    try:
        script = "ushas --version; ushas tables ushas.shop || echo status=$?; ushas --uri bad tables ushas.shop"
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        server.terminate()
        server.wait(30)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ushas ") and lines[1] == "status=2", done.stdout + done.stderr
    assert f"store not found: {tmp_path / 'data' / 'ushas' / 'ushas.db'}" in done.stderr  # its environment
    assert done.returncode == 2 and "'bad'" in done.stderr.splitlines()[-1], done.stderr


def _run_page(page: str, script: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{page}:\n{script}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.spark
def test_documented_tours_then_check_is_green(tmp_path: Path) -> None:
    _shims(tmp_path / "bin")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("USHAS_URI", None)
    server = serve(tmp_path / "bin", env)  # every ``ushas`` of the pages: a fork of one warm process
    try:
        _run_pages(tmp_path, env)
    finally:
        server.terminate()
        server.wait(30)


def _run_pages(tmp_path: Path, env: dict[str, str]) -> None:
    outputs = []
    for page in PAGES:
        for block in tours(page):
            outputs.append(_run_page(page, block, tmp_path, env))
    assert (tmp_path / "data" / "ushas" / "ushas.db").is_file()  # the demo wrote into the default store
    tour_text = "\n".join(outputs)
    assert "dt=2024-05-05" in tour_text and "ushas.shop.orders.amount" in tour_text
    ran = []
    for page in user_docs():  # then every other command of the docs: each page's blocks in one process
        script = "\n".join(b.body for b in blocks(page) if b.runs)
        if script:
            outputs.append(_run_page(page, script, tmp_path, env))
            ran.append(page)
    assert len(ran) >= 5, ran
    snippets = [{"page": b.page, "line": b.line, "lang": b.lang, "body": b.body}
                for page in user_docs() for b in blocks(page) if b.snippet]
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("doc_snippets.py"))], cwd=tmp_path,
                          env=env, input=json.dumps(snippets), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-6000:]
    assert done.stdout.count("ran ") == len(snippets)
    outputs.append(done.stdout)  # what the snippets printed: df.lineage(), the change feed, ...
    text = "\n".join(outputs)
    assert not re.search(r"#\d+", text)  # no expression ids in anything the docs' code printed
    check = subprocess.run(["ushas", "check"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
