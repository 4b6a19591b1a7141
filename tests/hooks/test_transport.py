"""What counts as delivered, refused (counted towards the dead-letter list) and unavailable (retried
without end), over HTTP and for Python targets."""
from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from ushas_catalog.errors import InvalidArgument
from ushas_catalog.hooks.transport import call, check_target, post

EVENT = {"delivery_id": "h:fc1-000000000000000100000000", "hook": "h", "type": "partitions_added"}


@pytest.fixture
def status_server() -> Iterator[tuple[str, list[int]]]:
    """A server answering POST with the status at the head of the list."""
    statuses: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            code = statuses.pop(0)
            self.send_response(code)
            if code == 302:
                self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/h", statuses
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_http_statuses(status_server: tuple[str, list[int]]) -> None:
    url, statuses = status_server
    statuses.extend([200, 204, 400, 500, 302, 503, 429, 504])
    got = [post(url, EVENT, 5).status for _ in range(8)]
    assert got == ["delivered", "delivered", "failed", "failed", "failed", "unavailable", "unavailable",
                   "unavailable"]


def test_a_closed_port_is_unavailable() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    outcome = post(f"http://127.0.0.1:{port}/", EVENT, 5)
    assert outcome.status == "unavailable" and "refused" in outcome.error.lower()


def test_python_targets_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = tmp_path / "my_hook.py"
    hook.write_text("seen = []\n"
                    "def ok(event):\n    seen.append(event['delivery_id'])\n"
                    "def refuse(event):\n    raise ValueError('bad event')\n"
                    "def later(event):\n    raise TimeoutError('busy')\n")
    monkeypatch.chdir(tmp_path)
    target = check_target("my_hook.py:ok")  # made absolute
    assert target == f"{hook}:ok"
    assert call(target, EVENT).delivered
    assert call(f"{hook}:refuse", EVENT).status == "failed"
    assert call(f"{hook}:later", EVENT).status == "unavailable"
    assert call(f"{hook}:missing", EVENT).status == "unavailable"
    for bad in ("nofunction", "mod:", "/no/such/file.py:f", "bad module:f"):
        with pytest.raises(InvalidArgument):
            check_target(bad)
