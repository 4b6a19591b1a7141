"""Row filters and column masks through Spark (docs/governance.md, "Row filters and column masks"): the
bypass suite's shared set-up (``tests/spark/test_row_filters_*.py``). Three catalog instances of the shared
session on one fresh project per test module, authorization on: ``adm`` (user admin, OWN on the project,
sets the policies), ``bob`` (SELECT and CREATE on the database, subject to them) and ``carol`` (member of
``role:auditors``, the exempt role). Whatever the query shape, bob never sees a row of another region nor an
unmasked ``ssn``; carol sees everything."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.metastore import Metastore
from user_catalogs import user_catalog

ROWS = [(1, "ann", "111-22-3333", "EU", "bob"), (2, "ben", "222-33-4444", "US", "carol"),
        (3, "cat", "333-44-5555", "EU", "carol"), (4, "dan", "444-55-6666", "APAC", "bob")]
#: what bob reads: EU rows only, ssn masked to its last four digits
BOB = {(1, "ann", "***-3333", "EU"), (3, "cat", "***-5555", "EU")}
ALL = {(i, n, s, r) for i, n, s, r, _ in ROWS}
RAW_SSNS = {s for _, _, s, _, _ in ROWS}
HIDDEN = {2, 4}


def people_with_policies(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Any]:
    """The module fixture ``rm`` of the row filter tests: a fresh project with table ``main.db.people`` (:data:`ROWS`),
    its row filter (``region = 'EU'``) and ``ssn`` mask, exempt role ``role:auditors`` (carol); three catalogs of
    the shared session: ``adm`` (admin, OWN), ``bob`` (SELECT and CREATE on the database), ``carol``."""
    project = "rm_" + uuid.uuid4().hex[:8]
    uri = f"sqlite:///{spark_dirs['store']}"
    admin = Metastore.open(uri, project=project)
    admin.grant("OWN", "project", "user:admin")
    names = {}
    for role, user in (("adm", "admin"), ("bob", "bob"), ("carol", "carol")):
        names[role] = user_catalog(spark, f"r{role}", uri=uri, project=project,
                                   warehouse=str(spark_dirs["warehouse"]), user=user)
    adm = names["adm"]
    spark.sql(f"CREATE NAMESPACE {adm}.db")
    spark.sql(f"CREATE TABLE {adm}.db.people (id INT, name STRING, ssn STRING, region STRING, owner STRING) "
              f"USING parquet PARTITIONED BY (region)")
    spark.createDataFrame(ROWS, "id INT, name STRING, ssn STRING, region STRING, owner STRING") \
        .select("id", "name", "ssn", "owner", "region").writeTo(f"{adm}.db.people").append()
    admin.create_role("auditors")
    admin.grant_role("auditors", "user:carol")
    for user in ("bob", "carol"):
        admin.grant("SELECT", ("main", "db"), f"user:{user}")
        admin.grant("CREATE", ("main", "db"), f"user:{user}")
    spark.sql(f"CALL {adm}.system.set_row_filter('db.people', \"region = 'EU'\", 'role:auditors')").collect()
    spark.sql(f"CALL {adm}.system.set_column_mask('db.people', 'ssn', \"concat('***-', substr(ssn, -4, 4))\", "
              f"'role:auditors')").collect()
    yield type("RM", (), {"adm": adm, "bob": names["bob"], "carol": names["carol"], "ms": admin, "project": project})
    # the next module's project makes its own people table at the same managed path (the session's warehouse)
    location = admin.get_table(("main", "db", "people")).location.removeprefix("file:")
    spark.sql(f"DROP TABLE IF EXISTS {adm}.db.people PURGE")
    shutil.rmtree(location, ignore_errors=True)
    admin.close()


def rows(df: Any, cols: str = "id, name, ssn, region") -> set[tuple[Any, ...]]:
    return {tuple(r) for r in df.selectExpr(*[c.strip() for c in cols.split(",")]).collect()}


def files_under(root: str) -> dict[str, tuple[int, int]]:
    """Every file and directory under local directory ``root``, with its size and modification time (nanoseconds)
    for a file."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, 0) for p in Path(root).rglob("*")}


def insufficient(fn: Callable[[], Any]) -> str:
    """The message of ``fn()``'s refusal, which must be Spark's INSUFFICIENT_PERMISSIONS, SQLSTATE 42501."""
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        fn()
    error = info.value
    assert (error.getCondition(), error.getSqlState()) == ("INSUFFICIENT_PERMISSIONS", "42501"), str(error)
    return str(error)


def denied(fn: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as info:
        fn()
    return str(info.value)
