"""Other ways to a table under a row filter and column masks: a session without the extension (fails
closed, batch and stream), streaming reads, a branch made before the policy, a share, and reads as of
an older version: each goes through the policies in force.
Shared set-up: :mod:`tests.spark.row_filters_support`."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from ushas_catalog.metastore import Metastore
from spark_processes import conf_args, run_spark, spark_bin
from user_catalogs import user_catalog
from tests.spark.row_filters_support import people_with_policies, BOB, ALL, RAW_SSNS, rows


@pytest.fixture(scope="module")
def rm(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Any]:
    yield from people_with_policies(spark, spark_dirs)


@pytest.mark.slow
def test_a_session_without_the_extension_is_refused(rm: Any, spark_dirs: dict[str, Path], tmp_path: Path) -> None:
    """Fail closed: spark-sql started without io.ushas.spark.UshasExtensions reads tables without a policy
    (for carol, exempt) but refuses bob's read of the filtered table instead of reading it unfiltered."""
    extra = {"spark.sql.extensions": "com.example.NotThere"}
    for cat, user in (("bob", "bob"), ("carol", "carol")):
        extra.update({f"spark.sql.catalog.{cat}": "io.ushas.spark.UshasCatalog",
                      f"spark.sql.catalog.{cat}.uri": f"sqlite:///{spark_dirs['store']}",
                      f"spark.sql.catalog.{cat}.project": rm.project, f"spark.sql.catalog.{cat}.catalog": "main",
                      f"spark.sql.catalog.{cat}.user": user})
    args = conf_args(spark_dirs["store"], spark_dirs["warehouse"], **extra)
    sql = "SELECT count(*) AS carol_rows FROM carol.db.people; SELECT * FROM bob.db.people;"
    done = run_spark([spark_bin("spark-sql"), *args, "-e", sql], tmp_path, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "[USHAS_RowPolicy]" in out and "spark.sql.extensions=io.ushas.spark.UshasExtensions" in out, out[-3000:]
    assert "4" in done.stdout  # carol's count ran: tables without a policy for the reader read as ever
    assert not any(s in done.stdout for s in RAW_SSNS)


def test_streaming_reads_apply_the_filter_and_masks(spark: Any, rm: Any, tmp_path: Path) -> None:
    """``readStream.table`` of the policy table: bob's stream holds his filtered, masked rows (an option
    naming the rule's mark does not turn the policy off); carol's, the exempt role's, all of them."""
    def stream(catalog: str, name: str, **options: str) -> set[tuple[Any, ...]]:
        reader = spark.readStream
        for k, v in options.items():
            reader = reader.option(k, v)
        q = (reader.table(f"{catalog}.db.people").select("id", "name", "ssn", "region").writeStream
             .format("parquet").option("path", str(tmp_path / name / "out"))
             .option("checkpointLocation", str(tmp_path / name / "ck")).trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        finally:
            q.stop()
        assert q.exception() is None, q.exception()
        return {tuple(r) for r in spark.read.parquet(str(tmp_path / name / "out")).collect()}

    assert stream(rm.bob, "bob") == BOB
    assert stream(rm.bob, "forged", **{"ushas.policyApplied": "true"}) == BOB
    assert stream(rm.carol, "carol") == ALL


@pytest.mark.slow
def test_a_session_without_the_extension_cannot_stream_a_policy_table(rm: Any, spark_dirs: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    """Fail closed for streams too: a PySpark job without io.ushas.spark.UshasExtensions starting bob's stream
    of the filtered table is refused when the query starts; nothing of the table is written out."""
    extra = {"spark.sql.extensions": "com.example.NotThere", "spark.sql.catalog.bob": "io.ushas.spark.UshasCatalog",
             "spark.sql.catalog.bob.uri": f"sqlite:///{spark_dirs['store']}", "spark.sql.catalog.bob.project": rm.project,
             "spark.sql.catalog.bob.catalog": "main", "spark.sql.catalog.bob.user": "bob"}
    script = tmp_path / "stream.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        f"q = (spark.readStream.table('bob.db.people').writeStream.format('parquet').option('path', '{tmp_path}/out')"
        f".option('checkpointLocation', '{tmp_path}/ck').trigger(availableNow=True).start())\n"
        "q.awaitTermination(120)\n")
    done = run_spark([spark_bin("spark-submit"), *conf_args(spark_dirs["store"], spark_dirs["warehouse"], **extra),
                      str(script)], tmp_path, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-3000:]
    assert "[USHAS_RowPolicy]" in out and "spark.sql.extensions=io.ushas.spark.UshasExtensions" in out, out[-3000:]
    assert not list((tmp_path / "out").glob("*.parquet"))


def test_a_branch_made_before_the_policy_reads_through_it(spark: Any, rm: Any, spark_dirs: dict[str, Path]) -> None:
    """A policy set on main holds in every branch, whenever the branch was made: bob's branch catalog, which
    loaded the table before the filter existed, reads only the EU rows from the next query on."""
    adm = rm.adm
    spark.sql(f"CREATE TABLE {adm}.db.b (id INT, region STRING) USING parquet")
    spark.sql(f"INSERT INTO {adm}.db.b VALUES (1, 'EU'), (2, 'US')")
    branch = "dev_" + uuid.uuid4().hex[:6]
    spark.sql(f"CALL {adm}.system.create_branch('main', '{branch}')").collect()
    bob_dev = user_catalog(spark, "rbobdev", uri=f"sqlite:///{spark_dirs['store']}", project=rm.project,
                           warehouse=str(spark_dirs["warehouse"]), user="bob")
    spark.conf.set(f"spark.sql.catalog.{bob_dev}.branch", branch)
    assert {r.id for r in spark.table(f"{bob_dev}.db.b").collect()} == {1, 2}  # no policy yet
    spark.sql(f"CALL {adm}.system.set_row_filter('db.b', \"region = 'EU'\", 'role:auditors')").collect()
    spark.sql(f"CALL {adm}.system.set_column_mask('db.b', 'region', \"'*'\", 'role:auditors')").collect()
    assert [tuple(r) for r in spark.sql(f"SELECT id, region FROM {bob_dev}.db.b").collect()] == [(1, "*")]
    assert [tuple(r) for r in spark.table(f"{bob_dev}.db.b").collect()] == [(1, "*")]


def test_a_share_reads_through_the_owners_policy(spark: Any, rm: Any, spark_dirs: dict[str, Path]) -> None:
    """A recipient project reads a shared table through its owner's filter and masks, holding none of the
    owner project's roles (carol's exemption is the owner's)."""
    tag = uuid.uuid4().hex[:8]
    recipient, share, mount = f"rrcp_{tag}", f"rs_{tag}", f"rpart_{tag}"
    adm = rm.adm
    spark.sql(f"CALL {adm}.system.create_share('{share}')").collect()
    spark.sql(f"CALL {adm}.system.add_to_share('{share}', 'db.people')").collect()
    spark.sql(f"CALL {adm}.system.grant_share('{share}', 'project:{recipient}')").collect()
    home = user_catalog(spark, "rhome", uri=f"sqlite:///{spark_dirs['store']}", project=recipient,
                        warehouse=str(spark_dirs["warehouse"]), user="carol")
    recipient_ms = Metastore.open(f"sqlite:///{spark_dirs['store']}", project=recipient)
    recipient_ms.grant("OWN", "project", "user:carol")
    recipient_ms.close()
    spark.sql(f"CALL {home}.system.mount_share('`{rm.project}`.{share}', '{mount}')").collect()
    for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{spark_dirs['store']}",
                       ".project": recipient, ".catalog": mount, ".user": "carol",
                       ".warehouse": str(spark_dirs["warehouse"])}.items():
        spark.conf.set(f"spark.sql.catalog.{mount}{key}", value)
    assert rows(spark.table(f"{mount}.db.people")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {mount}.db.people")) == BOB


def test_reads_as_of_a_version_go_through_the_policies_in_force_now(spark: Any, rm: Any,
                                                                    spark_dirs: dict[str, Path]) -> None:
    """Version 2 (the append) is older than the row filter and the mask: bob still reads through them;
    a user without SELECT reads no version."""
    dave = user_catalog(spark, "rdave", uri=f"sqlite:///{spark_dirs['store']}", project=rm.project,
                        warehouse=str(spark_dirs["warehouse"]), user="dave")
    for query in (f"SELECT * FROM {dave}.db.people VERSION AS OF 2", f"SELECT * FROM {dave}.db.people"):
        with pytest.raises(Exception, match="INSUFFICIENT_PERMISSIONS"):
            spark.sql(query).collect()
    for t in (rm.bob, rm.carol):
        history = spark.sql(f"SELECT version, operation FROM {t}.db.people.history").collect()
        assert (history[1].version, history[1].operation) == (2, "APPEND")
    assert rows(spark.sql(f"SELECT * FROM {rm.bob}.db.people VERSION AS OF 2")) == BOB
    assert rows(spark.read.option("versionAsOf", "2").table(f"{rm.bob}.db.people")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {rm.bob}.db.people TIMESTAMP AS OF current_timestamp()")) == BOB
    assert rows(spark.sql(f"SELECT * FROM {rm.carol}.db.people VERSION AS OF 2")) == ALL
    # a tag is a change to the table: bob (SELECT only) may not make one
    error = None
    try:
        spark.sql(f"CALL {rm.bob}.system.create_tag('db.people', 'mine', 2)").collect()
    except Exception as e:  # noqa: BLE001 - the condition is checked below
        error = str(getattr(e, "getCondition", lambda: "")())
    assert error == "INSUFFICIENT_PERMISSIONS"
