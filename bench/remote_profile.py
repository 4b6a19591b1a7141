"""Where a remote ``loadTable`` spends its time, stage by stage, in one run (issue 32's last goal: remote
``loadTable`` ≤ 1.5× embedded).

    python bench/remote_profile.py [--rounds N] [--jvm] [--spark]

One sqlite store with one table, a ``ushas serve`` process on loopback over it, and the request the shim
sends for a ``loadTable`` whose answer it has cached (``known``: what Spark's repeated lookups send; the
answer is ``{"unchanged": true}``). Measured alternately, round by round (bench/remote.py's
``medians_ms``), from the inside out:

- ``dispatch``: the op's handler in this process (:func:`ushas_catalog.spark.bridge.dispatch` of the
  request as the service rewrites it: one store transaction, the privilege checks);
- ``token``: the service's token check (one point read, its own transaction);
- ``wsgi``: the service's whole WSGI application in this process (the access log, the Host guard, the ops
  lane, the token check, the op, the JSON answer), without an HTTP server;
- ``http``: a keep-alive HTTP round trip from this process to the ``ushas serve`` process (the HTTP server,
  TCP on loopback, the client);
- ``http, waitress only``: the same to a second service over the same store whose connections are all
  waitress's (no op connection threads: ``Service(op_connections=0)``);
- ``/info``: the same round trip for the smallest answer the service has (no token, no store).

With ``--jvm``: the same op from a JVM, sent the way the shim's ``RemoteTransport`` sends it
(``bench/java/OpsLoop.java``), to both services alternately. With ``--spark``: one local[2] session with the embedded catalog and a remote one (the shim's direct
transport), the JVM catalog's ``loadTable`` called from Python as bench/remote.py does: ``py4j`` (a
Py4J call of the remote catalog's ``name()``: the floor both modes pay), embedded and remote
``loadTable``, and, from the shim's own counters (``transportStatus()``), the remote calls' time in
``RemoteTransport.call`` and in its HTTP exchange. Prints medians and each stage's share (medians of separate stages do not add up exactly: each is measured on its own).
"""
from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from remote import free_port, medians_ms  # noqa: E402  (bench/remote.py)


#: a service whose connections are all waitress's (``op_connections=0``): argv = uri, port
PLAIN_SERVICE = ("import sys; from ushas_catalog.ui.server import Service; "
                 "Service(sys.argv[1], 'default', port=int(sys.argv[2]), hooks=False, op_connections=0).run()")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--spark", action="store_true", help="also the JVM catalog's loadTable, embedded and remote")
    ap.add_argument("--jvm", action="store_true", help="also the op from a JVM the way the shim sends it "
                                                         "(bench/java/OpsLoop.java), to both services")
    args = ap.parse_args()

    import logging

    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.catalog_ops_api import remote_request
    from ushas_catalog.service.routing import json_text
    from ushas_catalog.service.tokens import TokenStore
    from ushas_catalog.spark import bridge
    from ushas_catalog.ui.server import Service

    root = Path(tempfile.mkdtemp(prefix="ushas-bench-rprof-"))
    uri = f"sqlite:///{root / 'ushas.db'}"
    proc = plain = None
    try:
        ms = Metastore.open(uri)
        ms.grant("OWN", "project", "user:admin")
        ms.create_catalog("main")
        ms.create_database("main.db")
        ms.create_table("main.db.big", "id INT, dt STRING", partition_by=["dt"])
        ms.add_partitions("main.db.big", [{"dt": f"d{i:07d}"} for i in range(1_000)])
        token = TokenStore(ms).create("write", "admin")[1]
        ms.close()

        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "python")}
        port, plain_port = free_port(), free_port()
        log = open(root / "serve.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "--uri", uri, "serve", "--port", str(port),
                                 "--no-hooks"], stdout=log, stderr=subprocess.STDOUT, env=env)
        # the same service with every connection waitress's (no op connection threads), for the comparison
        plain = subprocess.Popen([sys.executable, "-c", PLAIN_SERVICE, uri, str(plain_port)], stdout=log,
                                 stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        for base in (url, f"http://127.0.0.1:{plain_port}"):
            for _ in range(300):
                try:
                    urllib.request.urlopen(base + "/api/v1/info", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "X-Ushas-Timeout-Ms": "60000"}
        path = "/api/v1/catalog/ops/load_table"
        ctx = {"catalog": "main", "spark_catalog": "rem", "branch": "main"}

        plain_conn = http.client.HTTPConnection("127.0.0.1", plain_port, timeout=60)

        def post(body: bytes, via: http.client.HTTPConnection = conn) -> bytes:
            via.request("POST", path, body, headers)
            r = via.getresponse()
            return r.read()

        first = json.loads(post(json.dumps({"ctx": ctx, "namespace": ["db"], "name": "big"}).encode()))
        known = json.dumps({"ctx": ctx, "namespace": ["db"], "name": "big",
                            "known": {"id": first["id"], "version": first["version"]}}).encode()
        assert json.loads(post(known)) == {"unchanged": True}, post(known)

        # the same service in this process, without its HTTP server
        logging.getLogger("ushas.ui.access").disabled = True  # as serve's log to a file: not the terminal
        local = Service(uri, "default", port=0, hooks=False)
        app = local.server.application
        access = local.app.config["USHAS"]
        from ushas_catalog.service.auth import AccessControl

        checks = AccessControl(access, require_read_token=False)

        def wsgi(body: bytes = known) -> bytes:
            environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "REQUEST_URI": path, "SCRIPT_NAME": "",
                       "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": str(local.port),
                       "HTTP_HOST": f"127.0.0.1:{local.port}", "SERVER_PROTOCOL": "HTTP/1.1",
                       "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
                       "CONTENT_TYPE": "application/json", "REMOTE_ADDR": "127.0.0.1",
                       "HTTP_AUTHORIZATION": f"Bearer {token}", "HTTP_X_USHAS_TIMEOUT_MS": "60000",
                       "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": True,
                       "wsgi.multiprocess": False, "wsgi.run_once": False}
            out = app(environ, lambda status, hdrs, exc_info=None: None)
            try:
                return b"".join(out)
            finally:
                getattr(out, "close", lambda: None)()

        assert json.loads(wsgi()) == {"unchanged": True}
        parsed = json.loads(known)

        def dispatch() -> Any:
            return bridge.dispatch("load_table", remote_request(parsed, "admin", uri, "default", 60_000))

        other = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # not an op: a waitress connection

        def info() -> None:
            other.request("GET", "/api/v1/info")
            other.getresponse().read()

        answer = dispatch()
        stages = {
            "dispatch": dispatch,
            "token": lambda: checks.token_info(token),
            "json": lambda: json_text(answer),
            "wsgi": wsgi,
            "http": lambda: post(known),
            "http, waitress only": lambda: post(known, plain_conn),
            "/info": info,
        }
        print(f"uptime: {os.getloadavg()[0]:.1f} (1 min load)", flush=True)
        med = medians_ms(lambda m: stages[m](), tuple(stages), args.rounds, warm=200)
        print(f"\n{'stage (service side, loadTable known)':<44}{'median ms':>10}{'of http':>9}")
        for name, value in med.items():
            print(f"{name:<44}{value:>10.3f}{value / med['http']:>8.0%}")
        print(f"{'HTTP server, TCP, client (http - wsgi)':<44}{med['http'] - med['wsgi']:>10.3f}"
              f"{(med['http'] - med['wsgi']) / med['http']:>8.0%}")
        conn.close()
        other.close()
        plain_conn.close()
        local.close()

        if args.jvm:
            jvm_loop(root, [url, f"http://127.0.0.1:{plain_port}"], token, known.decode(), args.rounds)

        if args.spark:
            spark_stages(url, token, root, max(300, args.rounds // 4))
        return 0
    finally:
        for p in (proc, plain):
            if p is not None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(root, ignore_errors=True)


def jvm_loop(root: Path, urls: list[str], token: str, body: str, rounds: int) -> None:
    """The op sent from a JVM as the shim's RemoteTransport sends it (bench/java/OpsLoop.java), to the
    service and to its waitress-only twin, alternately."""
    classes = root / "classes"
    classes.mkdir()
    source = Path(__file__).resolve().parent / "java" / "OpsLoop.java"
    subprocess.run(["javac", "-nowarn", "-d", str(classes), str(source)], check=True, timeout=300)
    out = subprocess.run(["java", "-cp", str(classes), "OpsLoop", ",".join(u + "/api/v1/catalog/ops/load_table"
                                                                          for u in urls), token, body, str(rounds)],
                         check=True, timeout=600, capture_output=True, text=True).stdout.split()
    print(f"\n{'from a JVM':<44}{'HttpURLConnection ms':>22}{'plain socket ms':>18}")
    for label, conn, raw in zip(("http", "http, waitress only"), out[1::3], out[2::3]):
        print(f"{label:<44}{float(conn):>22.3f}{float(raw):>18.3f}")


def spark_stages(url: str, token: str, root: Path, rounds: int) -> None:
    """The JVM catalog's ``loadTable``, embedded and remote, and the remote one's time in the shim's
    transport."""
    from _spark import ushas_session

    conf = {"spark.sql.catalog.ushas.catalog": "main"}
    conf.update({f"spark.sql.catalog.rem{key}": value for key, value in {
        "": "io.ushas.spark.UshasCatalog", ".uri": url, ".token": token, ".catalog": "main",
        ".warehouse": str(root / "warehouse")}.items()})
    spark = ushas_session("bench-remote-profile", root, conf=conf)
    try:
        manager = spark._jsparkSession.sessionState().catalogManager()
        jcat = {"embedded": manager.catalog("ushas"), "remote": manager.catalog("rem")}
        namespace = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, 1)
        namespace[0] = "db"
        ident = spark._jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, "big")
        plugin = jcat["remote"]

        def call(m: str) -> Any:
            if m == "py4j":
                return plugin.name()
            return jcat[m].loadTable(ident)

        modes = ("py4j", "embedded", "remote")
        for _ in range(300):
            for m in modes:
                call(m)
        times: dict[str, list[float]] = {m: [] for m in (*modes, "call", "http")}
        for _ in range(rounds):  # alternately, as medians_ms; the transport's own times read around each call
            for m in modes:
                before = json.loads(plugin.transportStatus()) if m == "remote" else None
                t0 = time.perf_counter()
                call(m)
                times[m].append((time.perf_counter() - t0) * 1000)
                if before is not None:
                    after = json.loads(plugin.transportStatus())
                    assert after["calls"] == before["calls"] + 1, (before, after)
                    times["call"].append(after["call_ms"] - before["call_ms"])
                    times["http"].append(after["http_ms"] - before["http_ms"])
        med = {m: statistics.median(t) for m, t in times.items()}
        call_ms, http_ms = med["call"], med["http"]
        print(f"\n{'through Spark (JVM catalog loadTable, from Python)':<52}{'ms':>8}")
        print(f"{'py4j floor: a Py4J call of name()':<52}{med['py4j']:>8.3f}")
        print(f"{'embedded loadTable':<52}{med['embedded']:>8.3f}")
        print(f"{'remote loadTable':<52}{med['remote']:>8.3f}   {med['remote'] / med['embedded']:.2f}x embedded")
        print(f"{'  of which RemoteTransport.call (median)':<52}{call_ms:>8.3f}")
        print(f"{'    of which its HTTP exchange (median)':<52}{http_ms:>8.3f}")
        print(f"{'  the shim around it (remote - py4j - call)':<52}{med['remote'] - med['py4j'] - call_ms:>8.3f}")
        print(f"{'embedded minus the py4j floor':<52}{med['embedded'] - med['py4j']:>8.3f}")
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
