"""The parameters cell of a notebook in any other language (Julia, Scala, MATLAB, bash, ...), read line by line.

    epochs = 10            # Julia, MATLAB (`epochs = 10;  % help`), bash (`epochs=10`)
    val rate: Double = 0.1 // Scala

A line `name = value` is a parameter, one per line (a value may go on over
lines while a bracket or string is open); a leading `val`, `var`, `let`,
`const`, `local`, `export` or `global` and a type after `:` or `::` are
allowed; a trailing `;` ends the value.  The comment after it is its help:
`//` in Scala, Java, Kotlin, C#, F#, JavaScript, TypeScript, Go and Rust, `%`
in MATLAB (`%` or `#` in Octave), `#` elsewhere.  Types, from the value read as
JSON: numbers "int" or "float", "..." (or '...') "str", true/false (or
True/False) "bool", null "None", [...] "list", {...} "dict"; anything else is
an "expression", which takes any value.
"""

from __future__ import annotations

import json
import re

from .model import Assignment
from .scanner import Syntax, read

# possessive (Python 3.11): each run of blanks is read one way; `\s*(type)?\s*=` read a line of blanks in every
# way (a 64 KiB line took the hub 4 s, for everyone)
ASSIGNMENT = re.compile(
    r"\s*+(?:(?:val|var|let|const|local|export|global)\s++)?(?P<name>[A-Za-z_][A-Za-z0-9_]*+)"
    r"(?:\s*+:{1,2}\s*+[A-Za-z_][\w.\[\]<>,]*+)?\s*+=(?!=)\s*"
)
_SLASHES = ("scala", "java", "kotlin", "c#", "f#", "javascript", "typescript", "go", "rust")
_COMMENTS = {"matlab": ("%",), "octave": ("%", "#"), **{language: ("//",) for language in _SLASHES}}
_TYPES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "None"}
_SINGLE_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'", re.DOTALL)


def syntax(language: str) -> Syntax:
    return Syntax(comments=_COMMENTS.get(language, ("#",)))


def type_of(text: str) -> str:
    """The type of a JSON-ish literal (the module's docstring lists them)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        if _SINGLE_QUOTED.fullmatch(text):
            return "str"
        return {"True": "bool", "False": "bool"}.get(text, "expression")
    return _TYPES.get(type(value), "expression")


def assignments(source: str, path: str, language: str) -> list[Assignment]:
    return read(source, path, ASSIGNMENT, syntax(language), type_of)
