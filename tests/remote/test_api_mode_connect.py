"""``spark.api.mode=connect`` local sessions work as classic ones do: the session helper configures the
in-process Connect server pyspark starts (catalog, listener, lineage plugin, this process as the catalog's
backend); writes, pruned reads, ``df.lineage()`` and a captured run with the Connect session."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from spark_servers import missing_dependency, run_client

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_local_connect_session(tmp_path: Path) -> None:
    why = missing_dependency()
    if why:
        pytest.skip(why)
    uri = f"sqlite:///{tmp_path / 'ushas.db'}"
    proc = run_client(Path(__file__).with_name("client_api_mode.py"), uri, str(tmp_path / "warehouse"), cwd=tmp_path,
                      timeout=420)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    r = json.loads(lines[-1][len("RESULT "):])
    assert r["session_class"] == "pyspark.sql.connect.session.SparkSession"
    assert r["rows"] == [[1, "a"], [3, "a"]]
    assert r["edges"] == ["id2 <- ushas.am.t.id", "uv <- ushas.am.t.v"]
    assert "+- FILTER Filter ( (dt = a) )" in r["lineage"] and "#" not in r["lineage"]  # readable: no exprIds
    runs = json.loads(subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, "--json", "lineage", "runs",
                                      "ushas.am.t"], capture_output=True, text=True, timeout=60).stdout)
    writes = [x for x in runs if x["access"] == "write"]
    assert len(writes) == 2, runs  # INSERT and writeTo().append(), stored before the application ended
    assert all(x["session_id"] == r["session_id"] and x["client_kind"] == "connect" for x in runs)
    assert all(x["application_name"] == "api_mode_nb" for x in runs)
