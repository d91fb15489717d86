"""The line-based readers' common part (R, other languages): the lines that assign a name, and where each value ends.

A line `NAME OPERATOR VALUE  # help` at the top level of the cell assigns a
parameter (the reader's pattern says what NAME and OPERATOR may be).  A value
ends at the end of its line, at a `;` or at a comment, unless a bracket or a
string is still open: then it goes on over the next lines until they close.  Quotes are `"`, `'` and `` ` `` with backslash escapes; brackets
`()`, `[]`, `{}`.  No language's full grammar: enough for a parameters cell.
A line that assigns nothing is skipped whole, brackets and all, so an
assignment inside `if (...) {...}` is no parameter (as in Python's reader).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .model import MAX_PARAMETERS, MAX_TEXT, Assignment, Parameter, too_many

_OPEN, _CLOSE, _QUOTES = "([{", ")]}", "\"'`"
MAX_TYPED = 1024  # characters of a value whose type is read; a longer one is an expression (the hub reads these)


@dataclass(frozen=True)
class Syntax:
    comments: tuple[str, ...] = ("#",)  # what starts a comment
    multiline_strings: bool = False  # R's strings may span lines; MATLAB's `'` is also its transpose


@dataclass(frozen=True)
class End:
    line: int  # 0-based
    column: int  # exclusive, trailing blanks left out
    comment: str  # the comment on that line after the value ("" if none)


def comment_after(text: str, column: int, syntax: Syntax) -> str:
    """The comment on a line from `column` on, outside strings ("" when none)."""
    quote = ""
    j = column
    while j < len(text):
        ch = text[j]
        marker = "" if quote else next((m for m in syntax.comments if text.startswith(m, j)), "")
        if quote:
            if ch == "\\":
                j += 1
            elif ch == quote:
                quote = ""
        elif marker:
            return text[j:].lstrip(marker[0]).strip()
        elif ch in _QUOTES:
            quote = ch
        j += 1
    return ""


def _trimmed(lines: list[str], line: int, column: int) -> int:
    return len(lines[line][:column].rstrip())


def _string_step(ch: str, quote: str) -> tuple[str, int]:
    """Inside a string that `quote` opened: the quote still open ("" once `ch` closes it) and how far to step (past
    a backslash's escaped character too)."""
    if ch == "\\":
        return quote, 2
    return ("" if ch == quote else quote), 1


def value_end(lines: list[str], line: int, column: int, syntax: Syntax) -> End | None:
    """Where the value starting at (line, column) ends; None when a bracket or string never closes."""
    depth, quote = 0, ""
    while line < len(lines):
        text = lines[line]
        j = column
        while j < len(text):
            ch = text[j]
            if quote:
                quote, step = _string_step(ch, quote)
                j += step
                continue
            if any(text.startswith(m, j) for m in syntax.comments):
                if depth == 0:
                    return End(line, _trimmed(lines, line, j), comment_after(text, j, syntax))
                break  # a comment inside brackets: the rest of the line
            elif ch == ";" and depth == 0:
                return End(line, _trimmed(lines, line, j), comment_after(text, j + 1, syntax))
            elif ch in _QUOTES:
                quote = ch
            elif ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth = max(depth - 1, 0)
            j += 1
        if quote and not syntax.multiline_strings:
            quote = ""
        if depth == 0 and not quote:
            return End(line, _trimmed(lines, line, len(text)), "")
        line, column = line + 1, 0
    return None


def split_items(text: str) -> list[str]:
    """`1, "a, b", 3` -> ['1', '"a, b"', '3']: the commas outside brackets and strings."""
    items, depth, quote, start = [], 0, "", 0
    j = 0
    while j < len(text):
        ch = text[j]
        if quote:
            quote, step = _string_step(ch, quote)
            j += step
            continue
        if ch in _QUOTES:
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:j].strip())
            start = j + 1
        j += 1
    items.append(text[start:].strip())
    return items


def _text(lines: list[str], line: int, column: int, end: End) -> str:
    if line == end.line:
        return lines[line][column : end.column]
    return "\n".join([lines[line][column:], *lines[line + 1 : end.line], lines[end.line][: end.column]])


def read(
    source: str, path: str, assignment: re.Pattern, syntax: Syntax, type_of: Callable[[str], str]
) -> list[Assignment]:
    """The cell's top-level assignments, in order; `assignment` matches a line's `NAME OPERATOR ` (group "name").

    A value whose bracket or string never closes is its first line only, an "expression", and ends the reading:
    the rest of the cell was scanned to find its end, so every line is scanned once at most (a cell of unclosed
    brackets on every line would otherwise cost the hub minutes, each line scanned to the cell's end again).
    """
    lines = source.split("\n")
    found: dict[str, Assignment] = {}
    line = 0
    while line < len(lines):
        match = assignment.match(lines[line])
        column = match.end() if match else 0
        end = value_end(lines, line, column, syntax)
        kind = None if end else "expression"
        end = end or End(line, len(lines[line].rstrip()), "")
        text = _text(lines, line, column, end)
        if match and text:
            typed = kind or (type_of(text) if len(text) <= MAX_TYPED else "expression")
            parameter = Parameter(match["name"], typed, text[:MAX_TEXT], end.comment[:MAX_TEXT], line + 1, end.line + 1)
            found[parameter.name] = Assignment(parameter, (line, column), (end.line, end.column))
            if len(found) > MAX_PARAMETERS:
                raise too_many(path)
        if kind == "expression":
            break
        line = end.line + 1
    return list(found.values())
