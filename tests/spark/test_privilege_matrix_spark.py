"""The privilege matrix (tests/governance/matrix.py) through Spark SQL and the DataFrame API: each
matrix principal is a catalog instance of the shared session (``.user`` = the principal,
``.authorization=true``, ``.catalog`` = its own catalog) over a fresh project of the session's store
(one project per surface, so one surface's drops do not change the other's tables). Allowed: the call
succeeds; refused: ``[INSUFFICIENT_PERMISSIONS]`` naming the privilege and the object, nothing written
but the refusal's ``ACCESS_DENIED`` event (no key of the project, no file or directory under the
principal's catalog's location)."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.metastore import Metastore

from governance.matrix import OPERATIONS, PRINCIPALS, Operation, Principal, Probe, fill, setup_store


class Surface:
    def __init__(self, spark: Any, spark_dirs: dict[str, Path], surface: str) -> None:
        self.project = f"matrix_{surface}_{uuid.uuid4().hex[:8]}"
        uri = f"sqlite:///{spark_dirs['store']}"
        self.ms = Metastore.open(uri, project=self.project)  # no identity: the store's administrator
        warehouse = spark_dirs["warehouse"] / self.project
        setup_store(self.ms, str(warehouse))
        self.names: dict[str, str] = {}
        for who in PRINCIPALS:
            name = f"m{surface[0]}_{who.key}"
            for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": uri, ".project": self.project,
                               ".catalog": who.catalog, ".warehouse": str(warehouse), ".user": who.user,
                               ".authorization": "true"}.items():
                spark.conf.set(f"spark.sql.catalog.{name}{key}", value)
            self.names[who.key] = name
        self.probe = Probe(self.ms, lambda who: sorted(str(f.relative_to(warehouse))
                                                       for f in (warehouse / who.catalog).rglob("*")))


@pytest.fixture(scope="module")
def sql_surface(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Surface]:
    s = Surface(spark, spark_dirs, "sql")
    yield s
    s.ms.close()


@pytest.fixture(scope="module")
def df_surface(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Surface]:
    s = Surface(spark, spark_dirs, "dataframe")
    yield s
    s.ms.close()


def refusal(op: Operation) -> Callable[[BaseException | None, Any], str]:
    def message(error: BaseException | None, answer: Any) -> str:
        if error is None:
            return ""
        text = str(error)
        assert text.startswith("[INSUFFICIENT_PERMISSIONS] "), f"{op.name}: {type(error).__name__}: {text}"
        assert error.getCondition() == "INSUFFICIENT_PERMISSIONS" and error.getSqlState() == "42501", text  # type: ignore[attr-defined]
        return text

    return message


@pytest.mark.parametrize("who", PRINCIPALS, ids=lambda w: w.key)
def test_spark_sql_privilege_matrix(spark: Any, sql_surface: Surface, who: Principal) -> None:
    m = sql_surface.names[who.key]
    for op in OPERATIONS:
        if op.sql is not None:
            statement = fill(op.sql, who, m)
            sql_surface.probe.run(op, who, lambda: spark.sql(statement).collect(), refusal(op))


@pytest.mark.parametrize("who", PRINCIPALS, ids=lambda w: w.key)
def test_dataframe_privilege_matrix(spark: Any, df_surface: Surface, who: Principal) -> None:
    m = df_surface.names[who.key]
    for op in OPERATIONS:
        if op.dataframe is not None:
            run = op.dataframe
            df_surface.probe.run(op, who, lambda: run(spark, m), refusal(op))
