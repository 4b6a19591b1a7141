"""Spark in remote mode (docs/service.md, "Remote mode"): catalogs of the shared session whose ``uri`` is
a real ``ushas serve`` process on a free port; every catalog call goes to the service, which runs it as
the catalog's token's user with authorization on. Grants, row filters and masks hold; the runtime
``SET spark.sql.catalog.evil...`` attack gains nothing beyond a token; a revoked token is refused on its
next call; an unreachable service is an error naming it, within the catalog's timeout."""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from ushas_catalog.metastore import Metastore
from remote_service import ServeProcess, free_port, make_token, remote_catalog, revoke_token

ROWS = [(1, "ann", "111-22-3333", "EU"), (2, "ben", "222-33-4444", "US"), (3, "cat", "333-44-5555", "EU")]
BOB = {(1, "ann", "***-3333", "EU"), (3, "cat", "***-5555", "EU")}


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def svc(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("remote")
    uri = f"sqlite:///{root / 'service.db'}"
    admin = Metastore.open(uri)
    admin.grant("OWN", "project", "user:admin")
    admin.close()
    tokens = {user: make_token(uri, "write", user) for user in ("admin", "bob", "mallory")}
    serve = ServeProcess(uri, "default", root / "serve.log").start()
    warehouse = str(root / "warehouse")
    adm = remote_catalog(spark, _name("radm"), serve.url, tokens["admin"][1], warehouse)
    spark.sql(f"CREATE NAMESPACE {adm}.db")
    spark.sql(f"CREATE TABLE {adm}.db.people (id INT, name STRING, ssn STRING, region STRING) USING parquet "
              f"PARTITIONED BY (region)")
    spark.createDataFrame(ROWS, "id INT, name STRING, ssn STRING, region STRING").writeTo(f"{adm}.db.people").append()
    # no row filter: its partitions may be listed (a filtered table's are refused to a reader under the filter)
    spark.sql(f"CREATE TABLE {adm}.db.visits (id INT, region STRING) USING parquet PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {adm}.db.visits VALUES (1, 'EU'), (2, 'US')")
    spark.sql(f"CALL {adm}.system.set_row_filter('db.people', \"region = 'EU'\")").collect()
    spark.sql(f"CALL {adm}.system.set_column_mask('db.people', 'ssn', \"concat('***-', substr(ssn, -4, 4))\")"
              ).collect()
    ms = Metastore.open(uri, create=False)
    ms.grant("SELECT", ("main", "db"), "user:bob")
    ms.close()
    bob = remote_catalog(spark, _name("rbob"), serve.url, tokens["bob"][1], warehouse)
    try:
        yield type("Svc", (), {"serve": serve, "uri": uri, "adm": adm, "bob": bob, "tokens": tokens,
                               "warehouse": warehouse})
    finally:
        serve.stop()


def rows(df: Any) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in df.select("id", "name", "ssn", "region").collect()}


def test_the_catalog_works_through_the_service(spark: Any, svc: Any) -> None:
    assert {r[0] for r in spark.sql(f"SHOW NAMESPACES IN {svc.adm}").collect()} >= {"db", "default"}
    assert {r.partition for r in spark.sql(f"SHOW PARTITIONS {svc.adm}.db.visits").collect()} == \
        {"region=EU", "region=US"}
    # the filter hides rows from admin (no exempt principal): the service refuses its partition listing
    for cat, user in ((svc.adm, "admin"), (svc.bob, "bob")):
        with pytest.raises(Exception, match=r"\[USHAS_RowPolicy\] SHOW PARTITIONS of table main\.db\.people is "
                           rf"refused: its row filter hides rows from user {user}\b"):
            spark.sql(f"SHOW PARTITIONS {cat}.db.people").collect()
    spark.sql(f"INSERT INTO {svc.adm}.db.people VALUES (4, 'dan', '444-55-6666', 'APAC')")
    assert spark.sql(f"SELECT count(*) AS n FROM {svc.adm}.db.people WHERE region = 'APAC'").collect()[0].n == 0
    # df.lineage() works unchanged: resolved in the driver, the remote catalog's table as the source
    text = str(spark.table(f"{svc.adm}.db.people").selectExpr("upper(name) AS who").lineage())
    assert "who" in text and "people" in text and "name" in text, text
    # the service recorded the write as the token's user
    ms = Metastore.open(svc.uri, create=False)
    try:
        assert ms.history(("main", "db", "people"))[0].user == "admin"
        assert {p.spec["region"] for p in ms.list_partitions(("main", "db", "people"))} == {"EU", "US", "APAC"}
    finally:
        ms.close()


def test_a_partitions_delete_goes_through_the_service_as_the_tokens_user(spark: Any, svc: Any) -> None:
    """A DELETE of whole partitions (decided at analysis: io.ushas.spark.MetadataOnlyDelete) through the service:
    refused to bob (SELECT only) before anything is written, dropped for admin and recorded as its DELETE."""
    adm, bob = svc.adm, svc.bob
    spark.sql(f"CREATE TABLE {adm}.db.gone (id INT, region STRING) USING parquet PARTITIONED BY (region)")
    spark.sql(f"INSERT INTO {adm}.db.gone VALUES (1, 'EU'), (2, 'US'), (3, 'APAC')")
    with pytest.raises(Exception, match=r"INSUFFICIENT_PERMISSIONS"):
        spark.sql(f"DELETE FROM {bob}.db.gone WHERE region = 'US'")
    df = spark.sql(f"DELETE FROM {adm}.db.gone WHERE region = 'US'")
    assert df._jdf.queryExecution().analyzed().nodeName() == "DeleteFromTableWithFilters"
    assert {r.id for r in spark.table(f"{adm}.db.gone").collect()} == {1, 3}
    ms = Metastore.open(svc.uri, create=False)
    try:
        newest, before = ms.history(("main", "db", "gone"))[:2]
        assert (newest.operation, newest.user, newest.detail.get("metadata_only")) == ("DELETE", "admin", True)
        assert before.operation == "APPEND"  # bob's refused DELETE wrote nothing
    finally:
        ms.close()


def test_row_filter_and_mask_hold_for_the_tokens_user(spark: Any, svc: Any) -> None:
    assert rows(spark.table(f"{svc.bob}.db.people")) == BOB
    assert spark.sql(f"SELECT id FROM {svc.bob}.db.people WHERE ssn = '111-22-3333'").collect() == []
    with pytest.raises(Exception, match="INSUFFICIENT_PERMISSIONS"):  # SELECT only: no write
        spark.sql(f"INSERT INTO {svc.bob}.db.people VALUES (9, 'eve', '999-99-9999', 'EU')")


def test_reads_go_from_the_jvm_to_the_service_and_its_checks_hold(spark: Any, svc: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The shim sends the read ops to the service itself (io.ushas.spark.RemoteTransport), not through the
    driver's Python; ``direct=false`` sends everything through Python. Either way the service decides: bob's
    row filter and mask hold, his write is refused, and a revoked token is refused on the next direct read."""
    from ushas_catalog.spark import remote

    forwarded: list[str] = []
    real = remote.forward_text

    def spy(op: str, request: dict[str, Any], client: Any = None) -> str:
        forwarded.append(op)
        return real(op, request, client)

    monkeypatch.setattr(remote, "forward_text", spy)
    token_id, token = make_token(svc.uri, "write", "bob")
    direct = remote_catalog(spark, _name("rdir"), svc.serve.url, token, svc.warehouse)
    assert rows(spark.table(f"{direct}.db.people")) == BOB
    assert {r.partition for r in spark.sql(f"SHOW PARTITIONS {direct}.db.visits").collect()} == \
        {"region=EU", "region=US"}
    assert "open" in forwarded and not set(forwarded) & remote.DIRECT_OPS, forwarded
    with pytest.raises(Exception, match="INSUFFICIENT_PERMISSIONS.*bob"):  # a write: through Python, refused
        spark.sql(f"INSERT INTO {direct}.db.people VALUES (9, 'eve', '999-99-9999', 'EU')")
    forwarded.clear()
    python = remote_catalog(spark, _name("rpy"), svc.serve.url, token, svc.warehouse, direct="false")
    assert rows(spark.table(f"{python}.db.people")) == BOB
    assert {"open", "load_relation", "list_files"} <= set(forwarded), forwarded
    revoke_token(svc.uri, token_id)
    for cat in (direct, python):
        with pytest.raises(Exception, match="Unauthorized.*not valid"):
            spark.sql(f"SELECT * FROM {cat}.db.people").collect()


def test_the_runtime_catalog_attack_gains_nothing(spark: Any, svc: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USHAS_TOKEN", raising=False)
    # SET spark.sql.catalog.evil...: no token -> nothing; claiming a user or turning authorization off -> refused
    evil = remote_catalog(spark, _name("evil"), svc.serve.url, None, svc.warehouse)
    with pytest.raises(Exception, match="needs a token"):
        spark.sql(f"SHOW NAMESPACES IN {evil}").collect()
    for option, value in (("user", "admin"), ("authorization", "false")):
        evil = remote_catalog(spark, _name("evil"), svc.serve.url, svc.tokens["mallory"][1], svc.warehouse,
                              **{option: value})
        with pytest.raises(Exception, match=rf"spark.sql.catalog.{evil}.{option}: not allowed"):
            spark.sql(f"SELECT * FROM {evil}.db.people").collect()
    # mallory's own token: mallory, checked (no grant -> refused)
    evil = remote_catalog(spark, _name("evil"), svc.serve.url, svc.tokens["mallory"][1], svc.warehouse)
    with pytest.raises(Exception, match="INSUFFICIENT_PERMISSIONS.*mallory"):
        spark.sql(f"SELECT * FROM {evil}.db.people").collect()


def _refusal(fn: Any) -> str:
    """The message of ``fn()``'s refusal, which must be Spark's INSUFFICIENT_PERMISSIONS, SQLSTATE 42501."""
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        fn()
    assert (info.value.getCondition(), info.value.getSqlState()) == ("INSUFFICIENT_PERMISSIONS", "42501"), \
        str(info.value)
    return str(info.value)


def test_governed_path_reads_and_writes_through_the_service(spark: Any, svc: Any, tmp_path: Path) -> None:
    """A remote catalog checks a plan's paths like a governed local one (``check_paths``, a read op): with a write
    token and with a read token, a read of a declared location the token's user holds READ FILES on works, one he
    does not is INSUFFICIENT_PERMISSIONS naming the location (not a token error); a write needs WRITE FILES, and a
    read token refuses every governed path write, even with WRITE FILES; a grant revoked between two statements of
    the session bites on the next. The write token's catalog is checked alone first: the read token's, once
    started, refuses every governed write of the session."""
    reader, writer = _name("rrd"), _name("rwr")  # users of their own: only their catalog refuses below
    everyone = ("admin", "bob", "mallory", reader, writer)
    for name in ("open", "closed_r", "closed_w"):
        spark.range(2).write.parquet(str(tmp_path / name / "f"))  # before any location: not governed
    ms = Metastore.open(svc.uri, create=False)
    locations: dict[str, str] = {}
    written: list[Path] = []
    try:
        for name, withheld in (("open", None), ("closed_r", reader), ("closed_w", writer)):
            locations[name] = loc = f"l{uuid.uuid4().hex[:6]}_{name}"
            ms.create_location(loc, str(tmp_path / name))
            for user in everyone:
                if user != withheld:
                    ms.grant("READ FILES", f"location:{loc}", f"user:{user}")
                    ms.grant("WRITE FILES", f"location:{loc}", f"user:{user}")
        out = tmp_path / "open" / "out"
        for user, access in ((writer, "write"), (reader, "read")):
            cat = remote_catalog(spark, user, svc.serve.url, make_token(svc.uri, access, user)[1], svc.warehouse)
            spark._jsparkSession.sessionState().catalogManager().catalog(cat)  # started: its path checks count
            closed = "closed_r" if user == reader else "closed_w"
            text = _refusal(lambda: spark.read.parquet(str(tmp_path / closed / "f")).collect())
            assert f"User {user} may not read files" in text and f"READ FILES on location {locations[closed]}" \
                in text, text
            opened = spark.read.parquet(str(tmp_path / "open" / "f"))
            assert opened.count() == 2
            ms.revoke("READ FILES", f"location:{locations['open']}", f"user:{user}")  # between two statements
            text = _refusal(lambda: opened.count())
            assert f"User {user} may not read files" in text, text
            ms.grant("READ FILES", f"location:{locations['open']}", f"user:{user}")
            assert opened.count() == 2
            if access == "write":
                spark.range(1).write.parquet(str(out))
                written = sorted(out.rglob("*"))
                text = _refusal(lambda: spark.range(1).write.parquet(str(tmp_path / "closed_w" / "out")))
                assert f"User {user} may not write files" in text and "WRITE FILES on location" in text, text
            else:  # a read token never writes governed files, WRITE FILES or not
                text = _refusal(lambda: spark.range(1).write.mode("append").parquet(str(out)))
                assert f"User {user} may not write files" in text and "a read token may only read" in text, text
        assert sorted(out.rglob("*")) == written  # the write token's write; the read token's wrote nothing
        spark.range(1).write.parquet(str(tmp_path / "loose"))  # outside every location and table: not governed
    finally:
        for loc in locations.values():
            ms.drop_location(loc)
        ms.close()


def test_a_revoked_token_is_refused_on_its_next_call(spark: Any, svc: Any) -> None:
    token_id, token = make_token(svc.uri, "write", "bob")
    cat = remote_catalog(spark, _name("rrev"), svc.serve.url, token, svc.warehouse)
    assert rows(spark.table(f"{cat}.db.people")) == BOB
    revoke_token(svc.uri, token_id)
    with pytest.raises(Exception, match="Unauthorized.*not valid"):
        spark.sql(f"SELECT * FROM {cat}.db.people").collect()


def test_after_a_token_file_rotation_the_direct_reads_take_the_new_token(
        spark: Any, svc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rotated ``token-file`` (the old token revoked): the shim's next direct read is refused once, asked
    through Python (which reads the file anew) and answered; its answer hands the shim the new token, so the
    reads after it go straight to the service again, and the old token stays refused."""
    import json

    from ushas_catalog.spark import remote

    monkeypatch.delenv("USHAS_TOKEN", raising=False)
    old_id, old = make_token(svc.uri, "write", "bob")
    new = make_token(svc.uri, "write", "bob")[1]
    file = tmp_path / "bob.token"
    file.write_text(old)
    cat = remote_catalog(spark, _name("rrot"), svc.serve.url, None, svc.warehouse, **{"token-file": str(file)})
    assert rows(spark.table(f"{cat}.db.people")) == BOB
    plugin = spark._jsparkSession.sessionState().catalogManager().catalog(cat)
    forwarded: list[str] = []
    real = remote.forward_text

    def spy(op: str, request: dict[str, Any], client: Any = None) -> str:
        forwarded.append(op)
        return real(op, request, client)

    monkeypatch.setattr(remote, "forward_text", spy)
    file.write_text(new)
    revoke_token(svc.uri, old_id)
    assert rows(spark.table(f"{cat}.db.people")) == BOB
    assert len(forwarded) == 1 and forwarded[0] in remote.DIRECT_OPS, forwarded  # the one refused read
    forwarded.clear()
    before = json.loads(plugin.transportStatus())["calls"]
    assert rows(spark.table(f"{cat}.db.people")) == BOB
    assert forwarded == [] and json.loads(plugin.transportStatus())["calls"] > before  # direct, the new token
    refused = remote.forward("list_namespaces", {"ctx": {"uri": svc.serve.url, "catalog": "main",
                                                         "remote": {"token": old}}})
    assert refused["error"]["type"] == "Unauthorized"  # and the old token is still refused


def test_an_unreachable_service_is_a_clear_error_not_a_hang(spark: Any, svc: Any) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    cat = remote_catalog(spark, _name("rdown"), url, svc.tokens["admin"][1], svc.warehouse,
                         **{"bridge.timeout": "5"})
    began = time.monotonic()
    with pytest.raises(Exception, match=f"ushas service at {url} unreachable"):
        spark.sql(f"SHOW NAMESPACES IN {cat}").collect()
    assert time.monotonic() - began < 60  # bounded by the call's timeout, with room for a loaded machine


def test_the_service_restarted_the_next_statement_succeeds(spark: Any, svc: Any, tmp_path: Path) -> None:
    svc.serve.kill9()
    with pytest.raises(Exception, match="unreachable"):
        spark.sql(f"SHOW PARTITIONS {svc.adm}.db.visits").collect()
    svc.serve.start()  # the same port; Spark is not restarted
    assert {r.partition for r in spark.sql(f"SHOW PARTITIONS {svc.adm}.db.visits").collect()} == \
        {"region=EU", "region=US"}


def test_the_service_killed_mid_commit(spark: Any, svc: Any) -> None:
    """kill -9 while a write's commit is on its way: the statement fails naming the write id, nothing of
    it is registered (its files are kept, unread), and after a restart the next statement succeeds."""
    from remote_service import KillingProxy

    proxy = KillingProxy(svc.serve, "/commit_write")
    try:
        cat = remote_catalog(spark, _name("rkill"), proxy.url, svc.tokens["admin"][1], svc.warehouse)
        before = spark.sql(f"SELECT count(*) AS n FROM {cat}.db.people").collect()[0].n
        with pytest.raises(Exception, match=r"write id [0-9a-zA-Z_-]+\) may or may not have been registered: .*"
                                             r"OutcomeUnknown: ushas service at http://127.0.0.1:[0-9]+ unreachable"):
            spark.sql(f"INSERT INTO {cat}.db.people VALUES (7, 'gus', '777-77-7777', 'EU')")
        assert proxy.killed == 1
        svc.serve.start()
        assert spark.sql(f"SELECT count(*) AS n FROM {cat}.db.people").collect()[0].n == before  # not half-written
        spark.sql(f"INSERT INTO {cat}.db.people VALUES (8, 'hal', '888-88-8888', 'EU')")
        assert spark.sql(f"SELECT count(*) AS n FROM {cat}.db.people").collect()[0].n == before + 1
    finally:
        proxy.close()


def test_the_service_killed_inside_the_commit_transaction(spark: Any, svc: Any) -> None:
    """kill -9 while the service runs a write's commit transaction (its store's write lock held elsewhere, so
    the transaction cannot finish): the statement fails naming the write id, nothing of it is registered,
    ``ushas check`` finds the store sound, and after a restart the next statement succeeds (Spark is not
    restarted)."""
    import subprocess
    import sys

    from remote_service import KillingProxy

    store = Path(svc.uri.removeprefix("sqlite://"))
    proxy = KillingProxy(svc.serve, "/commit_write", inside=store, inside_s=2.0)
    try:
        cat = remote_catalog(spark, _name("rkin"), proxy.url, svc.tokens["admin"][1], svc.warehouse)
        before = {r.id for r in spark.sql(f"SELECT id FROM {cat}.db.visits").collect()}
        with pytest.raises(Exception, match=r"write id [0-9a-zA-Z_-]+\) may or may not have been registered"):
            spark.sql(f"INSERT INTO {cat}.db.visits VALUES (70, 'EU'), (71, 'APAC')")
        assert (proxy.killed, proxy.answered) == (1, False)
        svc.serve.start()
        assert {r.id for r in spark.sql(f"SELECT id FROM {cat}.db.visits").collect()} == before  # nothing of it
        check = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", svc.uri, "check"],
                               capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stdout + check.stderr
        ms = Metastore.open(svc.uri, create=False)
        try:
            assert {p.spec["region"] for p in ms.list_partitions(("main", "db", "visits"))} == {"EU", "US"}
        finally:
            ms.close()
        spark.sql(f"INSERT INTO {cat}.db.visits VALUES (72, 'EU')")
        assert {r.id for r in spark.sql(f"SELECT id FROM {cat}.db.visits").collect()} == before | {72}
    finally:
        proxy.close()


#: a client application of the restart test: the Python remote metastore (argv: url, token, table, count), one
#: partition added per call (``if_not_exists``: a call whose outcome a restart hid is simply sent again), each
#: retried while the service is down; prints ``READY`` once connected, starts on a line of stdin, prints
#: ``DONE <i>`` after each success
CLIENT = r"""
import sys, time
from ushas_catalog.errors import Conflict, StoreBusy, StoreUnavailable
from ushas_catalog.remote.metastore import RemoteMetastore
url, token, table, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
deadline = time.monotonic() + 150
ms = RemoteMetastore.open(url, token=token, timeout=10)
print("READY", flush=True)
sys.stdin.readline()  # all start together
for i in range(count):
    while True:
        try:
            ms.add_partitions(table, [{"p": f"v{i:03d}"}], if_not_exists=True)
            break
        except (StoreUnavailable, StoreBusy, Conflict) as exc:  # down, outcome unknown, busy or overtaken: again
            if time.monotonic() > deadline:
                raise
            print(f"RETRY {i} {type(exc).__name__}", file=sys.stderr, flush=True)
            time.sleep(0.2)
    print(f"DONE {i}", flush=True)
"""


def test_four_applications_across_a_service_restart_lose_nothing(spark: Any, svc: Any, tmp_path: Path) -> None:
    """The shared Spark session and three client processes (the Python remote metastore, each its own
    application and connection: four JVMs would not fit the test budget) write at once while the service
    is killed with -9 and restarted: every write a client was told succeeded is there, every client
    finishes, and no Spark INSERT reported failed appears."""
    import subprocess
    import sys
    import threading

    local = Metastore.open(svc.uri, create=False)
    tables = [f"main.db.{_name('app')}" for _ in range(3)]
    for t in tables:
        local.create_table(t, "id INT, p STRING", partition_by=["p"], format="parquet")
    local.close()
    count = 15
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, svc.serve.url, svc.tokens["admin"][1], t, str(count)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in tables]
    done = [0] * len(procs)
    ready = [threading.Event() for _ in procs]

    def follow(i: int) -> None:
        for line in procs[i].stdout:  # type: ignore[union-attr]
            if line.startswith("READY"):
                ready[i].set()
            if line.startswith("DONE"):
                done[i] += 1

    readers = [threading.Thread(target=follow, args=(i,), daemon=True) for i in range(len(procs))]
    for r in readers:
        r.start()
    outcomes: dict[int, str] = {}

    def spark_app() -> None:
        for i in range(100, 108):
            try:
                spark.sql(f"INSERT INTO {svc.adm}.db.visits VALUES ({i}, 'EU')")
                outcomes[i] = "ok"
            except Exception as exc:
                outcomes[i] = "unknown" if "may or may not have been registered" in str(exc) else "failed"
                time.sleep(0.5)

    try:
        assert all(r.wait(120) for r in ready), [p.stderr.read()[-1500:] for p in procs if p.poll() is not None]  # type: ignore[union-attr]
        for p in procs:
            p.stdin.write("go\n")  # type: ignore[union-attr]
            p.stdin.flush()  # type: ignore[union-attr]
        app = threading.Thread(target=spark_app, daemon=True)
        app.start()
        began = time.monotonic()
        while max(done) < 3 and time.monotonic() - began < 60 and all(p.poll() is None for p in procs):
            time.sleep(0.02)
        svc.serve.kill9()  # mid-flight for every client
        at_kill = list(done)
        time.sleep(1.0)
        svc.serve.start()
        app.join(180)
        for p in procs:
            p.wait(200)
        for r in readers:
            r.join(10)
        assert [p.returncode for p in procs] == [0, 0, 0], \
            [p.stderr.read()[-1500:] for p in procs]  # type: ignore[union-attr]
        assert not app.is_alive() and len(outcomes) == 8
        assert max(at_kill) >= 3 and all(n < count for n in at_kill), at_kill  # all were writing when it died
        ms = Metastore.open(svc.uri, create=False)
        try:
            for t in tables:
                assert [p.spec["p"] for p in ms.list_partitions(t)] == [f"v{i:03d}" for i in range(count)]
        finally:
            ms.close()
        ids = {r.id for r in spark.sql(f"SELECT id FROM {svc.adm}.db.visits WHERE id >= 100").collect()}
        assert {i for i, o in outcomes.items() if o == "ok"} <= ids
        assert not {i for i, o in outcomes.items() if o == "failed"} & ids
        assert "ok" in outcomes.values()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        svc.serve.start() if svc.serve.proc.poll() is not None else None
