"""Builds the JVM shim jar with ``javac`` against the jars inside the installed pyspark.

No Maven: the sources under ``jvm-shim/src/main/java`` are compiled against
``pyspark/jars/*`` and packaged with ``jar``, with the error table generated from
:mod:`ushas_catalog.errors` (``io/ushas/spark/errors.json``). The result is cached under
``$USHAS_JAR_CACHE`` (default ``~/.cache/ushas-catalog``) in a file named after a hash
of the sources and the Spark version, so it is rebuilt exactly when either changes.
Concurrent builders (several test workers, several Spark drivers) serialize on a lock
file; the jar appears atomically.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import JarBuildError, contract_json


def source_dir() -> Path:
    """The shim's Java sources: the repository's ``jvm-shim`` (editable install) or the
    copy shipped inside the package."""
    package = Path(__file__).resolve().parent.parent  # python/ushas_catalog
    for candidate in (package.parent.parent / "jvm-shim", package / "_jvm_shim"):
        if (candidate / "src" / "main" / "java").is_dir():
            return candidate
    raise JarBuildError("jvm-shim sources not found next to the package")


def spark_jars_dir() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise JarBuildError(f"pyspark has no jars directory at {jars}")
    return jars


def _sources(root: Path, source_set: str = "main") -> list[Path]:
    return sorted((root / "src" / source_set / "java").rglob("*.java"))


def _fingerprint(sources: list[Path], root: Path, *extra: str) -> str:
    import pyspark

    h = hashlib.sha256(pyspark.__version__.encode())
    h.update(contract_json().encode())  # the generated error table the jar carries
    for text in extra:
        h.update(text.encode())
    for path in sources:
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    resources = root / "src" / "main" / "resources"
    if resources.is_dir():
        for path in sorted(p for p in resources.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    return Path(os.environ.get("USHAS_JAR_CACHE", Path.home() / ".cache" / "ushas-catalog"))


def jar_path(build: bool = True) -> Path:
    """The path of the shim jar, building it first if it is missing or stale."""
    root = source_dir()
    sources = _sources(root)
    if not sources:
        raise JarBuildError(f"no Java sources under {root}")
    target = cache_dir() / f"ushas-shim-{_fingerprint(sources, root)}.jar"
    return _built(target, build, lambda: _build(root, sources, target))


def test_jar_path(build: bool = True) -> Path:
    """The jar of the shim's test-only classes (``jvm-shim/src/test/java``: plan capture helpers, probes of
    package-private adapters), compiled against Spark and the shim jar; never part of the product jar.
    The test session puts it on its classpath next to :func:`jar_path`."""
    root = source_dir()
    sources = _sources(root, "test")
    if not sources:
        raise JarBuildError(f"no test Java sources under {root} (a source checkout is needed)")
    main = jar_path(build)
    target = cache_dir() / f"ushas-shim-tests-{_fingerprint(sources, root, main.name)}.jar"
    return _built(target, build, lambda: _build(root, sources, target, extra_classpath=[main], with_contract=False))


def _built(target: Path, build: bool, make: Callable[[], None]) -> Path:
    if target.exists():
        try:
            os.utime(target)  # in use: kept by prune_cache
        except OSError:
            pass  # a read-only cache still serves its jar
        return target
    if not build:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            # the first build takes a while (javac over the shim's sources): say so, then how long it took
            started = time.monotonic()
            print(f"ushas: building the Spark shim jar (once per version of ushas, about 20 s): {target}",
                  file=sys.stderr, flush=True)
            make()
            print(f"ushas: built the shim jar in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return target


def _build(root: Path, sources: list[Path], target: Path, extra_classpath: Sequence[Path] = (),
           with_contract: bool = True) -> None:
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise JarBuildError(f"'{tool}' not found on PATH: a JDK 17 is needed to build the shim")
    classpath = os.pathsep.join([str(spark_jars_dir() / "*"), *map(str, extra_classpath)])
    with tempfile.TemporaryDirectory(prefix="ushas-jar-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", classpath,
               "-d", str(classes), *map(str, sources)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise JarBuildError("javac failed building the shim:\n" + proc.stderr[-8000:])
        if with_contract:
            resources = root / "src" / "main" / "resources"
            if resources.is_dir():
                shutil.copytree(resources, classes, dirs_exist_ok=True)
            # the error table, generated from ushas_catalog.errors: the one copy Errors.java reads
            (classes / "io" / "ushas" / "spark" / "errors.json").write_text(contract_json(), encoding="utf-8")
        staged = Path(tmp) / target.name
        proc = subprocess.run(["jar", "cf", str(staged), "-C", str(classes), "."],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise JarBuildError("jar failed packaging the shim:\n" + proc.stderr[-4000:])
        partial = target.with_suffix(".jar.part")
        shutil.copyfile(staged, partial)
        os.replace(partial, target)
    prune_cache(target)


#: a cached jar unused for this long is deleted when another one is built
STALE_AFTER_S = 7 * 24 * 3600


def prune_cache(target: Path) -> None:
    """Delete cached jars no session has used for :data:`STALE_AFTER_S`. Never the others: another
    checkout or version of the package on this machine (a second virtualenv, a running Spark application,
    a server started before an upgrade) may have one on its classpath, and a jar deleted or replaced under
    a JVM that is opening it fails that JVM's next class load."""
    now = time.time()
    for old in target.parent.glob("ushas-shim-*.jar"):
        try:
            if old != target and now - old.stat().st_mtime > STALE_AFTER_S:
                old.unlink(missing_ok=True)
        except OSError:
            continue  # pruned by a concurrent build
