"""One error per failure in spark-sql: the catalog's own errors reach Spark as Spark exceptions with an error
class and a SQLSTATE (printed once, no stack, like Spark's own), and the lineage listener adds nothing to a
query that failed on its own. Configuration-only ``spark-sql -e`` subprocesses, bounded in time."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BOUND_S = 240
LISTENER = "io.ushas.spark.UshasLineageListener"
#: lines spark-sql may print for one error beyond the lines Spark prints for one of its own
MARGIN = 3


def _spark_sql(tmp_path: Path, sql: str, **conf: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "warehouse").mkdir(exist_ok=True)
    cmd = [spark_bin("spark-sql"), "--master", "local[1]",
           *conf_args(tmp_path / "ushas.db", tmp_path / "warehouse",
                      **{"spark.sql.queryExecutionListeners": LISTENER, **conf}), "-e", sql]
    return run_spark(cmd, tmp_path, timeout=BOUND_S)


def _error_lines(stderr: str) -> list[str]:
    """The lines spark-sql prints after start-up (its banner ends with the application id line) that are not
    the 'Time taken' of statements that succeeded."""
    lines = stderr.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if "Application Id:" in line), 0)
    return [line for line in lines[start:] if line.strip() and not line.startswith("Time taken")]


def _assert_no_listener_noise(stderr: str) -> None:
    for line in stderr.splitlines():
        if re.search(r"\b(WARN|ERROR)\b", line):
            assert "UshasLineageListener" not in line and "Ushas lineage" not in line, stderr[-4000:]
    assert "\tat io.ushas.spark.UshasLineageListener" not in stderr, stderr[-4000:]


@pytest.fixture(scope="module")
def spark_own_error(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    tmp = tmp_path_factory.mktemp("spark_error")
    return _spark_sql(tmp, "CREATE NAMESPACE IF NOT EXISTS ushas.s; SELECT * FROM ushas.s.missing")


def test_failed_query_gets_spark_error_once_and_nothing_from_the_listener(
        spark_own_error: subprocess.CompletedProcess[str]) -> None:
    proc = spark_own_error
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert proc.stderr.count("[TABLE_OR_VIEW_NOT_FOUND]") == 1, proc.stderr[-4000:]
    _assert_no_listener_noise(proc.stderr)


@pytest.mark.parametrize("sql, message", [
    ("CREATE TABLE ushas.s.d (a INT) USING delta", "[USHAS_InvalidArgument] unknown table format 'delta'"),
    ("CREATE NAMESPACE ushas.a.b", "[USHAS_InvalidArgument] namespace"),
])
def test_catalog_error_prints_once_like_sparks_own(
        spark_own_error: subprocess.CompletedProcess[str], tmp_path: Path, sql: str, message: str) -> None:
    proc = _spark_sql(tmp_path, f"CREATE NAMESPACE IF NOT EXISTS ushas.s; {sql}")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert proc.stderr.count(message) == 1, proc.stderr[-4000:]
    assert "QueryExecutionException" not in proc.stderr, proc.stderr[-4000:]
    assert "\tat " not in proc.stderr, proc.stderr[-4000:]  # no stack: the message is the error
    ours, sparks = _error_lines(proc.stderr), _error_lines(spark_own_error.stderr)
    assert len(ours) <= len(sparks) + MARGIN, (ours, sparks)
    _assert_no_listener_noise(proc.stderr)


@pytest.mark.parametrize("conf, message", [
    ({"spark.sql.catalog.ushas.uri": ""}, "[USHAS_InvalidArgument] spark.sql.catalog.ushas.uri is required"),
    ({"spark.sql.catalog.ushas.bridge.timeout": "abc"},
     "[USHAS_InvalidArgument] spark.sql.catalog.ushas.bridge.timeout must be a whole number"),
])
def test_bad_configuration_prints_once(tmp_path: Path, conf: dict[str, str], message: str) -> None:
    proc = _spark_sql(tmp_path, "SHOW NAMESPACES IN ushas", **conf)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert proc.stderr.count(message) == 1, proc.stderr[-4000:]
    assert "QueryExecutionException" not in proc.stderr and "\tat " not in proc.stderr, proc.stderr[-4000:]


def test_bridge_failure_prints_once(tmp_path: Path) -> None:
    proc = _spark_sql(tmp_path, "SHOW NAMESPACES IN ushas",
                      **{"spark.sql.catalog.ushas.python": str(tmp_path / "no-such-python")})
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert proc.stderr.count("cannot start the Python bridge") == 1, proc.stderr[-4000:]
    assert "QueryExecutionException" not in proc.stderr and "\tat " not in proc.stderr, proc.stderr[-4000:]
