"""The session server's deferred import (spawner/jupyter/deferred.py): jsonschema loads without building
rfc3987_syntax's parser, and the formats it serves still check the same way once asked."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from spawner.jupyter.deferred import defer_rfc3987_syntax
print(defer_rfc3987_syntax() if DEFER else "not deferred")
from jsonschema import FormatChecker
import jupyter_events
print("lark" in sys.modules)
checker = FormatChecker()
print([checker.conforms(v, f) for v, f in (("http://example.org/ä", "iri"), ("no iri here", "iri"),
      ("../a?b#c", "iri-reference"), ("a b", "iri-reference"))])
print("lark" in sys.modules, type(sys.modules["rfc3987_syntax"]).__name__)
print(defer_rfc3987_syntax())
"""


def run(code: str, defer: bool = True) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"DEFER = {defer}\n{code}"], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.splitlines()


def test_jsonschema_imports_without_the_parser_and_checks_iris_on_first_use():
    assert run(PROBE) == ["True", "False", "[True, False, True, False]", "True module", "False"]


def test_the_checks_are_those_of_the_real_module():
    assert run(PROBE, defer=False)[1:3] == ["True", "[True, False, True, False]"]


def test_an_imported_module_is_left_alone():
    code = "import rfc3987_syntax\nfrom spawner.jupyter.deferred import defer_rfc3987_syntax\nprint(defer_rfc3987_syntax())"
    assert run(code) == ["False"]
