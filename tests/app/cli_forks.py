"""A warm ``ushas`` for tests that run many CLI commands through bash (tests/app/test_doc_tours.py).

Each ``ushas`` command spends most of its time importing the package. :func:`serve` starts one process
that imports the CLI once and forks a child per command: the ``ushas`` shim it writes is a small
client that hands the server its argv, working directory, environment and its stdin / stdout / stderr
(file descriptors over a Unix socket), then exits with the command's status. The command runs exactly as
``python -m ushas_catalog`` would (same ``main``, same streams), in a fresh fork, so no state carries from
one command to the next.

``python3 cli_forks.py SOCKET`` is the server; it stops when its socket file is removed or on SIGTERM.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

#: the client: plain stdlib, started without site-packages (``-S``): a few milliseconds
CLIENT = r'''
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(SOCKET)
payload = json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
socket.send_fds(s, [len(payload).to_bytes(4, "big")], [0, 1, 2])
s.sendall(payload)
reply = b""
while len(reply) < 4:
    chunk = s.recv(4 - len(reply))
    if not chunk:
        sys.exit("ushas: the warm CLI server went away")
    reply += chunk
sys.exit(int.from_bytes(reply, "big", signed=True))
'''


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _child(conn: socket.socket, fds: list[int], request: dict) -> None:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["ushas", *request["argv"]]
    from ushas_catalog.cli import main

    try:
        code = main(request["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # as the interpreter would: the traceback, status 1
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    conn.sendall(int(code or 0).to_bytes(4, "big", signed=True))
    os._exit(0)


#: what the commands import (lazily, each on its own): imported once, before the first fork
WARM = ("ushas_catalog.metastore", "ushas_catalog.check", "ushas_catalog.remote.http", "lineage.cli_capture",
        "lineage.query", "ushas_catalog.catalog.row_policies")


def run_server(path: str) -> None:
    import importlib
    import pkgutil

    import ushas_catalog.cli

    for info in pkgutil.iter_modules(ushas_catalog.cli.__path__, "ushas_catalog.cli."):
        importlib.import_module(info.name)
    for name in WARM:
        importlib.import_module(name)

    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(8)
    server.settimeout(1.0)
    while os.path.exists(path):
        try:
            conn, _ = server.accept()
        except TimeoutError:
            for_reaping = True
            while for_reaping:
                try:
                    for_reaping = os.waitpid(-1, os.WNOHANG)[0] != 0
                except ChildProcessError:
                    for_reaping = False
            continue
        conn.settimeout(None)
        head, fds, _, _ = socket.recv_fds(conn, 4, 3)
        head += _read(conn, 4 - len(head))
        request = json.loads(_read(conn, int.from_bytes(head, "big")))
        if os.fork() == 0:
            server.close()
            _child(conn, fds, request)
        for fd in fds:
            os.close(fd)
        conn.close()


def serve(bin_dir: Path, env: dict[str, str], timeout: float = 60.0) -> subprocess.Popen:
    """Start the server (the caller terminates it) and write ``bin_dir/ushas``, its client."""
    path = str(bin_dir / "ushas.sock")
    Path(path).unlink(missing_ok=True)
    process = subprocess.Popen([sys.executable, __file__, path], env=env)
    client = bin_dir / "ushas"
    client.write_text(f"#!{sys.executable} -S\nSOCKET = {path!r}\n{CLIENT}")
    client.chmod(0o755)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the warm CLI server did not start (status {process.poll()})")
        time.sleep(0.05)
    return process


if __name__ == "__main__":
    run_server(sys.argv[1])
