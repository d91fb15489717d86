"""Modules stay small and functions short (STYLE.md, rule 9): no module of portal/ or spawner/ over
MAX_MODULE_LINES lines, no function or method over MAX_FUNCTION_LINES.

Split by concept, not to pass: a long function becomes named steps, a long
module one module per thing it holds.  Python files only (the JupyterLab
extension's TypeScript has its own tools); the tests are not held to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("portal", "spawner")
SKIPPED = ("node_modules",)  # npm's, under spawner/labext
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60  # from its `def` line to its last, docstring and comments included


def modules() -> list[Path]:
    found = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in found if not any(part in SKIPPED for part in p.relative_to(ROOT).parts)]


def module_lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """(name, its def's line, its length in lines) of every function and method, nested ones too."""
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def test_the_measure_counts_a_function_from_def_to_its_last_line():
    source = '@decorated\ndef f():\n    """doc"""\n\n    def g():\n        return 1\n    return g\n'
    assert function_lengths(source) == [("f", 2, 6), ("g", 5, 2)]


def test_the_packages_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in modules()}
    assert {"portal/settings/__init__.py", "spawner/hub/session/spawner.py"} <= names


def test_no_module_is_over_the_limit():
    over = {str(p.relative_to(ROOT)): n for p in modules() if (n := module_lines(p)) > MAX_MODULE_LINES}
    assert over == {}, f"modules over {MAX_MODULE_LINES} lines; split them by concept: {over}"


def test_no_function_is_over_the_limit():
    over = {
        f"{p.relative_to(ROOT)}:{line} {name}": n
        for p in modules()
        for name, line, n in function_lengths(p.read_text())
        if n > MAX_FUNCTION_LINES
    }
    assert over == {}, f"functions over {MAX_FUNCTION_LINES} lines; split them into named steps: {over}"
