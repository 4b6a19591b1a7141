"""Metastore fixtures (``store_uri``, on both engines in some modules: tests/conftest.py)."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import pytest

from ushas_catalog.metastore import Metastore


@pytest.fixture
def ms(store_uri: str) -> Iterator[Metastore]:
    m = Metastore.open(store_uri, project="acme", user="tester")
    yield m
    m.close()


@contextlib.contextmanager
def served_metastore(store_uri: str, project: str = "acme", user: str = "tester") -> Iterator[Any]:
    """The metastore API of ``project`` through a live ``ushas serve`` (on a thread, a free port), as
    ``user`` (OWN on the project) with a write token: ``Metastore.open("http://...", token=...)``. Its
    ``db`` is the store's own handle, for the tests that read raw keys."""
    from remote_service import make_token
    from ushas_catalog.ui.server import Service

    local = Metastore.open(store_uri, project=project, user="admin")
    local.grant("OWN", "project", f"user:{user}")
    token = make_token(store_uri, "write", user, project=project)[1]
    service = Service(store_uri, project, port=0, hooks=False)
    thread = threading.Thread(target=service.run, name="ushas-serve-metastore", daemon=True)
    thread.start()
    try:
        remote = Metastore.open(f"http://127.0.0.1:{service.port}", project=project, token=token)
        remote.db, remote.resolver = local.db, local.resolver  # type: ignore[attr-defined]  # raw-key checks
        yield remote
    finally:
        service.stop()
        thread.join(30)
        local.close()


#: the implementations of the metastore API (``either_ms``)
KINDS = ("embedded", "remote")


def parametrize_kinds(metafunc: pytest.Metafunc) -> None:
    """``pytest_generate_tests`` of a module whose tests take ``either_ms``: each test runs on every kind,
    a test marked ``embedded_only`` on the embedded one."""
    if "either_ms" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("embedded_only") is not None
        metafunc.parametrize("either_ms", KINDS[:1] if only else KINDS, indirect=True)


@pytest.fixture
def either_ms(request: pytest.FixtureRequest, store_uri: str) -> Iterator[Any]:
    """The Metastore API embedded, and the same API served by ``ushas serve`` (remote mode): a module that
    names its ``ms`` fixture after this one (and calls :func:`parametrize_kinds`) runs every test against
    both implementations."""
    if request.param == "embedded":
        m = Metastore.open(store_uri, project="acme", user="tester")
        yield m
        m.close()
        return
    with served_metastore(store_uri) as remote:
        yield remote


@pytest.fixture
def sales(ms: Metastore) -> Metastore:
    """A metastore with catalog main and database main.sales (location /wh/sales)."""
    ms.create_catalog("main")
    ms.create_database("main.sales", location="/wh/sales")
    return ms


def raw_keys(ms: Metastore, begin: bytes = b"", end: bytes = b"\xff") -> list[bytes]:
    return ms.db.run(lambda tr: [kv.key for kv in tr.get_range(begin, end)])
