"""A real Hive metastore service for the tests: ``org.apache.hadoop.hive.metastore.HiveMetaStore``
from pyspark's own jars (Hive 2.3), in a subprocess, on a Derby database in a temp dir.

What it needs on JDK 17 and with pyspark's jars:

- the ``--add-opens`` flags Spark's launcher gives its own JVMs (``JavaModuleOptions``);
- ``hive.async.log.enabled=false``: otherwise Hive's log setup selects log4j's async context
  selector, whose LMAX disruptor is not among pyspark's jars (``NoClassDefFoundError:
  com/lmax/disruptor/EventTranslatorVararg`` at start);
- ``datanucleus.schema.autoCreateAll=true`` and ``hive.metastore.schema.verification=false``:
  the Derby schema is created on first use (pyspark has no schematool).

The configuration is a ``hive-site.xml`` in a directory put first on the classpath.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

#: the module flags of Spark's launcher (org.apache.spark.launcher.JavaModuleOptions), for JDK 17
JAVA_MODULE_OPTIONS = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs",
        "sun.security.action", "sun.util.calendar")),
)


def pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def java_binary() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hive_site(properties: dict[str, str]) -> str:
    body = "\n".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
                     for k, v in properties.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}\n</configuration>\n'


@dataclass
class MetastoreService:
    process: subprocess.Popen[bytes]
    port: int
    root: Path
    log: Path

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("at "))[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_metastore(root: Path, *, deadline_seconds: float = 600, database: dict[str, str] | None = None,
                    classpath: tuple[Path, ...] = (), heap: str = "512m") -> MetastoreService:
    """Start the service and wait until it accepts connections. Raises RuntimeError with the
    service's log when it exits or never listens. ``database``: the ``javax.jdo.option.*`` settings
    of another database than the Derby one in ``root`` (bench/postgres.py: PostgreSQL), whose JDBC
    driver is in ``classpath``."""
    java = java_binary()
    if java is None:
        raise FileNotFoundError("no java on PATH or JAVA_HOME")
    conf = root / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (root / "warehouse").mkdir(exist_ok=True)
    (conf / "hive-site.xml").write_text(hive_site({
        **(database or {"javax.jdo.option.ConnectionURL":
                        f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"}),
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": (root / "warehouse").as_uri(),
        "hive.async.log.enabled": "false",
    }))
    port = free_port()
    log = root / "metastore.log"
    cmd = [java, *JAVA_MODULE_OPTIONS, f"-Xmx{heap}", f"-Dderby.system.home={root}",
           "-cp", os.pathsep.join(map(str, (conf, *classpath, pyspark_jars() / "*"))),
           "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port)]
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root)
    service = MetastoreService(process, port, root, log)
    end = time.monotonic() + deadline_seconds
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(f"the Hive metastore service exited ({process.returncode}):\n{service.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return service
        except OSError:
            time.sleep(1)
    service.stop()
    raise RuntimeError(f"the Hive metastore service did not listen on {port}:\n{service.log_tail()}")
