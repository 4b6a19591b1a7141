"""A PySpark driver stays its session's catalog backend: a call that fails in Python (an exception Py4J
hands to the JVM instead of an answer, as a remote commit whose outcome is unknown does) fails that
statement only; the next call is answered by the same driver, not by a bridge process the shim would
launch in its place (whose Python state — registered hooks, the lineage registry — is not the driver's)."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_a_call_failing_in_python_keeps_this_driver_as_the_backend(spark: Any, db: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ushas_catalog.spark import bridge

    real = bridge.Backend.call
    answered: list[str] = []

    def failing(self: Any, op: str, payload: str) -> str:
        if op == "list_relations":
            raise RuntimeError("injected failure of list_relations")
        return real(self, op, payload)

    monkeypatch.setattr(bridge.Backend, "call", failing)
    with pytest.raises(Exception, match=r"the Python bridge failed on 'list_relations'.*injected failure"):
        spark.sql(f"SHOW TABLES IN ushas.{db}").collect()

    def recording(self: Any, op: str, payload: str) -> str:
        answered.append(op)
        return real(self, op, payload)

    monkeypatch.setattr(bridge.Backend, "call", recording)
    spark.sql(f"CREATE TABLE ushas.{db}.after (id INT) USING parquet")
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN ushas.{db}").collect() if not r.isTemporary] == ["after"]
    assert "list_relations" in answered, answered  # this driver answered: no bridge process took its place
