"""The UI's static files: everything the page loads is in the package (no CDN: the page works
offline), the vendored layout library is the file its README names, with its licence."""
from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

from ushas_catalog.ui.app import STATIC

ROOT = Path(__file__).resolve().parents[2]


def test_every_script_and_style_sheet_is_a_file_of_the_package() -> None:
    html = (STATIC / "index.html").read_text()
    refs = [r for r in re.findall(r'(?:src|href)="([^"]+)"', html) if not r.startswith("#")]  # "#": a page
    assert refs and all(r.startswith("/static/") for r in refs), refs
    for ref in refs:
        assert (STATIC / ref.removeprefix("/static/")).is_file(), ref
    # no file reaches another host (the SVG namespace is a name, not a request)
    for path in STATIC.rglob("*"):
        if path.suffix in (".html", ".js", ".css") and "vendor" not in path.parts:
            urls = set(re.findall(r"https?://[^\s\"'`)]+", path.read_text())) - {"http://www.w3.org/2000/svg"}
            assert urls == set(), path.name


def test_the_vendored_layout_library_is_the_one_its_readme_names() -> None:
    vendor = STATIC / "vendor"
    readme = (vendor / "README").read_text()
    name, version = re.search(r"(@dagrejs/dagre) (\d+\.\d+\.\d+)", readme).groups()  # type: ignore[union-attr]
    digest = re.search(r"sha256 ([0-9a-f]{64});", readme).group(1)  # type: ignore[union-attr]
    assert hashlib.sha256((vendor / "dagre.min.js").read_bytes()).hexdigest() == digest
    assert (name, version) == ("@dagrejs/dagre", "3.1.3")
    assert "Permission is hereby granted" in (vendor / "LICENSE").read_text()  # MIT
    # and a wheel carries them: package data covers the vendor folder's licence and README
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"vendor/LICENSE", "vendor/README", "*.svg"} <= set(data["ushas_catalog.ui.static"])
