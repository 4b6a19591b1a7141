"""Catalog options are the deployer's (docs/governance.md, "Catalog options are the deployer's"): a session
of an application that did not set ``spark.ushas.session.catalogs=allow`` cannot define a ushas catalog
nor re-point one (``SET``, ``spark.conf.set``, ``spark.conf.unset``) before its first use. The shared
session allows it (its tests define catalogs per user); these tests take the setting out of the
application's configuration (the SparkContext's conf, which no session can change) for their duration.
Each case runs in a new session, whose catalogs are not initialized yet, and must change no key of the
store and no file of the warehouse."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.errors import KeySpaceError
from ushas_catalog.metastore import Metastore

SETTING = "spark.ushas.session.catalogs"
CLASS = "io.ushas.spark.UshasCatalog"


@pytest.fixture
def deployed(spark: Any) -> Iterator[Any]:
    """The application's configuration without the opt-in, restored afterwards."""
    conf = spark.sparkContext._jsc.sc().conf()  # the SparkContext's own SparkConf (getConf is a copy)
    before = conf.get(SETTING, "")
    conf.remove(SETTING)
    try:
        yield spark
    finally:
        if before:
            conf.set(SETTING, before)


#: what the lineage listener records of every query, refused ones included, on its own thread
LINEAGE = {"DataLineage", "UsageProfile"}


#: keys read per transaction: the shared store outgrows one transaction's time limit (earlier tests leave
#: dropped tables, kept for UNDROP, such as a 10^6-partition one with its partition history)
PAGE = 20_000


def _store_keys(uri: str) -> list[tuple[bytes, bytes]]:
    """Every key of the store (every project) but the lineage listener's, with its value, read a page per
    transaction (nothing but the lineage listener writes the store while a case runs)."""
    ms = Metastore.open(uri)
    try:
        pairs: list[tuple[bytes, bytes]] = []
        begin = b""
        while True:
            page = ms.db.run(lambda tr: [(bytes(kv.key), bytes(kv.value))
                                         for kv in tr.get_range(begin, b"\xff", limit=PAGE)])
            pairs += page
            if len(page) < PAGE:
                break
            begin = page[-1][0] + b"\x00"
        lineage: dict[bytes, bool] = {}  # by the key's first two elements: the project and its subspace

        def is_lineage(k: bytes) -> bool:
            end = k.find(b"\x00", k.find(b"\x00", 1) + 1) + 1  # both strings: (project, subspace constant)
            head = k[:end] if end > 0 else k
            if head not in lineage:
                try:
                    lineage[head] = bool(LINEAGE & set(ms.layout.keyspace.parse(head).directory_names))
                except KeySpaceError:  # not two strings: judge the whole key
                    return bool(LINEAGE & set(ms.layout.keyspace.parse(k).directory_names))
            return lineage[head]

        return [(k, v) for k, v in pairs if not is_lineage(k)]
    finally:
        ms.close()


def _files(root: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def _new_catalog_sql(s: Any, name: str, uri: str) -> None:
    s.sql(f"SET spark.sql.catalog.{name}={CLASS}")
    s.sql(f"SET spark.sql.catalog.{name}.uri={uri}")


def _new_catalog_conf(s: Any, name: str, uri: str) -> None:
    s.conf.set(f"spark.sql.catalog.{name}", CLASS)
    s.conf.set(f"spark.sql.catalog.{name}.uri", uri)


def _runtime_opt_in(s: Any, name: str, uri: str) -> None:
    s.sql(f"SET {SETTING}=allow")  # a session cannot opt itself in
    _new_catalog_conf(s, name, uri)


#: (case, how the session sets it up, the catalog it then uses, the key the refusal names)
CASES: list[tuple[str, Callable[[Any, str, str], None], str, str]] = [
    ("new catalog by SET", _new_catalog_sql, "{new}", "spark.sql.catalog.{new}"),
    ("new catalog by spark.conf.set", _new_catalog_conf, "{new}", "spark.sql.catalog.{new}"),
    ("new catalog after a runtime opt-in", _runtime_opt_in, "{new}", "spark.sql.catalog.{new}"),
    ("user re-pointed by SET", lambda s, n, u: s.sql("SET spark.sql.catalog.ushas.user=admin"), "ushas",
     "spark.sql.catalog.ushas.user"),
    ("authorization re-pointed by spark.conf.set",
     lambda s, n, u: s.conf.set("spark.sql.catalog.ushas.authorization", "false"), "ushas",
     "spark.sql.catalog.ushas.authorization"),
    ("project re-pointed by SET", lambda s, n, u: s.sql("SET spark.sql.catalog.ushas.project=victim"), "ushas",
     "spark.sql.catalog.ushas.project"),
    ("bridge python re-pointed", lambda s, n, u: s.conf.set("spark.sql.catalog.ushas.python", "/tmp/evil"),
     "ushas", "spark.sql.catalog.ushas.python"),
    ("a deployed option unset", lambda s, n, u: s.conf.unset("spark.sql.catalog.ushas.warehouse"), "ushas",
     "spark.sql.catalog.ushas.warehouse"),
]


@pytest.mark.parametrize("case, setup, catalog, key", CASES, ids=[c[0] for c in CASES])
def test_runtime_catalog_options_are_refused(deployed: Any, spark_dirs: dict[str, Path], case: str,
                                             setup: Callable[[Any, str, str], None], catalog: str, key: str) -> None:
    from pyspark.errors import AnalysisException

    uri = f"sqlite:///{spark_dirs['store']}"
    new = "evil_" + uuid.uuid4().hex[:6]
    keys, files = _store_keys(uri), _files(spark_dirs["warehouse"])
    session = deployed.newSession()
    setup(session, new, uri)
    with pytest.raises(AnalysisException, match="USHAS_SessionCatalogOptions") as refused:
        session.sql(f"SHOW NAMESPACES IN {catalog.format(new=new)}").collect()
    assert refused.value.getSqlState() == "46110"
    assert key.format(new=new) in str(refused.value)
    assert "spark.ushas.session.catalogs=allow" in str(refused.value)
    assert _store_keys(uri) == keys, case
    assert _files(spark_dirs["warehouse"]) == files, case


def test_deployed_options_and_equal_values_are_used(deployed: Any) -> None:
    session = deployed.newSession()
    deployed_user = deployed.sparkContext.getConf().get("spark.sql.catalog.ushas.project", "default")
    session.sql(f"SET spark.sql.catalog.ushas.project={deployed_user}")  # the deployed value: no change
    assert session.sql("SHOW NAMESPACES IN ushas").collect() is not None


def test_the_opt_in_lets_sessions_define_catalogs(spark: Any, spark_dirs: dict[str, Path]) -> None:
    session = spark.newSession()
    name = "mine_" + uuid.uuid4().hex[:6]
    _new_catalog_conf(session, name, f"sqlite:///{spark_dirs['store']}")
    session.conf.set(f"spark.sql.catalog.{name}.warehouse", str(spark_dirs["warehouse"]))
    session.sql(f"CREATE NAMESPACE {name}.db")
    assert "db" in {r[0] for r in session.sql(f"SHOW NAMESPACES IN {name}").collect()}
