"""``ushas spark-conf`` prints a configuration that works when pasted, and the option names and defaults in
``spark-defaults.conf.example``, ``conf/*.conf``, ``ushas spark-conf`` and ``ushas_catalog.spark.options``
are the ones the shim's Java sources read (a renamed or re-defaulted option fails here)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from spark_processes import run_spark, spark_bin

from ushas_catalog.spark.cache import CacheSettings
from ushas_catalog.cli import main
from ushas_catalog.errors import InvalidArgument
from ushas_catalog.spark.options import (CATALOG_OPTIONS, LEGACY_CATALOG_OPTIONS, SESSION_OPTIONS, catalog_option,
                                         session_option)

ROOT = Path(__file__).resolve().parents[2]
JAVA = ROOT / "jvm-shim" / "src" / "main" / "java" / "io" / "ushas" / "spark"
CONF_FILES = [ROOT / "spark-defaults.conf.example", *sorted((ROOT / "conf").glob("*.conf"))]
CATALOG_KEY = re.compile(r"^spark\.sql\.catalog\.(\w+)\.(.+)$")


def _java(name: str) -> str:
    return (JAVA / name).read_text()


def _conf_lines(text: str) -> list[tuple[str, str, bool]]:
    """(key, value, commented) of each setting line; a commented line counts when it sets a catalog option
    or a spark.ushas.* setting (the documented optional ones)."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^(#\s*)?(spark\.[\w.]+)\s+(\S.*?)\s*$", line)
        if not m:
            continue
        commented, key, value = bool(m.group(1)), m.group(2), m.group(3)
        if commented and not (CATALOG_KEY.match(key) or key.startswith("spark.ushas.")):
            continue
        out.append((key, value, commented))
    return out


def test_option_list_matches_the_java_sources() -> None:
    catalog = _java("UshasCatalog.java")
    read = set(re.findall(r'options\.(?:get|getOrDefault)\("([^"]+)"', catalog))
    read |= set(re.findall(r'option\.apply\("([^"]+)"\)', _java("RemoteOptions.java")))  # remote mode
    bridge = _java("Bridge.java")
    read |= set(re.findall(r'option\.apply\("([^"]+)"\)', bridge))
    legacy = {}
    for key, older in re.findall(r'seconds\(name, option, "([^"]+)", (?:"([^"]+)"|null)', bridge):
        read.add(key)
        if older:
            legacy[older] = key
    assert re.search(r'startsWith\("cache\."\)', catalog)  # every cache.* option is handed to Python
    cache_keys = {o.key for o in CATALOG_OPTIONS if o.key.startswith("cache.")}
    assert {o.key for o in CATALOG_OPTIONS} == read | cache_keys
    assert LEGACY_CATALOG_OPTIONS == legacy
    defaults = {k: int(v) for k, v in re.findall(r"DEFAULT_(\w+)_S = (\d+);", bridge)}
    assert catalog_option("bridge.timeout").default == str(defaults["TIMEOUT"])
    assert catalog_option("bridge.startTimeout").default == str(defaults["START"])
    assert catalog_option("bridge.livenessTimeout").default == str(defaults["LIVENESS"])
    assert catalog_option("project").default == re.search(r'getOrDefault\("project", "(\w+)"\)', catalog).group(1)
    # the cache options are exactly Python's, with its defaults
    with pytest.raises(InvalidArgument) as info:
        CacheSettings.of({"cache.nope": "1"})
    assert cache_keys == set(re.findall(r"cache\.\w+", str(info.value).split(":", 1)[1]))
    assert CacheSettings.of({o.key: o.default for o in CATALOG_OPTIONS if o.key in cache_keys}) == CacheSettings()

    listener = _java("UshasLineageListener.java")
    session = {"spark.ushas.lineage." + k: v for k, v in re.findall(r'PREFIX \+ "(\w+)", (\d+)\)', listener)}
    session["spark.ushas.lineage.catalog"] = None
    session.update({"spark.ushas.lineage.openlineage." + k: v or None
                    for k, v in re.findall(r'OPENLINEAGE \+ "(\w+)", (?:"([^"]*)"|null)\)', listener)})
    assert 'PREFIX + "catalog"' in listener
    repair = _java("PartitionRepair.java")
    session[re.search(r'THREADS_CONF = "([^"]+)"', repair).group(1)] = \
        re.search(r"DEFAULT_THREADS = (\d+);", repair).group(1)
    assert {o.key: o.default for o in SESSION_OPTIONS} == session


@pytest.mark.parametrize("path", CONF_FILES, ids=lambda p: p.name)
def test_conf_files_use_the_shims_names_and_defaults(path: Path) -> None:
    text = path.read_text()
    lines = _conf_lines(text)
    assert lines
    for key, value, commented in lines:
        assert "<" not in value or commented, f"{path.name}: {key} {value}: a placeholder cannot work"
        m = CATALOG_KEY.match(key)
        option = catalog_option(m.group(2)) if m else session_option(key) if key.startswith("spark.ushas.") else None
        if m or key.startswith("spark.ushas."):
            assert option is not None, f"{path.name}: {key} is not an option the shim reads"
            if commented and option.default is not None:
                assert value == option.default, f"{path.name}: {key} documents {value}, the default is {option.default}"
    assert "ushas spark-conf" in text
    assert "spark.pyspark.python                        /usr/bin/python3" not in text


def _printed(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, str]:
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    return {k: v for k, v, _ in _conf_lines(out)}


def test_spark_conf_prints_real_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ushas_catalog.spark.jar import jar_path

    conf = _printed(capsys, "spark-conf", "--uri", f"sqlite:///{tmp_path}/u.db", "--warehouse", str(tmp_path / "wh"),
                    "--catalog", "lake", "--project", "p1", "--metastore-catalog", "main")
    assert conf["spark.jars"] == str(jar_path()) and Path(conf["spark.jars"]).is_file()
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.sql.catalog.lake"] == "io.ushas.spark.UshasCatalog"
    assert conf["spark.sql.catalog.lake.uri"] == f"sqlite:///{tmp_path}/u.db"
    assert conf["spark.sql.catalog.lake.project"] == "p1"
    assert conf["spark.sql.catalog.lake.catalog"] == "main"
    assert conf["spark.sql.catalog.lake.warehouse"] == str(tmp_path / "wh")
    assert conf["spark.sql.extensions"] == "io.ushas.spark.UshasExtensions"
    assert conf["spark.sql.queryExecutionListeners"] == "io.ushas.spark.UshasLineageListener"
    assert conf["spark.sql.sources.commitProtocolClass"] == "io.ushas.spark.UshasCommitProtocol"
    for key in conf:
        m = CATALOG_KEY.match(key)
        assert m is None or catalog_option(m.group(2)) is not None, key
    assert "spark.sql.queryExecutionListeners" not in _printed(capsys, "--uri", "sqlite:///x/u.db", "spark-conf",
                                                                "--no-lineage")


def test_spark_conf_refuses_bad_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spark-conf", "--uri", "sqlite:///x/u.db", "--catalog", "a.b"]) == 2
    assert main(["spark-conf", "--uri", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--catalog 'a.b'" in err and "invalid store URI 'nope'" in err


@pytest.mark.spark
@pytest.mark.slow
def test_pasted_spark_conf_works_in_spark_sql(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = tmp_path / "ushas.db"
    assert main(["--uri", f"sqlite:///{store}", "init"]) == 0
    capsys.readouterr()
    assert main(["spark-conf", "--uri", f"sqlite:///{store}", "--warehouse", str(tmp_path / "wh")]) == 0
    (tmp_path / "conf").mkdir()
    defaults = tmp_path / "conf" / "spark-defaults.conf"
    defaults.write_text(capsys.readouterr().out + "spark.ui.enabled false\n")
    cmd = [spark_bin("spark-sql"), "--master", "local[1]", "--properties-file", str(defaults),
           "-e", "CREATE NAMESPACE ushas.pasted; SHOW NAMESPACES IN ushas"]
    proc = run_spark(cmd, tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "pasted" in proc.stdout.split(), proc.stdout
