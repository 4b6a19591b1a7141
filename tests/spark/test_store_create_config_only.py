"""Configuration-only Spark (``spark-sql -e``: the shim launches its own bridge) never creates a store it
was not told to create: a mistyped ``.uri`` is an error naming that uri and the settings that help, and
leaves no file; ``spark.sql.catalog.<name>.create=true`` creates it (issue 36)."""
from __future__ import annotations

from pathlib import Path

import pytest
from spark_processes import conf_args, run_spark, spark_bin

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.parametrize("create", ["false", None])
def test_a_missing_store_is_an_error_naming_its_uri(tmp_path: Path, create: str | None) -> None:
    store = tmp_path / "typo" / "ushas.db"
    extra = {"spark.sql.catalog.ushas.create": create} if create else {}
    given = conf_args(store, tmp_path / "warehouse", **extra)
    pairs = [(given[i], given[i + 1]) for i in range(0, len(given), 2)]
    args = [a for flag, value in pairs if create or value != "spark.sql.catalog.ushas.create=true"
            for a in (flag, value)]  # None: the option left out
    proc = run_spark([spark_bin("spark-sql"), "--master", "local[1]", *args, "-e", "SHOW NAMESPACES IN ushas"],
                     tmp_path, timeout=300)
    assert proc.returncode != 0
    assert f"could not open the store sqlite:///{store}" in proc.stderr, proc.stderr[-3000:]
    assert "spark.sql.catalog.ushas.create=true" in proc.stderr
    assert "ushas --uri" in proc.stderr and " init" in proc.stderr
    assert not store.exists() and not store.parent.exists()


def test_create_true_creates_the_store(tmp_path: Path) -> None:
    store = tmp_path / "new" / "ushas.db"
    proc = run_spark([spark_bin("spark-sql"), "--master", "local[1]", *conf_args(store, tmp_path / "warehouse"),
                      "-e", "CREATE NAMESPACE ushas.made; SHOW NAMESPACES IN ushas"], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "made" in proc.stdout
    assert store.exists()
