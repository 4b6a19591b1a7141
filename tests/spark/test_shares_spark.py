"""Shares between projects in Spark (the shared session): the owner shares with procedures, the recipient
mounts with a procedure of its own catalog and reads with SQL and DataFrames through a Spark catalog of
its project; writes and DDL are refused with USHAS_ShareReadOnly before anything is written; a revoke is
seen by the next query."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

import pytest
from pyspark.errors import AnalysisException


def _catalog(spark: Any, name: str, spark_dirs: dict[str, Path], project: str, catalog: str) -> None:
    for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{spark_dirs['store']}",
                       ".project": project, ".catalog": catalog,
                       ".warehouse": str(spark_dirs["warehouse"])}.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)


def _refused(spark: Any, sql: str, error: str = "USHAS_ShareReadOnly") -> str:
    with pytest.raises(Exception) as e:
        spark.sql(sql).collect()
    assert error in str(e.value), str(e.value)[:500]
    return str(e.value)


def test_a_share_is_read_in_spark_and_refuses_writes(spark: Any, db: str, spark_dirs: dict[str, Path]) -> None:
    tag = uuid.uuid4().hex[:8]
    project, share, mount = f"rcp.{tag}", f"s_{tag}", f"partner_{tag}"
    spark.sql(f"CREATE TABLE ushas.{db}.`or.ders` (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO ushas.{db}.`or.ders` VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"CREATE TABLE ushas.{db}.secret (x INT) USING parquet")
    spark.sql(f"CALL ushas.system.create_share('{share}')")
    (row,) = spark.sql(f"CALL ushas.system.add_to_share('{share}', '{db}.`or.ders`')").collect()
    assert (row.action, row.object) == ("ADD TO SHARE", share)
    spark.sql(f"CALL ushas.system.grant_share('{share}', 'project:{project}')")
    rows = spark.sql(f"CALL ushas.system.show_shares('{share}')").collect()
    assert [(r.object_kind, r.status, r.recipients) for r in rows] == [("table", "live", [project])]

    # the recipient: its own catalog to mount with, then a Spark catalog over the mount
    _catalog(spark, f"home_{tag}", spark_dirs, project, "home")
    spark.sql(f"CALL home_{tag}.system.mount_share('`default`.{share}', '{mount}')")
    _catalog(spark, mount, spark_dirs, project, mount)
    t = f"{mount}.{db}.`or.ders`"
    assert [tuple(r) for r in spark.sql(f"SELECT id, dt FROM {t} ORDER BY id").collect()] == [(1, "a"), (2, "b")]
    assert spark.table(t).where("dt = 'b'").count() == 1
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {mount}.{db}").collect() if not r.isTemporary] == \
        ["or.ders"]
    assert [r.namespace for r in spark.sql(f"SHOW NAMESPACES IN {mount}").collect()] == [db]
    assert spark.sql(f"SELECT * FROM {mount}.{db}.`or.ders`.history").count() >= 2  # metadata tables
    assert sorted(r.dt for r in spark.sql(f"SELECT dt FROM {mount}.{db}.`or.ders`.partitions").collect()) == ["a", "b"]
    spark.sql(f"SELECT * FROM {mount}.{db}.`or.ders`.lineage").collect()  # the recipient's own lineage of it
    _refused(spark, f"SELECT * FROM {mount}.{db}.`or.ders`.changes")  # the owner's feed is not shared
    described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {t}").collect()}
    assert described["id"] == "int" and described["Provider"] == "parquet"
    assert spark.sql(f"SHOW FUNCTIONS IN {mount}.{db}").where("function LIKE 'partner%'").count() == 0
    _refused(spark, f"SELECT * FROM {mount}.{db}.secret", "TABLE_OR_VIEW_NOT_FOUND")
    _refused(spark, f"SELECT * FROM {mount}.system.tables", "SCHEMA_NOT_FOUND")

    before = spark.sql(f"SELECT count(*) FROM ushas.{db}.`or.ders`").collect()[0][0]
    message = _refused(spark, f"INSERT INTO {t} VALUES (3, 'c')")
    assert share in message and "or.ders" in message
    location = Path(spark.sql(f"DESCRIBE TABLE EXTENDED ushas.{db}.`or.ders`").where("col_name = 'Location'")
                    .collect()[0].data_type.removeprefix("file:"))
    files = sorted(p.relative_to(location) for p in location.rglob("*"))
    rows = spark.createDataFrame([(4, "d")], "id INT, dt STRING")
    for write in (lambda: rows.writeTo(t).append(), lambda: rows.write.insertInto(t),
                  lambda: rows.write.mode("append").saveAsTable(t), lambda: rows.writeTo(t).overwritePartitions()):
        with pytest.raises(AnalysisException, match="USHAS_ShareReadOnly"):
            write()
    assert sorted(p.relative_to(location) for p in location.rglob("*")) == files  # nothing staged
    for sql in (f"DROP TABLE {t}", f"ALTER TABLE {t} ADD COLUMNS (y INT)", f"CREATE TABLE {mount}.{db}.n (a INT)",
                f"CREATE NAMESPACE {mount}.other", f"ALTER TABLE {t} ADD PARTITION (dt = 'z')",
                f"CREATE TABLE {mount}.{db}.c AS SELECT 1 AS a"):
        _refused(spark, sql)
    _refused(spark, f"CALL {mount}.system.refresh_table('{db}.secret')", "")
    assert spark.sql(f"SELECT count(*) FROM ushas.{db}.`or.ders`").collect()[0][0] == before

    owned = spark.sql(f"SELECT role, object_kind, status, recipients FROM ushas.system.shares WHERE share = '{share}'")
    assert [tuple(r) for r in owned.collect()] == [("owner", "table", "live", [project])]

    # revoke: the next query no longer sees the share, nor a DataFrame planned before it
    pending = spark.table(t).where("dt = 'a'")
    spark.sql(f"CALL ushas.system.revoke_share('{share}', 'project:{project}')")
    _refused(spark, f"SELECT * FROM {t}", "USHAS_NoSuchShare")
    with pytest.raises(Exception, match="NoSuchShare"):
        pending.collect()
    spark.sql(f"CALL ushas.system.drop_share('{share}')")
    changes = spark.sql("SELECT operation FROM ushas.system.changes WHERE kind = 'share' AND name = "
                        f"'{share}'").collect()
    assert [r.operation for r in changes] == ["CREATE SHARE", "ADD TO SHARE", "GRANT SHARE", "REVOKE SHARE",
                                              "DROP SHARE"]
    mounts = spark.sql(f"SELECT role, share, object FROM home_{tag}.system.shares").collect()
    assert [tuple(r) for r in mounts] == [("mount", share, mount)]


def test_a_share_recipient_reaches_no_unshared_table_after_the_owners_checked_reads(
        spark: Any, spark_dirs: dict[str, Path]) -> None:
    """Hostile: the owner's own checked (authorization on) reads of every table come first in the same process;
    then the recipient (authorization on, SELECT on its project) tries the unshared table of the shared
    database and a table of an unshared database through the share's catalog, by plain names, case,
    backticks and namespace paths, with SQL, DESCRIBE and DataFrames: all are not found, nothing is read."""
    from ushas_catalog.metastore import Metastore
    from user_catalogs import user_catalog

    tag = uuid.uuid4().hex[:8]
    own, rcp, uri = f"own_{tag}", f"rcp_{tag}", f"sqlite:///{spark_dirs['store']}"
    owner_admin = Metastore.open(uri, project=own)
    owner_admin.grant("OWN", "project", "user:alice")
    o = user_catalog(spark, "own", uri=uri, project=own, warehouse=str(spark_dirs["warehouse"]), user="alice")
    for sql in ("CREATE NAMESPACE {o}.d", "CREATE NAMESPACE {o}.hidden",
                "CREATE TABLE {o}.d.`or.ders` (id INT) USING parquet", "INSERT INTO {o}.d.`or.ders` VALUES (1)",
                "CREATE TABLE {o}.d.secret (x INT) USING parquet", "INSERT INTO {o}.d.secret VALUES (4242)",
                "CREATE TABLE {o}.hidden.keys (k STRING) USING parquet", "INSERT INTO {o}.hidden.keys VALUES ('k9')"):
        spark.sql(sql.format(o=o)).collect()
    for t in ("d.`or.ders`", "d.secret", "hidden.keys"):  # the owner's checked lookups of every name
        assert spark.sql(f"SELECT count(*) FROM {o}.{t}").collect()[0][0] == 1
        spark.sql(f"DESCRIBE TABLE {o}.{t}").collect()
    alice = Metastore.open(uri, project=own, user="alice")
    recipient = Metastore.open(uri, project=rcp)  # no identity: the recipient store's administrator
    try:
        alice.shares.create("s", "d.`or.ders` only")
        alice.shares.add("s", "main.d.`or.ders`")
        alice.shares.grant("s", f"project:{rcp}")
        for privilege in ("USE", "SELECT"):
            recipient.grant(privilege, "project", "user:bob")
        recipient.shares.mount(f"`{own}`.s", "partner")
    finally:
        alice.close()
        recipient.close()
        owner_admin.close()
    p = f"pm_{tag}"
    for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": uri, ".project": rcp, ".catalog": "partner",
                       ".warehouse": str(spark_dirs["warehouse"]), ".user": "bob", ".authorization": "true"}.items():
        spark.conf.set(f"spark.sql.catalog.{p}{key}", value)
    assert [tuple(r) for r in spark.sql(f"SELECT id FROM {p}.d.`or.ders`").collect()] == [(1,)]  # the share reads
    assert [r.namespace for r in spark.sql(f"SHOW NAMESPACES IN {p}").collect()] == ["d"]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {p}.d").collect() if not r.isTemporary] == ["or.ders"]
    not_found = ("TABLE_OR_VIEW_NOT_FOUND", "one namespace level (the database)", "SCHEMA_NOT_FOUND", "NO_SUCH_NAMESPACE", "NoSuchTable",
                 "NoSuchNamespace", "NoSuchCatalog", "NON_EXISTENT_TABLE")
    tries: list[tuple[str, Callable[[], Any]]] = []
    for name in ("d.secret", "d.SECRET", "D.secret", "`d`.`secret`", "`d.secret`", "hidden.keys", "HIDDEN.`keys`",
                 "main.d.secret", "d.secret.x", "`d`.`or.ders`.`..`.secret", "hidden.`keys`"):
        t = f"{p}.{name}"
        tries += [(f"SELECT {t}", lambda t=t: spark.sql(f"SELECT * FROM {t}").collect()),
                  (f"DESCRIBE {t}", lambda t=t: spark.sql(f"DESCRIBE TABLE EXTENDED {t}").collect()),
                  (f"table({t})", lambda t=t: spark.table(t).collect()),
                  (f"table({t}).columns", lambda t=t: spark.table(t).columns),  # analysis only: no file listing
                  (f"SHOW COLUMNS {t}", lambda t=t: spark.sql(f"SHOW COLUMNS IN {t}").collect()),
                  (f"SHOW TBLPROPERTIES {t}", lambda t=t: spark.sql(f"SHOW TBLPROPERTIES {t}").collect()),
                  (f"SHOW CREATE TABLE {t}", lambda t=t: spark.sql(f"SHOW CREATE TABLE {t}").collect())]
    tries += [(f"SHOW TABLES {p}.hidden", lambda: spark.sql(f"SHOW TABLES IN {p}.hidden").collect()),
              (f"DESCRIBE NAMESPACE {p}.hidden", lambda: spark.sql(f"DESCRIBE NAMESPACE {p}.hidden").collect())]
    leaked = []
    for what, attempt in tries:
        try:
            out = attempt()
        except Exception as e:  # noqa: BLE001 - the error is checked just below
            text = str(e)
            if not any(error in text for error in not_found) or "4242" in text or "k9" in text:
                leaked.append(f"{what}: {text[:300]}")
        else:
            leaked.append(f"{what}: answered {out[:3]}")
    assert leaked == [], "\n".join(leaked)
