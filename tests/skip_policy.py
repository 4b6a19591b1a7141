"""A pytest plugin (loaded by tests/conftest.py): which skipped tests a run accepts (docs/testing.md, "Skipped tests fail the run").

A green run must have run every test it has. A skip is accepted only when

- its reason is exactly one of :data:`FDB_REASONS` (the FoundationDB engine's tests without a cluster or
  without the client library: CI has neither), or
- ``USHAS_ALLOW_SKIPS`` names the test: a comma-separated list of pytest node ids or their prefixes
  (``tests/app/test_ui_browser.py``, ``tests/spark/test_shim_junit.py::test_shim_junit_suite``, a directory
  ``tests/remote``), for a developer's laptop without Chromium or Maven. CI never sets it.

Any other skip — a module-level ``pytest.skip``, ``importorskip``, a fixture's skip, a ``skipif`` — makes the
run exit non-zero and the summary lists the skipped tests with their reasons. An ``xfail`` is not a skip."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

ALLOW_ENV = "USHAS_ALLOW_SKIPS"

#: the FoundationDB engine's tests: the kv contract suite's ``fdb`` parameter (tests/kv/conftest.py)
FDB_SKIP_REASON = "USHAS_FDB_CLUSTER_FILE not set: no FoundationDB cluster to test against"
#: tests/kv/test_fdb.py's check of the error without libfdb_c, which cannot occur where libfdb_c is installed
FDB_LIBRARY_SKIP_REASON = "libfdb_c is installed: the missing-library error cannot occur"
FDB_REASONS = frozenset({FDB_SKIP_REASON, FDB_LIBRARY_SKIP_REASON})


@dataclass(frozen=True)
class Skip:
    nodeid: str
    reason: str


def skip_reason(longrepr: object) -> str:
    """The reason of a skipped report: pytest keeps ``(path, line, "Skipped: reason")``."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def allowed_names(value: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())


def named(nodeid: str, names: tuple[str, ...]) -> bool:
    """``nodeid`` is one of ``names`` or lies under one: a file, a directory, a test's parametrizations."""
    return any(nodeid == n or nodeid.startswith(n.rstrip("/") + sep) for n in names for sep in ("::", "/", "["))


def refused(skips: list[Skip], env: Mapping[str, str] = os.environ) -> list[Skip]:
    """The skips a run does not accept, in order, each once."""
    names = allowed_names(env.get(ALLOW_ENV))
    out: dict[str, Skip] = {}
    for s in skips:
        if s.reason not in FDB_REASONS and not named(s.nodeid, names):
            out.setdefault(s.nodeid, s)
    return list(out.values())


#: the skips seen in this run (collection and test reports), judged at the end
SKIPS: list[Skip] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    SKIPS.clear()


def _record(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        SKIPS.append(Skip(report.nodeid, skip_reason(report.longrepr)))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped as a whole (module-level ``pytest.skip``, ``importorskip``)."""
    _record(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if refused(SKIPS) and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    bad = refused(SKIPS)
    if bad:
        terminalreporter.section("skipped tests fail the run", sep="=", red=True, bold=True)
        for s in bad:
            terminalreporter.line(f"SKIPPED {s.nodeid}: {s.reason}")
        terminalreporter.line(f"{len(bad)} test(s) skipped: only the FoundationDB engine's tests may skip; on a "
                              f"laptop, name the others in {ALLOW_ENV} (docs/testing.md)", red=True)
