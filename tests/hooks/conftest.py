from __future__ import annotations

import sys
import types
from typing import Any, Iterator

import pytest

from ushas_catalog.metastore import Metastore

T = "main.sales.orders"


@pytest.fixture
def ms(store_uri: str) -> Iterator[Metastore]:
    """A metastore with catalog main, database main.sales and the partitioned table main.sales.orders."""
    m = Metastore.open(store_uri, project="acme", user="tester")
    m.create_catalog("main")
    m.create_database("main.sales", location="/wh/sales")
    m.create_table(T, "id INT, day STRING", partition_by=["day"])
    yield m
    m.close()


class Receiver:
    """A Python hook target: every call's event, and a way to fail chosen calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail: Any = None  # event -> exception to raise, or None

    def __call__(self, event: dict[str, Any]) -> None:
        self.calls.append(event)
        if self.fail is not None:
            exc = self.fail(event)
            if exc is not None:
                raise exc

    def deduplicated(self) -> list[dict[str, Any]]:
        seen: set[str] = set()
        out = []
        for e in self.calls:
            if e["delivery_id"] not in seen:
                seen.add(e["delivery_id"])
                out.append(e)
        return out


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """``test_hook_target:receive`` (an importable module) calls this receiver."""
    r = Receiver()
    module = types.ModuleType("test_hook_target")
    module.receive = r  # type: ignore[attr-defined]
    sys.modules["test_hook_target"] = module
    yield r
    sys.modules.pop("test_hook_target", None)
