"""The skip policy (tests/skip_policy.py): a run with a skipped test fails naming it, unless the skip is the
FoundationDB engine's or ``USHAS_ALLOW_SKIPS`` names it. Each case runs pytest on a small made-up test file in
a fresh process, with the plugin as the suite loads it."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from skip_policy import ALLOW_ENV, FDB_LIBRARY_SKIP_REASON, FDB_SKIP_REASON, Skip, named, refused

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    allow: str | None = None
    fails: bool = True
    named: tuple[str, ...] = field(default=())  # node ids the failure summary lists


CASES = [
    Case("skip_in_a_test", "import pytest\ndef test_a():\n    pytest.skip('no chromium')\ndef test_b():\n    pass\n",
         named=("test_mod.py::test_a: no chromium",)),
    Case("skipif_mark", "import pytest\n@pytest.mark.skipif(True, reason='maven offline')\ndef test_a():\n    pass\n",
         named=("test_mod.py::test_a: maven offline",)),
    Case("module_level_skip", "import pytest\npytest.skip('no driver', allow_module_level=True)\n"
         "def test_a():\n    pass\n", named=("test_mod.py: no driver",)),
    Case("importorskip", "import pytest\npytest.importorskip('no_such_module_here')\ndef test_a():\n    pass\n",
         named=("test_mod.py: could not import 'no_such_module_here'",)),
    Case("fixture_skip", "import pytest\n@pytest.fixture\ndef server():\n    pytest.skip('no java')\n"
         "@pytest.mark.parametrize('n', [1, 2])\ndef test_a(server, n):\n    pass\n",
         named=("test_mod.py::test_a[1]: no java", "test_mod.py::test_a[2]: no java")),
    Case("fdb_cluster_reason", f"import pytest\ndef test_a():\n    pytest.skip({FDB_SKIP_REASON!r})\n", fails=False),
    Case("fdb_library_reason", f"import pytest\n@pytest.mark.skipif(True, reason={FDB_LIBRARY_SKIP_REASON!r})\n"
         "def test_a():\n    pass\n", fails=False),
    Case("fdb_reason_with_more_words", f"import pytest\ndef test_a():\n    pytest.skip({FDB_SKIP_REASON + ' (x)'!r})\n",
         named=("test_mod.py::test_a",)),
    Case("allowed_by_file", "import pytest\ndef test_a():\n    pytest.skip('no chromium')\n", allow="test_mod.py",
         fails=False),
    Case("allowed_by_test_id", "import pytest\n@pytest.mark.parametrize('n', [1, 2])\ndef test_a(n):\n"
         "    pytest.skip('no chromium')\n", allow=" other.py , test_mod.py::test_a", fails=False),
    Case("allowed_names_another_test", "import pytest\ndef test_ab():\n    pytest.skip('no chromium')\n",
         allow="test_mod.py::test_a", named=("test_mod.py::test_ab",)),
    Case("xfail_is_not_a_skip", "import pytest\ndef test_a():\n    pytest.xfail('known')\n", fails=False),
    Case("nothing_skipped", "def test_a():\n    assert True\n", fails=False),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_run_fails_naming_its_refused_skips(case: Case, tmp_path: Path) -> None:
    (tmp_path / "test_mod.py").write_text(case.source)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != ALLOW_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    if case.allow is not None:
        env[ALLOW_ENV] = case.allow
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "skip_policy", "-p", "no:cacheprovider",
                           "test_mod.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == (1 if case.fails else 0), out
    assert ("skipped tests fail the run" in out) == case.fails, out
    for line in case.named:
        assert f"SKIPPED {line}" in out, out


@pytest.mark.parametrize("nodeid,names,expected", [
    ("tests/app/test_ui_browser.py::test_x", ("tests/app/test_ui_browser.py",), True),
    ("tests/app/test_ui_browser.py", ("tests/app/test_ui_browser.py",), True),
    ("tests/app/test_ui_browser.py::test_x", ("tests/app",), True),
    ("tests/app/test_ui_browser.py::test_x", ("tests/app/",), True),
    ("tests/spark/t.py::test_a[1-x]", ("tests/spark/t.py::test_a",), True),
    ("tests/spark/t.py::test_ab", ("tests/spark/t.py::test_a",), False),
    ("tests/application/t.py::test_a", ("tests/app",), False),
    ("tests/app/test_ui_browser.py::test_x", (), False),
])
def test_named(nodeid: str, names: tuple[str, ...], expected: bool) -> None:
    assert named(nodeid, names) is expected


def test_refused_lists_each_test_once_in_order() -> None:
    skips = [Skip("t.py::b", "x"), Skip("t.py::a", FDB_SKIP_REASON), Skip("t.py::b", "x"), Skip("t.py::c", "y")]
    assert refused(skips, {}) == [Skip("t.py::b", "x"), Skip("t.py::c", "y")]
    assert refused(skips, {ALLOW_ENV: "t.py::c"}) == [Skip("t.py::b", "x")]
    assert refused(skips, {ALLOW_ENV: ","}) == [Skip("t.py::b", "x"), Skip("t.py::c", "y")]
