"""The catalog ops' lane (:func:`ushas_catalog.service.catalog_ops_api.lane`): remote mode's calls are answered
without Flask's dispatch, and nothing around them changes. Tried as a hostile client would, on one live
service: the Host guard, the security headers and the access log still apply; a missing, malformed,
unknown or revoked token is refused (a revocation on the very next call of the same keep-alive
connection); an escaped op name takes the general route and gets the same answer; an oversized or
malformed request is a 4xx; silent and slow connections block no op call."""
from __future__ import annotations

import http.client
import json
import logging
import time
import socket
from typing import Any

import pytest

from ushas_catalog.metastore import Metastore
from ushas_catalog.service.catalog_ops_api import op_of
from ushas_catalog.service.tokens import TokenStore
from ushas_catalog.ui.security import SECURITY_HEADERS
from ushas_catalog.ui.server import MAX_BODY, THREADS

from .live import WAIT, running

OPS = "/api/v1/catalog/ops/"
CTX = {"catalog": "main", "spark_catalog": "rem", "branch": "main"}


def _answer(conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    conn.request("POST", path, body, headers)
    r = conn.getresponse()
    data = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, json.loads(data) if data[:1] == b"{" else data


def test_the_lane_keeps_every_protection(store_uri: str, caplog: pytest.LogCaptureFixture) -> None:
    ms = Metastore.open(store_uri)
    ms.grant("OWN", "project", "user:admin")
    ms.create_catalog("main")
    ms.create_database("main.db")
    ms.create_table("main.db.t", "id INT, dt STRING", partition_by=["dt"])
    tokens = TokenStore(ms)
    admin = tokens.create("write", "admin")[1]
    bob_info, bob = tokens.create("write", "bob")
    reader = tokens.create("read", "reader")[1]
    ms.close()
    caplog.set_level(logging.INFO, logger="ushas.ui.access")
    for live in running(store_uri):
        host = f"127.0.0.1:{live.service.port}"
        conn = http.client.HTTPConnection("127.0.0.1", live.service.port, timeout=WAIT)
        load = json.dumps({"ctx": CTX, "namespace": ["db"], "name": "t"}).encode()

        def call(token: str | None, path: str = OPS + "load_table", body: bytes = load,
                 **headers: str) -> tuple[int, dict[str, str], Any]:
            h = {"Host": host, "Content-Type": "application/json", **headers}
            if token is not None:
                h["Authorization"] = token if " " in token else f"Bearer {token}"
            return _answer(conn, path, body, h)

        # the answer, with the security headers and the access log line of any other answer
        status, headers, answer = call(admin)
        assert status == 200 and answer["kind"] == "table" and answer["table"]["partition_by"] == ["dt"]
        assert {k.lower(): v for k, v in SECURITY_HEADERS.items()}.items() <= headers.items()
        assert headers["cache-control"] == "no-store" and headers["content-type"] == "application/json"
        # an escaped op name goes the general (Flask) way: the same answer
        assert call(admin, OPS + "load%5Ftable")[::2] == (200, answer)
        # the Host guard is in front of the lane
        assert call(admin, Host="evil.example")[0] == 421
        # who calls: the token, never the body; a reader runs reads only, then its grants decide
        status, _, answer = call(admin, OPS + "create_namespace", json.dumps(
            {"ctx": {**CTX, "user": "admin"}, "namespace": ["x"]}).encode())
        assert status == 200
        status, _, answer = call(bob, OPS + "create_namespace", json.dumps(
            {"ctx": {**CTX, "user": "admin", "authorization": False}, "namespace": ["y"]}).encode())
        assert (status, answer["error"]["type"]) == (403, "PermissionDenied") and "bob" in answer["error"]["message"]
        assert call(reader, OPS + "create_namespace", load)[0] == 403
        assert call(reader)[2]["error"]["type"] == "PermissionDenied"
        # refused tokens, on the lane and on the general route alike
        for path in (OPS + "load_table", OPS + "load%5Ftable"):
            for token in (None, "Basic YWRtaW46eA==", "Bearer ", "ushas_abc_notavalidsecret", admin + "x"):
                status, _, answer = call(token, path)
                assert (status, answer["error"]["type"]) == (401, "Unauthorized"), (path, token)
        # malformed requests: 4xx, the store untouched
        status, _, answer = call(admin, body=b"{not json")
        assert (status, answer["error"]["type"], answer["error"]["message"]) == (
            400, "InvalidArgument", "the request body is not JSON")
        assert call(admin, body=b"[" * 100_000 + b"]" * 100_000)[0] == 400
        assert call(admin, OPS + "no_such_op")[0] == 400
        assert call(admin, OPS + "load_table?x=1")[0] == 200
        # a revoked token is refused on its next call, on the same keep-alive connection
        assert call(bob)[2]["error"]["type"] == "PermissionDenied"  # known, without a grant on the table
        ms = Metastore.open(store_uri, create=False)
        TokenStore(ms).revoke(bob_info.id)
        ms.close()
        assert call(bob)[2]["error"]["type"] == "Unauthorized"
        conn.close()
        # the access log has the lane's answers (written once each answer has been sent)
        assert any('"POST /api/v1/catalog/ops/load_table" 200' in r.getMessage() for r in caplog.records)

        # an oversized body is refused before it is read; silent and slow clients block no op call
        big = socket.create_connection(("127.0.0.1", live.service.port), timeout=WAIT)
        big.sendall(f"POST {OPS}load_table HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {admin}\r\n"
                    f"Content-Length: {MAX_BODY + 1}\r\n\r\n".encode())
        assert big.recv(200).startswith(b"HTTP/1.1 413")
        big.close()
        held = [socket.create_connection(("127.0.0.1", live.service.port), timeout=WAIT) for _ in range(THREADS + 4)]
        held[0].sendall(f"POST {OPS}load_table HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {admin}\r\n"
                        f"Content-Length: {len(load)}\r\n\r\n{{".encode())  # a body that never ends
        held[1].sendall(f"POST {OPS}load_table HTTP/1.1\r\nHost: {host}\r\n".encode())  # headers that never end
        try:
            conn = http.client.HTTPConnection("127.0.0.1", live.service.port, timeout=WAIT)
            for _ in range(3):
                assert call(admin)[0] == 200
            conn.close()
        finally:
            for s in held:
                s.close()


@pytest.mark.parametrize("environ, op", [
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS + "load_table", "REQUEST_URI": OPS + "load_table?a=b"}, "load_table"),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS + "load_table"}, "load_table"),  # no raw URI: the path
    ({"REQUEST_METHOD": "GET", "PATH_INFO": OPS + "load_table"}, None),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS + "load_table", "SCRIPT_NAME": "/mounted"}, None),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS + "a/b", "REQUEST_URI": OPS + "a%2Fb"}, None),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS + "a/b"}, None),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS}, None),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": OPS + "x", "REQUEST_URI": "http://h" + OPS + "x"}, None),
    ({"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/catalog/opsx"}, None),
])
def test_which_requests_take_the_lane(environ: dict[str, str], op: str | None) -> None:
    assert op_of(environ) == op


class _Raw:
    """A client connection that sends bytes as they are and reads one answer (a Content-Length body) at a
    time."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.file = self.sock.makefile("rb")

    def __call__(self, data: bytes) -> bytes:
        """Send ``data``, then read one answer: its status line, headers and body."""
        self.sock.sendall(data)
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = self.file.readline()
            assert line, head
            head += line
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        return head + self.file.read(length)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def test_op_connections_on_their_own_threads(store_uri: str) -> None:
    """Keep-alive op connections are answered on a thread each, up to the limit; anything else on such a
    connection (another path, a chunked body, a malformed request) makes it waitress's; silent connections
    that fill the threads block nobody; stopping ends idle connections at once."""
    ms = Metastore.open(store_uri)
    ms.grant("OWN", "project", "user:admin")
    ms.create_catalog("main")
    ms.create_database("main.db")
    ms.create_table("main.db.t", "id INT", partition_by=[])
    admin = TokenStore(ms).create("write", "admin")[1]
    ms.close()
    for live in running(store_uri, op_connections=2):
        port, lane = live.service.port, live.service.connections
        assert lane is not None
        load = json.dumps({"ctx": CTX, "namespace": ["db"], "name": "t"}).encode()
        request = (f"POST {OPS}load_table HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {admin}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(load)}\r\n\r\n").encode() + load
        info = f"GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        # op requests, one at a time and pipelined, on the connection's thread; then /info: waitress's
        raw = _Raw(port)
        assert raw(request).startswith(b"HTTP/1.1 200")
        served = lane.served
        raw.sock.sendall(request + request[:10])
        assert b'"kind":"table"' in raw(request[10:])
        assert b'"kind":"table"' in raw(b"")
        assert lane.served == served + 2 and lane.handed == 0
        answer = raw(info)
        assert answer.startswith(b"HTTP/1.1 200") and b'"api":"v1"' in answer and lane.handed == 1
        assert raw(request).startswith(b"HTTP/1.1 200") and lane.served == served + 2  # waitress's now
        raw.close()
        # a large body (past waitress's in-memory buffer: a temporary file) on the connection's thread
        padded = json.dumps({"ctx": CTX, "namespace": ["db"], "name": "t", "pad": "x" * 2_000_000}).encode()
        raw = _Raw(port)
        assert b'"kind":"table"' in raw(request.split(b"Content-Length")[0] +
                                        f"Content-Length: {len(padded)}\r\n\r\n".encode() + padded)
        raw.close()
        # a chunked op request, a malformed one: waitress answers them as it would have
        raw = _Raw(port)
        chunked = request.split(b"Content-Length")[0] + b"Transfer-Encoding: chunked\r\n\r\n" + \
            f"{len(load):x}\r\n".encode() + load + b"\r\n0\r\n\r\n"
        assert b'"kind":"table"' in raw(chunked)
        raw.close()
        raw = _Raw(port)
        assert raw(f"POST {OPS}load_table HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n".encode()
                   ).startswith(b"HTTP/1.1 400")
        raw.close()
        # silent connections fill the threads: the next connections are waitress's and answered
        silent = [socket.create_connection(("127.0.0.1", port), timeout=WAIT) for _ in range(2)]
        try:
            for _ in range(50):  # the accepts are the event loop's: wait until both threads hold one
                if len(lane.active) == 2:
                    break
                time.sleep(0.05)
            assert len(lane.active) == 2
            served = lane.served
            raw = _Raw(port)
            for _ in range(2):
                assert raw(request).startswith(b"HTTP/1.1 200")
            assert lane.served == served
            raw.close()
        finally:
            began = time.monotonic()
            live.stop()  # the silent connections are closed, not waited for
            assert time.monotonic() - began < 5
            assert all(s.recv(10) == b"" for s in silent)
            for s in silent:
                s.close()
