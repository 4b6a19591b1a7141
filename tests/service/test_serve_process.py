"""``ushas serve`` as users run it: its own process, an access-log line per request on stderr,
SIGTERM answered by finishing and exiting 0; argument errors are one line, exit 2."""
from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import urllib.request

from app.uistore import build

WAIT = 60


def test_serve_logs_requests_and_stops_on_sigterm(store_uri: str) -> None:
    build(store_uri)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # the spelling: ushas serve --uri --project (the global --uri before the command works too)
    proc = subprocess.Popen([sys.executable, "-m", "ushas_catalog", "serve", "--uri", store_uri, "--project",
                             "default", "--port", "0", "--namespace", "spark://h:10000=shop"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout=WAIT), "ushas serve did not announce its URL"
        line = proc.stdout.readline()
        assert f"store {store_uri}, project default" in line
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found is not None and "api/v1/lineage" in line, line
        with urllib.request.urlopen(f"http://127.0.0.1:{found.group(1)}/api/v1/catalogs", timeout=WAIT) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0 and "Traceback" not in err
        assert re.search(r'127\.0\.0\.1 "GET /api/v1/catalogs" 200 \d+ [\d.]+s', err), err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)


def test_bad_arguments_are_one_line(store_uri: str) -> None:
    build(store_uri)
    for args, words in ((["--namespace", "nope"], "--namespace takes NAMESPACE=CATALOG"),
                        (["--port", "70000"], "--port must be 0..65535")):
        done = subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", store_uri, "serve", *args],
                              capture_output=True, text=True, timeout=WAIT)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1
