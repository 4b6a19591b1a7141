"""Remote mode's keep-alive connections served by a thread each (docs/service.md, "Remote mode").

A Spark driver in remote mode sends its catalog reads (``POST /api/v1/catalog/ops/<op>``) one after the
other on a keep-alive connection, each a sub-millisecond call. Under waitress alone every call crosses two
threads — its event loop reads and parses the request, a worker thread answers — and on a busy machine each
hand-off waits for the scheduler. Here a connection the server accepts gets a thread of its own, up to
:data:`LIMIT` at once, which reads, parses and answers its op requests itself, then waits for the next.

What protects the service stays the same:

- **the parser is waitress's** (:class:`waitress.parser.HTTPRequestParser`, the server's adjustments: header
  and body size limits), and a request is answered through a waitress task, by the same WSGI application
  (access log, Host guard, the ops lane with its token and privilege checks);
- **anything but a plain op request goes to waitress as it came**: a request for another path, a chunked or
  ``Expect: 100-continue`` body, a malformed or oversized request (waitress answers its error) — the
  connection, with every byte read so far, becomes a waitress channel in the event loop and stays one;
- **a silent or slow client holds only its own thread**, for at most :data:`~.server.CHANNEL_TIMEOUT`
  seconds idle and as long for one request; at :data:`LIMIT` threads, new connections are waitress's, which
  holds no thread for them: a flood of silent connections slows nobody down;
- stopping closes the idle connections at once and lets a request in flight finish (its answer goes out).
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any, Callable

LOG = logging.getLogger("ushas.ui.connections")
#: connections served by a thread each, at most (more are waitress's)
LIMIT = 64
#: the largest read at once
READ = 65536


class _Channel:
    """What a waitress task needs of its channel, for one request answered on this thread: the answer's
    bytes are collected and sent at once."""

    def __init__(self, server: Any, addr: Any) -> None:
        self.server, self.adj, self.addr = server, server.adj, addr
        self.out: list[bytes] = []

    def write_soon(self, data: Any) -> int:
        if isinstance(data, (bytes, bytearray, memoryview)):
            self.out.append(bytes(data))
            return len(data)
        n = 0
        for chunk in data:  # a file wrapper
            self.out.append(bytes(chunk))
            n += len(chunk)
        return n

    def check_client_disconnected(self) -> bool:
        return False


class OpConnections:
    """The accepting side of a waitress server (its ``handle_accept``), serving connections on a thread each
    while they send op requests (``is_op(method, path, request_uri)``)."""

    def __init__(self, server: Any, is_op: Callable[[str, str, str], bool], *, limit: int = LIMIT,
                 timeout: float = 30.0) -> None:
        self.server, self.is_op, self.limit, self.timeout = server, is_op, limit, timeout
        self.lock = threading.Lock()
        self.active: dict[socket.socket, bool] = {}  # connection -> a request in flight
        self.threads: set[threading.Thread] = set()
        self.stopping = False
        self.served = 0  # op requests answered on connection threads (tests, benchmarks)
        self.handed = 0  # connections handed to waitress after their first bytes
        server.handle_accept = self.handle_accept

    # ---- in the event loop ------------------------------------------------------------------------------
    def handle_accept(self) -> None:
        """waitress's accept, and the connection to a thread of its own while there are fewer than the limit."""
        try:
            accepted = self.server.accept()
            if accepted is None:
                return
            conn, addr = accepted
            self.server.set_socket_options(conn)
        except OSError:
            return
        addr = self.server.fix_addr(addr)
        with self.lock:
            own = not self.stopping and len(self.active) < self.limit
            if own:
                self.active[conn] = False
        if not own:
            self.server.channel_class(self.server, conn, addr, self.server.adj, map=self.server._map)
            return
        conn.setblocking(True)
        thread = threading.Thread(target=self._serve, args=(conn, addr), name="ushas-op-connection", daemon=True)
        with self.lock:
            self.threads.add(thread)
        thread.start()

    # ---- on the connection's thread ---------------------------------------------------------------------
    def _serve(self, conn: socket.socket, addr: Any) -> None:
        keep = False
        try:
            keep = self._requests(conn, addr)
        except (OSError, ValueError):
            pass  # the client went away, or the service is stopping
        except Exception:  # noqa: BLE001 - a bug: logged, the connection closed
            LOG.exception("serving a connection from %s failed", addr)
        finally:
            with self.lock:
                self.active.pop(conn, None)
                self.threads.discard(threading.current_thread())
            if not keep:
                try:
                    conn.close()
                except OSError:
                    pass

    def _requests(self, conn: socket.socket, addr: Any) -> bool:
        """Answer op requests until the client closes, times out or sends another request (then the
        connection is waitress's: True)."""
        from waitress.parser import HTTPRequestParser
        from waitress.task import WSGITask

        adj = self.server.adj
        pending = b""
        while not self.stopping:
            parser = HTTPRequestParser(adj)
            # the request's bytes until it is known to be a plain op request (then its body is the parser's
            # alone, which keeps a large one in a temporary file as waitress does)
            raw: bytearray | None = bytearray()
            began = None
            while not parser.completed:
                if not pending:
                    conn.settimeout(self.timeout if began is None else
                                    max(0.001, began + self.timeout - time.monotonic()))
                    try:
                        pending = conn.recv(READ)
                    except socket.timeout:
                        return False  # idle, or a request that does not end: closed (waitress: channel_timeout)
                    if not pending:
                        return False
                    if began is None:
                        began = time.monotonic()
                n = parser.received(pending)
                if raw is not None:
                    raw += pending[:n]
                pending = pending[n:]
                if raw is None:
                    if parser.error is not None or (n == 0 and not parser.completed):
                        return False  # a body that went wrong after its headers: closed
                    continue
                if parser.error is not None or (parser.headers_finished and not self._plain_op(parser)) or (
                        n == 0 and not parser.completed):
                    return self._hand_over(conn, addr, bytes(raw) + pending)  # waitress answers it (an error too)
                if parser.headers_finished:
                    raw = None
            with self.lock:  # in flight: stopping lets it finish
                self.active[conn] = True
            try:
                channel = _Channel(self.server, addr)
                task = WSGITask(channel, parser)
                try:
                    task.service()
                except Exception:  # noqa: BLE001 - as waitress: logged, a 500 when nothing was written
                    LOG.exception("answering %s failed", parser.path)
                    if task.wrote_header:
                        return False
                    channel.out = [b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
                                   b"Connection: close\r\n\r\n"]
                    task.close_on_finish = True
                self.served += 1
                conn.settimeout(self.timeout)
                conn.sendall(b"".join(channel.out))
            finally:
                parser.close()
                with self.lock:
                    self.active[conn] = False
            if task.close_on_finish:
                return False
        return False

    def _plain_op(self, parser: Any) -> bool:
        """A request this thread answers: an op request with a Content-Length body (or none), nothing
        that waits for the server (``Expect: 100-continue``)."""
        return (not parser.chunked and not parser.expect_continue and parser.version in ("1.0", "1.1")
                and self.is_op(parser.command, parser.path, parser.request_uri))

    def _hand_over(self, conn: socket.socket, addr: Any, data: bytes) -> bool:
        """The connection becomes a waitress channel (in the event loop), which reads ``data`` first as if it
        had just arrived."""
        server = self.server

        def adopt() -> None:
            if self.stopping or not server.accepting:
                conn.close()
                return
            channel = server.channel_class(server, conn, addr, server.adj, map=server._map)
            if data:
                channel.received(data)

        with self.lock:
            self.active.pop(conn, None)
            self.handed += 1
        server.trigger.pull_trigger(adopt)
        return True

    # ---- stopping ---------------------------------------------------------------------------------------
    def busy(self) -> bool:
        """Whether a request is being answered on a connection thread."""
        with self.lock:
            return any(self.active.values())

    def stop(self, grace: float) -> None:
        """Close the idle connections (their threads end), let requests in flight finish (at most ``grace``
        seconds), then close the rest."""
        with self.lock:
            self.stopping = True
            idle = [c for c, busy in self.active.items() if not busy]
        for conn in idle:
            try:
                conn.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        for thread in list(self.threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            left = list(self.active)
        for conn in left:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


__all__ = ["LIMIT", "OpConnections"]
