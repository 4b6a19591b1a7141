"""Branches in Spark (docs/branches.md): a second Spark catalog on the same metastore catalog with
``.branch=dev`` reads main as of the branch point plus its own writes (data files included), main never
sees them until merged; a merge conflict is Spark's USHAS_BranchConflict naming the table; a clean
merge brings the branch's data to main."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest


def _catalog(spark: Any, name: str, spark_dirs: dict[str, Path], catalog: str, branch: str | None = None) -> None:
    settings = {"": "io.ushas.spark.UshasCatalog", ".uri": f"sqlite:///{spark_dirs['store']}", ".catalog": catalog,
                ".warehouse": str(spark_dirs["warehouse"] / catalog)}
    if branch:
        settings[".branch"] = branch
    for key, value in settings.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)


def _ids(spark: Any, table: str) -> list[int]:
    return [r.id for r in spark.sql(f"SELECT id FROM {table} ORDER BY id").collect()]


def test_a_branch_catalog_reads_and_writes_its_branch(spark: Any, spark_dirs: dict[str, Path], ms: Any) -> None:
    tag = uuid.uuid4().hex[:8]
    cat, main, dev, dev2 = f"br_{tag}", f"brmain_{tag}", f"brdev_{tag}", f"brdevb_{tag}"
    ms.create_catalog(cat)
    _catalog(spark, main, spark_dirs, cat)
    spark.sql(f"CREATE NAMESPACE {main}.db")
    spark.sql(f"CREATE TABLE {main}.db.t (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {main}.db.u (id INT) USING parquet")
    spark.sql(f"INSERT INTO {main}.db.t VALUES (1, 'a')")
    spark.sql(f"INSERT INTO {main}.db.u VALUES (1)")
    (row,) = spark.sql(f"CALL {main}.system.create_branch('{cat}', 'dev')").collect()
    assert row.action == "CREATE BRANCH"
    _catalog(spark, dev, spark_dirs, cat, "dev")

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
    rows = spark.sql(f"CALL {main}.system.list_branches('{cat}')").collect()
    assert [(r.branch, r.parent) for r in rows] == [("dev", "main")] and rows[0].changed_keys > 0
    table = spark.sql(f"SELECT branch, changed_keys FROM {main}.system.branches WHERE catalog = '{cat}'").collect()
    assert [(r.branch, r.changed_keys) for r in table] == [("dev", rows[0].changed_keys)]

    # t changed on both: the merge fails naming it and merges nothing
    with pytest.raises(Exception) as e:
        spark.sql(f"CALL {main}.system.merge_branch('dev')").collect()
    assert "USHAS_BranchConflict" in str(e.value) and f"table {cat}.db.t" in str(e.value)
    assert f"{cat}.db.u" not in str(e.value)
    assert _ids(spark, f"{main}.db.u") == [1]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {main}.db").collect() if not r.isTemporary] == ["t", "u"]

    # a branch without conflicts merges: its data reaches main
    spark.sql(f"CALL {main}.system.create_branch('{cat}', 'dev2')")
    _catalog(spark, dev2, spark_dirs, cat, "dev2")
    spark.sql(f"INSERT INTO {dev2}.db.u VALUES (5)")
    spark.sql(f"CREATE TABLE {dev2}.db.m AS SELECT 9 AS id")
    merged = spark.sql(f"CALL {main}.system.merge_branch('dev2', 'main', '{cat}')").collect()
    assert sorted(r.object for r in merged) == [f"{cat}.db.m", f"{cat}.db.u"]
    spark.sql(f"REFRESH TABLE {main}.db.u")
    assert _ids(spark, f"{main}.db.u") == [1, 5] and _ids(spark, f"{main}.db.m") == [9]
    assert ms.history(f"{cat}.db.u")[0].operation == "MERGE BRANCH"

    spark.sql(f"CALL {main}.system.drop_branch('{cat}', 'dev')")
    spark.sql(f"CALL {main}.system.drop_branch('{cat}', 'dev2')")
    assert spark.sql(f"CALL {main}.system.list_branches('{cat}')").collect() == []
    with pytest.raises(Exception, match="USHAS_NoSuchBranch"):
        spark.sql(f"SELECT * FROM {dev}.db.t").collect()
