"""The HTTP client of remote mode (docs/service.md, "Remote mode"): the catalog service's URL, the
token a client sends it, and keep-alive connections that never hang (an unreachable or silent service is
:class:`~ushas_catalog.errors.ServiceUnreachable`: ``ushas service at URL unreachable``). Used by the
Spark bridge's forwarder (:mod:`ushas_catalog.spark.remote`) and the remote metastore
(:mod:`ushas_catalog.remote.metastore`: ``Metastore.open("http://...")``, ``ushas --uri http://...``)."""
from __future__ import annotations

import http.client
import os
import re
import socket
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidArgument, OutcomeUnknown, ServiceUnreachable

#: the header carrying how long the caller still waits (ms): the service's deadline, on its own clock
TIMEOUT_HEADER = "X-Ushas-Timeout-Ms"
#: the environment variable holding the token when none is given
TOKEN_ENV = "USHAS_TOKEN"
#: what a token looks like (``ushas tokens create``): anything else is never sent anywhere
TOKEN_FORMAT = re.compile(r"^ushas_[0-9A-Za-z]+_[0-9A-Za-z_\-]{10,200}$")


def is_remote(uri: Any) -> bool:
    """Whether a store URI names the catalog service (``http://`` or ``https://``)."""
    return isinstance(uri, str) and uri.lower().startswith(("http://", "https://"))


@dataclass(frozen=True)
class Endpoint:
    """A service URL, parsed: scheme, host, port and the path prefix it is served under."""

    url: str
    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, uri: str) -> "Endpoint":
        parts = urlsplit(uri)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise InvalidArgument(f"{uri!r} is not a catalog service URL (http(s)://host:port)")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise InvalidArgument("a catalog service URL has no user, password, query or fragment: give the "
                                  "token with .token, .token-file or USHAS_TOKEN")
        try:
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        except ValueError:
            raise InvalidArgument(f"{uri!r}: the port is not a number from 1 to 65535") from None
        shown = f"{parts.scheme.lower()}://{parts.netloc}{parts.path.rstrip('/')}"
        return cls(shown, parts.scheme.lower(), parts.hostname, port, parts.path.rstrip("/"))


def resolve_token(remote: dict[str, Any], catalog: str | None = None) -> str:
    """The token of a remote catalog (``catalog``: its Spark name) or of the CLI / Python API (None): the
    catalog's ``token`` option (``--token``, ``token=``), its ``token-file``, else ``USHAS_TOKEN``. A text
    that is not a token is refused here, before it is sent anywhere (a ``token-file`` naming some other
    file leaks nothing)."""
    option = f"spark.sql.catalog.{catalog}." if catalog is not None else ""
    token = remote.get("token")
    source = f"{option}token" if option else "the token"
    if not token and remote.get("token_file"):
        source = f"{option}token-file"
        try:
            with open(str(remote["token_file"]), encoding="utf-8") as f:
                token = f.read(512).strip()
        except OSError as exc:
            raise InvalidArgument(f"{source}: cannot read {remote['token_file']}: {exc.strerror}") from None
    if not token:
        source = TOKEN_ENV
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        given = (f"spark.sql.catalog.{catalog}.token, .token-file or the {TOKEN_ENV} environment variable"
                 if catalog is not None else f"--token, token= or the {TOKEN_ENV} environment variable")
        who = f"the catalog {catalog!r} is served by a catalog service and" if catalog is not None else \
            "a catalog service"
        raise InvalidArgument(f"{who} needs a token: {given} (ushas tokens create)")
    token = str(token).strip()
    if not TOKEN_FORMAT.match(token):
        raise InvalidArgument(f"{source} does not hold an ushas token (ushas_<id>_<secret>)")
    return token


class Client:
    """Keep-alive HTTP connections to catalog services, one per (thread, service): Py4J answers the shim's
    calls on several threads."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _connection(self, ep: Endpoint, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        pool: dict[tuple[str, str, int], http.client.HTTPConnection] = self._local.__dict__.setdefault("pool", {})
        key = (ep.scheme, ep.host, ep.port)
        conn = pool.get(key)
        if conn is not None:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            return conn, True
        cls = http.client.HTTPSConnection if ep.scheme == "https" else http.client.HTTPConnection
        conn = pool[key] = cls(ep.host, ep.port, timeout=timeout)
        return conn, False

    def _drop(self, ep: Endpoint) -> None:
        pool = self._local.__dict__.get("pool") or {}
        conn = pool.pop((ep.scheme, ep.host, ep.port), None)
        if conn is not None:
            conn.close()

    def post(self, ep: Endpoint, path: str, token: str, body: bytes, timeout: float) -> tuple[int, bytes]:
        """POST ``body`` to ``path``; (status, body). A reused connection the service closed while idle is
        retried once on a new one (the request never reached it); anything else unreachable is
        :class:`ServiceUnreachable`."""
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   TIMEOUT_HEADER: str(int(timeout * 1000)), "Host": f"{ep.host}:{ep.port}"}
        for attempt in (0, 1):
            conn, reused = self._connection(ep, max(0.001, timeout))
            try:
                conn.request("POST", ep.prefix + path, body=body, headers=headers)
            except OSError as exc:
                self._drop(ep)
                if reused and attempt == 0:
                    continue
                raise ServiceUnreachable(f"ushas service at {ep.url} unreachable: {_why(exc)}") from None
            try:
                response = conn.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self._drop(ep)
                if reused and attempt == 0 and isinstance(exc, http.client.RemoteDisconnected):
                    continue  # an idle keep-alive connection the service had closed: the request never got in
                raise OutcomeUnknown(f"ushas service at {ep.url} unreachable: {_why(exc)} (the request was sent; "
                                     f"the service gave no answer)") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop(ep)
                raise OutcomeUnknown(f"ushas service at {ep.url} unreachable: {_why(exc, timeout)} (the request "
                                     f"was sent; the service gave no answer)") from None
            if response.will_close:
                self._drop(ep)
            return response.status, data
        raise AssertionError("unreachable")


def _why(exc: BaseException, timeout: float | None = None) -> str:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:.1f} s" if timeout is not None else "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


CLIENT = Client()


__all__ = ["CLIENT", "Client", "Endpoint", "is_remote", "resolve_token", "TIMEOUT_HEADER", "TOKEN_ENV"]
