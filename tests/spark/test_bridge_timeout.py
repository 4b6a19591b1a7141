"""A hanging Python bridge gives Spark a clear error, not a hang (configuration-only mode, so the shim
launches the bridge process itself). The bridge is made to hang by pointing
``spark.sql.catalog.ushas.python`` at a wrapper that runs the real bridge with one operation replaced:

* ``sleep``: ``list_namespaces`` never answers but the process is healthy (it answers the shim's liveness
  pings), so the call's own ``bridge.timeout`` ends it;
* ``stop``: ``list_namespaces`` SIGSTOPs the whole bridge process (nothing answers any more), so the
  liveness check ends it, long before ``bridge.timeout``.

Each bound is the subprocess timeout: without the shim's timeouts these runs never end."""
from __future__ import annotations

import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: spark-sql start-up on a loaded 2-core machine is slow; a hang is 600 s (bridge.timeout) or forever
BOUND_S = 240

_HANG = """
import os, signal, sys, time
import ushas_catalog.spark.bridge as bridge

real = bridge.handle

def handle(op, payload):
    if op == "list_namespaces":
        print("HANGING", op, os.getpid(), file=sys.stderr, flush=True)
        if {mode!r} == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(3600)
    return real(op, payload)

bridge.handle = handle
sys.exit(bridge.main())
"""


def _hanging_python(tmp_path: Path, mode: str) -> str:
    script = tmp_path / f"hang_{mode}.py"
    script.write_text(textwrap.dedent(_HANG.format(mode=mode)))
    wrapper = tmp_path / f"python_{mode}"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")  # the shim adds -m ushas_catalog.bridge
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def _spark_sql(spark_dirs: dict[str, Path], tmp_path: Path, sql: str, **conf: str) -> subprocess.CompletedProcess[str]:
    cmd = [spark_bin("spark-sql"), "--master", "local[1]",
           *conf_args(spark_dirs["store"], spark_dirs["warehouse"], **conf), "-e", sql]
    return run_spark(cmd, tmp_path, timeout=BOUND_S)


def test_ping_is_answered_without_a_store() -> None:
    from ushas_catalog.spark.bridge import handle

    assert handle("ping", "") == '{"pong": true}'
    assert "BridgeError" in handle("no_such_op", "{}")


def test_hanging_call_ends_at_the_bridge_timeout(spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    proc = _spark_sql(spark_dirs, tmp_path, "SHOW NAMESPACES IN ushas",
                      **{"spark.sql.catalog.ushas.python": _hanging_python(tmp_path, "sleep"),
                         "spark.sql.catalog.ushas.bridge.timeout": "4"})
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert ("Ushas catalog: the Python bridge did not answer 'list_namespaces' within 4 s "
            "(spark.sql.catalog.ushas.bridge.timeout)") in proc.stderr, proc.stderr[-4000:]
    assert "HANGING list_namespaces" in proc.stderr  # the bridge log tail names what it was doing
    assert "py4j" not in proc.stderr.split("Ushas catalog:", 1)[1].split("\n", 1)[0].lower()


def test_frozen_bridge_is_detected_by_the_liveness_check(spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    proc = _spark_sql(spark_dirs, tmp_path, "SHOW NAMESPACES IN ushas",
                      **{"spark.sql.catalog.ushas.python": _hanging_python(tmp_path, "stop"),
                         "spark.sql.catalog.ushas.bridge.timeout": "600",
                         "spark.sql.catalog.ushas.bridge.livenessTimeout": "2"})
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "Ushas catalog: the Python bridge ('python -m ushas_catalog.bridge', pid " in proc.stderr, \
        proc.stderr[-4000:]
    assert ("is not responding: no answer to 'list_namespaces' after" in proc.stderr
            and "a liveness check (ping) got no answer within 2 s "
                "(spark.sql.catalog.ushas.bridge.livenessTimeout)" in proc.stderr), proc.stderr[-4000:]


def test_bad_timeout_option_is_refused(spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    proc = _spark_sql(spark_dirs, tmp_path, "SHOW NAMESPACES IN ushas",
                      **{"spark.sql.catalog.ushas.bridge.timeout": "soon"})
    assert proc.returncode != 0
    assert "spark.sql.catalog.ushas.bridge.timeout must be a whole number of seconds > 0, not 'soon'" in proc.stderr
