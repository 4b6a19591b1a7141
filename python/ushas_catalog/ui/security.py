"""What every answer of the web service carries, and which ``Host`` names it answers to.

- :data:`SECURITY_HEADERS`: a Content-Security-Policy that allows only the service's own
  scripts, styles and API (no inline script or style, no framing, no plugins), plus
  ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``, a ``Referrer-Policy`` and
  ``Cross-Origin-Opener/Resource-Policy``. Set on every response (:func:`add_headers`).
- :class:`HostPolicy`: the ``Host`` header names a request may carry. A page on another site
  can make a browser send requests to ``127.0.0.1:8765`` under its own name (DNS rebinding);
  answering only to the names the service is bound to (and, on a loopback address,
  ``localhost`` / ``127.0.0.1`` / ``[::1]``) or configured with ``--allowed-host`` stops it.
  Anything else gets ``421 Misdirected Request``; a request without ``Host`` gets 400.
- :func:`guard`: WSGI middleware applying both around any app.
"""
from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

#: the policy: the page's own script (static/app.js), style sheet and API; nothing inline
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
                           "frame-ancestors 'none'")
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
#: the names of this machine's loopback interface, as a Host header writes them
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def add_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` with every security header the app did not set itself."""
    present = {name.lower() for name, _ in headers}
    return headers + [(k, v) for k, v in SECURITY_HEADERS.items() if k.lower() not in present]


def _host_name(host: str) -> str:
    """A bind address or configured name as a Host header writes it: lower case, IPv6 in brackets."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        return host
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]"
    except ValueError:
        pass
    return host


def _is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host.strip() == ""


def _machine_names() -> set[str]:
    """This machine's host name, FQDN and addresses: what a wildcard bind (0.0.0.0) is reached by."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
        except OSError:
            pass
    return {_host_name(n) for n in names if n}


@dataclass
class HostPolicy:
    """Which ``Host`` headers are answered. ``names``: ``host`` (its port must be the service's)
    or ``host:port``; ``any_port``: names configured with ``--allowed-host`` without a port, which
    a reverse proxy may reach on any port."""

    port: int
    names: set[str] = field(default_factory=set)
    any_port: set[str] = field(default_factory=set)

    @classmethod
    def for_bind(cls, host: str, port: int, allowed: Iterable[str] = ()) -> "HostPolicy":
        """The names of a service bound to ``host:port`` plus the ``--allowed-host`` values."""
        policy = cls(port)
        policy.names.add(_host_name(host))
        if _is_loopback(host) or _is_wildcard(host):
            policy.names.update(LOOPBACK_NAMES)
        if _is_wildcard(host):
            policy.names.update(_machine_names())
        for item in allowed:
            policy.allow(item)
        return policy

    def allow(self, item: str) -> None:
        """Add an ``--allowed-host`` value: ``NAME``, ``NAME:PORT``, ``[V6]`` or ``[V6]:PORT``."""
        name, port = split_host(item)
        if port is None:
            self.any_port.add(_host_name(name))
        else:
            self.names.add(f"{_host_name(name)}:{port}")

    def allows(self, header: str | None) -> bool:
        if not header:
            return False
        name, port = split_host(header)
        name = _host_name(name)
        if name in self.any_port:
            return True
        if port is None:
            return self.port == 80 and name in self.names
        return (port == self.port and name in self.names) or f"{name}:{port}" in self.names


def split_host(text: str) -> tuple[str, int | None]:
    """``host[:port]`` (IPv6 in brackets) as (host, port); ValueError for a malformed one."""
    text = text.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"malformed host {text!r}")
        host, rest = text[:end + 1], text[end + 1:]
        if rest and not rest.startswith(":"):
            raise ValueError(f"malformed host {text!r}")
        port_text = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, None
    if not host or any(c in host for c in "/\\@ \t?#"):
        raise ValueError(f"malformed host {text!r}")
    if port_text is None:
        return host, None
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise ValueError(f"malformed port in {text!r}")
    return host, int(port_text)


def _refusal(start_response: StartResponse, status: str, error: str, message: str) -> list[bytes]:
    body = json.dumps({"error": {"type": error, "message": message}}).encode()
    start_response(status, add_headers([("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                        ("Cache-Control", "no-store")]))
    return [body]


def guard(app: WSGIApp, policy: HostPolicy) -> WSGIApp:
    """``app`` answering only requests whose ``Host`` the policy allows (421 otherwise, 400
    without one), with the security headers on every response."""

    def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterator[bytes] | Iterable[bytes]:
        host = environ.get("HTTP_HOST")
        if not host:
            return _refusal(start_response, "400 Bad Request", "BadRequest", "the request has no Host header")
        try:
            allowed = policy.allows(host)
        except ValueError:
            return _refusal(start_response, "400 Bad Request", "BadRequest", "the Host header is malformed")
        if not allowed:
            return _refusal(start_response, "421 Misdirected Request", "MisdirectedRequest",
                            "this service does not answer to the Host this request names; "
                            "start it with --allowed-host NAME to add a name")

        def secured(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, add_headers(list(headers)), exc_info)

        return app(environ, secured)

    return guarded


__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "LOOPBACK_NAMES", "HostPolicy", "split_host",
           "add_headers", "guard"]
