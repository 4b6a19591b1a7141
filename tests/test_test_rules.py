"""The tests' own rules (docs/testing.md), read from every test module with ``ast``: no unconditional skip, no
``pytest.raises(Exception)`` that checks nothing about the error, no assertion ``… or <something true>`` that
holds whatever the product does. Each check is also run on made-up code it must catch and code it must pass."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: calls that answer a yes / no question: an ``or`` operand calling one of them is a real condition
PREDICATE_NAMES = frozenset({"isinstance", "issubclass", "any", "all", "callable", "hasattr", "bool"})
PREDICATE_METHODS = frozenset({"startswith", "endswith", "exists", "is_file", "is_dir", "is_symlink", "search",
                               "match", "fullmatch", "isdigit", "isalpha", "isalnum", "isspace", "isupper",
                               "islower", "issubset", "issuperset", "isdisjoint", "is_set", "is_alive", "wait"})
BROAD = frozenset({"Exception", "BaseException"})


def _is_pytest(node: ast.expr, *attrs: str) -> bool:
    """``node`` is ``pytest.<attrs...>`` (e.g. ``pytest.mark.skip``)."""
    for attr in reversed(attrs):
        if not (isinstance(node, ast.Attribute) and node.attr == attr):
            return False
        node = node.value
    return isinstance(node, ast.Name) and node.id == "pytest"


def _constant_true(node: ast.expr) -> bool:
    try:
        return bool(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def unconditional_skips(tree: ast.Module) -> list[int]:
    """Lines of ``pytest.skip(...)`` run on every path of a module or a function (a statement of its body, not
    under an ``if`` / ``try`` / loop), of ``pytest.mark.skip`` marks and of ``skipif`` with a true constant."""
    out: list[int] = []

    def straight(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _is_pytest(stmt.value.func, "skip"):
                out.append(stmt.lineno)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                straight(stmt.body)
            elif isinstance(stmt, ast.ClassDef):
                straight(stmt.body)
            elif isinstance(stmt, ast.With):
                straight(stmt.body)

    straight(tree.body)
    for node in ast.walk(tree):
        mark = node.func if isinstance(node, ast.Call) else node
        if isinstance(mark, ast.expr) and _is_pytest(mark, "mark", "skip"):
            out.append(node.lineno)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Call) and _is_pytest(node.func, "mark", "skipif") and node.args \
                and _constant_true(node.args[0]):
            out.append(node.lineno)
    return sorted(set(out))


def _broad(node: ast.AST) -> bool:
    """``pytest.raises(Exception)`` (or ``BaseException``, alone or in a tuple) without ``match=``."""
    if not (isinstance(node, ast.Call) and _is_pytest(node.func, "raises") and node.args):
        return False
    first = node.args[0]
    names = first.elts if isinstance(first, ast.Tuple) else [first]
    return any(isinstance(n, ast.Name) and n.id in BROAD for n in names) and not any(k.arg == "match"
                                                                                    for k in node.keywords)


def broad_raises(tree: ast.Module) -> list[int]:
    """Lines of a broad ``pytest.raises`` whose error nothing checks: no ``match=`` and no ``as name`` read
    after the block (``assert name.value.getCondition() == ...``)."""
    checked: set[int] = set()
    loads = [(n.id, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            for item in node.items:
                var = item.optional_vars
                if _broad(item.context_expr) and isinstance(var, ast.Name) and any(
                        name == var.id and line > (node.end_lineno or node.lineno) for name, line in loads):
                    checked.add(id(item.context_expr))
    return sorted(node.lineno for node in ast.walk(tree) if _broad(node) and id(node) not in checked)


def _condition(node: ast.expr) -> bool:
    """``node`` reads as a yes / no condition (not a value that is true because it is not empty)."""
    if isinstance(node, (ast.Compare, ast.Name, ast.Attribute)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.BoolOp):
        return all(_condition(v) for v in node.values)
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name):
            return f.id in PREDICATE_NAMES or f.id.startswith(("is_", "has_"))
        if isinstance(f, ast.Attribute):
            return f.attr in PREDICATE_METHODS or f.attr.startswith(("is_", "has_"))
    return False


def truthy_alternatives(tree: ast.Module) -> list[int]:
    """Lines of ``assert a or b`` where an alternative is not a condition: a literal, a parsed value, a
    subscript... (``… or json.loads(out)`` holds for any non-empty output)."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or)
            and not all(_condition(v) for v in node.test.values)]


CHECKS = {"unconditional skip": unconditional_skips, "unchecked pytest.raises(Exception)": broad_raises,
          "`assert … or <value>`": truthy_alternatives}


def test_the_test_modules_follow_the_rules() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for rule, check in CHECKS.items():
            found += [f"{path.relative_to(TESTS.parent)}:{line}: {rule}" for line in check(tree)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("rule,source,lines", [
    ("unconditional skip", "import pytest\npytest.skip('x', allow_module_level=True)\n", [2]),
    ("unconditional skip", "import pytest\ndef test_a():\n    x = 1\n    pytest.skip('later')\n", [4]),
    ("unconditional skip", "import pytest\nclass TestA:\n    def test_a(self):\n        pytest.skip('x')\n", [4]),
    ("unconditional skip", "import pytest\n@pytest.mark.skip\ndef test_a():\n    pass\n", [2]),
    ("unconditional skip", "import pytest\n@pytest.mark.skip(reason='x')\ndef test_a():\n    pass\n", [2]),
    ("unconditional skip", "import pytest\nP = [pytest.param(1, marks=pytest.mark.skip)]\n", [2]),
    ("unconditional skip", "import pytest\n@pytest.mark.skipif(True, reason='x')\ndef test_a():\n    pass\n", [2]),
    ("unconditional skip", "import pytest\n@pytest.mark.skipif(1, reason='x')\ndef test_a():\n    pass\n", [2]),
    ("unconditional skip", "import pytest\ndef test_a():\n    if not x:\n        pytest.skip('x')\n", []),
    ("unconditional skip", "import pytest\n@pytest.mark.skipif(HAS_LIB, reason='x')\ndef test_a():\n    pass\n", []),
    ("unconditional skip", "import pytest\ntry:\n    import a\nexcept ImportError:\n    pytest.skip('x')\n", []),
    ("unchecked pytest.raises(Exception)", "with pytest.raises(Exception):\n    f()\n", [1]),
    ("unchecked pytest.raises(Exception)", "with pytest.raises((ValueError, BaseException)):\n    f()\n", [1]),
    ("unchecked pytest.raises(Exception)", "pytest.raises(Exception, f)\n", [1]),
    ("unchecked pytest.raises(Exception)", "with pytest.raises(Exception, match='TABLE_OR_VIEW'):\n"
                                                "    f()\n", []),
    ("unchecked pytest.raises(Exception)", "with pytest.raises(AnalysisException):\n    f()\n", []),
    ("unchecked pytest.raises(Exception)", "with pytest.raises(Exception) as e:\n    f()\n", [1]),
    ("unchecked pytest.raises(Exception)", "with pytest.raises(Exception) as e:\n    f()\ng(e)\n", []),
    ("unchecked pytest.raises(Exception)", "e = 1\nwith pytest.raises(Exception) as e:\n    f(e)\n", [2]),
    ("`assert … or <value>`", "assert 'x' in out or json.loads(out)\n", [1]),
    ("`assert … or <value>`", "assert a == 1 or True\n", [1]),
    ("`assert … or <value>`", "assert a == 1 or 'fallback'\n", [1]),
    ("`assert … or <value>`", "assert a == 1 or [1]\n", [1]),
    ("`assert … or <value>`", "assert a == 1 or rows[0]\n", [1]),
    ("`assert … or <value>`", "assert (a == 1 and b) or len(rows)\n", [1]),
    ("`assert … or <value>`", "assert a is None or a > 0\n", []),
    ("`assert … or <value>`", "assert not p.exists() or ok or s.endswith('x') or isinstance(a, int)\n", []),
    ("`assert … or <value>`", "assert re.search('x', s) or (a and b == 2)\n", []),
])
def test_the_checks_catch_what_they_name(rule: str, source: str, lines: list[int]) -> None:
    assert CHECKS[rule](ast.parse(source)) == lines


def test_only_the_foundationdb_engines_tests_use_the_accepted_skip_reasons() -> None:
    """The run accepts a skip by its reason (tests/skip_policy.py): only tests/kv, where the FoundationDB
    engine's tests live, may use those reasons (by name or by their text)."""
    from skip_policy import FDB_REASONS

    users = set()
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text()
        if any(r in text for r in FDB_REASONS) or "FDB_SKIP_REASON" in text or "FDB_LIBRARY_SKIP_REASON" in text:
            users.add(str(path.relative_to(TESTS)))
    assert {u for u in users if not u.startswith("kv/")} == {"skip_policy.py", "test_skip_policy.py",
                                                             "test_test_rules.py"}
    assert {"kv/conftest.py", "kv/test_fdb.py"} <= users
