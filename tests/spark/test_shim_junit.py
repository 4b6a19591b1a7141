"""The shim's JUnit suite (``jvm-shim/src/junit/java``: the pure adaptation classes Json, Errors with the jar's
error table, PartitionFilters' JSON, UshasProcedures' argument and result values, ShowStrategy's CLUSTERED BY
text for SHOW CREATE TABLE), compiled with javac
against Spark and the shim jar and run by JUnit's console launcher. JUnit comes from Maven Central through
``mvn`` (cached next to the jar; ./test installs Maven): the test skips, saying why, when Maven is not installed
or cannot fetch it (offline), and a skip fails the run unless USHAS_ALLOW_SKIPS names it (docs/testing.md)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ushas_catalog.spark.jar import cache_dir, jar_path, source_dir, spark_jars_dir

JUNIT = "6.1.3"  # org.junit.platform:junit-platform-console-standalone (JUnit 6: one version for all parts)
BOUND_S = 300


def _console_jar() -> Path:
    target = cache_dir() / "junit" / f"junit-platform-console-standalone-{JUNIT}.jar"
    if target.exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("Maven (mvn) is not installed: the shim's JUnit suite needs it to fetch JUnit")
    cmd = [mvn, "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
           f"-Dartifact=org.junit.platform:junit-platform-console-standalone:{JUNIT}",
           f"-DoutputDirectory={target.parent}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BOUND_S)
    if proc.returncode != 0 or not target.exists():
        pytest.skip(f"cannot fetch JUnit {JUNIT} from Maven Central (offline?): {proc.stdout[-500:]}{proc.stderr[-500:]}")
    return target


def test_shim_junit_suite(tmp_path: Path) -> None:
    sources = sorted((source_dir() / "src" / "junit" / "java").rglob("*.java"))
    assert sources, "no JUnit sources under jvm-shim/src/junit/java"
    console = _console_jar()
    classpath = f"{console}:{jar_path()}:{spark_jars_dir() / '*'}"
    classes = tmp_path / "classes"
    javac = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", classpath,
                            "-d", str(classes), *map(str, sources)], capture_output=True, text=True, timeout=BOUND_S)
    assert javac.returncode == 0, javac.stderr[-4000:]
    run = subprocess.run(["java", "-cp", f"{classes}:{classpath}", "org.junit.platform.console.ConsoleLauncher",
                          "execute", "--scan-class-path", str(classes), "--disable-banner", "--disable-ansi-colors",
                          "--details=summary", "--fail-if-no-tests"],
                         capture_output=True, text=True, timeout=BOUND_S)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " 0 tests failed" in run.stdout and " 0 tests successful" not in run.stdout, run.stdout[-2000:]
