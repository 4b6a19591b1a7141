"""Branches in Spark (docs/branches.md): a second Spark catalog on the same metastore catalog with
``.branch=dev`` reads main as of the branch point plus its own writes (data files included), main never
sees them until merged; a merge conflict is Spark's USHAS_BranchConflict naming the table; a clean
merge brings the branch's data to main."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest


def _catalog(spark: Any, name: str, spark_dirs: dict[str, Path], catalog: str, branch: str | None = None,
             remote: Any = None) -> None:
    """Spark catalog ``name`` over metastore catalog ``catalog`` (of ``branch``): on the store, or served by
    ``remote`` (the test session's ``ushas serve``, with its token)."""
    settings = {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{spark_dirs['store']}", ".catalog": catalog,
                ".warehouse": str(spark_dirs["warehouse"] / catalog)}
    if remote is not None:
        settings.update({".uri": remote.url, ".token": remote.token})
    if branch:
        settings[".branch"] = branch
    for key, value in settings.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)


def _ids(spark: Any, table: str) -> list[int]:
    return [r.id for r in spark.sql(f"SELECT id FROM {table} ORDER BY id").collect()]


def test_a_branch_catalog_reads_and_writes_its_branch(spark: Any, spark_dirs: dict[str, Path], ms: Any, cat: str,
                                                      request: pytest.FixtureRequest) -> None:
    remote = request.getfixturevalue("remote_service") if cat != "ushas" else None
    tag = uuid.uuid4().hex[:8]
    kind = "r" if remote else ""
    mcat, main, dev, dev2 = f"br_{tag}", f"{kind}brmain_{tag}", f"{kind}brdev_{tag}", f"{kind}brdevb_{tag}"
    ms.create_catalog(mcat)
    _catalog(spark, main, spark_dirs, mcat, remote=remote)
    spark.sql(f"CREATE NAMESPACE {main}.db")
    spark.sql(f"CREATE TABLE {main}.db.t (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {main}.db.u (id INT) USING parquet")
    spark.sql(f"INSERT INTO {main}.db.t VALUES (1, 'a')")
    spark.sql(f"INSERT INTO {main}.db.u VALUES (1)")
    (row,) = spark.sql(f"CALL {main}.system.create_branch('{mcat}', 'dev')").collect()
    assert row.action == "CREATE BRANCH"
    _catalog(spark, dev, spark_dirs, mcat, "dev", remote)

    spark.sql(f"INSERT INTO {dev}.db.t VALUES (2, 'b'), (3, 'a')")
    spark.sql(f"INSERT INTO {dev}.db.u VALUES (2)")
    spark.sql(f"CREATE TABLE {dev}.db.n AS SELECT 7 AS id")
    assert _ids(spark, f"{dev}.db.t") == [1, 2, 3] and _ids(spark, f"{dev}.db.u") == [1, 2]
    assert _ids(spark, f"{dev}.db.n") == [7]
    # main sees none of it: neither the metadata nor the data files
    assert _ids(spark, f"{main}.db.t") == [1] and _ids(spark, f"{main}.db.u") == [1]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {main}.db").collect() if not r.isTemporary] == ["t", "u"]
    # main moves on; the branch still reads main as of its branch point
    spark.sql(f"INSERT INTO {main}.db.t VALUES (4, 'c')")
    assert _ids(spark, f"{main}.db.t") == [1, 4] and _ids(spark, f"{dev}.db.t") == [1, 2, 3]
    rows = spark.sql(f"CALL {main}.system.list_branches('{mcat}')").collect()
    assert [(r.branch, r.parent) for r in rows] == [("dev", "main")] and rows[0].changed_keys > 0
    table = spark.sql(f"SELECT branch, changed_keys FROM {main}.system.branches WHERE catalog = '{mcat}'").collect()
    assert [(r.branch, r.changed_keys) for r in table] == [("dev", rows[0].changed_keys)]

    # t changed on both: the merge fails naming it and merges nothing
    with pytest.raises(Exception) as e:
        spark.sql(f"CALL {main}.system.merge_branch('dev')").collect()
    assert "USHAS_BranchConflict" in str(e.value) and f"table {mcat}.db.t" in str(e.value)
    assert f"{mcat}.db.u" not in str(e.value)
    assert _ids(spark, f"{main}.db.u") == [1]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {main}.db").collect() if not r.isTemporary] == ["t", "u"]

    # a branch without conflicts merges: its data reaches main
    spark.sql(f"CALL {main}.system.create_branch('{mcat}', 'dev2')")
    _catalog(spark, dev2, spark_dirs, mcat, "dev2", remote)
    spark.sql(f"INSERT INTO {dev2}.db.u VALUES (5)")
    spark.sql(f"CREATE TABLE {dev2}.db.m AS SELECT 9 AS id")
    merged = spark.sql(f"CALL {main}.system.merge_branch('dev2', 'main', '{mcat}')").collect()
    assert sorted(r.object for r in merged) == [f"{mcat}.db.m", f"{mcat}.db.u"]
    spark.sql(f"REFRESH TABLE {main}.db.u")
    assert _ids(spark, f"{main}.db.u") == [1, 5] and _ids(spark, f"{main}.db.m") == [9]
    assert ms.history(f"{mcat}.db.u")[0].operation == "MERGE BRANCH"

    spark.sql(f"CALL {main}.system.drop_branch('{mcat}', 'dev')")
    spark.sql(f"CALL {main}.system.drop_branch('{mcat}', 'dev2')")
    assert spark.sql(f"CALL {main}.system.list_branches('{mcat}')").collect() == []
    with pytest.raises(Exception, match="USHAS_NoSuchBranch"):
        spark.sql(f"SELECT * FROM {dev}.db.t").collect()


def test_a_user_with_create_creates_tables_in_a_branch(spark: Any, spark_dirs: dict[str, Path], ms: Any, cat: str,
                                                       request: pytest.FixtureRequest) -> None:
    """Authorization on (a catalog with ``.user`` and ``.authorization=true``; served: the token's user): CREATE
    on the database is enough to create a table in a branch and write it as its owner; main does not see it;
    a table of the branch the user does not own stays refused."""
    tag = uuid.uuid4().hex[:8]
    mcat, user, name = f"bra_{tag}", f"carol_{tag}", f"brauth_{tag}"
    ms.create_catalog(mcat)
    ms.create_database(f"{mcat}.db")
    ms.create_table(f"{mcat}.db.theirs", "id INT", format="parquet")
    ms.create_branch(mcat, "dev")
    ms.grant("CREATE", f"{mcat}.db", f"user:{user}")
    if cat == "ushas":
        _catalog(spark, name, spark_dirs, mcat, "dev")
        spark.conf.set(f"spark.sql.catalog.{name}.user", user)
        spark.conf.set(f"spark.sql.catalog.{name}.authorization", "true")
    else:
        from remote_service import make_token

        url = request.getfixturevalue("remote_service").url
        token = make_token(f"sqlite:///{spark_dirs['store']}", "write", user)[1]
        _catalog(spark, name, spark_dirs, mcat, "dev", type("Remote", (), {"url": url, "token": token}))
    try:
        spark.sql(f"CREATE TABLE {name}.db.mine (id INT) USING parquet")
        spark.sql(f"INSERT INTO {name}.db.mine VALUES (1)")
        assert _ids(spark, f"{name}.db.mine") == [1]
        assert not ms.table_exists(f"{mcat}.db.mine") and ms.branch("dev").table_exists(f"{mcat}.db.mine")
        with pytest.raises(Exception, match=f"INSUFFICIENT_PERMISSIONS.*{user}"):
            spark.sql(f"INSERT INTO {name}.db.theirs VALUES (2)")
    finally:
        # the session keeps this catalog, which checks every later path read of the shared session as carol
        # over the whole store, until its branch is gone and it governs nothing (PathReads passes it over)
        ms.drop_branch(mcat, "dev")


def test_a_governed_catalog_on_a_dropped_branch_does_not_block_path_reads(spark: Any, spark_dirs: dict[str, Path],
                                                                         ms: Any) -> None:
    """Path reads and writes are checked by every governed catalog the session started (PathReads.java). One
    the session defined at run time whose branch was dropped cannot answer any more: it is passed over (it
    governs nothing now), where it used to refuse every later path read and write of the session."""
    tag = uuid.uuid4().hex[:8]
    mcat, name = f"brgone_{tag}", f"brgonecat_{tag}"
    ms.create_catalog(mcat)
    ms.create_database(f"{mcat}.db")
    ms.grant("USE", mcat, "user:tester")
    ms.create_branch(mcat, "dev")
    _catalog(spark, name, spark_dirs, mcat, "dev")
    spark.conf.set(f"spark.sql.catalog.{name}.authorization", "true")
    spark.conf.set(f"spark.sql.catalog.{name}.user", "tester")
    assert spark.sql(f"SHOW NAMESPACES IN {name}").collect() != []     # started, so it checks path reads
    ms.drop_branch(mcat, "dev")
    out = spark_dirs["root"] / f"by_path_{tag}"
    spark.range(3).write.parquet(str(out))
    assert spark.read.parquet(str(out)).count() == 3
