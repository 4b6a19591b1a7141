"""Spark's long-running servers from pyspark's own jars, for end-to-end tests: a Spark Connect server
(``SparkConnectServer``, what ``sbin/start-connect-server.sh`` runs) and the Thrift JDBC/ODBC server
(``HiveThriftServer2``), each configured with the catalog, the lineage listener (and for Connect the
lineage plugin) by ``--conf`` only, as conf/connect-server.conf and conf/thrift-server.conf show.

Each runs in the foreground as a child of the test (its own process group), on a localhost port chosen
free at run time, bounded in time: :meth:`SparkServer.start` waits for the port (at most
``START_TIMEOUT``) and :meth:`SparkServer.stop` ends the group it started. ``tests/`` is on ``sys.path``.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from spark_processes import conf_args, spark_bin

START_TIMEOUT = 180.0
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
LISTENER = "io.ushas.spark.UshasLineageListener"
PLUGIN = "io.ushas.spark.connect.LineageRelationPlugin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing_dependency() -> str | None:
    """Why a Connect client cannot run here (a Python dependency of ``pyspark[connect]``), or None."""
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except Exception as exc:  # noqa: BLE001 - the reason is reported as the skip reason
        return f"pyspark[connect] client dependencies missing: {exc}"
    return None


@dataclass
class SparkServer:
    """One server process: its command, working directory, port and log."""

    name: str
    cmd: list[str]
    cwd: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> SparkServer:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on port {self.port} within {START_TIMEOUT} s:\n{self.tail()}")

    def tail(self, chars: int = 6000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> None:
        """Ends the server's process group (the JVM and the bridge it launched), politely first."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def server_confs(root: Path, **extra: str) -> list[str]:
    """The catalog (a sqlite store and warehouse under ``root``), the listener, Hive support on an
    embedded Derby metastore under ``root`` (the lineage case table has a Hive table), local[2]."""
    derby = root / "derby"
    derby.mkdir(parents=True, exist_ok=True)
    return ["--master", "local[2]", *conf_args(
        root / "ushas.db", root / "warehouse",
        **{"spark.sql.queryExecutionListeners": LISTENER,
           "spark.sql.catalogImplementation": "hive",
           "spark.sql.warehouse.dir": str(root / "hive-warehouse"),
           "spark.driver.extraJavaOptions": f"-Dderby.system.home={derby}",
           "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={derby / 'metastore_db'};create=true",
           "spark.default.parallelism": "2",
           "spark.pyspark.python": sys.executable, **extra})]


def connect_server(root: Path, **extra: str) -> SparkServer:
    port = free_port()
    cmd = [spark_bin("spark-submit"), "--class", CONNECT_CLASS, "--name", "ushas-connect-test",
           *server_confs(root, **{"spark.connect.extensions.relation.classes": PLUGIN,
                                  "spark.connect.grpc.binding.address": "127.0.0.1",
                                  "spark.connect.grpc.binding.port": str(port), **extra})]
    return SparkServer("Spark Connect server", cmd, root, port, root / "connect-server.log")


def thrift_server(root: Path, **extra: str) -> SparkServer:
    """The Thrift server opens JDBC sessions on its own threads, whose class loader does not see
    ``spark.jars``: the jar goes on the driver's class path too (``spark.driver.extraClassPath``)."""
    from ushas_catalog.spark.jar import jar_path

    port = free_port()
    cmd = [spark_bin("spark-submit"), "--class", THRIFT_CLASS, "--name", "ushas-thrift-test",
           *server_confs(root, **{"spark.driver.extraClassPath": str(jar_path()), **extra}),
           "--hiveconf", f"hive.server2.thrift.port={port}", "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1"]
    return SparkServer("Thrift JDBC server", cmd, root, port, root / "thrift-server.log")


def run_client(script: Path, *args: str, cwd: Path, timeout: float = 300.0,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A client process (this interpreter) running ``script``."""
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout)
