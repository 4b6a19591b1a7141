"""The web service as a client on the network meets it: ``ushas ui`` started as a user starts it
(a subprocess on a free port), then silent and slow clients, foreign ``Host`` headers, the
security headers on every kind of answer, no file-system path in any answer, and SIGTERM."""
from __future__ import annotations

import http.client
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from ushas_catalog.ui.security import HostPolicy, split_host
from ushas_catalog.ui.server import THREADS

from .uistore import build

STATIC = Path(__file__).parents[2] / "python" / "ushas_catalog" / "ui" / "static"
#: every bound on waiting in these tests: generous, a stuck server fails them rather than hangs them
WAIT = 20


@dataclass
class Running:
    proc: subprocess.Popen[str]
    port: int
    store_path: str

    def request(self, path: str, host: str | None = None, method: str = "GET") -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{self.port}")
        conn.endheaders()
        response = conn.getresponse()
        response.body = response.read()  # type: ignore[attr-defined]
        conn.close()
        return response

    def stop(self) -> tuple[int, str]:
        """SIGTERM, then the exit code and what it wrote on stderr."""
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=WAIT)
        return self.proc.returncode, err


def start(uri: str, *extra: str) -> Running:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", uri, "ui", "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout=60):
        proc.kill()
        pytest.fail(f"ushas ui did not announce its URL: {proc.communicate(timeout=WAIT)}")
    line = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if found is None:
        proc.kill()
        pytest.fail(f"unexpected first line {line!r}: {proc.communicate(timeout=WAIT)}")
    return Running(proc, int(found.group(1)), uri.removeprefix("sqlite:///"))


@pytest.fixture
def service(store_uri: str) -> Iterator[Running]:
    build(store_uri)
    running = start(store_uri, "--allowed-host", "catalog.example.com", "--allowed-host", "proxy.internal:8443")
    yield running
    if running.proc.poll() is None:
        running.proc.kill()
        running.proc.communicate(timeout=WAIT)


def test_silent_and_slow_clients_block_nobody(service: Running) -> None:
    silent = []
    for _ in range(THREADS + 4):  # more than the worker threads: none of them may be held
        s = socket.create_connection(("127.0.0.1", service.port), timeout=WAIT)
        silent.append(s)
    slow = socket.create_connection(("127.0.0.1", service.port), timeout=WAIT)
    slow.sendall(b"GET /api/v1/catalogs HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a request that never ends
    try:
        for _ in range(3):
            r = service.request("/api/v1/catalogs")
            assert r.status == 200 and [c["name"] for c in json.loads(r.body)["items"]] == ["shop"]
        assert service.request("/").status == 200
    finally:
        for s in [*silent, slow]:
            s.close()
    code, err = service.stop()
    assert code == 0, err
    assert '"GET /api/v1/catalogs" 200' in err  # the access log


@pytest.mark.parametrize("host, status", [
    ("evil.example", 421),
    ("evil.example:{port}", 421),
    ("127.0.0.1:1", 421),  # the right address, another port
    ("127.0.0.1.evil.example:{port}", 421),
    ("proxy.internal:9999", 421),  # allowed only on port 8443
    ("", 400),
    ("a b:{port}", 400),
    ("127.0.0.1:{port}", 200),
    ("localhost:{port}", 200),
    ("LOCALHOST:{port}", 200),
    ("[::1]:{port}", 200),
    ("catalog.example.com", 200),  # --allowed-host NAME: any port (behind a proxy)
    ("catalog.example.com:443", 200),
    ("proxy.internal:8443", 200),
])
def test_only_its_own_host_names_are_answered(service: Running, host: str, status: int) -> None:
    r = service.request("/api/v1/catalogs", host=host.format(port=service.port))
    assert r.status == status
    if status != 200:
        error = json.loads(r.body)["error"]
        assert error["type"] in ("MisdirectedRequest", "BadRequest") and "shop" not in r.body.decode()


def test_security_headers_on_every_answer(service: Running) -> None:
    answers = {
        "page": service.request("/"),
        "script": service.request("/static/app.js"),
        "json": service.request("/api/v1/catalogs"),
        "json error": service.request("/api/v1/catalogs/shop/databases/sales/tables/nope"),
        "retired": service.request("/api/catalogs"),
        "unknown page": service.request("/no/such/page"),
        "foreign host": service.request("/", host="evil.example"),
    }
    assert answers["page"].getheader("Content-Type", "").startswith("text/html")
    assert answers["retired"].status == 410
    assert answers["json error"].status == 404 and answers["unknown page"].status == 404
    for what, r in answers.items():
        csp = r.getheader("Content-Security-Policy") or ""
        directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";") if d.strip())
        assert directives.get("script-src") == "'self'", what
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, what
        assert directives.get("frame-ancestors") == "'none'" and directives.get("default-src") == "'none'", what
        assert r.getheader("X-Frame-Options") == "DENY", what
        assert r.getheader("X-Content-Type-Options") == "nosniff", what
        assert r.getheader("Referrer-Policy") == "no-referrer", what


def test_the_page_works_under_its_policy() -> None:
    """No inline script, event-handler attribute or inline style the policy would block; stored
    text reaches the page as text, never as markup."""
    html = (STATIC / "index.html").read_text()
    sources = re.findall(r'<script src="/static/([a-z./-]+)"></script>', html)
    assert len(re.findall(r"<script\b[^>]*>", html)) == len(sources) > 1  # every script a file of /static
    assert sources[0] == "vendor/dagre.min.js" and sources[-1] == "app.js"
    assert not re.search(r"\son[a-z]+\s*=", html) and not re.search(r"\sstyle\s*=", html)
    for name in sources:
        script = (STATIC / name).read_text()
        assert not re.search(r"\beval\(|new Function|document\.write", script), name
        if not name.startswith("vendor/"):  # the UI's own code builds every node from text
            assert not re.search(r"\bstyle\s*:", script), name  # {style: ...}: a blocked style attribute
            assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|setHTML|DOMParser", script), name


def test_no_answer_shows_the_store_path(service: Running) -> None:
    info = service.request("/api/v1/info")
    assert json.loads(info.body)["store"] == "sqlite"
    directory = str(Path(service.store_path).parent)
    for path in ("/api/v1/info", "/api/v1/catalogs", "/api/v1/catalogs/shop/databases/sales/tables/raw",
                 "/api/v1/search?q=tag:pii", "/api/v1/catalogs/shop/databases/sales/tables/nope",
                 "/api/v1/lineage/graph?node=no.such.table", "/api/v1/lineage/datasets", "/api/catalogs", "/"):
        body = service.request(path).body.decode()
        assert directory not in body and "ushas.db" not in body, path


def test_sigterm_lets_the_service_finish_and_exit(service: Running) -> None:
    assert service.request("/api/v1/catalogs").status == 200
    code, err = service.stop()
    assert code == 0 and "Traceback" not in err
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", service.port), timeout=WAIT).close()


def test_malformed_allowed_host_is_one_line_exit_2(store_uri: str) -> None:
    done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", store_uri, "ui", "--port", "0",
                           "--allowed-host", "http://x/"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("ushas: InvalidArgument: --allowed-host")
    assert len(done.stderr.strip().splitlines()) == 1


def test_host_policy_of_a_wildcard_bind() -> None:
    policy = HostPolicy.for_bind("0.0.0.0", 8765)
    assert policy.allows("localhost:8765") and policy.allows(f"{socket.gethostname()}:8765")
    assert not policy.allows("evil.example:8765") and not policy.allows("localhost:8766")
    v6 = HostPolicy.for_bind("::1", 80)
    assert v6.allows("[::1]") and v6.allows("[::1]:80") and v6.allows("localhost") and not v6.allows("[::2]")
    assert split_host("[::1]:8080") == ("[::1]", 8080) and split_host("Name.Example") == ("Name.Example", None)
    for bad in ("a/b", "x:0", "x:99999", "[::1", "u@h"):
        with pytest.raises(ValueError):
            split_host(bad)


def test_service_on_a_thread_stops_when_asked(store_uri: str) -> None:
    """How the browser tests run it: :class:`Service` on a thread, :meth:`Service.stop` from another."""
    import threading

    from ushas_catalog.ui.server import Service

    build(store_uri)
    service = Service(store_uri, "default", host="127.0.0.1", port=0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    running = Running(None, service.port, "")  # type: ignore[arg-type]
    assert json.loads(running.request("/api/v1/catalogs").body)["items"][0]["name"] == "shop"
    assert running.request("/", host="evil.example").status == 421
    service.stop()
    thread.join(WAIT)
    assert not thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", service.port), timeout=WAIT).close()


def test_errors_do_not_show_the_store_path(tmp_path: Path) -> None:
    """A store that cannot be opened: the error says so without naming the file."""
    from ushas_catalog.service.api import register_api
    from ushas_catalog.ui.app import create_app

    bogus = tmp_path / "secret-dir" / "not-a-store.db"
    bogus.parent.mkdir()
    bogus.write_bytes(b"this is not a database " * 200)
    app = create_app(f"sqlite:///{bogus}", "default")
    register_api(app, app.config["USHAS"])
    try:
        r = app.test_client().get("/api/v1/catalogs")
        assert r.status_code in (400, 404, 503) and r.json["error"]["type"]
        assert "secret-dir" not in r.get_data(as_text=True) and "<store>" in r.json["error"]["message"]
        assert r.headers["X-Content-Type-Options"] == "nosniff"  # the headers come with the app itself too
    finally:
        app.config["USHAS"].close()
