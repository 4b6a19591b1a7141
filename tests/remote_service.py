"""A real ``ushas serve`` process on a free port, for the remote-mode tests (docs/service.md, "Remote
mode"): started with a bounded wait, stopped (SIGTERM, then SIGKILL) at the end, killable with -9 and
restartable on the same port. ``tests/`` is on ``sys.path``."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START_WAIT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_token(uri: str, access: str, name: str, project: str = "default") -> tuple[str, str]:
    """(id, token text) of a new token of ``project``'s store."""
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.tokens import TokenStore

    ms = Metastore.open(uri, project=project, create=False)
    try:
        info, text = TokenStore(ms).create(access, name)
        return info.id, text
    finally:
        ms.close()


def revoke_token(uri: str, token_id: str, project: str = "default") -> None:
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.tokens import TokenStore

    ms = Metastore.open(uri, project=project, create=False)
    try:
        TokenStore(ms).revoke(token_id)
    finally:
        ms.close()


@dataclass
class ServeProcess:
    uri: str
    project: str
    log: Path
    port: int = field(default_factory=free_port)
    proc: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ServeProcess":
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ushas_catalog", "--uri", self.uri, "--project", self.project, "serve",
                 "--port", str(self.port), "--no-hooks"], stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ushas serve exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/api/v1/info", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ushas serve did not answer within {START_WAIT} s: {self.log.read_text()[-2000:]}")

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def remote_catalog(spark: Any, name: str, url: str, token: str | None, warehouse: str,
                   **options: str) -> str:
    """Declares Spark catalog ``name`` of the shared session over catalog ``main`` of the service at
    ``url`` with ``token`` (remote mode), and answers its name."""
    conf = {"": "io.ushas.spark.UshasCatalog", ".uri": url, ".catalog": "main", ".warehouse": warehouse,
            **({".token": token} if token else {}), **{f".{k}": v for k, v in options.items()}}
    for key, value in conf.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)
    return name


class KillingProxy:
    """An HTTP proxy in front of a :class:`ServeProcess` (on its own free port, on a thread) that kills the
    service with -9 the first time a request's path ends with ``kill_on``; the client gets no answer. By
    default the request is not forwarded (the service died before the call reached it). With ``inside`` (the
    path of the service's SQLite store) the proxy first takes the store's write lock, forwards the request,
    lets the service work on it for ``inside_s`` seconds — it runs the call's store transaction, which read
    and buffered its writes and keeps retrying its commit against the held lock — kills the service there,
    then lets go of the lock: the service died inside the call's store transaction. With ``after_forwarding``
    the request reaches the service, which runs it, and the service is killed before its answer is passed on
    (the call's effect is in the store, the client never hears of it)."""

    def __init__(self, serve: ServeProcess, kill_on: str, inside: Path | None = None, inside_s: float = 2.0, *,
                 after_forwarding: bool = False) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        proxy = self
        self.serve, self.kill_on, self.killed = serve, kill_on, 0
        #: inside mode: whether the service answered the call although its store was locked (it must not)
        self.answered: bool | None = None

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith(proxy.kill_on) and not proxy.killed and inside is not None:
                    proxy.killed += 1
                    proxy.answered = kill_inside(proxy.serve, inside, inside_s, self.path, body,
                                                 dict(self.headers.items()))
                    self.close_connection = True
                    return
                if self.path.endswith(proxy.kill_on) and not proxy.killed and not after_forwarding:  # once
                    proxy.killed += 1
                    proxy.serve.kill9()
                    self.close_connection = True
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.serve.port, timeout=60)
                try:
                    conn.request("POST", self.path, body=body, headers={k: v for k, v in self.headers.items()
                                                                         if k.lower() != "host"})
                    answer = conn.getresponse()
                    data = answer.read()
                except OSError:
                    self.close_connection = True
                    return
                finally:
                    conn.close()
                if after_forwarding and self.path.endswith(proxy.kill_on) and not proxy.killed:
                    proxy.killed += 1
                    proxy.serve.kill9()
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def kill_inside(serve: ServeProcess, store: Path, seconds: float, path: str, body: bytes,
                headers: dict[str, str]) -> bool:
    """Sends one request to ``serve`` while this process holds the write lock of its SQLite ``store``, kills
    the service with -9 after ``seconds`` (inside the call's store transaction: it cannot commit), then lets
    go of the lock. Answers whether the service answered first (the answer itself is dropped)."""
    import http.client
    import sqlite3

    lock = sqlite3.connect(str(store), timeout=10, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")  # the write lock: every commit of the service waits for it
        conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=seconds)
        try:
            conn.request("POST", path, body=body, headers={k: v for k, v in headers.items() if k.lower() != "host"})
            try:
                conn.getresponse().read()
                return True
            except TimeoutError:
                return False  # working on it, inside its transaction
        finally:
            serve.kill9()
            conn.close()
    finally:
        lock.execute("ROLLBACK")
        lock.close()
