from __future__ import annotations

from typing import Iterator

import pytest

from app.uistore import build

from .live import Live, running, token


@pytest.fixture
def live(store_uri: str) -> Iterator[Live]:
    """The UI test store served live, with a write token in ``live.write`` (not sent by default)."""
    build(store_uri)
    write = token(store_uri, "write")
    read = token(store_uri, "read")
    for svc in running(store_uri):
        svc.write_token, svc.read_token = write, read  # type: ignore[attr-defined]
        yield svc
