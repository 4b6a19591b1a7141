"""The shim jar cache keeps every jar a session may still have on its classpath: building a new jar (another
checkout, another version) deletes only jars nobody used for a week. Deleting them at once broke running
Spark applications and servers of the other version (``the shim jar has no io/ushas/spark/errors.json``)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from ushas_catalog.spark.jar import STALE_AFTER_S, jar_path, prune_cache


def test_a_new_build_keeps_jars_in_use_and_prunes_stale_ones(tmp_path: Path) -> None:
    in_use, stale = tmp_path / "ushas-shim-aaaa.jar", tmp_path / "ushas-shim-tests-bbbb.jar"
    other = tmp_path / "notes.txt"
    for f in (in_use, stale, other):
        f.write_bytes(b"x")
    old = time.time() - STALE_AFTER_S - 60
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    prune_cache(tmp_path / "ushas-shim-cccc.jar")
    assert in_use.exists() and other.exists() and not stale.exists()


def test_using_a_cached_jar_marks_it_in_use() -> None:
    path = jar_path()  # built once per machine (the session fixture needs it anyway)
    old = time.time() - STALE_AFTER_S - 60
    os.utime(path, (old, old))
    assert jar_path() == path
    assert time.time() - path.stat().st_mtime < STALE_AFTER_S


def test_a_build_says_it_is_building_and_how_long_it_took(tmp_path: Path, capsys) -> None:
    from ushas_catalog.spark.jar import _built

    target = tmp_path / "ushas-shim-x.jar"
    _built(target, True, lambda: target.write_bytes(b"jar"))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"ushas: building the Spark shim jar (once per version of ushas, about 20 s): {target}"
    assert err[1].startswith("ushas: built the shim jar in ") and err[1].endswith(" s")
    _built(target, True, lambda: target.write_bytes(b"again"))  # cached: nothing said
    assert capsys.readouterr().err == ""
