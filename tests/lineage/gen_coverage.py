"""Generate ``docs/lineage-coverage.md``: operator -> supported -> the tests proving it.

    python tests/lineage/gen_coverage.py          # write the doc
    python tests/lineage/gen_coverage.py --check  # exit 1 if the checked-in doc is out of date

Sources, read from the test modules themselves (nothing is listed by hand here):

- every ``tests/lineage/test_*.py`` module with a module-level case table ``CASES`` (a list of
  cases, each with an ``id`` and an ``operator``; ``pytest.param(case, marks=xfail)`` entries
  count as not supported) consumed by a ``@pytest.mark.parametrize`` test; the module's
  ``PRODUCER`` says whose lineage it tests (``"sqlglot"`` for the SQL lineage; default
  ``"spark"``, the plan resolver);
- ``tests/lineage/test_tpch.py``: the 22 queries, the queries sqlglot fails on
  (``SQLGLOT_FAILS``) and those with conditions in their projections.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DOC = ROOT / "docs" / "lineage-coverage.md"
PRODUCERS: dict[str, str] = {"spark": "Spark plan (`df.lineage()`, listener)", "sqlglot": "SQL text (`ushas lineage sql`)"}


@dataclass(frozen=True)
class Proof:
    operator: str
    producer: str
    test: str  # pytest node id
    supported: bool


def _load(path: Path) -> ModuleType:
    name = f"_ushas_coverage_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _field(case: Any, key: str) -> Any:
    return case[key] if isinstance(case, dict) else getattr(case, key)


def _unwrap(entry: Any) -> tuple[Any, str | None, bool]:
    """(case, explicit id, supported) of a case-table entry, ``pytest.param(...)`` or plain."""
    if hasattr(entry, "values") and hasattr(entry, "marks"):
        supported = not any(m.name in ("xfail", "skip") for m in entry.marks)
        return entry.values[0], entry.id, supported
    return entry, None, True


def _case_tests(module: ModuleType, cases: list[Any]) -> list[tuple[str, list[str]]]:
    """The module's tests parametrized over ``cases`` (the list itself, or one entry per case,
    plain or wrapped in ``pytest.param``), each with the pytest id of every case."""
    found = []
    for name, func in vars(module).items():
        if not name.startswith("test_") or not callable(func):
            continue
        for mark in getattr(func, "pytestmark", ()):
            if mark.name != "parametrize" or len(mark.args) < 2:
                continue
            values = list(mark.args[1])
            if len(values) != len(cases) or not all(
                    _unwrap(v)[0] is _unwrap(c)[0] for v, c in zip(values, cases)):
                continue
            ids = mark.kwargs.get("ids")
            names = []
            for i, value in enumerate(values):
                case, explicit, _ = _unwrap(value)
                if explicit is not None:
                    names.append(explicit)
                elif isinstance(ids, (list, tuple)):
                    names.append(str(ids[i]))
                elif callable(ids):
                    names.append(str(ids(case)))
                else:
                    names.append(str(_field(case, "id")))
            found.append((name, names))
    return found


def collect_cases(paths: Iterable[Path]) -> list[Proof]:
    proofs: list[Proof] = []
    for path in paths:
        module = _load(path)
        cases = getattr(module, "CASES", None)
        if not isinstance(cases, list):
            continue
        producer = getattr(module, "PRODUCER", "spark")
        tests = _case_tests(module, cases)
        if not tests:
            raise SystemExit(f"{path.name}: CASES is not consumed by a parametrized test")
        rel = path.relative_to(ROOT).as_posix()
        for test, names in tests:
            for entry, case_id in zip(cases, names):
                case, _, supported = _unwrap(entry)
                proofs.append(Proof(_field(case, "operator"), producer, f"{rel}::{test}[{case_id}]", supported))
    return proofs


def _cell(proofs: list[Proof]) -> str:
    if not proofs:
        return "—"
    ok = sum(1 for p in proofs if p.supported)
    if ok == len(proofs):
        return f"yes ({ok})"
    return f"partly ({ok}/{len(proofs)})" if ok else f"no (0/{len(proofs)})"


def render(paths: Iterable[Path] | None = None) -> str:
    paths = sorted(HERE.glob("test_*.py")) if paths is None else list(paths)
    proofs = collect_cases(paths)
    operators = sorted({p.operator for p in proofs}, key=str.lower)
    lines = [
        "# Column lineage coverage",
        "",
        "Generated by `python tests/lineage/gen_coverage.py` from the table-driven lineage cases; do not edit",
        "by hand (`tests/lineage/test_coverage_doc.py` fails when this file is out of date).",
        "",
        "Each row is an operator or SQL construct; a producer supports it when its cases (SQL or DataFrame in,",
        "expected DIRECT and INDIRECT edges out) pass. The figures count the cases; every case is a test.",
        "",
        f"| operator | {' | '.join(PRODUCERS.values())} | tests |",
        f"| --- | {' | '.join('---' for _ in PRODUCERS)} | --- |",
    ]
    for op in operators:
        mine = [p for p in proofs if p.operator == op]
        cells = [_cell([p for p in mine if p.producer == producer]) for producer in PRODUCERS]
        tests = "<br>".join(f"`{p.test}`" + ("" if p.supported else " (xfail)") for p in mine)
        lines.append(f"| {op} | {' | '.join(cells)} | {tests} |")
    lines += ["", *_tpch_section(), ""]
    return "\n".join(lines)


def _tpch_section() -> list[str]:
    path = HERE / "test_tpch.py"
    if not path.exists():
        return []
    module = _load(path)
    rel = path.relative_to(ROOT).as_posix()
    fails: dict[str, str] = getattr(module, "SQLGLOT_FAILS", {})
    conditional: set[str] = set(getattr(module, "CONDITIONAL_IN_PROJECTION", set()))
    lines = [
        "## TPC-H",
        "",
        "All 22 queries over empty tables in `spark_catalog.tpch`. Plan lineage must be complete",
        "(completeness 1.0) and agree with the SQL lineage edge for edge (DIRECT sources with their subtypes,",
        "every INDIRECT edge); SQL lineage must list, per output",
        "column, the columns `sqlglot.lineage` lists (sqlglot does not classify edges: it also counts the",
        "conditions of CASE WHEN, which are INDIRECT CONDITIONAL in our model).",
        "",
        "| query | Spark plan | SQL text vs sqlglot | sqlglot.lineage |",
        "| --- | --- | --- | --- |",
    ]
    for name in module.QUERIES:
        sqlglot_note = f"fails: {fails[name]}" if name in fails else (
            "handles it; counts CASE conditions as sources" if name in conditional else "handles it")
        lines.append(f"| {name} | `{rel}::test_plan_lineage_complete_and_matches[{name}]` | "
                     f"`{rel}::test_sql_lineage_matches_sqlglot[{name}]` | {sqlglot_note} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write docs/lineage-coverage.md from the lineage test cases")
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is out of date: run python tests/lineage/gen_coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
