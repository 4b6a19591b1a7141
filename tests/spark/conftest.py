"""Fixtures shared by the Spark catalog tests (the session itself is ``spark`` in tests/conftest.py).

Remote mode, parametrised: in the modules of :data:`ON_REMOTE`, a test taking ``cat`` (the Spark catalog
to run on) runs twice: ``[ushas]``, the shared session's embedded catalog, and ``[ushas_remote]``, a
second catalog of the SAME session over the SAME metastore catalog (``ushas``) served by one ``ushas serve``
process of the test session (:func:`remote_service`), with a token of user ``tester`` (OWN on the project):
every catalog call of that catalog goes over HTTP to the service, which runs it as ``tester`` with
authorization on. Both catalogs name one metastore catalog, so ``db`` and ``ms`` serve both. A test marked
``embedded_only`` runs on ``ushas`` only (say why at the marker)."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

#: the remote-mode Spark catalog of the shared session (created by the first test that needs it)
REMOTE = "ushas_remote"
#: the token's user of :data:`REMOTE`
REMOTE_USER = "tester"
#: modules (relative to tests/spark) whose tests taking ``cat`` run on both catalogs
ON_REMOTE = frozenset({"test_catalog.py", "test_procedures.py", "test_system_tables.py", "test_branches_spark.py"})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cat" not in metafunc.fixturenames or Path(metafunc.module.__file__).name not in ON_REMOTE:
        return
    only = metafunc.definition.get_closest_marker("embedded_only") is not None
    metafunc.parametrize("cat", ["ushas"] if only else ["ushas", REMOTE], indirect=True)


@pytest.fixture(scope="session")
def remote_service(spark: Any, spark_dirs: dict[str, Path]) -> Iterator[Any]:
    """ONE ``ushas serve`` process (a free port) over the shared session's store for the whole test session,
    and the session's catalog :data:`REMOTE` pointing at it with a write token of :data:`REMOTE_USER`."""
    from remote_service import ServeProcess, make_token, remote_catalog
    from ushas_catalog.metastore import Metastore

    uri = f"sqlite:///{spark_dirs['store']}"
    spark._jsparkSession.sessionState().catalogManager().catalog("ushas")  # the store exists
    ms = Metastore.open(uri, project="default", create=False)
    try:
        ms.grant("OWN", "project", f"user:{REMOTE_USER}")
    finally:
        ms.close()
    token = make_token(uri, "write", REMOTE_USER)[1]
    serve = ServeProcess(uri, "default", spark_dirs["root"] / "serve.log").start()
    try:
        remote_catalog(spark, REMOTE, serve.url, token, str(spark_dirs["warehouse"]), catalog="ushas")
        yield type("RemoteService", (), {"serve": serve, "uri": uri, "token": token, "url": serve.url})
    finally:
        serve.stop()


@pytest.fixture
def cat(request: pytest.FixtureRequest) -> str:
    """The Spark catalog a test runs on: ``ushas``, and in :data:`ON_REMOTE`'s modules also :data:`REMOTE`."""
    name = str(getattr(request, "param", "ushas"))
    if name == REMOTE:
        request.getfixturevalue("remote_service")
    return name


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
