"""Running the UI on a production WSGI server (waitress), on loopback unless told otherwise.

- Concurrency with timeouts: waitress reads requests on one event loop and hands only
  complete ones to a pool of worker threads, so a client that connects and sends nothing (or
  one byte a minute) holds no worker and blocks nobody; idle connections are closed after
  :data:`CHANNEL_TIMEOUT` seconds. Requests are bounded in header and body size.
- Remote mode's keep-alive catalog-op connections get a thread each (:mod:`.op_connections`, up to
  :data:`OP_CONNECTIONS`): no hand-off between threads per call. A silent client there holds only
  its own thread (:data:`CHANNEL_TIMEOUT` seconds at most); past the limit connections are
  waitress's, and anything but a plain op request hands its connection to waitress.
- The app is wrapped by :func:`.security.guard`: only the ``Host`` names the service is
  bound to (or given with ``--allowed-host``) are answered, and every response carries the
  security headers.
- An access log line per request on stderr (logger ``ushas.ui.access``).
- SIGTERM, like Ctrl-C, stops accepting, lets requests in flight finish and their answers go
  out (up to :data:`SHUTDOWN_GRACE` seconds), then closes the store.
"""
from __future__ import annotations

import errno
import logging
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence
from urllib.parse import quote

from ..errors import InvalidArgument
from .app import create_app
from .op_connections import LIMIT as OP_CONNECTION_LIMIT
from .op_connections import OpConnections
from .security import HostPolicy, StartResponse, WSGIApp, guard

#: seconds an idle or silent connection is kept
CHANNEL_TIMEOUT = 30
#: worker threads answering complete requests
THREADS = 8
#: open connections at most (more wait in the listen backlog)
CONNECTION_LIMIT = 1000
#: the largest request body (bytes): a remote Spark write's commit names every file it wrote
MAX_BODY = 64 << 20
#: keep-alive connections served by a thread each while they send catalog ops (:mod:`.op_connections`)
OP_CONNECTIONS = OP_CONNECTION_LIMIT
#: seconds requests in flight get to finish at shutdown
SHUTDOWN_GRACE = 5
#: seconds between looks at the stop flag (SIGTERM, :meth:`Service.stop`)
LOOP_WAKEUP = 0.5
ACCESS_LOG = logging.getLogger("ushas.ui.access")
#: characters of a path or query written as they are in the access log (the rest %-escaped)
_LOG_SAFE = "/:@!$&'()*+,;=-._~%?"


class _Logged:
    """A response body that writes the access log line once it has been sent."""

    def __init__(self, body: Iterable[bytes], line: Callable[[int], None]) -> None:
        self.body, self.line, self.sent = body, line, 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.body:
            self.sent += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.line(self.sent)


def access_log(app: WSGIApp, log: logging.Logger = ACCESS_LOG) -> WSGIApp:
    """``app`` writing one line per request: client, method, path, status, bytes, seconds."""

    def logged(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        began = time.monotonic()
        status = ["-"]

        def starting(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status[0] = code.split(" ", 1)[0]
            return start_response(code, headers, exc_info)

        path = quote(environ.get("PATH_INFO", ""), safe=_LOG_SAFE)
        query = quote(environ.get("QUERY_STRING", ""), safe=_LOG_SAFE)
        request = f"{quote(environ.get('REQUEST_METHOD', '-'))} {path}{'?' + query if query else ''}"

        def line(sent: int) -> None:
            log.info('%s "%s" %s %d %.3fs', environ.get("REMOTE_ADDR", "-"), request, status[0], sent,
                     time.monotonic() - began)

        return _Logged(app(environ, starting), line)

    return logged


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 = a free port); one line of error otherwise."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=128)
    except (OSError, OverflowError, UnicodeError) as exc:
        if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
            raise InvalidArgument(f"port {port} on {host} is in use (another ushas serve?): choose another with "
                                  f"--port N, or --port 0 for any free one") from None
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidArgument(f"cannot listen on {host}:{port}: {why}") from None


def _log_to_stderr() -> None:
    if not ACCESS_LOG.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        ACCESS_LOG.addHandler(handler)
        ACCESS_LOG.setLevel(logging.INFO)
        ACCESS_LOG.propagate = False


class Service:
    """One running service: the listening socket, the waitress server, the app's stores."""

    def __init__(self, uri: str, project: str, *, host: str = "127.0.0.1", port: int = 8765,
                 allowed_hosts: Sequence[str] = (), threads: int = THREADS,
                 channel_timeout: int = CHANNEL_TIMEOUT, namespaces: Mapping[str, str] | None = None,
                 hooks: bool = True, authorization: bool = False, op_connections: int = OP_CONNECTIONS,
                 warehouse: str | None = None) -> None:
        from waitress.server import create_server

        from ..service.api import register_api
        from ..service.auth import AccessControl
        from ..service.catalog_ops_api import lane as catalog_ops_lane

        try:
            policy_names = HostPolicy.for_bind(host, port or 1, allowed_hosts)  # checks --allowed-host first
        except ValueError as exc:
            raise InvalidArgument(f"--allowed-host: {exc}") from None
        self.app = create_app(uri, project)
        stores = self.app.config["USHAS"]
        stores.authorization = authorization  # docs/governance.md: requests checked as their token's user
        stores.warehouse = warehouse  # remote Spark catalogs' managed warehouse (docs/service.md)
        local = is_loopback(host)
        if not local:
            try:
                require_token_configured(stores, host)
            except BaseException:
                stores.close()
                raise
        access = AccessControl(stores, require_read_token=not local)
        state = register_api(self.app, stores, access=access, namespaces=dict(namespaces or {}))
        self.socket = listen(host, port)
        self.host = host
        self.port: int = self.socket.getsockname()[1]
        policy_names.port = self.port
        self.policy = policy_names
        self.map: dict[int, Any] = {}  # waitress's socket map: the listener, its wake-up pipe, connections
        # the catalog ops (remote mode's Spark calls) skip Flask's dispatch, inside the same guard and log
        app = access_log(guard(catalog_ops_lane(self.app.wsgi_app, state, access), self.policy))
        self.server = create_server(app, map=self.map,
                                    sockets=[self.socket],
                                    threads=threads, channel_timeout=channel_timeout,
                                    cleanup_interval=max(1, min(10, channel_timeout)),
                                    connection_limit=CONNECTION_LIMIT, max_request_header_size=65536,
                                    max_request_body_size=MAX_BODY, expose_tracebacks=False, ident="ushas",
                                    clear_untrusted_proxy_headers=True)
        #: keep-alive op connections on a thread each (None: every connection is waitress's)
        self.connections: OpConnections | None = None
        if op_connections > 0:
            self.connections = OpConnections(self.server, _is_op, limit=op_connections, timeout=channel_timeout)
        self._stopping = threading.Event()
        #: the change hooks' delivery worker (ushas_catalog.hooks), a thread from run() to close()
        self.hooks: Any = None
        self._hooks_wanted = hooks

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/"

    def run(self) -> None:
        """Serve until :meth:`stop` (from any thread), SIGTERM or Ctrl-C; then :meth:`close`."""
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, lambda signum, frame: self.stop())
        if self._hooks_wanted and self.hooks is None:
            from ..hooks.worker import HookRunner

            stores = self.app.config["USHAS"]
            self.hooks = HookRunner(stores.uri, stores.project).start()
        try:
            while not self._stopping.is_set() and self.map:  # waitress's loop, a wake-up at a time
                self._loop_once(LOOP_WAKEUP)
            self._drain()
        except KeyboardInterrupt:
            pass
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self.close()

    def stop(self) -> None:
        """Ask :meth:`run` to stop: it stops accepting within :data:`LOOP_WAKEUP` seconds."""
        self._stopping.set()

    def _loop_once(self, timeout: float) -> None:
        from waitress import wasyncore

        wasyncore.loop(timeout=timeout, map=self.map, count=1, use_poll=self.server.adj.asyncore_use_poll)

    def _drain(self) -> None:
        """Stop accepting; keep the loop running until every request in flight has been answered
        (its response sent), at most :data:`SHUTDOWN_GRACE` seconds."""
        self.server.accepting = False  # waitress's listener: not readable, accepts nothing more
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while self.map and time.monotonic() < deadline and (any(
                getattr(ch, "requests", None) or getattr(ch, "total_outbufs_len", 0)
                for ch in list(self.map.values()) if ch is not self.server) or (
                self.connections is not None and self.connections.busy())):
            self._loop_once(0.05)

    def close(self) -> None:
        """Stop the worker threads (waiting for any still running), close every connection and
        the store."""
        from waitress import wasyncore

        try:
            if self.hooks is not None:
                self.hooks.stop(SHUTDOWN_GRACE)
            if self.connections is not None:
                self.connections.stop(SHUTDOWN_GRACE)
            self.server.task_dispatcher.shutdown(cancel_pending=True, timeout=SHUTDOWN_GRACE)
            wasyncore.close_all(self.map)
        finally:
            try:
                self.socket.close()
            finally:
                self.app.config["USHAS"].close()


def _is_op(method: str, path: str, request_uri: str) -> bool:
    """Whether a request is a catalog op (:mod:`.op_connections` answers it on its connection's thread)."""
    from ..service.catalog_ops_api import op_of

    return op_of({"REQUEST_METHOD": method, "PATH_INFO": path, "REQUEST_URI": request_uri}) is not None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) is this machine only."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_token_configured(stores: Any, host: str) -> None:
    """A service reachable from other machines needs at least one token in the store: without
    one nobody could use it, and reads would be open to the network."""
    from ..service.tokens import TokenStore

    if not TokenStore(stores.metastore).any():
        raise InvalidArgument(f"--host {host} makes the service reachable from other machines, which needs "
                              "authentication: create a token first (ushas tokens create --read or --write)")


def serve(uri: str, project: str, *, host: str = "127.0.0.1", port: int = 8765, allowed_hosts: Sequence[str] = (),
          announce: Callable[[str], None] | None = None, namespaces: Mapping[str, str] | None = None,
          hooks: bool = True, authorization: bool = False, warehouse: str | None = None) -> None:
    """Serve until interrupted. ``port`` 0 picks a free port; ``announce`` gets the URL."""
    _log_to_stderr()
    service = Service(uri, project, host=host, port=port, allowed_hosts=allowed_hosts, namespaces=namespaces,
                      hooks=hooks, authorization=authorization, warehouse=warehouse)
    if announce is not None:
        announce(service.url)
    service.run()


__all__ = ["Service", "serve", "access_log", "listen", "CHANNEL_TIMEOUT", "THREADS", "OP_CONNECTIONS", "SHUTDOWN_GRACE", "LOOP_WAKEUP"]
