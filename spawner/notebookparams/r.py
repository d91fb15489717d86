"""The parameters cell of an R notebook (IRkernel), read line by line.

    formula_text <- "mpg ~ wt + hp"   # the model's formula
    n_trees = 500L
    scale <<- TRUE

A line `name <- value`, `name = value` or `name <<- value` is a parameter, one
per line (a value may go on over lines while a bracket or string is open); the
comment after it is its help.  Types, from the literal: `5L` "int"; `5`, `2.5`,
`1e-3` "float" (R's numbers are doubles); "..." or '...' "str"; TRUE, FALSE,
T, F "bool"; NULL "None"; `c(...)` or `list(...)` of such literals, unnamed,
"list" (papermill writes a list as `list(...)`); anything else "expression".
"""

from __future__ import annotations

import re

from .model import Assignment
from .scanner import Syntax, read, split_items

ASSIGNMENT = re.compile(r"\s*(?P<name>[A-Za-z][A-Za-z0-9._]*|\.[A-Za-z_.][A-Za-z0-9._]*)\s*(?:<<-|<-|=(?!=))\s*")
SYNTAX = Syntax(comments=("#",), multiline_strings=True)
_INTEGER = re.compile(r"[+-]?\d+L")
# one way to read each text: `\d+\.?\d*` split a run of digits in every way, and `1111…1x` took the hub minutes
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""", re.DOTALL)
_VECTOR = re.compile(r"(?:c|list)\s*\((.*)\)", re.DOTALL)
_WORDS = {"TRUE": "bool", "FALSE": "bool", "T": "bool", "F": "bool", "NULL": "None"}


def _scalar_type(text: str) -> str:
    if _INTEGER.fullmatch(text):
        return "int"
    if _NUMBER.fullmatch(text):
        return "float"
    if _STRING.fullmatch(text):
        return "str"
    return _WORDS.get(text, "expression")


def type_of(text: str) -> str:
    """The type of an R literal (the module's docstring lists them)."""
    vector = _VECTOR.fullmatch(text)
    if not vector:
        return _scalar_type(text)
    inner = vector[1].strip()
    items = split_items(inner) if inner else []
    return "list" if all(_scalar_type(item) != "expression" for item in items) else "expression"


def assignments(source: str, path: str) -> list[Assignment]:
    return read(source, path, ASSIGNMENT, SYNTAX, type_of)
