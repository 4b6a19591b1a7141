"""A FoundationDB transaction is reused across the retries of ``FdbDatabase.run``: what the catalog notes
on it during an attempt (``ushas_checked``: the privilege checks that attempt made) must not survive into
the next attempt, which reads at a new read version and must check again. Runs without a cluster: the
bindings are replaced by the least that ``on_error`` touches."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ushas_catalog.kv.base import Limits, RetryableError
from ushas_catalog.kv.fdb import FdbTransaction


class _Done:
    def wait(self) -> None:
        return None


def test_a_retry_forgets_what_the_failed_attempt_noted() -> None:
    fdb = SimpleNamespace(FDBError=RuntimeError)
    db: Any = SimpleNamespace(_fdb=fdb, limits=Limits())
    raw = SimpleNamespace(on_error=lambda error: _Done())
    tr = FdbTransaction(db, raw)
    tr.__dict__["ushas_checked"] = {1: ("caller", "requirement")}
    tr.__dict__["other_attribute"] = 1
    exc = RetryableError("FoundationDB: not_committed")
    exc.fdb_error = RuntimeError("not_committed")  # type: ignore[attr-defined]
    tr.on_error(exc)
    assert "ushas_checked" not in vars(tr) and vars(tr)["other_attribute"] == 1
