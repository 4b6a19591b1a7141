"""A local HTTP endpoint for hook tests: a free port chosen at run time, a chosen share of calls
failing (half of them before the event is taken, half after: the answer is lost, so the event
comes again with the same delivery id), and a way to take it down (connections refused) and
bring it back on the same port."""
from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class HttpReceiver:
    def __init__(self, fail_share: float = 0.0, seed: int = 23) -> None:
        self.fail_share = fail_share
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []          # every event taken, duplicates included
        self.headers: list[dict[str, str]] = []
        self.calls = 0
        self.refusals = 0
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.calls += 1
                    roll = receiver.random.random()
                    fail = roll < receiver.fail_share
                    take = not fail or roll < receiver.fail_share / 2  # half the failures lose the answer
                    if take:
                        receiver.log.append(json.loads(body))
                        receiver.headers.append(dict(self.headers.items()))
                    if fail:
                        receiver.refusals += 1
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler

    def up(self) -> None:
        """Listen (on the same port as before, after :meth:`down`)."""
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def down(self) -> None:
        """Stop listening: calls are refused until :meth:`up`."""
        assert self.server is not None and self.thread is not None
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
        self.server = None

    def deduplicated(self) -> list[dict[str, Any]]:
        """The receiver's log without redeliveries (by delivery id), in arrival order."""
        with self.lock:
            seen: set[str] = set()
            out = []
            for event in self.log:
                if event["delivery_id"] not in seen:
                    seen.add(event["delivery_id"])
                    out.append(event)
            return out

    def close(self) -> None:
        if self.server is not None:
            self.down()
