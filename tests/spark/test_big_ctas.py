"""A CTAS / RTAS of more partitions than one transaction takes (the engine's transaction size limit and the
chunk size lowered here; the bridge runs in this process) is as atomic for readers as a small one: its partitions are staged in a
hidden table (:mod:`ushas_catalog.bulk_ctas`) and one transaction publishes it. A reader polling every
surface while the staging runs sees no new table (CTAS) or the whole old one (RTAS); a concurrent
CREATE of the name makes the CTAS fail cleanly."""
from __future__ import annotations

import contextlib
import io
import threading
from typing import Any, Callable, Iterator

import pytest
from pyspark.errors import AnalysisException

pytestmark = pytest.mark.spark

#: partitions each big CTAS writes (the threshold is lowered to 50, the staging chunk to 16)
PARTS = 120


def _staged_then(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> list[int]:
    """Lowers the thresholds (the engine's transaction size too); ``then`` runs when a hidden CTAS has staged every partition, before its publish.
    Returns the staging chunks run (one item each)."""
    from ushas_catalog import bulk, bulk_ctas

    from ushas_catalog.kv.base import Limits
    from ushas_catalog.kv.sqlite import SqliteDatabase

    monkeypatch.setattr(bulk, "WRITE_BULK_AT", 50)
    monkeypatch.setattr(bulk, "WRITE_CHUNK", 16)
    monkeypatch.setattr(SqliteDatabase, "limits", Limits(transaction_bytes=20_000))  # the one transaction fails
    values, stage, chunks = bulk._values, bulk_ctas.stage_writes, []

    def counted(*a: Any) -> Any:
        chunks.append(1)
        return values(*a)

    def staged(*a: Any, **k: Any) -> Any:
        out = stage(*a, **k)
        then()
        return out

    monkeypatch.setattr(bulk, "_values", counted)
    monkeypatch.setattr(bulk_ctas, "stage_writes", staged)
    return chunks


class Poller:
    """Readers of a table while a big CTAS / RTAS runs. A Spark reader in a thread counts its rows over and
    over (None: not found). And when the CTAS has staged every partition, before its publish (:meth:`hold`),
    every surface outside this driver's bridge (which serves one call at a time: a Spark reader of this
    session waits for the commit) is looked at: the metastore API, the ``ushas`` CLI, the REST service's
    metastore call and search; ``test_a_crashed_big_ctas_*`` looks through Spark SQL too."""

    def __init__(self, spark: Any, ms: Any, db: str, table: str, rest: Any) -> None:
        self.spark, self.ms, self.db, self.table, self.rest = spark, ms, db, table, rest
        self.counts: list[int | None] = []
        self.held: list[tuple[Any, ...]] = []
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def hold(self) -> None:  # the CTAS's side: every partition staged, not published yet
        self.held.append(surfaces(self.ms, self.db, self.table, self.rest))

    def run(self) -> None:
        try:
            while not self.done.is_set():
                try:
                    self.counts.append(self.spark.table(f"ushas.{self.db}.{self.table}").count())
                except AnalysisException as e:
                    assert e.getCondition() == "TABLE_OR_VIEW_NOT_FOUND", e
                    self.counts.append(None)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)

    def during(self, sql: str) -> None:
        self.thread.start()
        try:
            self.spark.sql(sql)
        finally:
            self.done.set()
            self.thread.join(timeout=300)
        assert not self.errors, self.errors
        assert self.held, "the CTAS never reached its publish"


def column(db: str) -> str:
    """The column the tables of database ``db`` have, for search to find them by."""
    return "c" + db.replace("_", "")


def surfaces(ms: Any, db: str, table: str, rest: Any) -> tuple[Any, ...]:
    """What every surface but Spark SQL shows of table ``ushas.<db>.<table>``: (the API's table_exists, its
    list_tables has it, its partition count or None when not found, search finds it, the CLI's ``tables``
    lists it, the REST metastore call's table_exists, the REST search finds it)."""
    import json

    from ushas_catalog.cli import main as cli_main
    from ushas_catalog.errors import NoSuchTable

    name = ("ushas", db, table)
    try:
        parts: int | None = len(list(ms.list_partitions(name)))
    except NoSuchTable:
        parts = None
    found = any(h.relation.endswith(f"{db}.{table}") for h in ms.search(column(db)).hits)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["--uri", ms.db.uri, "--json", "tables", f"ushas.{db}"]) == 0
    cli = table in json.dumps(json.loads(out.getvalue()))
    call = rest.post("/api/v1/metastore/call", json={"method": "table_exists", "args": [f"ushas.{db}.{table}"]},
                     headers=rest.headers)
    assert call.status_code == 200, call.data[:300]
    hits = rest.get(f"/api/v1/search?q={column(db)}", headers=rest.headers)
    assert hits.status_code == 200, hits.data[:300]
    return (ms.table_exists(name), table in [t.name for t in ms.list_tables(("ushas", db))], parts, found, cli,
            call.json["result"], f"{db}.{table}" in json.dumps(hits.json))


def _findings(ms: Any, db: str) -> list[Any]:
    """What ``ushas check`` finds about database ``db`` (names, partitions, pending work)."""
    from ushas_catalog.check import run_checks

    report = run_checks(ms, ["names", "partitions", "pending-work", "staged-writes"])
    return [f for r in report.results for f in r.findings if db in str(f.to_json())]


@pytest.fixture
def rest(ms: Any) -> Iterator[Any]:
    """The REST service (Flask's test client, no socket) over the session's store, with an admin's token."""
    from remote_service import make_token
    from ushas_catalog.service.api import register_api
    from ushas_catalog.ui.app import create_app

    ms.grant("OWN", "project", "user:admin")
    app = create_app(ms.db.uri, "default")
    register_api(app, app.config["USHAS"])
    client = app.test_client()
    client.headers = {"Authorization": f"Bearer {make_token(ms.db.uri, 'write', 'admin')[1]}"}
    yield client
    app.config["USHAS"].close()


#: what :func:`surfaces` shows of a table that does not exist
NOTHING = (False, False, None, False, False, False, False)


def test_a_big_ctas_is_invisible_until_its_publish(spark: Any, db: str, ms: Any, rest: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ushas_catalog.bulk import pending_work

    t, name = f"ushas.{db}.big", ("ushas", db, "big")
    poller = Poller(spark, ms, db, "big", rest)
    chunks = _staged_then(monkeypatch, poller.hold)
    poller.during(f"CREATE TABLE {t} USING parquet PARTITIONED BY (dt) AS "
                  f"SELECT id AS {column(db)}, CAST(id % {PARTS} AS STRING) AS dt FROM range(0, {2 * PARTS}, 1, 1)")
    assert len(chunks) >= PARTS // 16  # it went the chunked way
    assert poller.held == [NOTHING]  # every partition staged: nothing of the table anywhere
    assert set(poller.counts) <= {None, 2 * PARTS}, sorted(set(poller.counts), key=str)
    assert spark.table(t).count() == 2 * PARTS
    assert surfaces(ms, db, "big", rest) == (True, True, PARTS, True, True, True, True)
    history = ms.history(name)
    assert [(h.version, h.operation) for h in history] == [(2, "APPEND"), (1, "CREATE TABLE")]
    assert history[0].detail.get("bulk") is True and history[0].detail["added"] == PARTS
    assert pending_work(ms) == []
    assert _findings(ms, db) == []


def test_a_big_rtas_keeps_the_old_table_until_its_publish(spark: Any, db: str, ms: Any, rest: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    t, name = f"ushas.{db}.r", ("ushas", db, "r")
    spark.sql(f"CREATE TABLE {t} ({column(db)} BIGINT, dt STRING) USING parquet PARTITIONED BY (dt) "
              f"TBLPROPERTIES ('old'='1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    old = ms.get_table(name)
    poller = Poller(spark, ms, db, "r", rest)
    _staged_then(monkeypatch, lambda: (poller.hold(), poller.held.append(ms.get_table(name))))
    poller.during(f"CREATE OR REPLACE TABLE {t} USING parquet PARTITIONED BY (dt) TBLPROPERTIES ('new'='1') "
                  f"AS SELECT id AS {column(db)}, CAST(id % {PARTS} AS STRING) AS dt FROM range(0, {PARTS}, 1, 1)")
    assert poller.held[0] == (True, True, 3, True, True, True, True)  # the old table, whole
    assert poller.held[1] == old
    assert set(poller.counts) <= {3, PARTS}, sorted(set(poller.counts), key=str)
    new = ms.get_table(name)
    assert new.id != old.id and new.properties.get("new") == "1" and "old" not in new.properties
    assert spark.table(t).count() == PARTS
    # the old table was dropped as DROP TABLE drops it: kept, UNDROP brings it back
    assert [d.id for d in ms.list_dropped_tables(("ushas", db), "r")] == [str(old.id)]
    spark.sql(f"DROP TABLE {t}")
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    ms.undrop_table(name)
    assert ms.get_table(name).id in (new.id, old.id)
    assert _findings(ms, db) == []


def test_a_create_during_a_big_ctas_wins_and_the_ctas_leaves_nothing(spark: Any, db: str, ms: Any,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      spark_dirs: dict[str, Any]) -> None:
    from ushas_catalog.bulk import pending_work
    from ushas_catalog.data.write_fence import list_outcomes

    t, name = f"ushas.{db}.race", ("ushas", db, "race")
    made: list[Any] = []

    def create_now() -> None:  # another session creates the name while the CTAS stages (metastore API)
        made.append(ms.create_table(name, "id BIGINT, dt STRING", partition_by=["dt"],
                                    location=f"{spark_dirs['warehouse']}/elsewhere_{db}"))

    _staged_then(monkeypatch, create_now)
    with pytest.raises(AnalysisException) as lost:
        spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (dt) AS "
                  f"SELECT id, CAST(id % {PARTS} AS STRING) AS dt FROM range(0, {PARTS}, 1, 1)")
    assert lost.value.getCondition() == "TABLE_OR_VIEW_ALREADY_EXISTS", lost.value
    assert made and ms.get_table(name).id == made[0].id
    assert list(ms.list_partitions(name)) == [] and spark.table(t).count() == 0
    assert pending_work(ms) == []
    assert list_outcomes(ms, limit=1)[0].state == "ABORTED"
    assert _findings(ms, db) == []


def test_a_ctas_too_big_for_one_transaction_is_staged_hidden_too(spark: Any, db: str, ms: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``WRITE_BULK_AT`` (5,000) but over the engine's transaction size (lowered): the one-transaction
    commit fails with ``LimitExceeded`` and the CTAS goes the hidden way, not step by step."""
    from ushas_catalog import bulk, bulk_ctas
    from ushas_catalog.kv.base import Limits
    from ushas_catalog.kv.sqlite import SqliteDatabase

    monkeypatch.setattr(bulk, "WRITE_CHUNK", 16)
    t, name = f"ushas.{db}.fat", ("ushas", db, "fat")
    seen: list[Any] = []
    stage = bulk_ctas.stage

    def staged(*a: Any, **k: Any) -> Any:
        out = stage(*a, **k)
        seen.append(ms.table_exists(name))
        return out

    monkeypatch.setattr(bulk_ctas, "stage", staged)
    monkeypatch.setattr(SqliteDatabase, "limits", Limits(transaction_bytes=20_000))
    spark.sql(f"CREATE TABLE {t} USING parquet PARTITIONED BY (dt) AS "
              f"SELECT id, CAST(id % {PARTS} AS STRING) AS dt FROM range(0, {PARTS}, 1, 1)")
    assert seen == [False]  # staged, hidden: the name did not resolve
    assert spark.table(t).count() == PARTS and len(list(ms.list_partitions(name))) == PARTS
    assert [h.operation for h in ms.history(name)] == ["APPEND", "CREATE TABLE"]


def test_spark_sql_sees_nothing_of_a_ctas_staged_by_another_process(spark: Any, db: str, ms: Any,
                                                                    spark_dirs: dict[str, Any]) -> None:
    """Another process (another driver) has staged every partition of a big CTAS and not published it yet:
    this session's SHOW TABLES, system.tables, a read of the name and DESCRIBE see nothing of it; killed,
    ``ushas repair --pending`` rolls it back and the name is free for a CTAS of this session."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    from ushas_catalog.bulk import pending_work
    from ushas_catalog.cli import main as cli_main

    code = textwrap.dedent(f"""
        import time
        from ushas_catalog import bulk, bulk_ctas
        from ushas_catalog.metastore import Metastore
        from ushas_catalog.model.data_files import DataFile
        from ushas_catalog.model.names import TableName
        from ushas_catalog.model.partitions import Partition
        bulk.WRITE_CHUNK = 16
        ms = Metastore.open({ms.db.uri!r}, project="default", user="other")
        root = {str(spark_dirs['warehouse'])!r} + "/elsewhere_{db}"
        items = [Partition(values={{"dt": str(i)}}, data_files=[DataFile(f"file:{{root}}/dt={{i}}/x.parquet", 1, 1)])
                 for i in range({PARTS})]
        bulk_ctas.stage(ms, TableName.parse("ushas.{db}.hid"), "id BIGINT, dt STRING", ["dt"], "file:" + root,
                        items, None)
        time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300  # a bound, not a timing assertion
        while not [w for w in pending_work(ms) if w.kind == "CTAS" and w.done >= PARTS]:
            assert child.poll() is None, child.communicate()[1].decode()
            assert time.monotonic() < deadline, "the other process never staged its CTAS"
            time.sleep(0.05)
        # SHOW TABLES lists the session's temporary views in every database (other tests' views included)
        assert [r.tableName for r in spark.sql(f"SHOW TABLES IN ushas.{db}").collect() if not r.isTemporary] == []
        assert spark.sql(f"SELECT count(*) FROM ushas.system.tables WHERE database = '{db}'").first()[0] == 0
        for read in (f"SELECT * FROM ushas.{db}.hid", f"DESCRIBE TABLE ushas.{db}.hid",
                     f"SHOW PARTITIONS ushas.{db}.hid"):
            with pytest.raises(AnalysisException) as missing:
                spark.sql(read).collect()
            assert missing.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND", read
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        # rolled back even when an assertion above failed: the session's store is shared with later tests
        assert cli_main(["--uri", ms.db.uri, "--json", "repair", "--pending"]) == 0
    assert pending_work(ms) == []
    spark.sql(f"CREATE TABLE ushas.{db}.hid USING parquet PARTITIONED BY (dt) AS SELECT 1 AS id, 'x' AS dt")
    assert spark.table(f"ushas.{db}.hid").count() == 1
