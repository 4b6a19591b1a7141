"""A local PostgreSQL server in a directory, for trying the catalog and for the tests.

    python -m ushas_catalog.pg_local [--dir DIR] [--port N] [--serve [--serve-port N]]

starts (``initdb`` the first time) a PostgreSQL server whose data lives in DIR (default
``~/.ushas/postgres``) on a free port (or ``--port``), creates the database ``ushas_test`` and the
store in it (``ushas init``), prints the store URI, and with ``--serve`` runs ``ushas serve`` on it;
Ctrl-C stops everything (the data stays in DIR). As root the server runs as the ``postgres`` user
(``runuser``): PostgreSQL refuses to run as root. The binaries are found with ``pg_config`` or
under ``/usr/lib/postgresql/*/bin``; missing ones are a clear error.

The tests (fixture ``postgres`` in tests/conftest.py) start one throw-away server per session in a
temporary directory with ``fsync=off`` (they crash the server process, never the machine); each
test takes a fresh store: its own schema (:meth:`PgServer.fresh_uri`) or database
(:meth:`PgServer.fresh_database`). A watchdog process (:meth:`PgServer.watch`) stops such a server
and removes its directory when the process that started it dies without cleaning up (a pytest killed
with -9 or by a timeout), so no server outlives its test run.
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

TIMEOUT_S = 60
#: how often the watchdog looks for the process it guards
WATCH_INTERVAL_S = 1.0
#: the watchdog: argv = guarded pid, the server's directory, the stop command
_WATCHDOG = """
import os, shutil, subprocess, sys, time
pid, root, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
while os.path.isdir(root):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        shutil.rmtree(root, ignore_errors=True)
        break
    except PermissionError:
        pass
    time.sleep(float(os.environ.get("USHAS_PG_WATCH_S", "1")))
"""
#: a role with a password (scram-sha-256 over TCP), for the PGPASSWORD / .pgpass tests
PASSWORD_USER = "ushas_pw"
PASSWORD = "s3cret-Pw"


def bindir() -> Path:
    """PostgreSQL's server binaries (``initdb``, ``pg_ctl``); an error naming what is missing."""
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=TIMEOUT_S)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found: install PostgreSQL 15 "
                       "(Debian: apt-get install postgresql) to run the postgresql engine tests")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One server: ``start``, ``stop``, ``restart(mode)``; connect as ``postgres`` over TCP (trust)."""

    def __init__(self, root: Path | None = None, *, port: int = 0, durable: bool = False) -> None:
        self.bin = bindir()
        self.root = Path(root or tempfile.mkdtemp(prefix="ushas-pg-"))
        self.data = self.root / "data"
        self.port = port or free_port()
        self.durable = durable
        self.as_root = os.geteuid() == 0
        self.dbname = "ushas_test"
        self.user = "postgres" if self.as_root else os.environ.get("USER", "postgres")
        self._watchdog: subprocess.Popen | None = None

    # --- processes ---------------------------------------------------------------------------
    def _run(self, *args: str, check: bool = True, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
        cmd = list(args)
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr.strip() or out.stdout.strip()}")
        return out

    def init(self) -> "PgServer":
        self.root.mkdir(parents=True, exist_ok=True)
        if self.as_root:
            shutil.chown(self.root, "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust",
                  "-E", "UTF8", "--no-instructions", *(() if self.durable else ("--no-sync",)))
        conf = self.data / "postgresql.conf"
        with conf.open("a") as f:
            f.write(f"\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.root}'\n"
                    f"max_connections = 200\nmax_pred_locks_per_transaction = 256\nlogging_collector = off\n")
            if not self.durable:
                f.write("fsync = off\nfull_page_writes = off\nshared_buffers = 32MB\n")
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"local all all trust\nhost all {PASSWORD_USER} 127.0.0.1/32 scram-sha-256\n"
                       f"host all all 127.0.0.1/32 trust\n")
        return self

    def start(self) -> "PgServer":
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w",
                  "-t", str(TIMEOUT_S), "-o", f"-p {self.port}", "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", str(TIMEOUT_S), "stop",
                  check=False)

    def restart(self, mode: str = "immediate") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-m", mode,
                  "-w", "-t", str(TIMEOUT_S), "-o", f"-p {self.port}", "restart")

    def setup(self) -> "PgServer":
        """The test database and the password role (once)."""
        if self.sql("SELECT 1 FROM pg_database WHERE datname = %s", self.dbname, db="postgres"):
            return self
        self.sql(f"CREATE DATABASE {self.dbname}", db="postgres")
        if self.durable:
            return self   # a server to try the catalog on: no test role with a known password
        self.sql(f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'", db="postgres")
        self.sql(f"GRANT CREATE ON DATABASE {self.dbname} TO {PASSWORD_USER}", db="postgres")
        return self

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait(TIMEOUT_S)
            self._watchdog = None

    def watch(self, pid: int | None = None) -> "PgServer":
        """Start a watchdog that stops this server (``-m immediate``) and removes its directory once
        process ``pid`` (default: this one) is gone, unless :meth:`cleanup` ran first. It runs in its own
        session, so a signal to the test run's process group does not end it with its guard."""
        stop = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "-t", str(TIMEOUT_S), "stop"]
        if self.as_root:
            stop = ["runuser", "-u", "postgres", "--", *stop]
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(pid or os.getpid()), str(self.root), *stop],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "USHAS_PG_WATCH_S": str(WATCH_INTERVAL_S)})
        return self

    # --- SQL -------------------------------------------------------------------------------------
    def connect(self, db: str | None = None):  # type: ignore[no-untyped-def]
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user=self.user, dbname=db or self.dbname,
                               autocommit=True, connect_timeout=10)

    def sql(self, statement: str, *args: object, db: str | None = None) -> list[tuple]:
        with self.connect(db) as conn:
            cur = conn.execute(statement, args or None)
            return cur.fetchall() if cur.description else []

    # --- stores ------------------------------------------------------------------------------------
    def uri(self, schema: str | None = None, db: str | None = None, user: str | None = None, **options: str) -> str:
        query = {**({"schema": schema} if schema else {}), **options}
        q = "&".join(f"{k}={v}" for k, v in query.items())
        return f"postgresql://{user or self.user}@127.0.0.1:{self.port}/{db or self.dbname}" + (f"?{q}" if q else "")

    def fresh_uri(self, **options: str) -> str:
        """A store nobody used: a new schema name in the session's database."""
        return self.uri(schema="t_" + uuid.uuid4().hex[:16], **options)

    def fresh_database(self) -> str:
        name = "d_" + uuid.uuid4().hex[:16]
        self.sql(f"CREATE DATABASE {name}", db="postgres")
        return name

    def drop_schema(self, uri: str) -> None:
        schema = uri.split("schema=")[1].split("&")[0]
        self.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def start_server() -> PgServer:
    """A throw-away server (``fsync=off``) in a new temporary directory, watched: it stops when this
    process dies (:meth:`PgServer.watch`)."""
    server = PgServer().init()
    try:
        return server.start().watch().setup()
    except BaseException:
        server.cleanup()
        raise


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os.path
    import time

    ap = argparse.ArgumentParser(prog="python -m ushas_catalog.pg_local", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.join(os.path.expanduser("~"), ".ushas", "postgres"),
                    help="where the server's data lives (created the first time)")
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: a free one)")
    ap.add_argument("--serve", action="store_true", help="run 'ushas serve' on the store until Ctrl-C")
    ap.add_argument("--serve-port", type=int, default=8765, help="the port of 'ushas serve' (default 8765)")
    args = ap.parse_args(argv)
    server = PgServer(Path(args.dir), port=args.port, durable=True)
    if not (server.data / "PG_VERSION").exists():
        server.init()
    server.start()
    try:
        server.setup()
        uri = server.uri()
        from .kv import open_database

        open_database(uri).close()
        print(f"PostgreSQL {server.port}, data in {server.data}\nstore: {uri}\n"
              f"try:   ushas --uri '{uri}' stats", flush=True)
        if args.serve:
            subprocess.run([sys.executable, "-m", "ushas_catalog", "--uri", uri, "serve", "--port",
                            str(args.serve_port)], check=False)
        else:
            print("Ctrl-C stops the server", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not interrupt the stop
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
