"""The code is linted and formatted as pyproject.toml's [tool.ruff] says (fix with `ruff format .` and
`ruff check --fix .`, both from the repository root)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).parent / "ruff"  # the test extra's, beside this Python


def ruff(*args: str) -> subprocess.CompletedProcess:
    assert RUFF.exists(), f"{RUFF} is missing: install the test extra (pip install '.[test]')"
    return subprocess.run([str(RUFF), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_code_passes_the_linter():
    result = ruff("check", "--no-cache", "--output-format=concise", ".")
    assert result.returncode == 0, (
        f"ruff check . found problems; `ruff check --fix .` fixes most:\n{result.stdout}{result.stderr}"
    )


def test_the_code_is_formatted():
    result = ruff("format", "--check", "--no-cache", "--output-format=concise", ".")
    assert result.returncode == 0, (
        f"ruff format --check . wants changes; run `ruff format .` (--diff shows them):\n{result.stdout}{result.stderr}"
    )
