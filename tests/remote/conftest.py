"""One Spark Connect server for the tests of this directory (started once, stopped at the end)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from spark_servers import SparkServer, connect_server, missing_dependency


@pytest.fixture(scope="session")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkServer]:
    """A Spark Connect server on a free localhost port with the catalog, the listener and the lineage plugin."""
    why = missing_dependency()
    if why:
        pytest.skip(why)
    server = connect_server(Path(tmp_path_factory.mktemp("connect-server"))).start()
    try:
        yield server
    finally:
        server.stop()
