"""The privilege matrix (tests/governance/matrix.py) through Spark Connect: a Connect server whose configuration
deploys one governed Spark catalog per principal (``m_<key>`` over the principal's catalog, ``authorization=true``,
no ``.user``: the client session's ``user_id`` is the user), and one client process that opens a session per
principal and runs the operations with a Connect row (SQL and DataFrame): governed path reads (every catalog of a
client's session checks the path as that client's user, so a path read is one principal's row here), location
operations and a select. Allowed: the call succeeds; refused: ``INSUFFICIENT_PERMISSIONS`` (SQLSTATE 42501) naming
the privilege and the object, nothing written but the ``ACCESS_DENIED`` event, no file under the principal's
catalog changed (:class:`governance.matrix.Probe`, run by the client against the same store)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Iterator

import pytest
from spark_servers import SparkServer, connect_server, missing_dependency, run_client

from ushas_catalog.metastore import Metastore

from governance.matrix import OPERATIONS, PRINCIPALS, setup_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PROJECT = "matrix_connect"

CLIENT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])  # tests/: the matrix
    from pyspark.sql import SparkSession
    from ushas_catalog.metastore import Metastore
    from governance.matrix import OPERATIONS, PRINCIPALS, Probe, fill

    remote, uri, project, warehouse = sys.argv[2:6]
    ms = Metastore.open(uri, project=project)
    wh = Path(warehouse)
    probe = Probe(ms, lambda who: sorted(str(f.relative_to(wh)) for f in (wh / who.catalog).rglob("*")))
    failures, runs = [], 0

    def refusal(error, answer):
        if error is None:
            return ""
        text = str(error)
        condition = getattr(error, "getCondition", lambda: None)()
        state = getattr(error, "getSqlState", lambda: None)()
        assert condition == "INSUFFICIENT_PERMISSIONS" and state == "42501", f"{condition} {state} {type(error).__name__}: {text}"
        return text

    for who in PRINCIPALS:
        m = f"m_{who.key}"
        spark = SparkSession.builder.remote(f"{remote}/;user_id={who.user}").create()
        try:
            for op in OPERATIONS:
                calls = []
                if op.connect is not None:
                    statement = fill(op.connect, who, m, warehouse)
                    calls.append(("sql", lambda: spark.sql(statement).collect()))
                if op.connect_dataframe is not None:
                    run = op.connect_dataframe
                    calls.append(("dataframe", lambda: run(spark, m)))
                for kind, call in calls:
                    runs += 1
                    try:
                        probe.run(op, who, call, refusal)
                    except AssertionError as e:
                        failures.append(f"{kind}: {str(e)[:1500]}")
        finally:
            spark.stop()
    print("RESULT " + json.dumps({"runs": runs, "failures": failures}))
""")


@pytest.fixture(scope="module")
def matrix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SparkServer, Path]]:
    why = missing_dependency()
    if why:
        pytest.skip(why)
    root = Path(tmp_path_factory.mktemp("connect-matrix"))
    warehouse = root / "matrix-warehouse"
    ms = Metastore.open(f"sqlite:///{root / 'ushas.db'}", project=PROJECT)  # the store's administrator
    try:
        setup_store(ms, str(warehouse))
        for who in PRINCIPALS:
            # made now, by the administrator: a catalog opened by a caller with CREATE on it would make its
            # default database then (a key written in the middle of someone's refused call)
            ms.create_database((who.catalog, "default"))
            (warehouse / who.catalog / "db" / "t").mkdir(parents=True)  # what the path reads read
    finally:
        ms.close()
    confs = {}
    for who in PRINCIPALS:
        for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{root / 'ushas.db'}",
                           ".project": PROJECT, ".catalog": who.catalog, ".warehouse": str(warehouse),
                           ".authorization": "true"}.items():
            confs[f"spark.sql.catalog.m_{who.key}{key}"] = value
    # no lineage listener: its runs (of refused queries too) would be keys the refusal wrote
    server = connect_server(root, **confs, **{"spark.sql.queryExecutionListeners": ""}).start()
    try:
        yield server, warehouse
    finally:
        server.stop()


def test_connect_privilege_matrix(matrix_server: tuple[SparkServer, Path], tmp_path: Path) -> None:
    server, warehouse = matrix_server
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    tests = Path(__file__).resolve().parents[1]
    done = run_client(script, str(tests), f"sc://127.0.0.1:{server.port}", f"sqlite:///{server.cwd / 'ushas.db'}",
                      PROJECT, str(warehouse), cwd=tmp_path, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:] + server.tail(3000)
    result = json.loads(lines[-1][len("RESULT "):])
    rows = sum((op.connect is not None) + (op.connect_dataframe is not None) for op in OPERATIONS)
    assert result["runs"] == rows * len(PRINCIPALS)
    assert result["failures"] == [], "\n".join(result["failures"])
