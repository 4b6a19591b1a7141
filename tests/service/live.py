"""A live ``ushas serve`` for the service tests: :class:`~ushas_catalog.ui.server.Service` on a
free port, on a thread of the test process (stopped, with a bound wait, at the end), over a
store built by tests/app/uistore.py; and a small HTTP client that keeps status, headers and body."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator

WAIT = 30


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Live:
    service: Any
    thread: threading.Thread
    uri: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.service.port}"

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                raw: bytes | None = None) -> Answer:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {**self.headers, **(headers or {})}
        if data is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=WAIT) as r:
                return Answer(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
        except urllib.error.HTTPError as e:
            return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())

    def get(self, path: str, **kw: Any) -> Answer:
        return self.request("GET", path, **kw)

    def stop(self) -> None:
        self.service.stop()
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the service did not stop"


def start(uri: str, project: str = "default", **options: Any) -> Live:
    from ushas_catalog.ui.server import Service

    service = Service(uri, project, port=0, **options)
    thread = threading.Thread(target=service.run, name="ushas-serve-test", daemon=True)
    thread.start()
    return Live(service, thread, uri)


def running(uri: str, **options: Any) -> Iterator[Live]:
    live = start(uri, **options)
    try:
        yield live
    finally:
        live.stop()


def token(uri: str, access: str) -> str:
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.tokens import TokenStore

    ms = Metastore.open(uri, create=False)
    try:
        return TokenStore(ms).create(access, f"test {access}")[1]
    finally:
        ms.close()
