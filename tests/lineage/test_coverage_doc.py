"""``docs/lineage-coverage.md`` is generated from the lineage case tables: it must be up to date."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _generator() -> ModuleType:
    name = "_ushas_gen_coverage"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "gen_coverage.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_coverage_doc_is_up_to_date() -> None:
    gen = _generator()
    assert gen.DOC.exists(), "run python tests/lineage/gen_coverage.py"
    assert gen.DOC.read_text(encoding="utf-8") == gen.render(), \
        "docs/lineage-coverage.md is out of date: run python tests/lineage/gen_coverage.py"


def test_coverage_doc_lists_every_case() -> None:
    gen = _generator()
    text = gen.render()
    proofs = gen.collect_cases(sorted(HERE.glob("test_*.py")))
    assert proofs, "no case tables found"
    for proof in proofs:
        assert f"`{proof.test}`" in text
    for i in range(1, 23):
        assert f"test_plan_lineage_complete_and_matches[q{i:02d}]" in text


def test_coverage_doc_names_real_tests() -> None:
    """Every test the doc cites is one pytest collects."""
    import subprocess

    gen = _generator()
    proofs = gen.collect_cases(sorted(HERE.glob("test_*.py")))
    files = sorted({p.test.split("::")[0] for p in proofs} | {"tests/lineage/test_tpch.py"})
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                         cwd=gen.ROOT, capture_output=True, text=True, check=True).stdout
    collected = {line.strip() for line in out.splitlines() if "::" in line}
    cited = {p.test for p in proofs} | {
        f"tests/lineage/test_tpch.py::{test}[q{i:02d}]" for i in range(1, 23)
        for test in ("test_plan_lineage_complete_and_matches", "test_sql_lineage_matches_sqlglot")}
    assert cited - collected == set()
