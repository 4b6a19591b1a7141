"""Fixtures shared by the Spark catalog tests (the session itself is ``spark`` in tests/conftest.py)."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest


@pytest.fixture
def db(spark: Any) -> Iterator[str]:
    """A fresh database (Spark namespace) of the ``ushas`` catalog for one test, dropped after it."""
    name = "t_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE NAMESPACE ushas.{name}")
    yield name
    spark.sql("USE spark_catalog.default")
    spark.sql(f"DROP NAMESPACE IF EXISTS ushas.{name} CASCADE")


@pytest.fixture
def ms(spark_dirs: dict[str, Path]) -> Iterator[Any]:
    """The Metastore API over the store the shared session's ``ushas`` catalog uses."""
    from ushas_catalog.metastore import Metastore

    m = Metastore.open(f"sqlite:///{spark_dirs['store']}", project="default")
    yield m
    m.close()
